# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Intervention statistics
#
# Which messages preceded the gains? This notebook runs the same analysis as `workbench report` on trace
# tables (`data/traces/` by default): our campaigns, or Claude Code / Codex transcripts brought in with
# `workbench import`. Every rule (message classes, layers, gain events, re-added lines) is written down in
# `workbench/traces/analysis.py` and tested on hand-counted fixtures.
#
# The sample traces shipped now are the imported **test fixtures**, not a campaign: they show every statistic,
# but say nothing about agents. Point `TRACES` at your own traces.

# %%
from pathlib import Path

from IPython.display import Image, display

from workbench import plots
from workbench.traces import analysis
from workbench.traces.report import build_report

REPO = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
TRACES = [REPO / "data" / "traces"]     # one or more trace roots
THRESHOLD = 0.05                        # a gain is a new best geomean at least this much over the best so far

# To import transcripts first (a file, or a directory searched for *.jsonl):
# from workbench.traces.importers import import_paths
# import_paths([Path.home() / ".claude" / "projects"], REPO / "data" / "traces", arm="human")

# %%
a = analysis.analyze(TRACES, gain_threshold=THRESHOLD)
FOOTER = f"traces: {', '.join(str(t) for t in TRACES)} · GPU: {', '.join(a.overall['gpus']) or 'not recorded'}"
{k: v for k, v in a.overall.items() if not k.startswith("share_")}

# %% [markdown]
# ## Per session

# %%
a.sessions[["session_id", "source", "arm", "human_messages", "questions", "tool_calls", "harness_runs",
            "best_geomean", "gains", "readded_rate", "cost_usd"]]

# %% [markdown]
# ## Best geomean so far, with the messages that steered the agent

# %%
runs = a.runs.rename(columns={"tool_index": "x"})
marks = a.steering.assign(x=a.steering["calls_before"], kind=a.steering["cls"])
display(Image(plots.to_png(plots.best_so_far(runs, marks, footer=FOOTER))))

# %% [markdown]
# ## What preceded each gain

# %%
display(Image(plots.to_png(plots.gain_attribution(a.attribution, footer=FOOTER))))
a.gains[["session_id", "tool_index", "previous_best", "geomean", "gain_pct", "preceded_by", "message_text",
         "message_layer", "agent_layer", "moved_layer", "rejected_limit"]]

# %% [markdown]
# ## Questions: which layer, and how long until the next gain

# %%
display(a.layers)
a.question_to_gain

# %% [markdown]
# ## Message classes and re-added lines

# %%
import pandas as pd  # noqa: E402  (only for the cross-tabulation)

counts = pd.crosstab(a.steering["session_id"], a.steering["cls"]).reindex(columns=list(analysis.CLASSES),
                                                                          fill_value=0)
display(Image(plots.to_png(plots.message_classes(counts, footer=FOOTER))))
display(Image(plots.to_png(plots.readded_over_time(a.edits.rename(columns={"tool_index": "x"}), footer=FOOTER))))

# %% [markdown]
# ## Arms side by side (tools-only first)

# %%
a.arms

# %% [markdown]
# ## Your own questions, in SQL
# `analysis.connect` gives a DuckDB connection with one view per trace table.

# %%
con = analysis.connect(TRACES)
con.execute("""
    SELECT tool_name, count(*) AS calls, avg(duration_s) AS mean_s, count(*) FILTER (WHERE is_error) AS errors
    FROM tool_calls GROUP BY tool_name ORDER BY calls DESC""").df()

# %% [markdown]
# ## The same as a shareable page

# %%
build_report(TRACES, REPO / "build" / "report.html", gain_threshold=THRESHOLD)   # build/ is not tracked
