"""Figures of the intervention-statistics report (workbench/traces/report.py): many sessions at once."""
from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.plots.base import FONT_SIZE, _figure, _style

CLASS_COLORS = {"question": "#1f6fb4", "information": "#e08a1e", "directive": "#3a9a4a", "other": "#8c8c8c",
                "nothing": "#cfcfcf", "bank": "#7b4bb0", "human": "#1f6fb4"}


def best_so_far(runs, marks, *, footer: str, metric_label: str = "geomean speedup", max_panels: int = 12,
                title: str = "Best geomean so far", x_labels: dict | None = None,
                y_labels: dict | None = None) -> Figure:
    """One panel per session: every harness run (dots), the best so far (step line), gain events (stars),
    and the messages that steered the agent (vertical lines coloured by kind).

    runs: columns session_id, x (tool calls so far, or the evaluation's number for an evolution run), geomean,
    best_so_far, is_gain. marks: columns session_id, x, kind (a key of CLASS_COLORS or any label).
    x_labels / y_labels: per session, what its x axis counts ("tool calls" by default) and what its geomean is
    measured against (`metric_label` by default). Every panel has its own y axis, labelled: sessions differ in
    unit (× FA3, × original) and in scale (0.02 against 0.7), and one shared axis would flatten the small ones.
    """
    x_labels, y_labels = x_labels or {}, y_labels or {}
    sessions = list(runs.groupby("session_id").size().sort_values(ascending=False).index[:max_panels])
    n = max(len(sessions), 1)
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    rows = math.ceil(n / cols)
    fig = _figure(4.4 * cols + 1.8, 2.6 * rows + 0.5, footer)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    seen_kinds = {}
    for ax, sid in zip(axes, sessions):
        r = runs[runs["session_id"] == sid].sort_values("x")
        ax.scatter(r["x"], r["geomean"], s=14, color="#9a9a9a", zorder=2, label="harness run")
        ax.step(r["x"], r["best_so_far"], where="post", color="#222222", linewidth=1.6, zorder=3,
                label="best so far")
        g = r[r["is_gain"]]
        ax.scatter(g["x"], g["geomean"], marker="*", s=110, color="#d62728", zorder=4, label="gain event")
        for m in marks[marks["session_id"] == sid].itertuples():
            color = CLASS_COLORS.get(m.kind, "#444444")
            seen_kinds[m.kind] = ax.axvline(m.x, color=color, linewidth=1.2, linestyle="--", alpha=0.85, zorder=1)
        ax.margins(x=0.04, y=0.1)      # gain stars at the top and first runs at the edge stay visible
        ax.set_title(str(sid)[:40], fontsize=FONT_SIZE, loc="left")
        ax.set_xlabel(x_labels.get(sid, "tool calls"), fontsize=FONT_SIZE - 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.set_ylabel(y_labels.get(sid, metric_label), fontsize=FONT_SIZE - 1)
        _style(ax)
    for ax in axes[len(sessions):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    for kind, line in seen_kinds.items():
        handles.append(line)
        labels.append(f"{kind} message")
    fig.legend(handles, labels, loc="outside right upper", fontsize=FONT_SIZE - 1, frameon=False)
    fig.suptitle(title, fontsize=FONT_SIZE + 2, x=0.01, ha="left")
    return fig


def gain_attribution(attribution, *, footer: str, title: str = "What preceded each gain") -> Figure:
    """Horizontal bars: gains preceded by each message class (and by nothing). attribution: preceded_by, gains."""
    fig = _figure(6.0, 2.9, footer)
    ax = fig.subplots()
    labels = list(attribution["preceded_by"])[::-1]
    values = list(attribution["gains"])[::-1]
    total = sum(values)
    bars = ax.barh(labels, values, color=[CLASS_COLORS.get(k, "#888888") for k in labels])
    for bar, value in zip(bars, values):
        share = f"{value}  ({100 * value / total:.0f} %)" if total else "0"
        ax.text(bar.get_width() + max(total, 1) * 0.01, bar.get_y() + bar.get_height() / 2, share,
                va="center", fontsize=FONT_SIZE - 1)
    ax.set_xlim(0, max(values + [1]) * 1.25)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("gain events", fontsize=FONT_SIZE)
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    _style(ax)
    ax.grid(False)
    return fig


def message_classes(counts, *, footer: str, title: str = "Steering messages by class") -> Figure:
    """Stacked bars: one bar per group (session or arm), one segment per class. counts: DataFrame, index = group,
    columns = classes (a `bank` column: questions the campaign took from the bank, not a person's)."""
    groups = [str(g)[:28] for g in counts.index]
    fig = _figure(max(5.0, min(12.0, 1.1 + 0.55 * len(groups))), 3.4, footer)
    ax = fig.subplots()
    bottom = np.zeros(len(groups))
    for cls in counts.columns:
        values = counts[cls].to_numpy(dtype=float)
        label = "bank question" if cls == "bank" else f"a person's: {cls}"
        ax.bar(groups, values, bottom=bottom, color=CLASS_COLORS.get(cls, "#888888"), label=label, width=0.65)
        bottom += values
    ax.set_ylabel("messages", fontsize=FONT_SIZE)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    ax.legend(fontsize=FONT_SIZE - 1, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if len(groups) > 6:
        ax.tick_params(axis="x", labelrotation=60)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    _style(ax)
    return fig


def readded_over_time(edits, *, footer: str, reference: float | None = 0.30, max_lines: int = 40,
                      title: str = "Re-added lines (cumulative share of added lines)") -> Figure:
    """Cumulative re-added share per session against tool calls. edits: session_id, x, cum_rate."""
    fig = _figure(7.0, 3.4, footer)
    ax = fig.subplots()
    sessions = list(edits.groupby("session_id").size().sort_values(ascending=False).index[:max_lines])
    for sid in sessions:
        e = edits[edits["session_id"] == sid].sort_values("x")
        ax.plot(e["x"], 100 * e["cum_rate"], marker="o" if len(e) < 30 else None, markersize=3, linewidth=1.3,
                label=str(sid)[:30], alpha=0.9 if len(sessions) < 8 else 0.5)
    if reference is not None:
        ax.axhline(100 * reference, color="#d62728", linestyle=":", linewidth=1.2,
                   label=f"reference study ({100 * reference:.0f} %)")
    ax.set_ylim(0, 100)
    ax.set_xlabel("tool calls", fontsize=FONT_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("re-added / added lines (%)", fontsize=FONT_SIZE)
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    if len(sessions) <= 8:
        ax.legend(fontsize=FONT_SIZE - 1, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _style(ax)
    return fig
