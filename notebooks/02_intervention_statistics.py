# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Intervention statistics
#
# Which messages preceded the gains? This notebook shows what `workbench report` shows, one data source at a
# time, with the report's own rules and figures (`workbench/traces/report.py`, `analysis.py`, `sources.py`):
#
# * **recorded campaigns**: runs workbench recorded on the H200 (the built-in agent's `c-offline-1`, the MCP
#   campaign `h200-mcp-1`, two evolution runs), the headline;
# * **imported transcripts**: Claude Code / Codex sessions brought in with `workbench import`;
# * **test fixtures, demos and stand-in data**: the hand-counted fixtures `cc-1` and `cx-1` under
#   `data/traces/`, demo recordings and CPU stand-in results. They exercise every statistic, but say nothing
#   about agents, so they are never pooled with the other sources.
#
# A person's messages are counted by class; the question bank's questions are a column of their own. Agent
# sessions count tool calls along x, evolution runs their evaluations. Point `TRACES` at your own traces, and
# `SOURCE` at the section to look at.

# %%
from pathlib import Path

import pandas as pd
from IPython.display import Image, display

from workbench import plots
from workbench.traces import analysis, sources
# the report's own helpers, so this notebook draws exactly what the report draws
from workbench.traces.report import _runs_for_plot, _steering_counts, build_report

REPO = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
TRACES = [REPO / "data" / "traces"]     # one or more trace roots
THRESHOLD = 0.05                        # a gain is a new best geomean at least this much over the best so far
SOURCE = None                           # "campaign", "imported" or "fixture"; None: the first one present

# To import transcripts first (a file, or a directory searched for *.jsonl):
# from workbench.traces.importers import import_paths
# import_paths([Path.home() / ".claude" / "projects"], REPO / "data" / "traces", arm="human")

# %% [markdown]
# ## Data sources
# Every session is one kind; the numbers below are computed within one kind only.

# %%
con = analysis.connect(TRACES)
kinds = sources.classify(con, TRACES)
con.close()
present = [k for k in sources.KINDS if (kinds["kind"] == k).any()]
SOURCE = SOURCE or present[0]
print(f"this section: {sources.KIND_TITLES[SOURCE]} "
      f"(sources present: {', '.join(f'{k} ×{int((kinds.kind == k).sum())}' for k in present)})")
kinds.sort_values(["kind", "session_id"])[["session_id", "kind", "kind_note"]]

# %%
ids = kinds.loc[kinds["kind"] == SOURCE, "session_id"].tolist()
a = analysis.analyze(TRACES, gain_threshold=THRESHOLD, session_ids=ids)
FOOTER = (f"{sources.KIND_TITLES[SOURCE].lower()} from {', '.join(str(t) for t in TRACES)} · GPU: "
          f"{', '.join(a.overall['gpus']) or 'not recorded'}")
{k: v for k, v in a.overall.items() if not k.startswith("share_")}

# %% [markdown]
# ## Per session

# %%
a.sessions[["session_id", "source", "arm", "human_messages", "questions", "tool_calls", "harness_runs",
            "best_geomean", "gains", "readded_rate", "cost_usd"]]

# %% [markdown]
# ## Best geomean so far, with the messages that steered the agent
# Each dot is one harness run, the step the best so far, stars the gain events; the dashed lines are the
# steering messages. The x axis of each panel:

# %%
runs, x_labels, y_labels = _runs_for_plot(a)
print(x_labels)
marks = a.steering.assign(x=a.steering["calls_before"], kind=a.steering["cls"])
display(Image(plots.to_png(plots.best_so_far(runs, marks, footer=FOOTER, x_labels=x_labels, y_labels=y_labels))))

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
# ## Steering messages and re-added lines
# A person's messages by class, and the bank's questions in a column of their own:

# %%
counts, group_label = _steering_counts(a)
display(counts)
display(Image(plots.to_png(plots.message_classes(counts, footer=FOOTER,
                                                 title=f"Steering messages per {group_label}"))))
display(Image(plots.to_png(plots.readded_over_time(a.edits.rename(columns={"tool_index": "x"}), footer=FOOTER))))

# %% [markdown]
# ## Arms side by side (tools-only first)

# %%
a.arms

# %% [markdown]
# ## The other sources, in brief
# The same summary for each other kind present; set `SOURCE` above to see one in full.

# %%
others = {}
for kind in present:
    if kind != SOURCE:
        o = analysis.analyze(TRACES, gain_threshold=THRESHOLD,
                             session_ids=kinds.loc[kinds["kind"] == kind, "session_id"].tolist()).overall
        others[sources.KIND_TITLES[kind]] = {k: o[k] for k in ("sessions", "human_messages", "questions",
                                                                "harness_runs", "gains")}
pd.DataFrame(others).T

# %% [markdown]
# ## Your own questions, in SQL
# `analysis.connect` gives a DuckDB connection with one view per trace table (every source: filter by
# `session_id` to keep to one).

# %%
con = analysis.connect(TRACES)
con.execute("""
    SELECT tool_name, count(*) AS calls, avg(duration_s) AS mean_s, count(*) FILTER (WHERE is_error) AS errors
    FROM tool_calls GROUP BY tool_name ORDER BY calls DESC""").df()

# %% [markdown]
# ## The same as a shareable page
# The report has one section per source, as above.

# %%
build_report(TRACES, REPO / "build" / "report.html", gain_threshold=THRESHOLD)   # build/ is not tracked
