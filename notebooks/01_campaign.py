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
# # A campaign: the agent in a chat, beside live results
#
# A coding agent rewrites `kernels/attn_fwd/original.cu`; every candidate goes through the harness (build,
# verification against the original kernel and an fp32 reference, per-scenario timing against FA3, cuDNN and
# FA2). When the agent stalls, claims it is done, or reports a suspiciously large gain, a question is put to it:
# yours, typed in the chat, or one from the question bank.
#
# **What runs here depends on the machine.** With `ANTHROPIC_API_KEY` set, a live campaign with Claude; on a GPU
# machine without a key, the offline scripted agent; with neither, the recording at `RECORDING` is **replayed**
# through the same widgets: agent turns and harness results come from the recording, file edits run again.
#
# The recording shipped in `data/campaigns/c-offline-1` is a **real campaign on the H200**: the offline scripted
# agent (no LLM) changing the `@knob` lines of the original kernel, every candidate judged by the harness on the GPU
# (x1.001 -> best x1.052 vs the original; see its README). **Best** means one figure everywhere (status bar, run
# table, README): the best kernel's geomean as first timed when it became the best; a kernel becomes the best only by
# beating the previous best by more than 2 %. Re-timings of the best kernel (x1.055 to x1.064 here) are shown as
# such in the per-scenario table and do not move the best. `data/demo/demo-cpu-standin` is a
# **demo recording: CPU stand-in evaluator, not GPU measurements** (made-up timings, made on a CPU); it shows a
# person's question too. Point `RECORDING` at any campaign folder (`campaigns/<id>/`).

# %%
from workbench import ui

REPO = ui.REPO_ROOT     # the checkout the workbench package runs from
RECORDING = REPO / "data" / "campaigns" / "c-offline-1"    # a campaign folder: config.json, traces/, artifacts/
AGENT = None            # None: choose for this machine; or "claude", "offline", f"replay:{RECORDING}"

settings = ui.Settings(
    recording=str(RECORDING), agent=AGENT,
    kernel_path=str(REPO / "kernels" / "attn_fwd" / "original.cu"), suite="dev26",
    mode="hybrid",                                  # bank questions on triggers, and yours from the chat
    stop_expr="all_correct and geomean_vs_fa3 >= 1.0",
    budget="tool_calls=200,wall=2h,usd=20",
    root=str(REPO / "build" / "campaigns"),         # campaign folders (not tracked)
)

# %% [markdown]
# ## The workbench
# Run the next cell. The campaign runs on a worker thread, so the notebook stays free while it works.
# - **Chat** (left): the agent's text as it streams; each tool call as a collapsed block (click to see the input
#   and the head of its result; errors in red; harness runs carry their geomeans and a *new best* chip); every
#   question as a coloured banner: amber *stall*, violet *claim*, red *suspicious gain*, green *a person asked*.
# - **Your questions**: type and *Send*, or pick one from the bank (the list follows the latest trigger) and
#   *Ask from bank*. A question waits in the inbox and is put to the agent at the next turn boundary; it is
#   recorded as an intervention. *Stop* ends the campaign at the next turn boundary. (A replayed agent cannot
#   react to your question, but the replay records it like any other.)
# - **Progress** (right): the best geomean against tool calls, questions marked by trigger; the best candidate's
#   share of the measured ceiling. Both appear with the first harness run (a dashed box holds their place).
# - **Table and anchors** (below): the latest harness run per scenario, failing and suspicious rows first; the best
#   candidate's TFLOP/s against FA3, cuDNN and FA2, one panel per head_dim and causal.
#
# Every figure's footer says which GPU, dtype, versions and timing method produced it.

# %%
app, note = ui.launch(settings)
print(note)
display(app)  # noqa: F821  (IPython's display)
app.start()

# %% [markdown]
# ## After the campaign
# The next cell waits for a replay to finish (a live campaign is not waited for: run it again whenever you like,
# it shows the runs so far). Every message, tool call, harness run and question is also in the campaign's trace
# tables, `<root>/<campaign id>/traces/`, for `02_intervention_statistics`.

# %%
stopped = app.wait(timeout=600 if app.is_replay else 0)
print(f"Stopped: {ui.stop_reason(stopped.reason)}. {stopped.turn} turns, {stopped.tool_calls} tool calls, best "
      f"{ui.fmt_x(stopped.best_vs_original)} vs the original" if stopped
      else "Still running: run this cell again later.")
print("Trace tables:", app.campaign.ws.traces_dir)
app.runs_table()                    # app.runs_frame() has the same rows as numbers, for your own analysis

# %% [markdown]
# ## Watch a campaign your own agent runs
# An agent of your own (Claude Code, Codex, Cursor, a local model) runs a campaign through `workbench mcp` or
# `workbench check --campaign` (README, "Use your own agent"). Set `WATCH` to that campaign's folder and run the
# next cell: the same widgets follow it while its agent works, read from the campaign's trace tables as they grow.
# A question you send goes to the campaign's inbox, as `workbench ask` does, and reaches the agent with its next
# check result; *Stop* stops the watching, not the agent. With `WATCH = None` the cell watches a **demo campaign
# with CPU stand-in timings** (not measurements) that a scripted agent checks four times.

# %%
WATCH = None            # a campaign folder, e.g. REPO / "campaigns" / "c-1"
watched, note = ui.watch(WATCH) if WATCH else ui.watch_demo(root=REPO / "build" / "campaigns")
print(note)
display(watched)  # noqa: F821  (IPython's display)
watched.start()

# %%
stopped = watched.wait(timeout=0 if WATCH else 120)
print(f"Stopped: {ui.stop_reason(stopped.reason)}. {stopped.turn} calls" if stopped else "Still watching.")
watched.runs_table()
