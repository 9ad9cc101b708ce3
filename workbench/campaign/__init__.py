"""The campaign record that the agent loop, the campaign service, the evolution and the UI share.

    config.py     what a campaign is asked to do (CampaignConfig, Budget), as in campaigns/<id>/config.json
    workspace.py  the campaign folder: kernel.cu, artifacts/<sha>.cu, state snapshots, the lock
    confine.py    every path an agent names stays inside its workspace (no links, no escapes)
    events.py     the one event bus: every step of a campaign, as typed events
    recorder.py   events to parquet trace tables, one committed turn at a time

Nothing here imports the agent, the evolution or the UI: they all write and read the same record.
"""
