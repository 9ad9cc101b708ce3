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
# # Evolution: a population of kernels, mutated by questions
#
# `workbench evolve` keeps a population of kernels. Each generation picks parents by tournament among the
# correct ones (best geomean speedup over the original wins), gives every child a question from the bank as its
# mutation hint, and judges the children side by side on an evaluation pool (local GPUs or a Ray cluster).
# With the offline agent a mutation is one `@knob` change, the knob taken from the question's layer; with an LLM
# it is a short agent episode that starts from the parent's source with the question as its opening message.
# A novelty filter rejects children whose normalised source was seen before or that only re-add lines their
# lineage deleted. Every child, evaluated or rejected, is a row of the `lineage` trace table, so the questions
# that produced surviving offspring can be counted like `02_intervention_statistics` counts the questions that
# preceded gains.
#
# On a machine without a GPU this notebook runs on the **CPU stand-in evaluator**: timings are made up from the
# kernel's knob values, so the search has a landscape to climb, and nothing here is a measurement. On the GPU
# machine the same cells run the real harness. The command line does the same:
# `workbench evolve --kernel kernels/attn_fwd/ladder/02_mma.cu --suite dev26 --population 4 --generations 3`.

# %%
import tempfile

from IPython.display import Image, display

from workbench import evolve, plots
from workbench.evaluators import make_evaluator, make_pool
from workbench.evaluators.evaluator import local_gpus
from workbench.harness.paths import REPO_ROOT

KERNEL = str(REPO_ROOT / "kernels" / "attn_fwd" / "ladder" / "02_mma.cu")
EVALUATOR = "harness" if local_gpus() else "standin"   # standin: made-up CPU timings from the knobs
SUITE = "dev26" if EVALUATOR == "harness" else "smoke"
config = evolve.EvolveConfig(kernel_path=KERNEL, suite=SUITE, population=4, generations=5, agent="offline",
                             evaluator=EVALUATOR, stop_expr="", anchors=[] if EVALUATOR == "standin" else ["fa3"],
                             seed=7, root=tempfile.mkdtemp(prefix="evolution-"))
print(f"evaluator: {EVALUATOR}" + ("  (CPU stand-in: made-up timings, not a measurement)" if EVALUATOR == "standin"
                                   else ""))

# %% [markdown]
# ## The run
# One line per child: the question it was given (id and layer), the mutation, and its verdict; rejected children
# say why the novelty filter refused them.

# %%
with make_pool("local", evaluator=make_evaluator(EVALUATOR)) as pool:
    run = evolve.Evolution.create(config, pool, log=print)
    summary = run.run()
lineage = evolve.lineage_frame(run.traces_root)
FOOTER = evolve.footer_for(lineage, SUITE)

# %% [markdown]
# ## The population after the last generation
# Best first: the kernel's sha (its source is `artifacts/<sha>.cu` in the run folder), the generation it was
# born in, its geomean against the original (and FA3 when timed), its parent and the question behind it.

# %%
evolve.population_frame(run.ws.root)

# %% [markdown]
# ## Lineage
# Each evaluated child against its parent. Colour: the layer of the question that produced it; black ring: in
# the population after its generation; star: a new best of the run.

# %%
display(Image(plots.to_png(plots.evolution_lineage(lineage, footer=FOOTER))))
lineage[["generation", "slot", "attempt", "parent_sha", "child_sha", "question_id", "mutation", "status",
         "reject_reason", "geomean_vs_original", "survived"]].assign(
    parent_sha=lambda f: f["parent_sha"].str[:10], child_sha=lambda f: f["child_sha"].str[:10])

# %% [markdown]
# ## Best so far, and the questions that produced each improvement

# %%
display(Image(plots.to_png(plots.evolution_best_so_far(evolve.progress_frame(lineage), footer=FOOTER))))
evolve.question_gains(lineage)

# %% [markdown]
# ## A recorded run on the H200
# An offline-agent evolution on the GPU machine (`scripts/gpu_evolve_acceptance.sh evolve`) writes its trace
# tables under `data/traces/`; when one is there, the same figures for it.

# %%
recorded = evolve.lineage_frame(REPO_ROOT / "data" / "traces")
if len(recorded):
    for run_id, rows in recorded.groupby("session_id"):
        footer = evolve.footer_for(rows)
        display(Image(plots.to_png(plots.evolution_lineage(rows, footer=footer, title=f"{run_id}: lineage"))))
        display(Image(plots.to_png(plots.evolution_best_so_far(evolve.progress_frame(rows), footer=footer,
                                                                title=f"{run_id}: best so far"))))
else:
    print("no recorded evolution under data/traces yet (the H200 run has not been made)")
