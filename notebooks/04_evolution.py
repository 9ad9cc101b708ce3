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
# # Evolution: a population of kernels, mutated by questions
#
# **Placeholder: the evolutionary search (`workbench/evolve.py`, `workbench evolve`) does not exist yet.**
#
# The plan (see the design notes): a population of candidate kernels evaluated over the pool of GPUs; a
# mutation is a short agent episode seeded with a question from the bank, so the questions that produce
# surviving offspring can be counted the same way `02_intervention_statistics` counts the questions that
# preceded gains. When the module lands, this notebook will run a small population on the CPU stand-in
# evaluator (clearly labelled) and on the GPU machine, with the same campaign widgets for each episode.

# %%
import importlib.util

available = importlib.util.find_spec("workbench.evolve") is not None
print("workbench.evolve is available" if available else
      "workbench.evolve is not written yet: nothing to run here (placeholder notebook)")
