"""The HTML the campaign widgets show, and the figure functions behind the live views (no widgets here)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from workbench import plots
from workbench.harness.paths import REPO_ROOT
from workbench.questions.bank import load_bank
from workbench.ui import ladder, render

PNG = b"\x89PNG\r\n\x1a\n"


def frame(rows):
    base = {"category": "A", "reason": "", "detail": "", "rel_l2_err": 2e-3, "us": 10.0, "tflops": 50.0,
            "flags": "", "head_dim": 128, "causal": False, "seqlen_q": 512, "seqlen_k": 512, "x_original": 2.0,
            "x_fa3": 0.3, "tflops_fa3": 160.0, "tflops_cudnn": 170.0, "tflops_fa2": 110.0}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_table_puts_failing_then_suspicious_rows_first_in_colour():
    df = frame([{"scenario": "ok_1", "status": "passed"},
                {"scenario": "noisy_1", "status": "passed", "flags": "noisy"},
                {"scenario": "fast_1", "status": "passed", "flags": "below_memory_floor"},
                {"scenario": "skip_1", "status": "unsupported", "reason": "unsupported", "tflops": None},
                {"scenario": "bad_1", "status": "failed", "reason": "mismatch", "detail": "rel L2 0.3 > 1e-2",
                 "tflops": None, "us": None, "x_original": None}])
    html = render.table_html(df, "head")
    order = [name for name in ("bad_1", "fast_1", "skip_1", "ok_1", "noisy_1")]
    assert sorted(order, key=html.index) == order
    assert '<tr class="wb-failed">' in html and '<tr class="wb-suspicious">' in html
    assert '<tr class="wb-passed">' in html                 # a benign "noisy" flag is not a suspicion
    assert 'title="rel L2 0.3 &gt; 1e-2"' in html           # the detail is the reason's tooltip
    assert "No harness run yet" in render.table_html(None)


def test_agent_and_tool_text_is_escaped():
    turn = {"turn": 1, "text": {0: "<script>alert(1)</script> uses `exp2`"}, "final": True, "notes": [],
            "questions": [], "tools": {"c1": {"name": "read_file", "input": {"path": "<b>x</b>"}, "tool_index": 1,
                                               "output": "<img src=x onerror=alert(1)>", "is_error": True,
                                               "duration_s": 0.25}}}
    html = render.turn_html(turn)
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert "<code>exp2</code>" in html
    assert 'class="wb-tool wb-error"' in html and "0.2 s" in html and 'class="wb-errtext"' in html


def test_banner_names_trigger_source_and_question():
    bank = render.banner_html({"trigger": "stall", "source": "bank", "question_id": "q014", "layer": "parallelism",
                               "text": "How many waves?", "reason": "no new best in 3 harness runs",
                               "best_before": 1.2})
    assert 'wb-banner wb-stall' in bank and "from the question bank" in bank and "q014" in bank
    assert "How many waves?" in bank and "no new best in 3 harness runs" in bank and "×1.200" in bank
    person = render.banner_html({"trigger": "claim", "source": "human", "text": "Cycles or wall time?"})
    assert 'wb-banner wb-human' in person and "from a person" in person and "claim" in person


def test_edit_summary_shows_what_changed():
    old = "#define KEY_TILE 8              // @knob KEY_TILE 8 {4,8,16}"
    new = "#define KEY_TILE 16              // @knob KEY_TILE 8 {4,8,16}"
    assert render.edit_summary(old, new) == "KEY_TILE 8 → 16"
    assert render.edit_summary("", "int x;") == "(nothing) → int x;"


def test_footer_for_real_and_standin_results():
    real = render.footer_text("NVIDIA H200", {"torch": "2.11.0+cu130", "anchor_fa3": "0.0.3"}, "dev26", "ab" * 32)
    assert real.startswith("GPU: NVIDIA H200") and "dtype bf16" in real and "anchor_fa3 0.0.3" in real
    assert "timing: CUDA events around the Python call" in real and "kernel abababababab" in real
    device = render.footer_text("NVIDIA H200", {"torch": "2.11.0+cu130", "timing": "device-time-1"})
    assert "timing: device time: CUDA events inside one CUDA-graph replay" in device and "device-time-1" in device
    assert "versions: torch 2.11.0+cu130 ·" in device
    fake = render.footer_text("stand-in (CPU)", {"standin": "1"})
    assert fake.startswith(render.DEMO_LABEL) and "invented" in fake


def test_bank_options_follow_the_trigger():
    from workbench.ui.campaign_view import bank_options

    bank = load_bank()
    options = bank_options(bank, "claim")
    triggers = {q.id: q.trigger for q in bank}
    assert {triggers[qid] for _, qid in options} == {"claim", "any"}
    assert triggers[options[0][1]] == "claim" and len(bank_options(bank)) == len(bank)


def test_campaign_figures_draw_and_survive_empty_input():
    runs = pd.DataFrame({"x": [2, 4, 7], "geomean": [1.0, float("nan"), 1.6], "all_correct": [True, False, True],
                         "best": [1.0, 1.0, 1.6]})
    marks = pd.DataFrame({"x": [4, 4, 7], "trigger": ["stall", "human", "suspicious"], "label": ["q1", "person", "q3"]})
    df = frame([{"scenario": f"A_d{d}_c{int(c)}_s1k", "status": "passed", "head_dim": d, "causal": c}
                for d in (64, 128) for c in (False, True)] +
               [{"scenario": "C_bad", "status": "failed", "reason": "mismatch", "tflops": None, "head_dim": 64}])
    figures = [plots.campaign_progress(runs, marks, footer="f"),
               plots.campaign_progress(runs.iloc[:0], marks.iloc[:0], footer="f"),
               plots.scenario_tflops(df, footer="f"), plots.scenario_tflops(df.iloc[:0], footer="f"),
               plots.ceiling_fraction(df, footer="f", ceiling_tflops=790.0),
               plots.ceiling_fraction(df.iloc[:0], footer="f", ceiling_tflops=790.0)]
    for fig in figures:
        assert plots.to_png(fig).startswith(PNG)
    texts = [t.get_text() for ax in figures[2].axes for t in ax.texts]
    assert "failed: mismatch" in texts
    footer = figures[0].texts[0].get_text() if figures[0].texts else ""
    assert footer == "f"


def test_ladder_headers_and_recorded_results():
    paths = ladder.rungs()
    assert paths[0].name == "original.cu" and [p.name for p in paths[1:]] == sorted(p.name for p in paths[1:])
    text = ladder.header(paths[0])
    assert text.startswith("original.cu:") and "//" not in text.splitlines()[0]
    recorded = ladder.recorded_results()
    if not recorded:
        pytest.skip("no H200 ladder results under docs/data/")
    assert list(recorded)[0] == "original" and all(r.gpu == "NVIDIA H200" for r in recorded.values())
    assert all(r.all_correct and math.isfinite(r.geomean_vs("fa3")) for r in recorded.values())
    assert len(ladder.summary_frame(recorded)) == len(recorded)
    geomeans = ladder.geomean_frame(recorded)
    overall = geomeans[geomeans["category"] == "all"].set_index("kernel")["x_fa3"]
    assert overall["original"] < overall[list(recorded)[-1]] and {"FA2", "cuDNN"} <= set(overall.index)
    assert plots.to_png(plots.ladder_geomeans(geomeans, footer="f")).startswith(PNG)
    assert len(ladder.dev26_frame(recorded["original"])) == 26


def test_demo_recording_is_labelled_everywhere():
    from workbench.traces.writer import read_table
    from workbench.ui.launch import DEMO_RECORDING

    if not DEMO_RECORDING.exists():
        pytest.skip("no demo recording: PYTHONPATH=. .venv/bin/python scripts/record_demo_campaign.py")
    evaluations = read_table(DEMO_RECORDING / "traces", "evaluations")
    assert set(evaluations["gpu"]) == {"CPU stand-in (demo recording, not GPU measurements)"}
    assert "not GPU measurements" in (DEMO_RECORDING / "README.md").read_text()
    assert render.is_standin(evaluations["gpu"].iloc[0])
    text = (REPO_ROOT / "notebooks" / "01_campaign.py").read_text()
    assert "demo recording: CPU stand-in evaluator, not GPU measurements" in text


def _visible_ticks(ax, axis: str) -> list:
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    ticks = ax.get_xticks() if axis == "x" else ax.get_yticks()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [lab for t, lab in zip(ticks, labels) if min(lo, hi) <= t <= max(lo, hi)]


@pytest.mark.parametrize("xs,ys", [([1], [1.0004]), ([3, 4], [1.0004, 1.0008]), ([2, 9, 30], [0.8, 1.05, 1.2])])
def test_progress_axes_read_after_the_first_runs(xs, ys):
    """No "+1" offset and 0.0000-0.0008 ticks after one run, no fractional or colliding tool-call ticks."""
    import pandas as pd
    from workbench import plots

    runs = pd.DataFrame({"x": xs, "geomean": ys, "all_correct": [True] * len(xs), "best": pd.Series(ys).cummax()})
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = plots.campaign_progress(runs, pd.DataFrame(columns=["x", "trigger", "label"]), footer="f")
    canvas = FigureCanvasAgg(fig)           # the renderer that to_png uses, to measure the labels as drawn
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    assert ax.yaxis.get_offset_text().get_text() == "" and ax.xaxis.get_offset_text().get_text() == ""
    xlabels = _visible_ticks(ax, "x")
    texts = [lab.get_text().replace("\u2212", "-") for lab in xlabels]
    assert len(texts) >= 3 and all(t.lstrip("-").isdigit() for t in texts) and len(set(texts)) == len(texts)
    boxes = [lab.get_window_extent(renderer) for lab in xlabels]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:])), "x tick labels overlap"
    ylabels = [float(lab.get_text().replace("\u2212", "-")) for lab in _visible_ticks(ax, "y")]
    assert min(ylabels) <= min(ys) and max(ylabels) >= max(ys) * 0.98 and max(ylabels) - min(ylabels) >= 0.05


def test_the_newest_recorded_run_of_a_rung_is_shown_by_date_and_version():
    """Plain name order put `_v8_` after `_v11_` and a 2026-12-01 run after one of 2026-12-02's."""
    from pathlib import Path
    names = ["h200_ladder_04_pingpong_full_dt4_v8_2026-12-01.json", "h200_ladder_04_pingpong_full_dt4_2026-12-01.json",
             "h200_ladder_04_pingpong_full_dt4_v11_2026-12-02.json",
             "h200_ladder_04_pingpong_full_dt4_v6_2026-12-01.json"]
    ordered = sorted((Path(n) for n in names), key=ladder._recorded_order)
    assert [p.name for p in ordered] == [names[1], names[3], names[0], names[2]]


