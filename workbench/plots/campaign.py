"""Figures of one campaign (notebook widgets) and of the kernel ladder: one harness result at a time."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from workbench.plots.base import FONT_SIZE, _empty_note, _figure, _style

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
        if len(bad):
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
    _readable_limits(ax, runs, marks)
    ax.set_xlabel("tool calls", fontsize=FONT_SIZE)
    ax.set_ylabel("geomean speedup vs original", fontsize=FONT_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.ticklabel_format(axis="y", useOffset=False)        # 1.0004 reads as 1.0004, not "+1" and 0.0004
    ax.set_title(title, fontsize=FONT_SIZE + 1, loc="left")
    _style(ax)
    if len(runs) or len(marks):
        ax.legend(fontsize=FONT_SIZE - 2, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        _empty_note(ax, "no harness run yet")
    return fig


MIN_X_SPAN = 4.0            # tool calls: one run still gets a few integer ticks, not ticks 0.97 0.98 ...
MIN_Y_SPAN = 0.1            # geomean: a flat line of near-equal runs is not stretched over the whole axes


def _readable_limits(ax, runs, marks) -> None:
    """Limits that give the first runs readable ticks: at least MIN_X_SPAN tool calls and MIN_Y_SPAN of geomean
    around the data (and the 1.0 line)."""
    xs = [float(x) for x in list(runs["x"] if len(runs) else []) + list(marks["x"] if len(marks) else [])]
    if xs and max(xs) - min(xs) < MIN_X_SPAN:
        mid = (max(xs) + min(xs)) / 2
        lo = max(0.0, mid - MIN_X_SPAN / 2)
        ax.set_xlim(lo - 0.3, lo + MIN_X_SPAN + 0.3)
    ys = [1.0] + [float(y) for col in ("geomean", "best") if len(runs) for y in runs[col] if y == y]
    if max(ys) - min(ys) < MIN_Y_SPAN:
        mid = (max(ys) + min(ys)) / 2
        ax.set_ylim(mid - MIN_Y_SPAN / 2 - 0.02, mid + MIN_Y_SPAN / 2 + 0.02)


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
                ax.text(bar.get_x() + bar.get_width() / 2, value * 1.08,
                        f"{value:.2f}" if value < 10 else f"{value:.0f}",
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
