"""`workbench report TRACES... -o report.html`: the intervention statistics as one self-contained HTML page.

Tables and PNG plots (inlined as base64, so the file can be mailed or attached to an issue): the best-so-far curve
with the steering messages marked, what preceded each gain, message classes, re-added lines over time, the
experiment arms side by side, and the rules every number was computed with (analysis.py).

The page has one section per data source (traces/sources.py): recorded campaigns, imported transcripts, and
test fixtures, demos and stand-in data. Every figure and number is computed within its section, so a fixture
or a stand-in's made-up timing is never pooled with a real run; the first section's cards are the headline.
A part file that cannot be read is skipped and named, on stderr and at the top of the page.
"""
from __future__ import annotations

import html
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from workbench import plots, validate
from workbench.arguments import Parser, UsageError, fraction, refuse
from workbench.redaction import redact
from workbench.traces import analysis as an
from workbench.traces import edits, rules, sources
from workbench.traces.anchor_names import label as anchor_label
from workbench.traces.integrity import session_warnings
from workbench.traces.report_html import CSS, card, img, pct, redact_page, rules_html, table, version
from workbench.traces.writer import write_text_durable

EVOLUTION_ARMS = ("evolve",)        # sessions whose x axis is the evaluation's number, not tool calls


class ReportError(ValueError):
    pass


def _footer(a: an.Analysis, roots, kind: str) -> str:
    gpus = ", ".join(a.overall.get("gpus") or []) or "not recorded"
    counts = ", ".join(f"{k} ×{v}" for k, v in a.sessions["source"].fillna("?").value_counts().items())
    text = (f"{sources.KIND_TITLES[kind].lower()} from {', '.join(str(r) for r in roots)} ({counts}) · GPU: {gpus}"
            f" · dtype: bf16 · speedup: harness geomean of per-scenario median-time ratios as recorded · workbench "
            f"{version('workbench')}, duckdb {version('duckdb')}, matplotlib {version('matplotlib')}")
    return redact(text)         # drawn into every figure: a root's name never reaches the pixels


def _provenance(a: an.Analysis, kind: str, notes: pd.DataFrame) -> str:
    s = a.sessions
    parts = []
    for source, group in s.groupby(s["source"].fillna("?")):
        what = {"claude_code": "imported from Claude Code transcripts", "codex": "imported from Codex CLI rollouts",
                "workbench": "recorded by workbench"}.get(source, f"source {source}")
        parts.append(f"{len(group)} session(s) {what}")
    text = f"<p>{html.escape('; '.join(parts))}.</p>"
    if kind == "fixture":
        why = notes[notes["session_id"].isin(s["session_id"])]["kind_note"].value_counts()
        listed = ", ".join(f"{n} {note}" for note, n in why.items())
        text += ('<p class="note">This section holds <b>test fixtures</b>, <b>demo recordings</b> and <b>stand-in '
                 f"data</b> ({html.escape(listed)}): hand-made or made-up numbers that exercise every statistic. "
                 "They say nothing about agents or kernels and are kept out of every other section.</p>")
    return text


def _runs_for_plot(a: an.Analysis) -> tuple[pd.DataFrame, dict, dict]:
    """Runs with the x each session's panel counts in, and each panel's axis labels."""
    runs = a.runs.rename(columns={"tool_index": "x"}).copy()
    arm = a.sessions.set_index("session_id")["arm"]
    calls = a.sessions.set_index("session_id")["tool_calls"]
    x_labels, y_labels = {}, {}
    for sid, group in runs.groupby("session_id"):
        evolution = arm.get(sid) in EVOLUTION_ARMS or calls.get(sid, 0) == 0
        if evolution:           # no tool calls: the n-th evaluation of the run
            runs.loc[group.index, "x"] = range(1, len(group) + 1)
        x_labels[sid] = "evaluations" if evolution else "tool calls"
        metric = group.loc[group["scored"], "metric"]
        y_labels[sid] = {"geomean_vs_fa3": "geomean × FA3", "geomean_vs_original": "geomean × original"}.get(
            metric.iloc[0] if len(metric) else "", "geomean")
    return runs, x_labels, y_labels


