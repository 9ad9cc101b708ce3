"""The HTML report and the figure functions behind it."""
from __future__ import annotations

import base64
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

from workbench import plots
from workbench.traces.report import build_report, report_main

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def traces(imported_fixture_traces):
    return imported_fixture_traces


@pytest.fixture(scope="module")
def page(traces, tmp_path_factory):
    out = build_report([traces], tmp_path_factory.mktemp("report") / "report.html")
    return out.read_text()


def test_report_is_self_contained(page):
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 4         # best so far, attribution, message classes, re-added lines
    assert all(base64.b64decode(img).startswith(PNG_MAGIC) for img in images)
    assert "<script" not in page and 'rel="stylesheet"' not in page
    assert not re.search(r'(src|href)="https?://', page)


def test_report_numbers(page):
    text = re.sub(r"<[^>]+>", " ", page)
    text = re.sub(r"\s+", " ", text)
    assert "5 gain events; 1 followed a message that moved the agent" in text
    assert "2 questions; 2 were followed by a gain later in their session — median 270 s and 3.5 tool calls" in text
    assert "4 of 16 significant added lines (25 %)" in text
    assert "test fixtures" in text            # says these are not a campaign
    assert "1 session(s) imported from Claude Code transcripts; 1 session(s) imported from Codex CLI rollouts" in text
    for row in ("question 1 20.0 %", "information 1 20.0 %", "directive 2 40.0 %", "nothing 1 20.0 %"):
        assert row in text
    # arms: ... harness runs, on x FA3, best x FA3 median, max, on x original (0: its two best cells empty), ...
    assert "tools_only 1 1 0 7 4 1 0.660 0.660 0 2 0 20.0 % $0.0164" in text
    assert "human 1 4 2 12 4 1 0.700 0.700 0 3 1 27.3 % $0.0205" in text
    assert "GPU: NVIDIA H200" in text
    assert "Message classes" in text and "moved the layer" in text      # the rules are printed


