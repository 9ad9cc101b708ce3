"""Tables and figure inputs from an evolution's records (notebooks/04_evolution, scripts)."""
from __future__ import annotations

import json
from pathlib import Path

from workbench.evolve.evolve_config import STATE_FILE


def lineage_frame(traces_root, run_id: str | None = None):
    from workbench.traces.writer import read_table
    frame = read_table(traces_root, "lineage", run_id)
    return frame.sort_values(["session_id", "generation", "slot", "attempt"]).reset_index(drop=True)


def progress_frame(lineage):
    """Evaluated children in order: x (evaluation number), geomean, all_correct, best (so far), is_new_best,
    label (question id and layer of each new best)."""
    runs = lineage[lineage["status"].isin(["evaluated"])].copy().reset_index(drop=True)
    runs["x"] = range(len(runs))
    runs["geomean"] = runs["geomean_vs_original"]
    runs["best"] = runs["best_so_far"]
    runs["label"] = [f"{q} {l}" if isinstance(q, str) and new else ("seed" if new else "")
                     for q, l, new in zip(runs["question_id"], runs["question_layer"], runs["is_new_best"])]
    return runs


def question_gains(lineage):
    """Per bank question: children it produced, how many were rejected, correct, better than their parent, and
    new bests of the run -- the evolutionary twin of 02_intervention_statistics' gain attribution."""
    import pandas as pd
    kids = lineage[lineage["generation"] > 0]
    if not len(kids):
        return pd.DataFrame(columns=["question_id", "layer", "children", "rejected", "correct", "improved_on_parent",
                                     "new_best"])
    flag = lambda col: kids[col].fillna(False).astype(bool)
    frame = pd.DataFrame({"question_id": kids["question_id"], "layer": kids["question_layer"],
                          "rejected": kids["status"] == "rejected", "correct": flag("all_correct"),
                          "improved_on_parent": flag("improved_on_parent"), "new_best": flag("is_new_best")})
    out = frame.groupby(["question_id", "layer"]).agg(children=("rejected", "size"), rejected=("rejected", "sum"),
                                                      correct=("correct", "sum"),
                                                      improved_on_parent=("improved_on_parent", "sum"),
                                                      new_best=("new_best", "sum")).reset_index()
    return out.sort_values(["new_best", "improved_on_parent", "children"], ascending=False).reset_index(drop=True)


def footer_for(lineage, suite: str = "") -> str:
    """Where the numbers of a lineage came from, for the foot of every figure."""
    gpus = sorted(set(lineage["gpu"].dropna())) if len(lineage) else []
    where = f" on {suite}" if suite else ""
    if gpus == ["stand-in (CPU)"]:
        return (f"CPU stand-in evaluator{where}: made-up timings from the kernel's @knob values "
                "(workbench.evaluators.standin_timings), not a measurement. Geomean speedup vs original.cu.")
    return (f"{', '.join(gpus) or 'no GPU recorded'}{where}: workbench harness (CUDA events, L2 flushed, median "
            "of repeats, rotating inputs); geomean speedup vs original.cu over the suite's scenarios.")


def population_frame(run_dir):
    """The current population of a run folder, best first."""
    import pandas as pd
    state = json.loads((Path(run_dir) / STATE_FILE).read_text())
    rows = [{"rank": i + 1, "sha": m["sha"][:12], "generation": m["generation"], "x_original": m["score"],
             "x_fa3": m["vs_fa3"], "parent": (m["parent_sha"] or "")[:12], "question": m["question_id"]}
            for i, m in enumerate(state["population"])]
    return pd.DataFrame(rows, columns=["rank", "sha", "generation", "x_original", "x_fa3", "parent", "question"])