def _steering_counts(a: an.Analysis) -> tuple[pd.DataFrame, str]:
    """A person's messages by class, and bank questions as their own column, per session (per arm if many)."""
    person = a.steering[a.steering["origin"] == "human"]
    counts = pd.crosstab(person["session_id"], person["cls"]).reindex(columns=list(an.CLASSES), fill_value=0)
    bank = a.steering[a.steering["origin"] == "bank"].groupby("session_id").size().rename("bank")
    counts = counts.join(bank, how="outer").fillna(0).astype(int)
    group_label = "session"
    if len(counts) > 24:        # too many bars to read: one bar per arm instead
        arm_of = a.sessions.set_index("session_id")["arm"].fillna("(none)")
        counts = counts.groupby(arm_of.reindex(counts.index)).sum()
        group_label = "arm"
    return counts, group_label


def _cards(a: an.Analysis, gain_threshold: float) -> str:
    o = a.overall
    bank_questions = int((a.steering["origin"] == "bank").sum())
    return "".join([
        card(o["sessions"], "sessions"), card(o["human_messages"], "messages from a person"),
        card(bank_questions, "questions from the bank"), card(o["questions"], "questions (a person's or bank)"),
        card(f"{o['tool_calls']:,}", "tool calls"), card(o["harness_runs"], "harness runs"),
        card(o["gains"], f"gains (≥ {100 * gain_threshold:.0f} %)"),
        card(pct(o.get("share_gains_after_question")), "gains after a question"),
        card(pct(o.get("share_gains_after_information")), "gains after information"),
        card(pct(o["readded_rate"]), "re-added lines"),
        card(f"{o['input_tokens'] + o['output_tokens'] + o['cache_read_tokens'] + o['cache_write_tokens']:,}",
             "tokens (all kinds)"),
        card(f"${o['cost_usd']:.2f}", "cost (list prices)")])


# the arms and sessions tables' columns and labels (main_anchor_columns relabels FA3's for another problem)
ARMS_COLUMNS = {
    "arm": "arm", "sessions": "sessions", "human_messages": "human msgs",
    "questions": "questions", "tool_calls": "tool calls", "harness_runs": "harness runs",
    "sessions_vs_fa3": "on × FA3", "best_vs_fa3_median": "best × FA3 (median)",
    "best_vs_fa3_max": "best × FA3 (max)", "sessions_vs_original": "on × original",
    "best_vs_original_median": "best × original (median)",
    "best_vs_original_max": "best × original (max)", "gains": "gains",
    "gains_after_question": "gains after question", "readded_rate": "re-added rate",
    "cost_usd": "cost",
}
SESSION_COLUMNS = {
    "session_id": "session", "kind": "kind", "kind_note": "data", "source": "source",
    "arm": "arm", "model": "model", "human_messages": "human", "questions": "questions",
    "tool_calls": "tool calls", "tool_errors": "errors", "harness_runs": "runs",
    "best_vs_fa3": "best × FA3", "best_vs_original": "best × original", "gains": "gains",
    "input_tokens": "input tok", "output_tokens": "output tok",
    "cache_read_tokens": "cache read", "cost_usd": "cost", "readded_rate": "re-added",
}


def main_anchor_columns(sessions: pd.DataFrame, arms: dict, rows: dict) -> tuple[dict, dict, str]:
    """The arms and sessions tables' column labels scored on the sessions' main anchor: attention's (FA3) as they
    always were, 'best × cuBLAS' when every scored session is the GEMM's, 'best × main anchor' when mixed."""
    anchors = set(sessions["main_anchor"].dropna()) if "main_anchor" in sessions else set()
    if anchors <= {"fa3"}:
        return arms, rows, "FA3"
    name = anchor_label(anchors.pop()) if len(anchors) == 1 else "main anchor"
    arms = {k.replace("fa3", "main"): v.replace("FA3", name) for k, v in arms.items()}
    return arms, {k.replace("fa3", "main"): v.replace("FA3", name) for k, v in rows.items()}, name


