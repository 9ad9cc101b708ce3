"""HTML for the campaign widgets: pure functions from campaign state to strings (no widgets, no threads).

Everything a person sees in the chat and the table is built here, so it can be tested without a browser and
looks the same wherever it is shown. Text from the agent, tools and people is always escaped.
"""
from __future__ import annotations

import html
import json
import math
import re

from workbench.campaign.events import STOP_REASONS
from workbench.campaign.main_anchor import LEGACY_MAIN, label as anchor_label
from workbench.questions.policy import BENIGN_FLAGS
from workbench.ui.style import CSS  # noqa: F401  (re-exported: campaign_view and tests use render.CSS)

DEMO_LABEL = "demo recording: CPU stand-in evaluator, not GPU measurements"
HARNESS_TIMING = ("device time: CUDA events inside one CUDA-graph replay of the call, L2 flushed before every "
                  "replay, median of >= 5 reps (host call time apart)")
PER_CALL_TIMING = "CUDA events around the Python call (before device timing), L2 flushed, median of >= 5 reps"
STANDIN_TIMING = "invented by the stand-in evaluator (nothing was run)"
DTYPE = "bf16"
# One definition of "best" for the status bar, the table, the notebook and the README: the best kernel's figure as
# first timed when it became the best (it must beat the previous best by more than --min-gain). A later run of the
# same kernel has its own figure, shown as a re-timing: the best is not moved by timing noise.
BEST_MEANING = ("best: the all-correct geomean of the best kernel as first timed when it became the best; a kernel "
                "becomes the best only by beating the previous best by more than the campaign's min-gain (2 %)")
TOOL_RESULT_LINES = 14
TOOL_INPUT_CHARS = 90
TRIGGER_TEXT = {"stall": "stall", "claim": "claim", "suspicious": "suspicious gain", "human": "a person asked"}



def esc(text) -> str:
    return html.escape("" if text is None else str(text))


def inline(text: str) -> str:
    """Escaped text with `code` spans kept (agents write them a lot)."""
    return re.sub(r"`([^`\n]{1,200})`", r"<code>\1</code>", esc(text))


def one_line(text: str, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 1] + "…"


def fmt_x(value) -> str:
    return f"×{value:.3f}" if isinstance(value, (int, float)) and math.isfinite(value) else "–"


