"""The campaign widgets (ipywidgets 8): a chat on the left, live figures on the right, the table below.

    view = CampaignView(bank=load_bank(), demo_label=DEMO_LABEL)
    display(view)                     # or view.widget

This module only builds widgets; it starts no thread and never changes a value after construction. The
controller (controller.py) owns every update, from its own thread, and wires the buttons to its queue.
"""
from __future__ import annotations

import struct
import zlib

import ipywidgets as w

from workbench.ui.render import CSS, esc, status_html, table_html

TRANSCRIPT_HEIGHT = "660px"
ANY = "any"


def _section(title: str) -> w.HTML:
    return w.HTML(f'<div class="wb-section">{esc(title)}</div>')


def _blank_png(width: int = 48, height: int = 1) -> bytes:
    """A fully transparent PNG: what an Image holds before its first figure. An Image without bytes is a
    broken-image icon, and hiding it instead races the browser (layout and value arrive as separate messages)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + b"\x00\x00\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


BLANK_PNG = _blank_png()


def _image(max_width: str = "") -> w.Image:
    layout = w.Layout(width="100%", object_fit="contain")
    if max_width:
        layout.max_width = max_width
    return w.Image(value=BLANK_PNG, format="png", layout=layout)


def _placeholder(text: str) -> w.HTML:
    return w.HTML(f'<div class="wb-root wb-placeholder">{esc(text)}</div>')


def show_image(image: w.Image, png: bytes, placeholder: w.HTML | None = None) -> None:
    """Give an Image its figure and hide the placeholder text that held its place (inside hold_sync)."""
    image.value = png
    if placeholder is not None:
        placeholder.layout.display = "none"


def bank_options(bank, trigger: str = "") -> list:
    """(label, question id) pairs for the dropdown: questions for `trigger` (or any trigger) first."""
    chosen = [q for q in bank if not trigger or q.trigger in (trigger, ANY)]
    chosen.sort(key=lambda q: (q.trigger != trigger, q.layer, q.id))
    return [(f"{q.id} [{q.trigger} · {q.layer}] {q.text}", q.id) for q in chosen]


class CampaignView:
    def __init__(self, bank=(), demo_label: str = "", title: str = "Campaign"):
        self.bank = list(bank)
        self.style = w.HTML(CSS)
        self.demo = w.HTML(f'<div class="wb-root wb-demo">{esc(demo_label)}</div>' if demo_label else "",
                           layout=w.Layout(display="" if demo_label else "none"))
        self.status = w.HTML(f'<div class="wb-root">{status_html({})}</div>')
        self.status.add_class("wb-status-widget")

        # chat: newest item first in `children`, shown bottom-up, so the view stays at the latest message
        self.transcript = w.VBox([], layout=w.Layout(height=TRANSCRIPT_HEIGHT, overflow="auto",
                                                     flex_flow="column-reverse", border="1px solid #dde2ea",
                                                     padding="6px 8px", width="auto"))
        self.transcript.add_class("wb-transcript")
        self.input = w.Textarea(placeholder="Ask the agent a question: it goes into the inbox and is put to the "
                                "agent at the next turn boundary (and recorded as an intervention).",
                                layout=w.Layout(width="auto", height="62px"))
        self.send = w.Button(description="Send", button_style="primary", icon="paper-plane",
                             tooltip="put the question in the campaign's inbox", layout=w.Layout(width="110px"))
        self.stop = w.Button(description="Stop", button_style="danger", icon="stop",
                             tooltip="end the campaign at the next turn boundary", layout=w.Layout(width="110px"))
        self.trigger = w.HTML('<span class="wb-legend">bank questions for: any trigger</span>')
        self.bank_pick = w.Dropdown(options=bank_options(self.bank),
                                    layout=w.Layout(flex="1 1 0%", width="auto", min_width="0"))
        self.ask_bank = w.Button(description="Ask from bank", icon="question-circle",
                                 tooltip="put the chosen bank question in the inbox, as a person's question",
                                 layout=w.Layout(width="150px"))
        chat = w.VBox([_section("Chat with the agent"), self.transcript, self.input,
                       w.HBox([self.send, self.stop, self.trigger], layout=w.Layout(align_items="center")),
                       w.HBox([self.bank_pick, self.ask_bank], layout=w.Layout(width="auto"))],
                      layout=w.Layout(width="50%", min_width="420px", padding="0 10px 0 0"))

        # until the first harness run the images hold a transparent strip (never no bytes: a broken-image icon)
        # and a placeholder line says when the figures come
        self.progress = _image()
        self.ceiling = _image()
        self.figures_note = _placeholder("The progress plot and the ceiling share appear after the first harness run.")
        self.progress_axes = w.HTML("")      # the progress plot's axes in words (screen readers, tests)
        figures = w.VBox([_section("Progress"), self.figures_note, self.progress, self.progress_axes, self.ceiling],
                         layout=w.Layout(width="50%"))

        self.table = w.HTML(f'<div class="wb-root">{table_html(None)}</div>')
        self.table.add_class("wb-table-widget")
        self.anchors = _image(max_width="1200px")
        self.anchors_note = _placeholder("The best candidate's TFLOP/s against the anchors appear after the first "
                                         "all-correct harness run.")
        self.widget = w.VBox([
            self.style, self.demo, self.status,
            w.HBox([chat, figures], layout=w.Layout(width="100%", margin="8px 0 0 0")),
            _section("Latest harness run, per scenario"), self.table,
            _section("Best candidate against the anchors"), self.anchors_note, self.anchors,
        ], layout=w.Layout(width="100%"))
        self.widget.add_class("wb-root")

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    @property
    def controls(self) -> list:
        return [self.input, self.send, self.stop, self.bank_pick, self.ask_bank]