def session_problems(con) -> dict:
    """session_id -> the problem its harness runs judged (rows before problems, and sessions without runs: attn_fwd)."""
    rows = con.execute("SELECT session_id, min(coalesce(problem, 'attn_fwd')) FROM evaluations "
                       "GROUP BY session_id").fetchall()
    return {sid: problem for sid, problem in rows}


def by_problem(ids: list, problems: dict) -> list[tuple[str, list]]:
    """(problem, session ids) groups, attention first: a report's section per data source and problem."""
    groups: dict = {}
    for sid in ids:
        groups.setdefault(problems.get(sid, "attn_fwd"), []).append(sid)
    return sorted(groups.items(), key=lambda item: (item[0] != "attn_fwd", item[0]))


def source_section(kind: str, a: an.Analysis, roots, notes: pd.DataFrame, gain_threshold: float,
                   headline: bool, problem: str = "", first_of_kind: bool = True) -> str:
    """Everything the report says about one data source (and one problem, when the source holds several or it is
    not attention), computed from its sessions only."""
    footer = _footer(a, roots, kind)
    o = a.overall
    runs, x_labels, y_labels = _runs_for_plot(a)
    marks = a.steering.assign(x=a.steering["calls_before"], kind=a.steering["cls"])
    n_curves = runs["session_id"].nunique()
    fig_best = plots.best_so_far(runs, marks, footer=footer, x_labels=x_labels, y_labels=y_labels,
                                 title=f"Best geomean so far ({min(n_curves, 12)} of {n_curves} sessions, "
                                       "most harness runs first)" if n_curves > 12 else "Best geomean so far")
    fig_attr = plots.gain_attribution(a.attribution, footer=footer,
                                      title=f"What preceded each gain (≥ {100 * gain_threshold:.0f} % over the best)")
    counts, group_label = _steering_counts(a)
    fig_cls = plots.message_classes(counts, footer=footer,
                                    title=f"Steering messages per {group_label}")
    fig_readd = plots.readded_over_time(a.edits.rename(columns={"tool_index": "x"}), footer=footer)
    gains = a.gains.copy()
    gains["session_id"] = gains["session_id"].astype(str)
    sessions = a.sessions.merge(notes, on="session_id", how="left")
    arm_labels, row_labels, main_name = main_anchor_columns(a.sessions, ARMS_COLUMNS, SESSION_COLUMNS)
    title = sources.KIND_TITLES[kind] + (f" · {problem}" if problem else "")
    n = o["sessions"]
    parts = [
        f'<section class="source {kind}" id="source-{kind}{"" if first_of_kind else "-" + problem}">',
        f"<h2>{html.escape(title)} · {n} session{'' if n == 1 else 's'}</h2>",
        f'<p class="muted">{html.escape(sources.KIND_NOTES[kind])}.'
        + (" These are the headline figures." if headline else "") + "</p>",
        _provenance(a, kind, notes),
        f'<div class="cards{" headline" if headline else ""}">{_cards(a, gain_threshold)}</div>',
        "<h3>Best geomean so far</h3>",
        "<p>Each dot is one harness run; the black step is the best so far; stars are gain events. Dashed lines "
        "are the messages that steered the agent, coloured by class. Agent sessions count tool calls along x, "
        "evolution runs their evaluations; each panel's y axis names what its geomean is against.</p>",
        img(fig_best, "best so far"),
        "<h3>Gain events and what preceded them</h3>",
        f"<p>{o['gains']} gain event{'' if o['gains'] == 1 else 's'}; {o['gains_moved_or_rejected']} followed a "
        "message that moved the agent to another layer or rejected a limit it had claimed.</p>",
        img(fig_attr, "gain attribution"),
        table(a.attribution, {"preceded_by": "preceded by", "gains": "gains", "share": "share"}),
        table(gains, {"session_id": "session", "tool_index": "tool call", "previous_best": "best before",
                      "geomean": "new best", "gain_pct": "gain", "preceded_by": "preceded by",
                      "message_text": "message", "message_layer": "message layer", "agent_layer": "agent layer",
                      "moved_layer": "moved layer", "rejected_limit": "rejected limit",
                      "seconds_since_message": "seconds after message",
                      "calls_since_message": "tool calls after message"}),
        "<h3>Questions</h3>",
        f"<p>{o['questions']} questions; {o['questions_followed_by_gain']} were followed by a gain later in their "
        f"session — median {o['median_seconds_question_to_gain']:.0f} s and "
        f"{o['median_calls_question_to_gain']:.1f} tool calls to it.</p>"
        if o["questions_followed_by_gain"] else f"<p>{o['questions']} questions; none was followed by a gain.</p>",
        "<h3>Layer each question points at</h3>", table(a.layers),
        "<h3>From each question to the next gain</h3>",
        table(a.question_to_gain, {"session_id": "session", "text": "question", "layer": "layer",
                                   "seconds_to_gain": "seconds to gain", "calls_to_gain": "tool calls to gain"},
              fold=("seconds_to_gain", "calls_to_gain"), folded="questions not followed by a gain"),
        "<h3>Message classes</h3>", img(fig_cls, "message classes"),
        "<details><summary>Every steering message</summary>",
        table(a.steering, {"session_id": "session", "origin": "from", "cls": "class", "layer": "layer",
                           "agent_layer": "agent layer", "moved_layer": "moved", "rejected_limit": "rejected limit",
                           "text": "text"}), "</details>",
        "<h3>Re-added lines</h3>",
        f"<p>{o['lines_readded']:,} of {o['lines_added']:,} significant added lines ({pct(o['readded_rate'])}) are "
        "byte-identical to a line deleted earlier in the same session.</p>", img(fig_readd, "re-added lines"),
        "<h3>Experiment arms side by side</h3>",
        "<p>Sessions of this section grouped by <code>sessions.arm</code>; tools-only (no interventions) first. A "
        "session's best counts under × " + main_name + " when any of its runs timed " + main_name + ", else under "
        "× original; the two metrics are never put in one column. <i>on × " + main_name + "</i> / <i>on × "
        "original</i>: sessions scored so.</p>",
        table(a.arms, arm_labels),
        "<h3>Sessions</h3>",
        table(sessions, row_labels),
        "<h4>How each transcript was read</h4>" + _import_tallies(a) if kind != "campaign" else "",
        f'<p class="muted">{html.escape(footer)}</p>',
        "</section>",
    ]
    return "".join(parts)