def fmt_num(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return format(value, spec)


def is_standin(gpu: str) -> bool:
    return "stand-in" in (gpu or "").lower()


# ---- transcript items ---------------------------------------------------------------------------------
def edit_summary(old: str, new: str, width: int = 34) -> str:
    """What an edit changes, in a few words: the differing words with one word of context before them."""
    a, b = (old or "").split(), (new or "").split()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    context = a[start - 1] + " " if start else ""
    removed = " ".join(a[start:len(a) - end]) or "(nothing)"
    added = " ".join(b[start:len(b) - end]) or "(nothing)"
    return f"{one_line(context + removed, width)} → {one_line(added, width)}"


def short_input(name: str, data: dict) -> str:
    data = data or {}
    if name == "edit_file":
        return f"{data.get('path', '')}: {edit_summary(data.get('old_string', ''), data.get('new_string', ''))}"
    if name == "write_file":
        return f"{data.get('path', '')} ({len((data.get('content') or '').encode())} bytes)"
    if name == "revert":
        return str(data.get("sha", ""))[:12]
    if name in ("read_file", "run_harness", "compile_report", "sass_summary", "list_files"):
        extra = {k: v for k, v in data.items() if k != "path"}
        return " ".join([str(data.get("path", ""))] + [f"{k}={v}" for k, v in extra.items()]).strip()
    return one_line(json.dumps(data), TOOL_INPUT_CHARS)


def vs_main(d: dict, kind: str = "geomean") -> tuple:
    """('x1.234', 'cuBLAS'): d's `kind` (geomean, best) figure against its main anchor and the anchor's label; a
    dict that names no main anchor (an older event, a status before any) is attention's: FA3."""
    if not d.get("main_anchor"):
        return fmt_x(d.get(f"{kind}_vs_fa3")), "FA3"
    return fmt_x(d.get(f"{kind}_vs_main")), esc(anchor_label(d["main_anchor"]))


def eval_chips(ev: dict, geomeans: bool = True) -> str:
    """Chips for a harness run: geomeans, failures, new best, flags."""
    chips = [f'<span class="wb-chip">{fmt_x(ev.get("geomean_vs_original"))} original · '
             '{} {}</span>'.format(*vs_main(ev))] if geomeans else []
    failed = ev.get("n_failed", 0)
    if failed:
        chips.append(f'<span class="wb-chip wb-fail">{failed} failing</span>')
    if ev.get("is_new_best"):
        chips.append('<span class="wb-chip wb-best">new best</span>')
    for flag in ev.get("flags", []):
        if flag.split(":")[0] not in BENIGN_FLAGS:
            chips.append(f'<span class="wb-chip wb-flag">{esc(flag)}</span>')
    return "".join(chips)


def tool_html(call: dict) -> str:
    """A collapsed block: name, short input, duration, result head (error in red)."""
    name = call["name"]
    args = esc(one_line(short_input(name, call.get("input") or {}), TOOL_INPUT_CHARS))
    done = "output" in call
    error = bool(call.get("is_error"))
    if not done:
        state = '<span class="wb-run">running…</span>'
    else:
        state = f'<span class="wb-dur">{call.get("duration_s", 0.0):.1f} s</span>'
        if error:
            state += ' <span class="wb-err">error</span>'
    chips = eval_chips(call["evaluation"]) if call.get("evaluation") else ""
    summary = (f'<summary><span class="wb-dur">#{call["tool_index"]}</span> <span class="wb-name">{esc(name)}</span>'
               f' <span class="wb-args">{args}</span> · {state}{chips}</summary>')
    body = ""
    if done:
        lines = (call.get("output") or "").splitlines()
        head = "\n".join(lines[:TOOL_RESULT_LINES])
        more = f"\n[… {len(lines) - TOOL_RESULT_LINES} more lines]" if len(lines) > TOOL_RESULT_LINES else ""
        cls = ' class="wb-errtext"' if error else ""
        body = f"<pre{cls}>{esc(head + more) or '(no output)'}</pre>"
    return f'<details class="wb-tool{" wb-error" if error else ""}">{summary}{body}</details>'


def banner_html(q: dict) -> str:
    """An intervention: trigger, source (person or bank, question id and layer), the question, why."""
    trigger = q.get("trigger", "")
    source = q.get("source", "")
    kind = "human" if source == "human" else trigger
    who = "from a person" if source == "human" else "from the question bank"
    ident = " ".join(filter(None, [q.get("question_id") or "", f"({q['layer']})" if q.get("layer") else ""]))
    head = (f'<span class="wb-bkind">Question · {esc(TRIGGER_TEXT.get(trigger, trigger))}</span> · {esc(who)}'
            + (f" · {esc(ident)}" if ident else ""))
    why = q.get("reason") or ""
    before = q.get("best_before")
    why_line = "; ".join(filter(None, [why, f"best before: {fmt_x(before)}" if before else ""]))
    return (f'<div class="wb-banner wb-{esc(kind)}" data-trigger="{esc(trigger)}" data-source="{esc(source)}">'
            f'<div class="wb-bhead">{head}</div><div class="wb-btext">{inline(q.get("text", ""))}</div>'
            + (f'<div class="wb-bwhy">{esc(why_line)}</div>' if why_line else "") + "</div>")


def note_html(text: str, level: str = "info") -> str:
    return f'<div class="wb-note wb-{esc(level)}">{inline(text)}</div>'


def turn_html(turn: dict) -> str:
    """One turn: the agent's text, its tool calls, then trigger notes and question banners."""
    parts = [f'<div class="wb-turn-head">turn {turn["turn"]}</div>']
    texts = [turn["text"][i] for i in sorted(turn["text"])]
    text = "\n\n".join(t for t in texts if t.strip())
    if text or not turn["final"]:
        cls = "wb-msg" + ("" if turn["final"] else " wb-streaming")
        parts.append(f'<div class="{cls}">{inline(text) or "…"}</div>')
    parts += [tool_html(c) for c in turn["tools"].values()]
    parts += [note_html(n["text"], n.get("level", "info")) for n in turn["notes"]]
    parts += [banner_html(q) for q in turn["questions"]]
    return f'<div class="wb-item wb-turn">{"".join(parts)}</div>'


def started_html(e: dict) -> str:
    verb = f"resumed after turn {e['turn']}" if e.get("resumed") else "started"
    model = f" ({esc(e['model'])})" if e.get("model") else ""
    return (f'<div class="wb-item wb-start">Campaign <b>{esc(e["campaign_id"])}</b> {verb}: '
            f'<code>{esc(e["kernel_path"])}</code> on suite <b>{esc(e["suite"])}</b>, mode <b>{esc(e["mode"])}</b>, '
            f'agent <b>{esc(e["agent"])}</b>{model}. Stops when <code>{esc(e["stop_expr"] or "(never)")}</code> '
            f'holds in a harness run, or a budget runs out.</div>')



def stop_reason(reason: str) -> str:
    return STOP_REASONS.get(reason, reason)


def stopped_html(e: dict) -> str:
    bad = e["reason"] in ("backend_error", "internal_error")
    usage = f", {e['tokens']:,} tokens" if e.get("tokens") else ""
    usage += f", ${e['cost_usd']:.2f}" if e.get("cost_usd") else ""
    detail = f" ({esc(e['detail'])})" if e.get("detail") and not e["reason"].startswith("budget_") else ""
    best_main, main = vs_main(e, "best")
    return (f'<div class="wb-item wb-stop{" wb-bad" if bad else ""}"><b>Stopped: {esc(stop_reason(e["reason"]))}'
            f'</b>{detail}. {e["turn"]} turns, {e["tool_calls"]} tool calls, {e["wall_s"]:.0f} s{usage}. Best '
            f'<b>{fmt_x(e.get("best_vs_original"))}</b> vs original, <b>{best_main}</b> vs {main} '
            f'(kernel <code>{esc((e.get("best_sha") or "none")[:12])}</code>).</div>')


def pending_html(text: str, state: str = "queued") -> str:
    what = ("waiting in the inbox: delivered to the agent at the next turn boundary" if state == "queued"
            else "not delivered: the campaign stopped first")
    return (f'<div class="wb-item wb-pending"><b>You asked</b> ({what}):<br>{inline(text)}</div>')


# ---- status bar -----------------------------------------------------------------------------------------
def status_html(s: dict) -> str:
    phase_cls = "wb-phase wb-stopped" if s.get("stopped") else "wb-phase"
    items = [f'<span class="{phase_cls}">{esc(s.get("phase", "not started"))}</span>']
    if s.get("campaign_id"):
        items.append(f'<span><span class="wb-k">campaign</span> <b>{esc(s["campaign_id"])}</b></span>')
    for key, label in (("mode", "mode"), ("agent", "agent"), ("suite", "suite")):
        if s.get(key):
            items.append(f'<span><span class="wb-k">{label}</span> {esc(s[key])}</span>')
    items.append(f'<span><span class="wb-k">turn</span> <b>{s.get("turn", 0)}</b></span>')
    items.append(f'<span><span class="wb-k">tool calls</span> <b>{s.get("tool_calls", 0)}</b></span>')
    items.append(f'<span><span class="wb-k">harness runs</span> <b>{s.get("runs", 0)}</b></span>')
    items.append(f'<span title="{esc(BEST_MEANING)}"><span class="wb-k">best</span> '
                 f'<b>{fmt_x(s.get("best_vs_original"))}</b> original · '
                 '<b>{}</b> {}</span>'.format(*vs_main(s, "best")))
    items.append(f'<span><span class="wb-k">questions</span> <b>{s.get("questions", 0)}</b></span>')
    if s.get("tokens"):
        items.append(f'<span><span class="wb-k">tokens</span> {s["tokens"]:,}'
                     + (f' · ${s["cost_usd"]:.2f}' if s.get("cost_usd") else "") + "</span>")
    return f'<div class="wb-status">{"".join(items)}</div>'


# ---- the per-scenario table -------------------------------------------------------------------------------
TABLE_COLUMNS = [("scenario", "scenario", "l"), ("status", "status", "l"), ("reason", "reason", "l"),
                 ("rel_l2_err", "rel err", ".1e"), ("us", "µs", ",.1f"), ("tflops", "TFLOP/s", ".1f"),
                 ("x_original", "× original", ".2f"), ("x_fa3", "× FA3", ".3f"), ("flags", "flags", "l")]
ROW_ORDER = {"failed": 0, "suspicious": 1, "unsupported": 2, "skipped": 3}


def row_class(status: str, flags: str) -> str:
    if status == "failed":
        return "failed"
    if status == "passed" and any(f and f.split(":")[0] not in BENIGN_FLAGS for f in (flags or "").split(",")):
        return "suspicious"
    return status


def ordered_rows(frame):
    """Failing rows first, then suspicious ones, unsupported, skipped, then the rest in suite order."""
    if not len(frame):
        return frame
    classes = [row_class(s, f) for s, f in zip(frame["status"], frame["flags"].fillna(""))]
    keys = [ROW_ORDER.get(c, 9) for c in classes]
    return frame.assign(_cls=classes, _key=keys).sort_values("_key", kind="stable")


def table_columns(main: str = LEGACY_MAIN) -> list:
    """TABLE_COLUMNS with the main anchor's speedup where FA3's stands (x_cublas, '× cuBLAS' for the GEMM)."""
    return [(f"x_{main}", f"× {esc(anchor_label(main))}", spec) if key == "x_fa3" else (key, name, spec)
            for key, name, spec in TABLE_COLUMNS]


def table_html(frame, head: str = "", main: str = LEGACY_MAIN) -> str:
    """The per-scenario table of one harness run (SuiteResult.to_frame()), its speedups against the original and
    `main` (the problem's main anchor)."""
    if frame is None or not len(frame):
        body = '<div class="wb-legend">No harness run yet: the table fills in after the first run_harness.</div>'
        return f'<div class="wb-table-head">{head}</div>{body}'
    rows, columns = [], table_columns(main)
    for r in ordered_rows(frame).to_dict("records"):
        cells = []
        for key, _, spec in columns:
            value = r.get(key)
            if spec == "l":
                text = "" if value is None or value != value else str(value)
                if key == "reason" and r.get("detail"):
                    cells.append(f'<td class="wb-l" title="{esc(r["detail"])}">{esc(text)}</td>')
                    continue
                cls = {"status": "wb-l wb-status-cell", "flags": "wb-l wb-flags"}.get(key, "wb-l")
                cells.append(f'<td class="{cls}">{esc(text.replace(",", ", "))}</td>')
            else:
                cls = ""
                if key in ("x_original", f"x_{main}") and isinstance(value, (int, float)) and value == value:
                    cls = ' class="wb-good"' if value >= 1.0 else (' class="wb-bad"' if key == "x_original" else "")
                cells.append(f"<td{cls}>{esc(fmt_num(value, spec))}</td>")
        rows.append(f'<tr class="wb-{esc(r["_cls"])}">{"".join(cells)}</tr>')
    header = "".join(f'<th class="wb-l">{label}</th>' if spec == "l" else f"<th>{label}</th>"
                     for _, label, spec in columns)
    legend = ('<div class="wb-legend">rows: <span style="background:#fde2e2"></span>failing '
              '<span style="background:#fff0cc"></span>suspicious flag '
              '<span style="background:#eef0f3"></span>unsupported / skipped, then the rest in suite order; '
              'hover a reason for its detail</div>')
    return (f'<div class="wb-table-head">{head}</div><div class="wb-table-wrap"><table class="wb-table">'
            f'<thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>{legend}')


def run_head(ev: dict) -> str:
    """One line above the table: which run it is and how it went."""
    counts = ev.get("counts", {})
    parts = [f"<b>Harness run #{ev['run']}</b> (tool call {ev['tool_index']}, turn {ev['turn']})",
             f"kernel <code>{esc(ev['kernel_sha'][:12])}</code>",
             f"{counts.get('passed', 0)} passed, {counts.get('failed', 0)} failed"
             + (f", {counts['unsupported']} unsupported" if counts.get("unsupported") else "")
             + (f", {counts['static_only']} not run (no GPU)" if counts.get("static_only") else ""),
             f"geomean {fmt_x(ev.get('geomean_vs_original'))} original · " + "{} {}".format(*vs_main(ev))]
    if ev.get("retimed_best"):
        parts.append(f"the best kernel re-timed: this run's own figure; best stays {fmt_x(ev.get('best'))} "
                     "(its first timing)")
    return " · ".join(parts) + eval_chips({k: v for k, v in ev.items() if k != "n_failed"}, geomeans=False)


# ---- figure footers ------------------------------------------------------------------------------------
def versions_text(versions: dict) -> str:
    keep = []
    for key, value in (versions or {}).items():
        if key in ("sms", "timing"):     # the timing method has its own part of the footer
            continue
        keep.append(f"{key} {value}")
    return ", ".join(keep) or "not recorded"


def timing_text(versions: dict) -> str:
    """Results recorded since device timing carry its version in `versions["timing"]`; older ones do not."""
    version = (versions or {}).get("timing")
    return f"{HARNESS_TIMING}, {version}" if version else PER_CALL_TIMING


def footer_text(gpu: str, versions: dict, suite: str = "", kernel_sha: str = "", extra: str = "") -> str:
    """What produced the numbers of a figure: GPU, dtype, versions, timing method (and the demo label)."""
    standin = is_standin(gpu)
    parts = [DEMO_LABEL] if standin else []
    parts += [f"GPU: {gpu or 'not recorded'}", f"dtype {DTYPE}", f"versions: {versions_text(versions)}",
              f"timing: {STANDIN_TIMING if standin else timing_text(versions)}"]
    if suite:
        parts.append(f"suite {suite}")
    if kernel_sha:
        parts.append(f"kernel {kernel_sha[:12]}")
    if extra:
        parts.append(extra)
    return " · ".join(parts)


# ---- the runs table (notebook's last cell) ----------------------------------------------------------------
RUNS_COLUMNS = [("run", "run", "d"), ("turn", "turn", "d"), ("tool_call", "tool call", "d"), ("kernel", "kernel", "l"),
                ("x_original", "× original", "x"), ("x_fa3", "× FA3", "x"), ("all_correct", "all correct", "b"),
                ("failing", "failing", "d"), ("best_so_far", "best so far", "x"), ("new_best", "new best", "b"),
                ("flags", "flags", "l"), ("question", "question after it", "l")]


class HtmlTable:
    """An HTML fragment that Jupyter shows as HTML (and a terminal as its text)."""

    def __init__(self, html_: str):
        self.html = html_

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return re.sub(r"<[^>]+>", " ", self.html)


def _cell(value, kind: str) -> str:
    missing = value is None or (isinstance(value, float) and not math.isfinite(value)) or value == ""
    if kind == "x":
        return fmt_x(value)
    if kind == "b":
        return "–" if missing else ("yes" if value else "no")
    if kind == "d":
        return "–" if missing else f"{int(value)}"
    return "–" if missing else str(value)


def runs_table_html(frame) -> str:
    """One row per harness run, no raw None/NaN: '–' where nothing was measured."""
    if frame is None or not len(frame):
        return '<div class="wb-root"><div class="wb-legend">No harness run yet.</div></div>'
    # the main anchor's column: x_fa3 for attention, x_cublas for the GEMM (runs_frame names it by the anchor)
    main = next((c[2:] for c in frame.columns if c.startswith("x_") and c != "x_original"), LEGACY_MAIN)
    columns = [(f"x_{main}", f"× {esc(anchor_label(main))}", kind) if key == "x_fa3" else (key, name, kind)
               for key, name, kind in RUNS_COLUMNS]
    head = "".join(f'<th class="wb-l">{label}</th>' if kind == "l" else f"<th>{label}</th>"
                   for _, label, kind in columns)
    rows = []
    for r in frame.to_dict("records"):
        cells = "".join(f'<td class="wb-l">{esc(_cell(r.get(k), kind))}</td>' if kind == "l"
                        else f"<td>{esc(_cell(r.get(k), kind))}</td>" for k, _, kind in columns)
        rows.append(f'<tr class="{"wb-failed" if r.get("failing") else ""}">{cells}</tr>')
    return (f'{CSS}<div class="wb-root"><div class="wb-table-wrap"><table class="wb-table"><thead><tr>{head}</tr>'
            f'</thead><tbody>{"".join(rows)}</tbody></table></div>'
            f'<div class="wb-legend">{esc(BEST_MEANING)}</div></div>')
