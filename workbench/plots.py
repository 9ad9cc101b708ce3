"""Pure figure functions: data in, a matplotlib `Figure` out (object API, never pyplot), and `to_png`.

No function here keeps state or touches global matplotlib settings, so figures can be drawn from any thread
(notebook widgets, the report builder). Every figure takes a `footer`: which GPU, dtype, versions and timing
method produced the numbers, printed under the plot so a PNG that travels alone still says where it came from.
"""
from __future__ import annotations

import io
import math
import textwrap

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

CLASS_COLORS = {"question": "#1f6fb4", "information": "#e08a1e", "directive": "#3a9a4a", "other": "#8c8c8c",
                "nothing": "#cfcfcf", "bank": "#7b4bb0", "human": "#1f6fb4"}
FONT_SIZE = 10
FOOTER_SIZE = 8
FOOTER_CHAR_IN = 0.062      # average width of a footer character at FOOTER_SIZE, inches (for wrapping)
FOOTER_LINE_IN = 0.16       # height of one footer line, inches


def to_png(fig: Figure, dpi: int = 110) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _footer_lines(footer: str, width_in: float) -> list[str]:
    chars = max(40, int((width_in - 0.25) / FOOTER_CHAR_IN))
    return textwrap.wrap(footer, chars) if footer else []


def _figure(width: float, height: float, footer: str) -> Figure:
    """A constrained-layout figure whose axes stay clear of a wrapped footer at the bottom."""
    lines = _footer_lines(footer, width)
    footer_in = len(lines) * FOOTER_LINE_IN + 0.12 if lines else 0.0
    fig = Figure(figsize=(width, height + footer_in), layout="constrained")
    if lines:
        bottom = footer_in / (height + footer_in)
        fig.get_layout_engine().set(rect=(0, bottom, 1, 1 - bottom))
        fig.text(0.01, 0.04 / (height + footer_in), "\n".join(lines), fontsize=FOOTER_SIZE, color="#555555",
                 ha="left", va="bottom", linespacing=1.25)
    return fig


def _style(ax) -> None:
    ax.tick_params(labelsize=FONT_SIZE - 1)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, axis="y", color="#e6e6e6", linewidth=0.8)
    ax.set_axisbelow(True)


def best_so_far(runs, marks, *, footer: str, metric_label: str = "geomean speedup", max_panels: int = 12,
                title: str = "Best geomean so far") -> Figure:
    """One panel per session: every harness run (dots), the best so far (step line), gain events (stars),
    and the messages that steered the agent (vertical lines coloured by kind).

    runs: columns session_id, x (tool calls so far), geomean, best_so_far, is_gain.
    marks: columns session_id, x, kind (a key of CLASS_COLORS or any label).
    """
    sessions = list(runs.groupby("session_id").size().sort_values(ascending=False).index[:max_panels])
    n = max(len(sessions), 1)
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    rows = math.ceil(n / cols)
    fig = _figure(4.4 * cols + 1.8, 2.6 * rows + 0.5, footer)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False, sharey=True)).ravel()
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
        ax.set_xlabel("tool calls", fontsize=FONT_SIZE - 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _style(ax)
    for ax in axes[len(sessions):]:
        ax.set_visible(False)
    axes[0].set_ylabel(metric_label, fontsize=FONT_SIZE)
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


def message_classes(counts, *, footer: str, title: str = "Human messages by class") -> Figure:
    """Stacked bars: one bar per group (session or arm), one segment per class. counts: DataFrame, index = group,
    columns = classes."""
    groups = [str(g)[:28] for g in counts.index]
    fig = _figure(max(5.0, min(12.0, 1.1 + 0.55 * len(groups))), 3.4, footer)
    ax = fig.subplots()
    bottom = np.zeros(len(groups))
    for cls in counts.columns:
        values = counts[cls].to_numpy(dtype=float)
        ax.bar(groups, values, bottom=bottom, color=CLASS_COLORS.get(cls, "#888888"), label=cls, width=0.65)
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
