"""Every notebook runs top to bottom on the CPU machine (replay / dry-run mode), and each .ipynb is the
jupytext pair of its .py:percent file, stored without outputs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook extra is not installed: pip install -e '.[notebook]'")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed: pip install -e '.[notebook]'")
jupytext = pytest.importorskip("jupytext", reason="jupytext is not installed: pip install -e '.[notebook]'")
pytest.importorskip("ipykernel", reason="ipykernel is not installed: pip install -e '.[notebook]'")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PAIRS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
CELL_TIMEOUT_S = 300


def test_every_notebook_is_paired():
    assert {p.stem for p in PAIRS} >= {"01_campaign", "02_intervention_statistics", "03_kernel_ladder", "04_evolution",
                                      "05_second_problem_gemm"}
    for py in PAIRS:
        ipynb = py.with_suffix(".ipynb")
        assert ipynb.exists(), f"{ipynb.name} missing: run `jupytext --sync {py.relative_to(ROOT)}`"


@pytest.mark.parametrize("py", PAIRS, ids=[p.stem for p in PAIRS])
def test_pair_in_sync_and_without_outputs(py):
    text_cells = [c.source for c in jupytext.read(py).cells]
    stored = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    assert [c.source for c in stored.cells] == text_cells, f"run `jupytext --sync {py.relative_to(ROOT)}`"
    for cell in stored.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{py.stem}: outputs stored in the .ipynb"


@pytest.mark.slow
@pytest.mark.parametrize("py", PAIRS, ids=[p.stem for p in PAIRS])
def test_notebook_runs_top_to_bottom(py, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("WORKBENCH_NO_GPU", "1")             # the CPU path, even on a GPU machine
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(key, raising=False)              # replay, never a paid live campaign
    nb = nbformat.read(py.with_suffix(".ipynb"), as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()            # raises CellExecutionError with the cell and its traceback
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    if py.stem == "01_campaign":
        # the shipped recording is the H200 campaign: measured, so no demo label; replayed to its recorded end
        assert "replaying the recorded campaign" in text and "demo recording" not in text
        # a person reads the log: the stop reason in words, the best as the status bar has it, no raw None/NaN
        assert "Stopped: the agent has no more turns. 97 turns, 58 tool calls, best ×1.052" in text
        assert "agent_finished" not in text
        tables = [str(o["data"]["text/html"]) for c in nb.cells if c.cell_type == "code" for o in c.outputs
                  if "wb-table" in str(o.get("data", {}).get("text/html", ""))]
        assert len(tables) == 2 and not any(">None<" in t or ">nan<" in t.lower() for t in tables)
        # the last section watches a campaign an outside agent runs (a stand-in demo here) to its stop condition
        assert "a demo campaign (CPU stand-in timings" in text and "Stopped: the stop condition holds. 4 calls" in text
    if py.stem == "02_intervention_statistics":
        # as the report: the H200 campaigns alone (the fixtures cc-1 and cx-1 are a section of their own), the bank's
        # questions apart from a person's, and evolution runs along their evaluations (issue 27 item 3)
        assert "this section: Recorded campaigns (sources present: campaign ×4, fixture ×2)" in text
        assert "'sessions': 4" in text and "'gains': 3" in text and "'gains': 8" not in text
        assert "'h200x2-evolve-original': 'evaluations'" in text and "'c-offline-1': 'tool calls'" in text
        # the steering counts table: a person's messages by class, then the bank's questions
        rows = [line.split() for line in text.splitlines() if line.startswith("c-offline-1")]
        assert ["c-offline-1", "0", "0", "0", "0", "74"] in rows
    if py.stem == "05_second_problem_gemm":
        # the second problem on the CPU: a .cu kernel gets static checks, a stand-in twin timed rows and its reason
        assert "01_mma_sync.cu: static_only, problem gemm_bf16, 8 rows" in text
        assert "standin:wrong_tail on cpu: 5 passed, 3 failed" in text and "smoke_kheavy: mismatch (k = 1000)" in text
        # the offline agent's campaign (stand-in evaluator): three harness runs of the 8 smoke shapes, GEMM rows
        assert "exit 0: 3 harness runs, 24 scenario rows, problem gemm_bf16, main anchor cublas" in text
        # the report's GEMM section apart from attention's: the campaign and the stand-in check, 4 evaluations
        assert "gemm_bf16: 4 evaluations, 32 scenario rows, 2 sessions" in text
        assert "Test fixtures, demos and stand-in data · gemm_bf16 · 2 sessions" in text
        assert " · attn_fwd · " in text and "Recorded campaigns · " in text
        # the FlashInfer sample folder as a GEMM suite: the attention workloads skipped with why, then checked
        assert "28 gemm_bf16 scenarios from 30 workloads of 5 definitions; 2 skipped" in text
        assert "op_type gqa_ragged: not one gemm_bf16 covers" in text
        assert "02_wgmma_tma.cu on the serving suite: static_only" in text and "'static_only': 28" in text
