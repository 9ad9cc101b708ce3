"""`workbench evolve`: a population of kernels, mutated with bank questions as hints, judged over a pool.

    workbench evolve --kernel kernels/attn_fwd/ladder/02_mma.cu --suite dev26 --population 4 --generations 3
    workbench evolve --resume 20261130-120000-evolve-1a2b --generations 6

One generation: parents are chosen by tournament (the best geomean vs the original among `tournament` correct
members drawn at random); each child gets a question from the bank as its hint. With the offline agent the
mutation is one knob change, the knob taken from the question's layer where the kernel has one; with an LLM
it is a short agent episode (a campaign of a few turns) that starts from the parent's source with the question
as its opening message. Before anything is evaluated, the novelty filter rejects a child whose normalised
source was seen before, or whose only additions are lines its lineage deleted. The children are judged side by
side on the pool; the best `population` correct kernels (parents included) survive.

Records (evolutions/<id>/): artifacts/<sha>.cu, config.json, state/evolution.json after every generation (the
resume point), and trace tables under traces/ (or --traces): one `sessions` row for the run, `evaluations` rows
(turn = generation), and one `lineage` row per child, evaluated or rejected: parent sha, question, result.
The run stops when a child meets the stop predicate, after the last generation, or when a budget runs out.

Modules: evolve_config (EvolveConfig, Member), novelty (the filter and knob mutations), run (Evolution), frames
(tables for notebooks), evolve_cli (`workbench evolve`).
"""
from workbench.evolve.evolve_cli import evolve_main
from workbench.evolve.evolve_config import STATE_FILE, EvolveConfig, Member
from workbench.evolve.frames import footer_for, lineage_frame, population_frame, progress_frame, question_gains
from workbench.evolve.novelty import (knob_mutations, line_changes, normalized_lines, normalized_sha,
                                      novelty_verdict)
from workbench.evolve.run import Evolution

__all__ = ["STATE_FILE", "EvolveConfig", "Evolution", "Member", "evolve_main",
           "footer_for", "knob_mutations", "line_changes", "lineage_frame",
           "normalized_lines", "normalized_sha", "novelty_verdict", "population_frame", "progress_frame",
           "question_gains"]