def _import_tallies(a: an.Analysis) -> str:
    """The import tally of every session: what was read, and what was set aside and why."""
    intro = ("<p>Lines read from the session's files; <i>malformed</i>: not JSON (skipped, listed by "
             "<code>workbench import</code>); <i>duplicate</i>: a line seen before (resumed sessions copy their "
             "history); <i>ignored</i>: kinds of line without a row (summaries, snapshots, UI echoes); <i>repeated "
             "usage</i>: streamed lines of one API message, counted once; <i>injected</i>: blocks the client put "
             "into the user's turn (IDE context, reminders, slash commands, hook output, interrupt markers, images "
             "without text), never counted as a person's message; <i>harness results</i>: runs found in tool "
             "output, and how many of them were a run already counted (a JSON read-back, a quote).</p>")
    return intro + table(a.sessions, {
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


def _overview(kinds: pd.DataFrame) -> str:
    rows = []
    for kind in sources.KINDS:
        n = int((kinds["kind"] == kind).sum())
        link = f'<a href="#source-{kind}">{html.escape(sources.KIND_TITLES[kind])}</a>' if n else \
            html.escape(sources.KIND_TITLES[kind])
        rows.append(f'<tr><td><span class="kind {kind}">{kind}</span></td><td>{link}</td><td class="n">{n}</td>'
                    f"<td>{html.escape(sources.KIND_NOTES[kind])}</td></tr>")
    return ("<h2>Data sources</h2><p>Each source has its own section below; numbers are never pooled across "
            "them.</p><table><tr><th>kind</th><th>section</th><th>sessions</th><th>what it is</th></tr>"
            + "".join(rows) + "</table>")


def build_report(roots, out, gain_threshold: float = an.GAIN_THRESHOLD, title: str | None = None,
                 progress=None, warn=None) -> Path:
    say = progress or (lambda _m: None)
    roots = [Path(r) for r in roots]
    started = time.perf_counter()
    skipped = []

    def warned(line: str) -> None:
        skipped.append(line)
        (warn or say)(f"warning: {line}")

    con = an.connect(roots, warn=warned)
    kinds = sources.classify(con, roots)
    problems = session_problems(con)
    con.close()
    try:
        incomplete = session_warnings(roots)
    except Exception as err:         # a damaged file it reads in full: the skipped-file warning names it
        incomplete = [f"the completeness check could not run ({type(err).__name__}: {str(err)[:160]})"]
    for line in incomplete:
        say(f"warning: {line}")
    if kinds.empty:
        raise an.TraceError("no sessions found under the trace roots given (import transcripts first: "
                            "workbench import)")
    sections = []
    for kind in sources.KINDS:
        ids = kinds.loc[kinds["kind"] == kind, "session_id"].tolist()
        if not ids:
            continue
        groups = by_problem(ids, problems)
        for index, (problem, group) in enumerate(groups):
            label = problem if len(groups) > 1 or problem != "attn_fwd" else ""
            say(f"{sources.KIND_TITLES[kind].lower()}{' · ' + label if label else ''}: {len(group)} session(s)")
            a = an.analyze(roots, gain_threshold=gain_threshold, progress=say, session_ids=group)
            say("drawing figures")
            sections.append(source_section(kind, a, roots, kinds, gain_threshold, headline=not sections,
                                           problem=label, first_of_kind=index == 0))

    say("writing HTML")
    built = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    warnings = "".join(f'<p class="warn">{html.escape(line)}</p>' for line in skipped)
    page_parts = [
        f"<h1>{html.escape(title or 'Intervention statistics')}</h1>",
        f'<p class="muted">built {built} from {", ".join(html.escape(str(r)) for r in roots)} '
        f"in {time.perf_counter() - started:.1f} s · gain threshold {100 * gain_threshold:.0f} %</p>",
        warnings, _warnings_html(incomplete), _overview(kinds), *sections,
        "<h2>How these numbers are computed</h2>",
        "<details open><summary>Rules (workbench/traces/analysis.py, rules.py, edits.py, sources.py)</summary>",
        rules_html("\n\n".join(m.__doc__ for m in (an, rules, edits, sources))), "</details>",
    ]
    page = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title or 'Intervention statistics')}</title><style>{CSS}</style></head>"
            f"<body><main>{''.join(page_parts)}</main></body></html>")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_durable(out, redact_page(page))          # a kill leaves the previous report, never a torn one
    return out


def report_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench report", description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="trace roots (e.g. data/traces)")
    parser.add_argument("-o", "--out", type=Path, default=Path("report.html"))
    parser.add_argument("--threshold", type=fraction, default=an.GAIN_THRESHOLD,
                        help="a gain is a new best geomean at least this much over the best so far (0.05 = 5 %%)")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()

    def say(msg):
        print(f"workbench report: [{time.perf_counter() - t0:5.1f} s] {msg}", file=sys.stderr, flush=True)

    try:
        validate.input_dirs(args.traces, "traces")      # a file named here is told apart
        validate.output_file(args.out, "-o/--out")
        out = build_report(args.traces, args.out, args.threshold, args.title, progress=say)
    except (an.TraceError, UsageError) as err:
        return refuse("workbench report", err)
    say(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


main = report_main
