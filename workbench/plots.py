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


# ---- campaign views (notebook UI): one harness result at a time --------------------------------------------
TRIGGER_COLORS = {"stall": "#d08a00", "claim": "#7b4bb0", "suspicious": "#c62828", "human": "#00897b"}
METHOD_COLORS = {"candidate": "#1f4e9c", "original": "#9e9e9e", "fa3": "#e08a1e", "fa4": "#b5651d",
                 "cudnn": "#3a9a4a", "fa2": "#8c8c8c"}
METHOD_LABELS = {"original": "original", "fa3": "FA3", "fa4": "FA4", "cudnn": "cuDNN", "fa2": "FA2"}


def campaign_progress(runs, marks, *, footer: str, title: str = "Best geomean so far") -> Figure:
    """One campaign: every harness run against its tool-call index, the best so far (step line), and the
    questions put to the agent (dashed lines coloured by trigger, question id on top).

    runs: columns x (tool-call index), geomean (vs original; NaN when nothing passed), all_correct, best
    (best all-correct geomean so far; NaN before the first). marks: columns x, trigger, label.
    """
    fig = _figure(6.6, 3.1, footer)
    ax = fig.subplots()
    ok = runs[runs["all_correct"].astype(bool)] if len(runs) else runs
    bad = runs[~runs["all_correct"].astype(bool)] if len(runs) else runs
    ax.axhline(1.0, color="#bdbdbd", linewidth=1.0, linestyle=":", zorder=1)
    if len(runs):
        ax.step(runs["x"], runs["best"], where="post", color="#222222", linewidth=1.8, zorder=3,
                label="best so far (all correct)")
        ax.scatter(ok["x"], ok["geomean"], s=22, color="#7a7a7a", zorder=4, label="harness run, all correct")
        ax.scatter(bad["x"], bad["geomean"], s=34, marker="x", color="#c62828", zorder=4,
                   label="run with failing scenarios (passed rows only)")
    seen, labels_at = set(), {}
    for m in marks.itertuples() if len(marks) else []:
        color = TRIGGER_COLORS.get(m.trigger, "#444444")
        ax.axvline(m.x, color=color, linewidth=1.3, linestyle="--", alpha=0.9, zorder=2,
                   label=None if m.trigger in seen else f"question ({m.trigger})")
        seen.add(m.trigger)
        if getattr(m, "label", ""):
            labels_at.setdefault(m.x, []).append((m.label, color))
    if len(labels_at) <= 14:        # two questions at one tool call share one label
        for x, items in labels_at.items():
            ax.annotate(" · ".join(label for label, _ in items), (x, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(2, -2), textcoords="offset points", fontsize=FONT_SIZE - 2, color=items[-1][1],
                        rotation=90, ha="left", va="top")
    ax.margins(x=0.03, y=0.12)
    ax.set_xlabel("tool calls", fontsize=FONT_SIZE)
    ax.set_ylabel("geomean speedup vs original", fontsize=FONT_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    _style(ax)
    if len(runs) or len(marks):
        ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        _empty_note(ax, "no harness run yet")
    return fig


def _empty_note(ax, text: str) -> None:
    """A grey line in the middle of an axes that has nothing to plot yet."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#888888", fontsize=FONT_SIZE)


def _short_scenario(name: str, head_dim: int, causal: bool) -> str:
    """A scenario name without the head_dim/causal parts its panel already says."""
    parts = [p for p in str(name).split("_") if p not in (f"d{head_dim}", f"c{int(bool(causal))}")]
    return "_".join(parts)


def scenario_tflops(frame, *, footer: str, candidate_label: str = "best candidate",
                    anchors=("fa3", "cudnn", "fa2"), title: str = "TFLOP/s per scenario") -> Figure:
    """Grouped horizontal bars per scenario: the candidate against the anchors, one panel per head_dim and
    causal (the FlashAttention convention). A scenario the candidate failed shows its reason instead of a bar.

    frame: SuiteResult.to_frame() columns scenario, status, reason, tflops, tflops_<anchor>, head_dim, causal.
    """
    anchors = [a for a in anchors if f"tflops_{a}" in frame.columns and frame[f"tflops_{a}"].notna().any()]
    methods = ["candidate"] + anchors
    groups = sorted({(int(d), bool(c)) for d, c in zip(frame["head_dim"], frame["causal"])}) if len(frame) else []
    dims = sorted({d for d, _ in groups}) or [0]
    counts = {g: int(((frame["head_dim"] == g[0]) & (frame["causal"].astype(bool) == g[1])).sum()) for g in groups}
    row_heights = [max([counts.get((d, c), 0) for c in (False, True)] + [1]) for d in dims]
    bar_in = 0.085 * len(methods) + 0.08
    height = sum(0.45 + n * bar_in for n in row_heights)
    fig = _figure(11.0, max(2.4, height), footer)
    axes = fig.subplots(len(dims), 2, squeeze=False, sharex=True, gridspec_kw={"height_ratios": row_heights})
    top = float(np.nanmax(frame[[c for c in ("tflops", *[f"tflops_{a}" for a in anchors]) if c in frame]]
                          .to_numpy(dtype=float))) if len(frame) else 1.0
    top = top if top == top and top > 0 else 1.0
    width = 0.8 / len(methods)
    for r, d in enumerate(dims):
        for c, causal in enumerate((False, True)):
            ax = axes[r][c]
            sub = frame[(frame["head_dim"] == d) & (frame["causal"].astype(bool) == causal)]
            ax.set_title(f"head_dim {d}, {'causal' if causal else 'non-causal'}", fontsize=FONT_SIZE - 1, loc="left")
            _style(ax)
            ax.grid(True, axis="x", color="#e6e6e6", linewidth=0.8)
            ax.grid(False, axis="y")
            if not len(sub):
                ax.set_yticks([])
                ax.text(0.5, 0.5, "no scenario", transform=ax.transAxes, ha="center", va="center",
                        color="#999999", fontsize=FONT_SIZE - 1)
                continue
            y = np.arange(len(sub))
            for i, method in enumerate(methods):
                column = "tflops" if method == "candidate" else f"tflops_{method}"
                values = sub[column].to_numpy(dtype=float)
                offset = (len(methods) - 1) / 2 * width - i * width
                ax.barh(y + offset, np.nan_to_num(values), height=width * 0.92, color=METHOD_COLORS[method],
                        label=candidate_label if method == "candidate" else METHOD_LABELS.get(method, method))
            for yi, row in zip(y, sub.itertuples()):
                if row.status != "passed":
                    ax.text(top * 0.01, yi + (len(methods) - 1) / 2 * width, f"{row.status}: {row.reason}"
                            if row.reason and row.reason != row.status else row.status, va="center",
                            fontsize=FONT_SIZE - 2, color="#c62828")
            ax.set_yticks(y, [_short_scenario(n, d, causal) for n in sub["scenario"]], fontsize=FONT_SIZE - 2)
            ax.set_ylim(row_heights[r] - 0.5, -0.5)     # same bar thickness in every panel, top-down
    for ax in axes[-1]:
        ax.set_xlabel("TFLOP/s", fontsize=FONT_SIZE - 1)
    axes[0][0].set_xlim(0, top * 1.05)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if not handles:
        for ax in np.ravel(axes):
            handles, labels = ax.get_legend_handles_labels()
            if handles:
                break
    if handles:
        fig.legend(handles, labels, loc="outside upper right", ncols=len(methods), fontsize=FONT_SIZE - 1,
                   frameon=False)
    fig.suptitle(title, fontsize=FONT_SIZE + 1, x=0.01, ha="left")
    return fig


def ceiling_fraction(frame, *, footer: str, ceiling_tflops: float, ceiling_label: str = "bf16 dense ceiling",
                     anchor: str = "fa3", title: str = "% of the measured ceiling") -> Figure:
    """Per scenario: the candidate's TFLOP/s as a share of the measured ceiling (bars), the anchor's as a mark."""
    n = len(frame)
    fig = _figure(5.6, max(2.0, 0.7 + 0.145 * n), footer)
    ax = fig.subplots()
    y = np.arange(n)
    share = 100 * frame["tflops"].to_numpy(dtype=float) / ceiling_tflops if n else np.array([])
    passed = (frame["status"] == "passed").to_numpy() if n else np.array([], dtype=bool)
    ax.barh(y, np.nan_to_num(np.where(passed, share, np.nan)), height=0.7, color=METHOD_COLORS["candidate"],
            label="candidate")
    column = f"tflops_{anchor}"
    if n and column in frame.columns:
        ax.scatter(100 * frame[column].to_numpy(dtype=float) / ceiling_tflops, y, marker="D", s=16,
                   color=METHOD_COLORS.get(anchor, "#e08a1e"), zorder=3, label=METHOD_LABELS.get(anchor, anchor))
    for yi, ok, status in zip(y, passed, frame["status"] if n else []):
        if not ok:
            ax.text(0.3, yi, status, va="center", fontsize=FONT_SIZE - 2, color="#c62828")
    ax.set_yticks(y, list(frame["scenario"]) if n else [], fontsize=FONT_SIZE - 3)
    ax.invert_yaxis()
    top = np.nanmax(np.concatenate([share, 100 * frame[column].to_numpy(dtype=float) / ceiling_tflops])) \
        if n and column in frame.columns else (np.nanmax(share) if n else 1.0)
    ax.set_xlim(0, max(5.0, float(top) * 1.12 if top == top else 5.0))
    ax.set_xlabel(f"% of {ceiling_tflops:.0f} TFLOP/s ({ceiling_label})", fontsize=FONT_SIZE - 1)
    fig.suptitle(title, fontsize=FONT_SIZE + 1, x=0.01, ha="left")
    _style(ax)
    ax.grid(True, axis="x", color="#e6e6e6", linewidth=0.8)
    ax.grid(False, axis="y")
    if n:
        fig.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="outside upper right", ncols=2)
    return fig


def ladder_geomeans(frame, *, footer: str, title: str = "Geomean speedup over FA3, per category") -> Figure:
    """Grouped bars on a log axis: one group per suite category (and all), one bar per kernel or anchor.

    frame: columns kernel, category, x_fa3 (kernels in the order given; anchors named FA2 / cuDNN are hatched),
    optionally timing ("device" | "per-call": per-call runs are labelled so in the legend).
    """
    kernels = list(dict.fromkeys(frame["kernel"])) if len(frame) else []
    categories = list(dict.fromkeys(frame["category"])) if len(frame) else []
    fig = _figure(8.4, 3.4, footer)
    ax = fig.subplots()
    width = 0.8 / max(len(kernels), 1)
    ladder_colors = ["#9e9e9e", "#7aa6d8", "#1f4e9c", "#0b2a5c", "#5e3c99"]
    x = np.arange(len(categories))
    rung = 0
    for i, kernel in enumerate(kernels):
        sub = frame[frame["kernel"] == kernel].set_index("category").reindex(categories)
        values = sub["x_fa3"].to_numpy(dtype=float)
        anchor = kernel in ("FA2", "cuDNN", "FA4")
        color = METHOD_COLORS.get(kernel.lower(), "#8c8c8c") if anchor else ladder_colors[rung % len(ladder_colors)]
        rung += 0 if anchor else 1
        per_call = "timing" in sub and (sub["timing"] == "per-call").any()   # measured before device timing
        bars = ax.bar(x - 0.4 + width * (i + 0.5), np.nan_to_num(values, nan=0.0), width * 0.92, color=color,
                      label=f"{kernel} (per-call timing)" if per_call else kernel, hatch="//" if anchor else None,
                      edgecolor="white" if anchor else None, linewidth=0)
        for bar, value in zip(bars, values):
            if value == value and value > 0:
                ax.text(bar.get_x() + bar.get_width() / 2, value * 1.08, f"{value:.2f}" if value < 10 else f"{value:.0f}",
                        ha="center", va="bottom", fontsize=FONT_SIZE - 3, rotation=90)
    ax.axhline(1.0, color="#e08a1e", linewidth=1.2, linestyle="--", label="FA3 = 1")
    ax.set_yscale("log")
    positive = frame["x_fa3"][frame["x_fa3"] > 0] if len(frame) else []
    low = float(np.nanmin(positive)) if len(positive) else 0.01
    high = float(np.nanmax(positive)) if len(positive) else 1.0
    ax.set_ylim(low / 2, max(high, 1.0) * 3)
    ax.set_xticks(x, [c if c != "all" else "all" for c in categories], fontsize=FONT_SIZE)
    ax.set_ylabel("geomean × FA3 (log)", fontsize=FONT_SIZE)
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    _style(ax)
    ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


# ---- evolution (notebooks/04_evolution): lineage rows of workbench.evolve -----------------------------------
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