def test_report_cli(traces, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert report_main([str(traces), "-o", str(out), "--threshold", "0.2"]) == 0
    err = capsys.readouterr().err
    assert "drawing figures" in err and f"wrote {out}" in err
    assert "1 gain event;" in re.sub(r"<[^>]+>", " ", out.read_text())


def test_report_cli_bad_input(tmp_path, capsys):
    assert report_main([str(tmp_path / "nope"), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such trace directory" in err[0]
    assert report_main([str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no sessions found" in err[0] and "workbench import" in err[0]
    assert not (tmp_path / "r.html").exists()


def test_cli_dispatch(traces, tmp_path):
    from workbench.cli import main
    assert main(["report", str(traces), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 10_000


# ---- figures ----------------------------------------------------------------------------------------
FOOTER = "GPU: test · dtype: bf16 · versions: test · timing: CUDA events"


def _footer_text(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.texts).replace("\n", " ")


def test_figures_carry_the_footer_and_render():
    runs = pd.DataFrame({"session_id": ["a", "a", "b"], "x": [1, 4, 2], "geomean": [0.5, 0.6, None],
                         "best_so_far": [0.5, 0.6, None], "is_gain": [False, True, False]})
    marks = pd.DataFrame({"session_id": ["a"], "x": [2], "kind": ["question"]})
    edits = pd.DataFrame({"session_id": ["a", "a"], "x": [1, 3], "cum_rate": [0.0, 0.5]})
    figures = [
        plots.best_so_far(runs, marks, footer=FOOTER),
        plots.gain_attribution(pd.DataFrame({"preceded_by": ["question", "nothing"], "gains": [3, 1]}), footer=FOOTER),
        plots.message_classes(pd.DataFrame({"question": [2, 0], "directive": [1, 1]}, index=["a", "b"]),
                              footer=FOOTER),
        plots.readded_over_time(edits, footer=FOOTER),
    ]
    for fig in figures:
        assert isinstance(fig, Figure)
        assert " ".join(FOOTER.split()) in " ".join(_footer_text(fig).split())
        assert plots.to_png(fig).startswith(PNG_MAGIC)


def test_figures_with_no_data():
    empty_runs = pd.DataFrame(columns=["session_id", "x", "geomean", "best_so_far", "is_gain"])
    empty_marks = pd.DataFrame(columns=["session_id", "x", "kind"])
    assert plots.to_png(plots.best_so_far(empty_runs, empty_marks, footer="f")).startswith(PNG_MAGIC)
    assert plots.to_png(plots.readded_over_time(pd.DataFrame(columns=["session_id", "x", "cum_rate"]),
                                                footer="f")).startswith(PNG_MAGIC)
    attribution = pd.DataFrame({"preceded_by": ["question", "nothing"], "gains": [0, 0]})
    assert plots.to_png(plots.gain_attribution(attribution, footer="f")).startswith(PNG_MAGIC)


def test_no_pyplot_anywhere(traces, tmp_path):
    """The figure code must work off the main thread (notebook widgets): it never imports pyplot."""
    code = ("import sys; from workbench.traces.report import build_report; "
            f"build_report([{str(traces)!r}], {str(tmp_path / 'r.html')!r}); "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT),
                                                                            "MPLBACKEND": "Agg"})


# ---- data sources --------------------------------------------------------------------------------------
def _text(html_: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html_))


def _section(page: str, kind: str) -> str:
    m = re.search(rf'<section class="source {kind}" id="source-{kind}">(.*?)</section>', page, re.S)
    assert m, f"no {kind} section"
    return m.group(1)


def _cards(html_: str) -> dict:
    return {k: v for v, k in re.findall(r'<div class="v">([^<]*)</div><div class="k">([^<]*)</div>', html_)}


def test_report_keeps_fixtures_and_standins_out_of_the_headline(three_source_traces, tmp_path):
    from workbench.traces.writer import read_table

    page = build_report([three_source_traces], tmp_path / "r.html").read_text()
    first_cards = re.search(r'<div class="cards headline">(.*?)</div></div>(?!<div class="card")', page, re.S)
    assert first_cards and page.index('class="cards headline"') > page.index('id="source-campaign"')
    headline = _cards(first_cards.group(1))
    recorded = read_table(ROOT / "data" / "campaigns" / "c-offline-1" / "traces", "evaluations")
    assert headline["sessions"] == "1" and headline["harness runs"] == str(recorded["eval_id"].nunique())
    assert headline["messages from a person"] == "0" and headline["questions from the bank"] == "74"
    campaign, fixture = _section(page, "campaign"), _section(page, "fixture")
    assert 'id="source-imported"' not in page           # no real transcript was imported: no section for it
    assert "c-offline-1" in campaign and "standin-demo" not in campaign and "cc-1" not in campaign
    assert _cards(fixture)["sessions"] == "3"
    assert "standin-demo" in fixture and "stand-in (not measured on a GPU)" in _text(fixture)
    assert "test fixture" in _text(fixture) and "test fixtures" in _text(fixture)
    assert "stand-in (CPU)" not in campaign and "GPU: NVIDIA H200 ·" in _text(campaign)
    # a person's messages (the fixtures': tests/fixtures/transcripts/README.md) and bank questions counted apart
    bank = read_table(three_source_traces, "interventions").query("source == 'bank'")
    assert _cards(fixture)["messages from a person"] == "5"
    assert _cards(fixture)["questions from the bank"] == str(len(bank[bank["session_id"] == "standin-demo"]))
    # a question->gain table of 74 blank rows is folded under one line
    assert "74 questions not followed by a gain" in _text(campaign)


def test_standin_rows_are_marked(three_source_traces):
    from workbench.traces.writer import read_table

    evaluations = read_table(three_source_traces, "evaluations")
    standin = evaluations[evaluations["session_id"] == "standin-demo"]
    assert len(standin) and standin["is_standin"].all()
    assert not evaluations[evaluations["session_id"] == "c-offline-1"]["is_standin"].fillna(False).any()
    sessions = read_table(three_source_traces, "sessions").set_index("session_id")
    assert sessions.loc["standin-demo", "is_standin"]


def test_per_session_panels_count_what_fits(tmp_path):
    from workbench.traces import analysis as an
    from workbench.traces.report import _runs_for_plot

    a = an.analyze([ROOT / "data" / "traces"], session_ids=["c-offline-1", "h200x2-evolve-original"])
    runs, x_labels, y_labels = _runs_for_plot(a)
    assert x_labels == {"c-offline-1": "tool calls", "h200x2-evolve-original": "evaluations"}
    evo = runs[runs["session_id"] == "h200x2-evolve-original"]
    assert list(evo["x"]) == list(range(1, len(evo) + 1))
    fig = plots.best_so_far(runs, a.steering.assign(x=0, kind="question").iloc[:0], footer="f",
                            x_labels=x_labels, y_labels=y_labels)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert sorted(ax.get_xlabel() for ax in shown) == ["evaluations", "tool calls"]
    assert all(ax.get_ylabel() == "geomean × FA3" for ax in shown)
    assert not shown[0].get_shared_y_axes().joined(shown[0], shown[1])


def test_an_unreadable_part_file_is_skipped_and_named(traces, tmp_path, capsys):
    import shutil

    root = tmp_path / "traces"
    shutil.copytree(traces, root)
    empty = root / "messages" / "cx-1" / "part-00007.parquet"
    empty.write_bytes(b"")
    truncated = root / "tool_calls" / "cc-1" / "part-00009.parquet"
    truncated.write_bytes((next((root / "tool_calls" / "cc-1").glob("part-0000[0-6].parquet"))).read_bytes()[:200])
    out = tmp_path / "r.html"
    assert report_main([str(root), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {empty}: skipped" in err and f"warning: {truncated}: skipped" in err
    assert str(empty) in out.read_text()


@pytest.mark.parametrize("args,needle", [
    (["--threshold", "-0.5"], "argument --threshold: must be a fraction between 0 and 1"),
    (["--threshold", "5"], "argument --threshold: must be a fraction between 0 and 1"),
    (["-o", "{tmp}"], "is a directory; pass a file name"),
])
def test_report_refuses_bad_options_before_reading(traces, tmp_path, run_cli, args, needle):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    out = [] if "-o" in args else ["-o", str(tmp_path / "r.html")]
    code, _, err = run_cli(["report", str(traces), *out, *args])
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err
    assert not (tmp_path / "r.html").exists()


def test_a_gemm_section_scores_on_cublas_and_says_so(run_cli, tmp_path):
    """A GEMM campaign's sessions are scored on their main anchor (cuBLAS), and its arms and sessions tables say
    'best × cuBLAS'; a table of attention and GEMM sessions says 'best × main anchor'."""
    from workbench.traces import analysis as an
    from workbench.traces.report import ARMS_COLUMNS, SESSION_COLUMNS, main_anchor_columns

    code, out, err = run_cli(["campaign", "--problem", "gemm_bf16", "--agent", "offline", "--evaluator", "standin",
                              "--budget", "tool_calls=4", "--root", str(tmp_path), "--id", "g1"])
    assert code == 0, err[-2000:]
    a = an.analyze([tmp_path / "g1" / "traces"])
    row = a.sessions.iloc[0]
    assert row["main_anchor"] == "cublas" and 0 < row["best_vs_main"] < 10 and row["best_vs_original"] != row[
        "best_vs_original"]                                            # scored on cuBLAS, not on the original
    code, out, err = run_cli(["report", str(tmp_path / "g1" / "traces"), "-o", str(tmp_path / "r.html")])
    assert code == 0, err[-2000:]
    page = (tmp_path / "r.html").read_text()
    assert "<th>best × cuBLAS (median)</th>" in page and "<th>best × cuBLAS</th>" in page and "× FA3" not in page
    mixed = pd.DataFrame({"main_anchor": ["fa3", "cublas", None]})
    arms, rows, name = main_anchor_columns(mixed, ARMS_COLUMNS, SESSION_COLUMNS)
    assert name == "main anchor" and arms["best_vs_main_max"] == "best × main anchor (max)"
    assert rows["best_vs_main"] == "best × main anchor"
