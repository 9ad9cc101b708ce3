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
