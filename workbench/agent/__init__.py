"""Agent campaigns: a coding agent with tools, question interventions, a question bank, and parquet traces.

    from workbench.agent.loop import Campaign
    from workbench.campaign.config import CampaignConfig
    campaign = Campaign.create(CampaignConfig(kernel_path="kernels/attn_fwd/original.cu", mode="bank"),
                               backend=make_backend("offline"))
    campaign.subscribe(print)           # every event; the trace recorder is subscribed already
    summary = campaign.run()
"""
