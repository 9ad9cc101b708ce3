"""The realistic transcripts (tests/fixtures/transcripts/realistic): every figure of its README, counted by hand,
equals what the importers and the analysis compute and what the HTML report shows in the cell that carries it."""
from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from workbench.traces import analysis as an
from workbench.traces.importers import import_paths
from workbench.traces.report import build_report
from workbench.traces.report_html import fmt as _fmt

HERE = Path(__file__).parent / "fixtures" / "transcripts" / "realistic"
SESSIONS = {"claude": "5b0f7c52-8d1e-4c3a-9f6e-2a7d41c0e9b3", "codex": "0199a8b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}
EMPTY = "–"

# where the report shows a figure: table (identified by a header it has) -> analysis column -> header
SESSION_CELLS = {"human_messages": "human", "questions": "questions", "tool_calls": "tool calls", "model": "model",
                 "tool_errors": "errors", "harness_runs": "runs", "best_vs_fa3": "best × FA3",
                 "best_vs_original": "best × original", "gains": "gains", "input_tokens": "input tok",
                 "output_tokens": "output tok", "cache_read_tokens": "cache read", "cost_usd": "cost",
                 "readded_rate": "re-added"}
IMPORT_CELLS = {"import_files": "files", "import_lines": "lines", "malformed_lines": "malformed",
                "duplicate_lines": "duplicate", "ignored_lines": "ignored", "usage_duplicates": "repeated usage",
                "orphan_results": "orphan results", "injected_blocks": "injected",
                "injected_kinds": "injected, by kind", "harness_sightings": "harness results",
                "harness_seen_again": "seen again"}
ARM_CELLS = {"sessions": "sessions", "human_messages": "human msgs", "questions": "questions",
             "tool_calls": "tool calls", "harness_runs": "harness runs", "sessions_vs_fa3": "on × FA3",
             "best_vs_fa3_median": "best × FA3 (median)", "best_vs_fa3_max": "best × FA3 (max)",
             "sessions_vs_original": "on × original", "best_vs_original_median": "best × original (median)",
             "best_vs_original_max": "best × original (max)", "gains": "gains",
             "gains_after_question": "gains after question", "readded_rate": "re-added rate", "cost_usd": "cost"}
GAIN_CELLS = {"previous_best": "best before", "geomean": "new best", "gain_pct": "gain", "preceded_by": "preceded by",
              "message_layer": "message layer", "agent_layer": "agent layer", "moved_layer": "moved layer",
              "rejected_limit": "rejected limit", "seconds_since_message": "seconds after message",
              "calls_since_message": "tool calls after message"}


def hand_counts() -> dict[str, str]:
    text = (HERE / "README.md").read_text()
    table = text.split("## The figures, one per row", 1)[1]
    rows = re.findall(r"^\| ([a-z0-9_]+\.[a-z0-9_.]+) \| (.+?) \|$", table, re.M)
    assert len(rows) > 150
    return dict(rows)


class Tables(HTMLParser):
    """Every <table> of the page as a list of rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(self._cell.strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    root = tmp_path_factory.mktemp("realistic")
    sessions = import_paths([HERE / "claude_code"], root, arm="human")
    sessions += import_paths([HERE / "codex"], root, arm="tools_only")
    return root, {s.session_id: s for s in sessions}


@pytest.fixture(scope="module")
def a(imported):
    return an.analyze(imported[0])


@pytest.fixture(scope="module")
def page(imported, tmp_path_factory):
    out = build_report([imported[0]], tmp_path_factory.mktemp("report") / "report.html")
    parser = Tables()
    parser.feed(out.read_text())
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", out.read_text()))
    return parser.tables, text


def _expected(raw: str):
    """The README's cell as a Python value."""
    if raw == EMPTY:
        return None
    if raw in ("yes", "no"):
        return raw == "yes"
    if re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if re.fullmatch(r"-?\d+\.\d+", raw):
        return float(raw)
    return raw


def _same(actual, expected, raw: str = "") -> bool:
    if expected is None:
        return actual is None or (isinstance(actual, float) and math.isnan(actual))
    if isinstance(expected, bool):
        return bool(actual) is expected
    if isinstance(expected, float):         # to the precision the README writes it
        places = len(raw.split(".")[1]) if "." in raw else 0
        return actual is not None and abs(float(actual) - expected) <= 0.5 * 10 ** -places + 1e-12
    if isinstance(expected, int):
        return actual is not None and not isinstance(actual, str) and int(actual) == expected
    return str(actual) == expected


def _layers(values) -> str:
    return ", ".join(v if isinstance(v, str) else EMPTY for v in values)


def _attribution(root, threshold: float) -> tuple[int, str]:
    other = an.analyze(root, gain_threshold=threshold)
    att = other.attribution.set_index("preceded_by")["gains"]
    return other.overall["gains"], ", ".join(f"{k} {int(att[k])}" for k in an.ATTRIBUTIONS)


def computed(key: str, a, imported):
    """The importers' or the analysis' value of one README figure."""
    root, sessions = imported
    scope, _, name = key.partition(".")
    if scope in SESSIONS:
        return a.sessions.set_index("session_id").loc[SESSIONS[scope], name]
    if scope == "import":
        who, _, what = name.partition(".")
        sid = SESSIONS[who]
        tables = sessions[sid].tables
        runs = a.runs[a.runs["session_id"] == sid]
        ev = {}
        for row in tables["evaluations"]:
            ev.setdefault(row["eval_id"], []).append(row)
        if what == "evaluation_rows":
            return len(tables["evaluations"])
        if what == "tool_named_rows":
            return sum(1 for m in tables["messages"] if m.get("tool_name"))
        if what == "eval_ids":
            return ", ".join(runs["eval_id"])
        field = {"run_statuses": "status", "run_reasons": "reason"}[what]
        return ", ".join("/".join(sorted({r.get(field) or EMPTY for r in ev[e]})) for e in runs["eval_id"])
    if scope == "arm":
        arm, _, col = name.partition(".")
        return a.arms.set_index("arm").loc[arm, col]
    if scope == "gain":
        n, _, col = name.partition(".")
        return a.gains.iloc[int(n) - 1][col]
    assert scope == "all", key
    st = a.steering
    special = {
        "gpus": lambda: ", ".join(a.overall["gpus"]),
        "steering_classes": lambda: ", ".join(st["cls"]),
        "steering_layers": lambda: _layers(st["layer"]),
        "steering_agent_layers": lambda: _layers(st["agent_layer"]),
        "steering_moved": lambda: ", ".join("yes" if m else "no" for m in st["moved_layer"]),
        "steering_calls_before": lambda: ", ".join(str(c) for c in st["calls_before"]),
        "questions_per_layer": lambda: ", ".join(f"{r.layer} {r.questions}"
                                                 for r in a.layers.sort_values("layer").itertuples()),
        "gains_at_2pct": lambda: _attribution(root, 0.02)[0],
        "attribution_at_2pct": lambda: _attribution(root, 0.02)[1],
        "gains_at_30pct": lambda: _attribution(root, 0.30)[0],
        "attribution_at_30pct": lambda: _attribution(root, 0.30)[1],
    }
    return special[name]() if name in special else a.overall[name]


def test_every_hand_count_equals_the_computed_figure(a, imported):
    wrong = []
    for key, raw in hand_counts().items():
        expected, actual = _expected(raw), computed(key, a, imported)
        if not _same(actual, expected, raw):
            wrong.append(f"{key}: README {raw!r}, computed {actual!r}")
    assert not wrong, "\n".join(wrong)


def _table_with(tables, header: str, first: str) -> dict:
    """The row (header -> cell) whose first cell is `first`, in the table that has `header`."""
    for table in tables:
        if table and header in table[0] and table[0][0] == first:
            return table
    raise AssertionError(f"no table with columns {header!r} and {first!r}")


def _cell(tables, header: str, first: str, key: str, nth: int | None = None) -> str:
    table = _table_with(tables, header, first)
    rows = [dict(zip(table[0], r)) for r in table[1:]]
    row = rows[nth] if nth is not None else next(r for r in rows if r[first] == key)
    return row[header]


def test_the_report_shows_every_hand_count_in_its_cell(page):
    tables, text = page
    counts = hand_counts()
    checked, wrong = 0, []

    def check(key, column, shown):
        nonlocal checked
        want = _expected(counts[key])
        want_text = "" if want is None else _fmt(want, column)[0]
        checked += 1
        if shown != want_text:
            wrong.append(f"{key}: README {counts[key]!r} renders as {want_text!r}, the report shows {shown!r}")

    for who, sid in SESSIONS.items():
        for column, header in SESSION_CELLS.items():
            check(f"{who}.{column}", column, _cell(tables, header, "session", sid))
        for column, header in IMPORT_CELLS.items():
            check(f"{who}.{column}", column, _cell(tables, header, "session", sid))
    for arm in ("tools_only", "human"):
        for column, header in ARM_CELLS.items():
            check(f"arm.{arm}.{column}", column, _cell(tables, header, "arm", arm))
    for n in (1, 2):
        for column, header in GAIN_CELLS.items():
            check(f"gain.{n}.{column}", column, _cell(tables, header, "session", None, nth=n - 1))
    assert not wrong, "\n".join(wrong)
    assert checked == 2 * (len(SESSION_CELLS) + len(IMPORT_CELLS)) + 2 * len(ARM_CELLS) + 2 * len(GAIN_CELLS)
    # figures the report states in sentences
    assert (f"{counts['all.gains']} gain events; {counts['all.gains_moved_or_rejected']} followed a message that "
            "moved the agent") in text
    assert (f"{counts['all.questions']} questions; {counts['all.questions_followed_by_gain']} were followed by a gain "
            f"later in their session — median 121 s and "
            f"{counts['all.median_calls_question_to_gain']} tool calls") in text
    assert (f"{counts['all.lines_readded']} of {counts['all.lines_added']} significant added lines "
            f"({100 * float(counts['all.readded_rate']):.0f} %)") in text
    for cls, share in (("question", "all.share_gains_after_question"),
                       ("information", "all.share_gains_after_information")):
        assert f"{cls} 1 {100 * float(counts[share]):.1f} %" in text
    assert f"GPU: {counts['all.gpus']}" in text
