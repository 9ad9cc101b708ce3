"""Figures of an evolution run (notebooks/04_evolution): lineage rows of workbench.evolve."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.plots.base import FONT_SIZE, _empty_note, _figure, _style

LAYER_COLORS = {"measurement": "#8c8c8c", "algorithm": "#1f6fb4", "parallelism": "#3a9a4a", "memory": "#e08a1e",
                "tensor-core/instructions": "#7b4bb0", "pipelining": "#c62828", "launch/host": "#00897b",
                "numerics": "#b5651d", "seed": "#222222"}


def evolution_lineage(lineage, *, footer: str, title: str = "Lineage: every child against its parent") -> Figure:
    """Generations left to right, geomean vs the original upwards; a line joins each evaluated child to its
    parent, the dot's colour is the layer of the question that produced it, black rings mark the population
    after selection, stars the new bests; children that failed a scenario sit on the floor as red crosses, and
    the count of children the novelty filter rejected is written under each generation.

    lineage: rows of the `lineage` trace table (generation, slot, child_sha, parent_sha, status, all_correct,
    geomean_vs_original, question_layer, is_new_best, survived, reject_reason).
    """
    fig = _figure(7.6, 3.8, footer)
    ax = fig.subplots()
    rows = lineage[lineage["status"] != "rejected"] if len(lineage) else lineage
    correct = rows[rows["all_correct"].fillna(False).astype(bool)] if len(rows) else rows
    scores = correct["geomean_vs_original"].to_numpy(dtype=float) if len(correct) else np.array([1.0])
    floor = float(np.nanmin(scores)) * 0.9 if len(scores) else 0.9
    width = max(int(rows["slot"].max()) + 1, 1) if len(rows) else 1
    where = {}
    for r in rows.itertuples():
        x = r.generation + (0.0 if r.generation == 0 else 0.5 * (r.slot + 0.5) / width - 0.25)
        ok = bool(r.all_correct) and r.geomean_vs_original == r.geomean_vs_original
        where[r.child_sha] = (x, r.geomean_vs_original if ok else floor)
    for r in rows.itertuples():
        if isinstance(r.parent_sha, str) and r.parent_sha in where:
            (x0, y0), (x1, y1) = where[r.parent_sha], where[r.child_sha]
            ax.plot([x0, x1], [y0, y1], color="#c8c8c8", linewidth=0.9, zorder=1)
    seen = set()
    for r in rows.itertuples():
        x, y = where[r.child_sha]
        layer = r.question_layer if isinstance(r.question_layer, str) else "seed"
        ok = bool(r.all_correct) and r.geomean_vs_original == r.geomean_vs_original
        if not ok:
            ax.scatter([x], [y], marker="x", s=30, color="#c62828", zorder=3,
                       label=None if "failed" in seen else "not all correct")
            seen.add("failed")
            continue
        ax.scatter([x], [y], s=34, color=LAYER_COLORS.get(layer, "#444444"), zorder=3,
                   edgecolors="#111111" if bool(r.survived) else "none", linewidths=1.1,
                   label=None if layer in seen else layer)
        seen.add(layer)
        if bool(r.is_new_best):
            ax.scatter([x], [y], marker="*", s=150, facecolors="none", edgecolors="#d62728", linewidths=1.0,
                       zorder=4, label=None if "best" in seen else "new best")
            seen.add("best")
    if len(lineage):
        rejected = lineage[lineage["status"] == "rejected"].groupby("generation").size()
        for g, n in rejected.items():
            ax.annotate(f"{n} rejected", (g, 0.0), xycoords=("data", "axes fraction"), xytext=(0, 3),
                        textcoords="offset points", ha="center", fontsize=FONT_SIZE - 3, color="#777777")
    ax.set_xlabel("generation", fontsize=FONT_SIZE)
    ax.set_ylabel("geomean speedup vs original", fontsize=FONT_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.margins(x=0.05, y=0.12)
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    _style(ax)
    if seen:
        ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  title="question layer", title_fontsize=FONT_SIZE - 2)
    else:
        _empty_note(ax, "no evaluated child yet")
    return fig


def evolution_best_so_far(runs, *, footer: str, title: str = "Best so far, and the questions behind each gain"
                          ) -> Figure:
    """Every evaluated child in order (dots; red crosses: not all correct), the best so far (step line), and
    at each new best the question (id and layer) whose hint produced it.

    runs: workbench.evolve.progress_frame(lineage): x, geomean, all_correct, best, is_new_best, label.
    """
    fig = _figure(7.6, 3.4, footer)
    ax = fig.subplots()
    if len(runs):
        ok = runs[runs["all_correct"].fillna(False).astype(bool)]
        bad = runs[~runs["all_correct"].fillna(False).astype(bool)]
        ax.step(runs["x"], runs["best"], where="post", color="#222222", linewidth=1.8, zorder=2, label="best so far")
        ax.scatter(ok["x"], ok["geomean"], s=20, color="#7a7a7a", zorder=3, label="child, all correct")
        if len(bad):
            floor = float(np.nanmin(ok["geomean"])) if len(ok) else 1.0
            ax.scatter(bad["x"], [floor] * len(bad), marker="x", s=28, color="#c62828", zorder=3,
                       label="child, not all correct")
        gains = runs[runs["is_new_best"].fillna(False).astype(bool)]
        ax.scatter(gains["x"], gains["geomean"], marker="*", s=120, color="#d62728", zorder=4, label="new best")
        for g in gains.itertuples():
            ax.annotate(g.label, (g.x, g.geomean), xytext=(4, -4), textcoords="offset points", rotation=-35,
                        fontsize=FONT_SIZE - 2, color="#1f4e9c", ha="left", va="top")
        ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        _empty_note(ax, "no evaluated child yet")
    ax.set_xlabel("evaluated children, in order", fontsize=FONT_SIZE)
    ax.set_ylabel("geomean speedup vs original", fontsize=FONT_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.margins(x=0.04, y=0.15)
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    _style(ax)
    return fig
