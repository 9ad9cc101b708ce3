"""What every figure shares: the footer that says where its numbers came from, the axes style, PNG bytes."""
from __future__ import annotations

import io
import textwrap

from matplotlib.figure import Figure

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


def _empty_note(ax, text: str) -> None:
    """A grey line in the middle of an axes that has nothing to plot yet."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#888888", fontsize=FONT_SIZE)


def tick_summary(ax) -> str:
    """The tick labels an axes shows (after the figure was drawn, e.g. by to_png), as one line a person or a test
    can read without the picture: 'x (tool calls): 0, 1, 2 · y (geomean): 0.96, 1.00'. An offset ('+1') is named."""
    parts = []
    for name, axis, (lo, hi) in (("x", ax.xaxis, ax.get_xlim()), ("y", ax.yaxis, ax.get_ylim())):
        shown = [t.label1.get_text().replace("\u2212", "-") for t in axis.get_major_ticks()
                 if min(lo, hi) <= t.get_loc() <= max(lo, hi) and t.label1.get_visible()]
        offset = axis.get_offset_text().get_text()
        parts.append(f"{name} ({axis.get_label().get_text()}): {', '.join(shown)}"
                     + (f" offset {offset}" if offset else ""))
    return " · ".join(parts)