def test_version_history_lists_a_rungs_runs_on_every_card_oldest_first(tmp_path):
    """notebooks/03's table of the best rung's runs: H100 files beside the H200's, each row from its own JSON."""
    import shutil
    recorded = sorted(ladder.RECORDED_DIR.glob("h*_ladder_04_pingpong_full_*_v*_*.json"))
    if not recorded:
        pytest.skip("no recorded 04_pingpong runs under docs/data/")
    source = recorded[0]
    for name in ("h100_ladder_04_pingpong_full_dt4_v12_2026-12-06.json",
                 "h200_ladder_04_pingpong_full_dt4_v9_2026-12-06.json",
                 "h200_ladder_04_pingpong_full_dt4_v30_2026-12-01.json",
                 "h200_ladder_03_wgmma_full_dt4_v2_2026-12-07.json"):   # another rung: not listed
        shutil.copy(source, tmp_path / name)
    frame = ladder.version_history("04_pingpong", folder=tmp_path)
    assert list(frame["version"]) == ["v30", "v9", "v12"] and list(frame["card"]) == ["h200", "h200", "h100"]
    assert list(frame["date"]) == ["2026-12-01", "2026-12-06", "2026-12-06"]
    assert (frame["passed"] <= frame["scenarios"]).all() and {"x_fa3_A", "x_fa3_all", "x_cudnn"} <= set(frame)
    assert frame["x_fa3_all"].nunique() == 1   # the same JSON three times: the same figures
    assert ladder.version_history("99_none", folder=tmp_path).empty
