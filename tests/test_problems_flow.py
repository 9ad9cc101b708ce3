"""A second problem through the whole workbench on the CPU: `workbench check` infers it from the kernel's folder or
takes --problem, trace rows carry it (rows written before problems read as attention), the report gets a section
per problem, and a campaign (offline agent, stand-in evaluator), an outside agent's campaign (the MCP server's
service) and an evolution run on the GEMM."""
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.harness.result_line import parse_result_lines
from workbench.traces.schema import EVALUATIONS
from workbench.traces.writer import read_table

ROOT = Path(__file__).resolve().parents[1]
GEMM = ROOT / "kernels" / "gemm_bf16"
NEW_COLUMNS = ("problem", "main_anchor", "speedup_vs_main", "geomean_vs_main")


class Run:
    def __init__(self, result):
        self.returncode, self.stdout, self.stderr = result


@pytest.fixture
def cli(run_cli):
    """`workbench ARGS...` in this process, as an object with returncode, stdout and stderr."""
    return lambda *argv: Run(run_cli(list(argv)))


def test_check_infers_the_problem_from_the_kernels_folder(cli, tmp_path):
    run = cli("check", str(GEMM / "wrong" / "missing_barrier.cu"), "--traces", "", "--cache-dir",
                  str(tmp_path / "cache"))
    line = parse_result_lines(run.stdout)[-1]
    assert line["problem"] == "gemm_bf16" and line["suite"] == "dev"
    assert run.returncode == 2 and line["status"] == "static_only"      # built and checked: no GPU here


def test_a_gemm_standin_is_judged_with_its_reason_and_its_rows_name_the_problem(cli, tmp_path):
    traces = tmp_path / "traces"
    run = cli("check", "standin:wrong_tail", "--problem", "gemm_bf16", "--suite", "smoke", "--traces",
                  str(traces), "--cache-dir", str(tmp_path / "cache"), "--fail-fast")
    assert run.returncode == 1, run.stdout[-2000:]
    assert "x CUBLAS" in run.stdout and "FAIL mismatch" in run.stdout
    rows = read_table(traces, "evaluations")
    assert set(rows["problem"]) == {"gemm_bf16"} and set(rows["main_anchor"]) == {"cublas"}
    assert rows.loc[rows["scenario"] == "smoke_ragged", "reason"].item() == "mismatch"


@pytest.mark.parametrize("argv,needle", [
    (["standin:correct", "--problem", "nope"], "--problem: problem 'nope': no problem.toml"),
    (["standin:correct", "--problem", "gemm_bf16", "--anchors", "fa3"], "unknown anchor(s) fa3 for gemm_bf16"),
    (["standin:no_causal_mask", "--problem", "gemm_bf16"], "no CPU stand-in named 'no_causal_mask'"),
    (["standin:correct", "--problem", "gemm_bf16", "--stop", "geomean_vs_fa9 > 1"], "unknown name 'geomean_vs_fa9'"),
])
def test_bad_problem_arguments_are_one_line_and_exit_2(cli, tmp_path, argv, needle):
    run = cli("check", *argv, "--traces", str(tmp_path / "t"))
    assert run.returncode == 2 and needle in run.stderr and len(run.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "t").exists()


def _old_evaluations(root: Path) -> None:
    """An evaluations part as written before problems: the schema without the new columns."""
    schema = pa.schema([f for f in EVALUATIONS if f.name not in NEW_COLUMNS])
    rows = {f.name: [None] for f in schema}
    rows.update(session_id=["old-1"], eval_id=["e1"], scenario=["A_d128_c1_s4k"], status=["passed"],
                geomean_vs_original=[2.0], all_correct=[True])
    part = root / "evaluations" / "old-1" / "part-00000.parquet"
    part.parent.mkdir(parents=True)
    pq.write_table(pa.table(rows, schema=schema), part)


def test_rows_written_before_problems_read_as_attention(tmp_path):
    from workbench.traces.report import session_problems
    from workbench.traces.views import connect

    _old_evaluations(tmp_path)
    frame = read_table(tmp_path, "evaluations")
    assert frame["problem"].isna().all() and len(frame) == 1
    assert session_problems(connect([tmp_path])) == {"old-1": "attn_fwd"}


@pytest.mark.slow
def test_a_gemm_campaign_and_the_report_split_by_problem(cli, tmp_path):
    camp = tmp_path / "campaigns"
    run = cli("campaign", "--problem", "gemm_bf16", "--agent", "offline", "--evaluator", "standin",
                  "--budget", "tool_calls=8", "--root", str(camp), "--id", "g1")
    assert run.returncode == 0, run.stderr[-2000:]
    config = json.loads((camp / "g1" / "config.json").read_text())
    assert config["problem"] == "gemm_bf16" and config["suite"] == "dev" and config["anchors"] == ["cublas"]
    assert config["stop_expr"] == "all_correct and geomean_vs_cublas >= 1.0"
    assert "@knob BM" in (camp / "g1" / "kernel.cu").read_text()
    rows = read_table(camp / "g1" / "traces", "evaluations")
    assert len(rows) >= 20 and set(rows["problem"]) == {"gemm_bf16"} and rows["geomean_vs_main"].notna().all()
    report = tmp_path / "report.html"
    run = cli("report", str(camp / "g1" / "traces"), str(ROOT / "data" / "traces"), "-o", str(report))
    assert run.returncode == 0, run.stderr[-2000:]
    page = report.read_text()
    assert "Test fixtures, demos and stand-in data · gemm_bf16 · 1 session" in page
    assert "Recorded campaigns · " in page and " · attn_fwd · " in page    # the sample traces: attention's


@pytest.mark.slow
def test_an_outside_agents_gemm_campaign_and_an_evolution_run(cli, tmp_path):
    run = cli("check", "kernel.cu", "--campaign", "c1", "--new", "--problem", "gemm_bf16", "--evaluator",
                  "standin", "--root", str(tmp_path / "campaigns"))
    assert "geomean_vs_cublas >= 1.0" in run.stdout and parse_result_lines(run.stdout)[-1]["problem"] == "gemm_bf16"
    run = cli("evolve", "--problem", "gemm_bf16", "--evaluator", "standin", "--population", "2",
                  "--generations", "1", "--root", str(tmp_path / "evolutions"), "--id", "e1")
    assert run.returncode == 0, run.stderr[-2000:]
    config = json.loads((tmp_path / "evolutions" / "e1" / "config.json").read_text())
    assert config["problem"] == "gemm_bf16" and config["kernel_path"] == str(GEMM / "original.cu")
    assert "3 evaluations" in run.stdout


def test_the_knob_standin_on_the_gemms_original_and_its_empty_products():
    """The stand-in evaluator on GEMM: its own original is x1 against itself (not attention's knobs), and a K = 0
    scenario (no FLOPs: smoke_k0) gets a launch's time instead of 0 us, which divided by zero."""
    from workbench.evaluators.standin_timings import KnobEvaluator
    from workbench.harness.result import CheckRequest

    result = KnobEvaluator()(CheckRequest(kernel_path=str(GEMM / "original.cu"), suite="smoke", problem="gemm_bf16"))
    variables = result.stop_variables()
    assert variables["geomean_vs_original"] == pytest.approx(1.0)
    assert variables["geomean_vs_cublas"] == pytest.approx(1 / 8.0)
    k0 = next(r for r in result.rows if r.scenario["name"] == "smoke_k0")
    assert k0.status == "passed" and k0.stats.median_us > 0
