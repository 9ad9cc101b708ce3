"""Notebook widgets for campaigns: a chat with the agent beside live tables and figures (ipywidgets 8).

    from workbench import ui
    app, note = ui.launch(ui.Settings())      # live where possible, else the recorded demo replayed
    display(app)
    app.start()

Modules: render (HTML from campaign state, pure), style (the stylesheet), model (campaign events into what the
widgets show), campaign_view (the widgets), controller (worker threads and throttled, batched widget updates), launch
(what to run on this machine, replays), watch (a campaign your own agent runs, followed through its traces).
"""
from workbench.harness.paths import REPO_ROOT
from workbench.ui.campaign_view import CampaignView
from workbench.ui.controller import CampaignController
from workbench.ui.launch import DEMO_RECORDING, Settings, launch, plan, replay_campaign
from workbench.ui.render import DEMO_LABEL, fmt_x, stop_reason
from workbench.ui.watch import watch, watch_demo

__all__ = ["CampaignController", "CampaignView", "DEMO_LABEL", "DEMO_RECORDING", "REPO_ROOT", "Settings", "fmt_x",
           "launch", "plan", "replay_campaign", "stop_reason", "watch", "watch_demo"]
