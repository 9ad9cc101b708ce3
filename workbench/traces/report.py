"""`workbench report TRACES... -o report.html`: the intervention statistics as one self-contained HTML page.

Tables and PNG plots (inlined as base64, so the file can be mailed or attached to an issue): the best-so-far curve
with the steering messages marked, what preceded each gain, message classes, re-added lines over time, the
experiment arms side by side, and the rules every number was computed with (analysis.py).
"""
from __future__ import annotations

import argparse
import base64
import html
import re
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import pandas as pd

from workbench import plots
from workbench.traces import analysis as an
from workbench.traces import edits, rules
from workbench.traces.integrity import session_warnings
from workbench.traces.writer import write_text_durable

MAX_TABLE_ROWS = 200        # longer tables show their first rows and say how many were left out
MESSAGE_CHARS = 180
CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d1d1d; margin: 0;
       background: #fafafa; line-height: 1.45; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 4px; } h2 { font-size: 19px; margin: 34px 0 8px; border-bottom: 1px solid #ddd;
padding-bottom: 4px; } h3 { font-size: 15px; margin: 18px 0 6px; }
p, li { font-size: 14px; max-width: 980px; } .muted { color: #666; font-size: 13px; }
.note { background: #fff7e0; border-left: 4px solid #e0a800; padding: 8px 12px; font-size: 14px; max-width: 980px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 14px 0; }
.card { border: 1px solid #e1e1e1; border-radius: 6px; padding: 8px 14px; min-width: 120px; background: #fcfcfc; }
.card .v { font-size: 21px; font-weight: 600; } .card .k { font-size: 12px; color: #555; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 4px; }
th, td { padding: 4px 9px; border-bottom: 1px solid #e8e8e8; vertical-align: top; }
th { background: #f2f2f2; text-align: left; font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.t { max-width: 420px; min-width: 200px; } td.s { white-space: nowrap; }
code { font-size: 13px; background: #f3f3f3; padding: 0 3px; border-radius: 3px; } tr:nth-child(even) td { background: #fbfbfb; }
.scroll { overflow-x: auto; max-width: 100%; }
img { max-width: 100%; height: auto; display: block; margin: 8px 0; border: 1px solid #eee; }
.pill { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; color: #fff; }
details { margin: 6px 0; } summary { cursor: pointer; font-size: 14px; }
"""


class ReportError(ValueError):
    pass


def _version(package: str) -> str:
    if package == "workbench":
        import workbench
        return getattr(workbench, "__version__", "?")
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def _fmt(value, column: str = "") -> tuple[str, bool]:
    """Cell text and whether it is numeric (right-aligned)."""
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return "", True
    if isinstance(value, (bool,)) or str(type(value)).endswith("bool_'>"):
        return ("yes" if value else "no"), False
    if isinstance(value, (int,)) or (hasattr(value, "dtype") and "int" in str(getattr(value, "dtype", ""))):
        return f"{int(value):,}", True
    if isinstance(value, float):
        if "rate" in column or "share" in column:
            return f"{100 * value:.1f} %", True
        if "cost" in column:
            return f"${value:.4f}", True
        if "pct" in column:
            return f"{value:+.1f} %", True
        if "geomean" in column or "best" in column:
            return f"{value:.3f}", True
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}", True
    if isinstance(value, pd.Timestamp):
        return value.strftime("%Y-%m-%d %H:%M:%S"), False
    text = str(value)
    return (text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " …"), False


def _table(df: pd.DataFrame, columns: dict | None = None, limit: int = MAX_TABLE_ROWS) -> str:
    """HTML table of df; columns maps column -> header (and order)."""
    columns = columns or {c: c for c in df.columns}
    shown = df.head(limit)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in columns.values())
    body = []
    for _, row in shown.iterrows():
        cells = []
        for col in columns:
            text, numeric = _fmt(row.get(col), col)
            if col in ("preceded_by", "cls") and text in plots.CLASS_COLORS:
                ink = "#333" if text in ("nothing", "other") else "#fff"
                cells.append(f'<td><span class="pill" style="background:{plots.CLASS_COLORS[text]};color:{ink}">'
                             f"{html.escape(text)}</span></td>")
            else:
                cls = "n" if numeric else ("t" if len(text) > 40 else "s" if len(text) <= 20 else "")
                cells.append(f'<td class="{cls}">{html.escape(text)}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="muted">first {limit} of {len(df):,} rows shown</p>' if len(df) > limit else "")
    if df.empty:
        return '<p class="muted">(none)</p>'
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(body)}</table></div>{more}'


def _img(fig, alt: str) -> str:
    data = base64.b64encode(plots.to_png(fig)).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _inline(text: str) -> str:
    """The docstring's light markup (**bold**, *italic*, `code`) as HTML."""
    text = html.escape(text)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    text = re.sub(r"`(.+?)`", r"<code>\1</code>", text)
    return re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"<i>\1</i>", text)


def _rules_html(doc: str) -> str:
    """Paragraphs of the analysis docstring (after its first), with its bullet lists, as HTML."""
    out = []
    for para in doc.strip().split("\n\n")[1:]:
        blocks = []             # ("p", [lines]) or ("li", [lines])
        for line in para.splitlines():
            stripped = line.strip()
            if stripped.startswith("* "):
                blocks.append(("li", [stripped[2:]]))
            elif blocks and (blocks[-1][0] == "p" or line.startswith(" ")):
                blocks[-1][1].append(stripped)      # continuation of a paragraph or an indented bullet
            else:
                blocks.append(("p", [stripped]))
        html_, in_list = "", False
        for kind, lines in blocks:
            if kind == "li" and not in_list:
                html_, in_list = html_ + "<ul>", True
            if kind == "p" and in_list:
                html_, in_list = html_ + "</ul>", False
            tag = "li" if kind == "li" else "p"
            html_ += f"<{tag}>{_inline(' '.join(lines))}</{tag}>"
        out.append(html_ + ("</ul>" if in_list else ""))
    return "".join(out)


def _card(value, key: str) -> str:
    return f'<div class="card"><div class="v">{html.escape(str(value))}</div><div class="k">{html.escape(key)}</div></div>'


def _pct(x) -> str:
    return "n/a" if x is None or pd.isna(x) else f"{100 * x:.0f} %"


def _footer(a: an.Analysis, roots) -> str:
    gpus = ", ".join(a.overall.get("gpus") or []) or "not recorded"
    sources = ", ".join(f"{k} ×{v}" for k, v in a.sessions["source"].fillna("?").value_counts().items())
    return (f"traces: {', '.join(str(r) for r in roots)} ({sources}) · GPU: {gpus} · dtype: bf16 · speedup: "
            f"harness geomean of per-scenario median-time ratios as recorded · workbench "
            f"{_version('workbench')}, duckdb {_version('duckdb')}, matplotlib {_version('matplotlib')}")


def _provenance(a: an.Analysis) -> str:
    s = a.sessions
    parts = []
    for source, group in s.groupby(s["source"].fillna("?")):
        kind = {"claude_code": "imported from Claude Code transcripts", "codex": "imported from Codex CLI rollouts",
                "workbench": "recorded by workbench campaigns"}.get(source, f"source {source}")
        parts.append(f"{len(group)} session(s) {kind}")
    text = "; ".join(parts)
    fixtures = s["source_file"].fillna("").str.contains("tests/fixtures/").any()
    note = ""
    if fixtures:
        note = ('<p class="note">These sessions are the hand-made <b>test fixtures</b> (tests/fixtures/transcripts),'
                " imported with <code>workbench import</code>: they exercise every statistic with counts checked by "
                "hand, but they are not a real campaign. Numbers here say nothing about agents.</p>")
    return f"<p>{html.escape(text)}.</p>{note}"


def _import_tallies(a: an.Analysis) -> str:
    """The import tally of every session: what was read, and what was set aside and why."""
    intro = ("<p>Lines read from the session's files; <i>malformed</i>: not JSON (skipped, listed by "
             "<code>workbench import</code>); <i>duplicate</i>: a line seen before (resumed sessions copy their "
             "history); <i>ignored</i>: kinds of line without a row (summaries, snapshots, UI echoes); <i>repeated "
             "usage</i>: streamed lines of one API message, counted once; <i>injected</i>: blocks the client put "
             "into the user's turn (IDE context, reminders, slash commands, hook output, interrupt markers, images "
             "without text), never counted as a person's message; <i>harness results</i>: runs found in tool "
             "output, and how many of them were a run already counted (a JSON read-back, a quote).</p>")
    return intro + _table(a.sessions, {
        "session_id": "session", "source": "source", "import_files": "files", "import_lines": "lines",
        "malformed_lines": "malformed", "duplicate_lines": "duplicate", "ignored_lines": "ignored",
        "usage_duplicates": "repeated usage", "orphan_results": "orphan results", "injected_blocks": "injected",
        "injected_kinds": "injected, by kind", "harness_sightings": "harness results",
        "harness_seen_again": "seen again", "harness_runs": "runs"})


def _warnings_html(warnings: list[str]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
    return (f'<div class="note"><b>{len(warnings)} session(s) look incomplete</b>; their numbers below may be '
            f"too low:<ul>{items}</ul></div>")


def build_report(roots, out, gain_threshold: float = an.GAIN_THRESHOLD, title: str | None = None,
                 progress=None) -> Path:
    say = progress or (lambda _m: None)
    roots = [Path(r) for r in roots]
    started = time.perf_counter()
    a = an.analyze(roots, gain_threshold=gain_threshold, progress=say)
    footer = _footer(a, roots)
    warnings = session_warnings(roots)
    for line in warnings:
        say(f"warning: {line}")
    o = a.overall
    say("drawing figures")

    # best-so-far curves with the steering messages marked
    runs = a.runs.rename(columns={"tool_index": "x"})
    marks = a.steering.assign(x=a.steering["calls_before"], kind=a.steering["cls"])
    metrics = set(a.runs.loc[a.runs["scored"], "metric"])
    metric_label = {"geomean_vs_fa3": "geomean × FA3", "geomean_vs_original": "geomean × original"}.get(
        next(iter(metrics)), "geomean") if len(metrics) == 1 else "geomean (× FA3, else × original)"
    n_curves = runs["session_id"].nunique()
    fig_best = plots.best_so_far(runs, marks, footer=footer, metric_label=metric_label,
                                 title=f"Best geomean so far ({min(n_curves, 12)} of {n_curves} sessions, "
                                       "most harness runs first)" if n_curves > 12 else "Best geomean so far")
    fig_attr = plots.gain_attribution(a.attribution, footer=footer,
                                      title=f"What preceded each gain (≥ {100 * gain_threshold:.0f} % over the best)")
    counts = pd.crosstab(a.steering["session_id"], a.steering["cls"]).reindex(columns=list(an.CLASSES),
                                                                              fill_value=0)
    group_label = "session"
    if len(counts) > 24:        # too many bars to read: one bar per arm instead
        arm_of = a.sessions.set_index("session_id")["arm"].fillna("(none)")
        counts = counts.groupby(arm_of.reindex(counts.index)).sum()
        group_label = "arm"
    fig_cls = plots.message_classes(counts, footer=footer, title=f"Human messages by class, per {group_label}")
    fig_readd = plots.readded_over_time(a.edits.rename(columns={"tool_index": "x"}), footer=footer)

    say("writing HTML")
    built = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cards = "".join([
        _card(o["sessions"], "sessions"), _card(o["human_messages"], "human messages"),
        _card(o["questions"], "questions"), _card(f"{o['tool_calls']:,}", "tool calls"),
        _card(o["harness_runs"], "harness runs"), _card(o["gains"], f"gains (≥ {100 * gain_threshold:.0f} %)"),
        _card(_pct(o.get("share_gains_after_question")), "gains after a question"),
        _card(_pct(o.get("share_gains_after_information")), "gains after information"),
        _card(_pct(o["readded_rate"]), "re-added lines"),
        _card(f"{o['input_tokens'] + o['output_tokens'] + o['cache_read_tokens'] + o['cache_write_tokens']:,}",
              "tokens (all kinds)"),
        _card(f"${o['cost_usd']:.2f}", "cost (list prices)")])
    gains = a.gains.copy()
    gains["session_id"] = gains["session_id"].astype(str)
    q2g = a.question_to_gain
    sections = [
        f"<h1>{html.escape(title or 'Intervention statistics')}</h1>",
        f'<p class="muted">built {built} from {", ".join(html.escape(str(r)) for r in roots)} '
        f"in {time.perf_counter() - started:.1f} s · gain threshold {100 * gain_threshold:.0f} %</p>",
        _provenance(a), _warnings_html(warnings), f'<div class="cards">{cards}</div>',
        "<h2>Best geomean so far</h2>",
        "<p>Each dot is one harness run; the black step is the best so far; stars are gain events. Dashed lines "
        "are the messages that steered the agent, coloured by class.</p>", _img(fig_best, "best so far"),
        "<h2>Gain events and what preceded them</h2>",
        f"<p>{o['gains']} gain event{'' if o['gains'] == 1 else 's'}; {o['gains_moved_or_rejected']} followed a message that moved the agent to "
        "another layer or rejected a limit it had claimed.</p>",
        _img(fig_attr, "gain attribution"),
        _table(a.attribution, {"preceded_by": "preceded by", "gains": "gains", "share": "share"}),
        _table(gains, {"session_id": "session", "tool_index": "tool call", "previous_best": "best before",
                       "geomean": "new best", "gain_pct": "gain", "preceded_by": "preceded by",
                       "message_text": "message", "message_layer": "message layer", "agent_layer": "agent layer",
                       "moved_layer": "moved layer", "rejected_limit": "rejected limit",
                       "seconds_since_message": "seconds after message",
                       "calls_since_message": "tool calls after message"}),
        "<h2>Questions</h2>",
        f"<p>{o['questions']} questions; {o['questions_followed_by_gain']} were followed by a gain later in their "
        f"session — median {o['median_seconds_question_to_gain']:.0f} s and "
        f"{o['median_calls_question_to_gain']:.1f} tool calls to it.</p>"
        if o["questions_followed_by_gain"] else f"<p>{o['questions']} questions; none was followed by a gain.</p>",
        "<h3>Layer each question points at</h3>", _table(a.layers),
        "<h3>From each question to the next gain</h3>",
        _table(q2g, {"session_id": "session", "text": "question", "layer": "layer",
                     "seconds_to_gain": "seconds to gain", "calls_to_gain": "tool calls to gain"}),
        "<h2>Message classes</h2>", _img(fig_cls, "message classes"),
        "<details><summary>Every steering message</summary>",
        _table(a.steering, {"session_id": "session", "origin": "from", "cls": "class", "layer": "layer",
                            "agent_layer": "agent layer", "moved_layer": "moved", "rejected_limit": "rejected limit",
                            "text": "text"}), "</details>",
        "<h2>Re-added lines</h2>",
        f"<p>{o['lines_readded']:,} of {o['lines_added']:,} significant added lines ({_pct(o['readded_rate'])}) are "
        "byte-identical to a line deleted earlier in the same session.</p>", _img(fig_readd, "re-added lines"),
        "<h2>Experiment arms side by side</h2>",
        "<p>Sessions grouped by <code>sessions.arm</code>; tools-only (no interventions) first.</p>",
        "<p>A session's best counts under × FA3 when any of its runs timed FA3, else under × original; the two "
        "metrics are never put in one column. <i>on × FA3</i> / <i>on × original</i>: sessions scored so.</p>",
        _table(a.arms, {"arm": "arm", "sessions": "sessions", "human_messages": "human msgs",
                        "questions": "questions", "tool_calls": "tool calls", "harness_runs": "harness runs",
                        "sessions_vs_fa3": "on × FA3", "best_vs_fa3_median": "best × FA3 (median)",
                        "best_vs_fa3_max": "best × FA3 (max)", "sessions_vs_original": "on × original",
                        "best_vs_original_median": "best × original (median)",
                        "best_vs_original_max": "best × original (max)", "gains": "gains",
                        "gains_after_question": "gains after question", "readded_rate": "re-added rate",
                        "cost_usd": "cost"}),
        "<h2>Sessions</h2>",
        _table(a.sessions, {"session_id": "session", "source": "source", "arm": "arm", "model": "model",
                            "human_messages": "human", "questions": "questions", "tool_calls": "tool calls",
                            "tool_errors": "errors", "harness_runs": "runs", "best_vs_fa3": "best × FA3",
                            "best_vs_original": "best × original", "gains": "gains",
                            "input_tokens": "input tok", "output_tokens": "output tok",
                            "cache_read_tokens": "cache read", "cost_usd": "cost", "readded_rate": "re-added"}),
        "<h3>How each transcript was read</h3>", _import_tallies(a),
        "<h2>How these numbers are computed</h2>",
        "<details open><summary>Rules (workbench/traces/analysis.py, rules.py, edits.py)</summary>",
        _rules_html("\n\n".join(m.__doc__ for m in (an, rules, edits))), "</details>",
        f'<p class="muted">{html.escape(footer)}</p>',
    ]
    page = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title or 'Intervention statistics')}</title><style>{CSS}</style></head>"
            f"<body><main>{''.join(sections)}</main></body></html>")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_durable(out, page)          # a kill leaves the previous report, never a torn one
    return out


def report_main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="workbench report", description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="trace roots (e.g. data/traces)")
    parser.add_argument("-o", "--out", type=Path, default=Path("report.html"))
    parser.add_argument("--threshold", type=float, default=an.GAIN_THRESHOLD,
                        help="a gain is a new best geomean at least this much over the best so far (0.05 = 5 %%)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()

    def say(msg):
        print(f"workbench report: [{time.perf_counter() - t0:5.1f} s] {msg}", file=sys.stderr, flush=True)

    try:
        out = build_report(args.traces, args.out, args.threshold, args.title, progress=say)
    except an.TraceError as err:
        print(f"workbench report: {err}", file=sys.stderr)
        return 2
    say(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


main = report_main
