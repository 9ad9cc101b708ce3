# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The kernel ladder: from CUDA-core FMAs to tensor cores
#
# `kernels/attn_fwd/` holds the campaign's starting kernel and a ladder of rewrites, each one file behind the
# same C entry point. Every rung opens with a comment that says what it changes over the previous one, why that
# should be faster, a prediction written *before* measuring, and what was measured. This notebook prints those
# accounts, runs the harness on each rung, and shows the measured figures that are on record.
#
# On a machine without a GPU the harness builds each kernel and reports its resources (registers, spills, stack,
# shared memory) and the forbidden-library verdict; verification and timing need the GPU machine, and say so.
# On the H200 the same cells verify and time every rung against the original kernel and FA3, cuDNN and FA2.

# %%
from pathlib import Path

from IPython.display import Image, Markdown, display

from workbench import plots
from workbench.ui import ladder, render

SUITE = "smoke"             # smoke: 8 tiny shapes (minutes on a GPU); dev26 or full for real figures
paths = ladder.rungs()
[p.relative_to(ladder.KERNELS).as_posix() for p in paths]

# %% [markdown]
# ## What each rung says about itself
# The original kernel is the baseline every speedup is measured against: online softmax on CUDA cores, fp32
# FMAs, no shared memory. Rung 01 tiles queries and keys through shared memory; rung 02 moves both matrix
# products onto the tensor cores with `mma.sync`, FlashAttention-2's design.

# %%
for path in paths:
    display(Markdown(f"### `{path.name}`\n```text\n{ladder.header(path)}\n```"))

# %% [markdown]
# ## The harness on every rung
# Each line of progress is one scenario (or, without a GPU, the build summary).

# %%
results = {}
for path in paths:
    print(f"== {path.name}")
    results[path.stem] = ladder.check_rung(path, suite=SUITE, progress=lambda line: print("  ", line))
ladder.summary_frame(results)

# %% [markdown]
# ## What the compiler made of each rung
# Registers per thread bound how many warps fit on an SM; spills mean local-memory traffic. Compare the
# original's 125 registers and empty stack with rung 02's tensor-core kernels.

# %%
ladder.resources_frame(results)

# %% [markdown]
# ## Measured on the H200
# The runs on record in `docs/data/` (`workbench check --suite full --anchors fa3,cudnn,fa2`, one per rung; the
# commands and the story are in `docs/kernel_ladder.md`). The original's figures are its baseline timings from
# the same process as rung 02's run. Each bar is a geomean speedup over FA3 on one category of the 182-shape
# `full` suite: A FlashAttention grid, B GQA model shapes, C ragged lengths, D KV-cache prefill and
# cross-attention. Hatched bars are the other libraries, for scale.

# %%
recorded = ladder.recorded_results()
if recorded:
    last = list(recorded.values())[-1]
    footer = render.footer_text(last.gpu, last.versions, last.suite)
    geomeans = ladder.geomean_frame(recorded)
    display(Image(plots.to_png(plots.ladder_geomeans(geomeans, footer=footer,
                                                     title="The ladder on full: geomean speedup over FA3"))))
    display(geomeans.pivot(index="kernel", columns="category", values="x_fa3")
            .reindex(list(dict.fromkeys(geomeans["kernel"])))[["A", "B", "C", "D", "all"]].round(3))
else:
    print("no measured ladder results under docs/data/ yet")

# %% [markdown]
# ### The best rung, version by version, on every card
# Each recorded `full` run of `04_pingpong.cu` (`workbench check ... --suite full --anchors fa3,cudnn,fa2 --json`;
# the file name gives the card, version and date, `docs/benchmarks.md` each one's command). H100 rows are the same
# command on another card: compare versions within a card, not across cards.

# %%
history = ladder.version_history("04_pingpong")
history if not history.empty else print("no recorded 04_pingpong runs under docs/data/ yet")

# %% [markdown]
# Per scenario, on the 26 `dev26` shapes of the same runs: where each rung stands against FA3, cuDNN and FA2.
# Rung 01 is fp32 FMA work like the original, an order of magnitude under the anchors; rung 02 is in FA2's class,
# ahead of FA3 only where FA3 is launch- or occupancy-bound (few keys, few query tiles).

# %%
for name, result in recorded.items():
    footer = render.footer_text(result.gpu, result.versions, "dev26 shapes of a full run", result.kernel_sha)
    display(Image(plots.to_png(plots.scenario_tflops(ladder.dev26_frame(result), footer=footer,
                                                     candidate_label=name,
                                                     title=f"{name}: TFLOP/s per scenario against the anchors"))))

# %% [markdown]
# ## On a GPU machine
# With a GPU, `results` above holds verified and timed runs; the same figure for each rung:

# %%
for name, result in results.items():
    if result.status == "evaluated" and result.all_correct:
        footer = render.footer_text(result.gpu, result.versions, result.suite, result.kernel_sha)
        display(Image(plots.to_png(plots.scenario_tflops(result.to_frame(), footer=footer, candidate_label=name,
                                                         title=f"{name} on {SUITE}"))))
    else:
        print(f"{name}: {result.status}" + (f" ({result.error})" if result.error else ""))
