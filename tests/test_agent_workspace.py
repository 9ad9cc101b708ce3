"""The agent's file tools stay inside the campaign workspace, and every refusal is a readable tool error."""
import os

import pytest

from workbench.agent import tools as tools_module
from workbench.agent.tools import TOOL_SPECS, Toolbox, format_result, summarise_sass
from workbench.campaign.workspace import MAX_READ_BYTES, MAX_WRITE_BYTES, Workspace, WorkspaceError
from workbench.evaluators.standin_timings import SequenceEvaluator, standin_result

KERNEL = "#define KEY_TILE 8 // @knob KEY_TILE 8 {4,8,16}\n"


@pytest.fixture
def box(tmp_path):
    ws = Workspace.create(tmp_path / "campaigns", "c1", None, {"suite": "smoke"}, kernel_text=KERNEL)
    (tmp_path / "secret.txt").write_text("outside")
    return Toolbox(ws, SequenceEvaluator([1.0, 1.5]), tools_module.HarnessDefaults(suite="smoke"))


def test_every_tool_has_a_json_schema():
    names = {s["name"] for s in TOOL_SPECS}
    assert names == {"read_file", "list_files", "write_file", "edit_file", "run_harness", "compile_report",
                     "sass_summary", "ncu_profile", "revert"}
    for spec in TOOL_SPECS:
        assert spec["input_schema"]["type"] == "object" and spec["description"]
        assert set(spec["input_schema"].get("required", [])) <= set(spec["input_schema"]["properties"])


@pytest.mark.parametrize("path, message", [
    ("../secret.txt", "outside the campaign workspace"),
    ("../../secret.txt", "outside the campaign workspace"),
    ("/etc/passwd", "outside the campaign workspace"),
    ("notes/../../secret.txt", "outside the campaign workspace"),
    ("", "empty path"),
    ("a\x00b", "malformed"),
])
def test_reads_outside_the_workspace_are_refused(box, path, message):
    out = box.run("read_file", {"path": path})
    assert out.is_error and message in out.text


def test_symlinks_are_refused_wherever_they_lead(box, tmp_path):
    root = box.ws.root
    os.symlink(tmp_path / "secret.txt", root / "escape.txt")
    os.symlink(tmp_path, root / "up")
    os.symlink(root / "kernel.cu", root / "same.cu")
    for tool, data in (("read_file", {"path": "escape.txt"}), ("read_file", {"path": "up/secret.txt"}),
                       ("write_file", {"path": "escape.txt", "content": "x"}),
                       ("edit_file", {"path": "up/secret.txt", "old_string": "outside", "new_string": "in"}),
                       ("list_files", {"path": "up"})):
        out = box.run(tool, data)
        assert out.is_error and "symlink that leads outside" in out.text, (tool, out.text)
    assert (tmp_path / "secret.txt").read_text() == "outside"
    # one rule: no link is followed, even one that points back inside
    out = box.run("read_file", {"path": "same.cu"})
    assert out.is_error and "goes through a symlink (same.cu)" in out.text


@pytest.mark.parametrize("path", ["traces/x.parquet", "artifacts/abc.cu", "config.json", "state/turn-00001.json", "."])
def test_the_campaigns_own_records_are_read_only(box, path):
    out = box.run("write_file", {"path": path, "content": "x"})
    assert out.is_error and "read-only" in out.text


def test_absurd_sizes_are_refused(box):
    out = box.run("write_file", {"path": "big.cu", "content": "x" * (MAX_WRITE_BYTES + 1)})
    assert out.is_error and "more than" in out.text and not (box.ws.root / "big.cu").exists()
    (box.ws.root / "huge.log").write_bytes(b"x" * (MAX_READ_BYTES + 1))
    out = box.run("read_file", {"path": "huge.log"})
    assert out.is_error and "more than" in out.text


def test_write_edit_read_list_inside(box):
    assert not box.run("write_file", {"path": "notes/plan.md", "content": "tile 16\n"}).is_error
    assert box.run("read_file", {"path": "notes/plan.md"}).text == "tile 16\n"
    out = box.run("edit_file", {"path": "kernel.cu", "old_string": "KEY_TILE 8 //", "new_string": "KEY_TILE 16 //"})
    assert not out.is_error and "line 1" in out.text
    assert "KEY_TILE 16 //" in box.ws.kernel_path.read_text()
    listing = box.run("list_files", {}).text
    assert "kernel.cu" in listing and "notes/plan.md" in listing and "traces" not in listing
    assert box.run("read_file", {"path": "notes"}).is_error


def test_edit_needs_one_exact_match(box):
    box.run("write_file", {"path": "a.cu", "content": "x x"})
    assert "occurs 2 times" in box.run("edit_file", {"path": "a.cu", "old_string": "x", "new_string": "y"}).text
    assert "not found" in box.run("edit_file", {"path": "a.cu", "old_string": "z", "new_string": "y"}).text
    assert "empty" in box.run("edit_file", {"path": "a.cu", "old_string": "", "new_string": "y"}).text


def test_inputs_are_checked_against_the_schema(box):
    assert "missing required input path" in box.run("read_file", {}).text
    assert "must be a string" in box.run("read_file", {"path": 3}).text
    assert "unknown input" in box.run("read_file", {"path": "kernel.cu", "mode": "r"}).text
    assert "unknown tool" in box.run("rm_rf", {}).text
    assert box.run("read_file", ["kernel.cu"]).is_error


def test_run_harness_saves_an_artifact_and_revert_restores_it(box):
    first = box.run("run_harness", {})
    assert not first.is_error and first.result is not None
    assert (box.ws.artifacts_dir / f"{first.kernel_sha}.cu").read_text() == KERNEL
    assert "RESULT_JSON" in first.text and "stop condition" in first.text
    box.run("write_file", {"path": "kernel.cu", "content": "// rewritten\n"})
    out = box.run("revert", {"sha": first.kernel_sha[:8]})
    assert not out.is_error and box.ws.kernel_path.read_text() == KERNEL
    assert "no evaluated version" in box.run("revert", {"sha": "abcdef12"}).text
    assert "not a kernel sha" in box.run("revert", {"sha": "../../x"}).text


def test_harness_failures_are_tool_errors_not_crashes(box):
    def broken(request):
        raise RuntimeError("worker died")
    box.evaluator = broken
    out = box.run("run_harness", {})
    assert out.is_error and "worker died" in out.text


def test_gpu_tools_say_plainly_when_the_gpu_toolchain_is_missing(box, monkeypatch):
    monkeypatch.setattr(tools_module.shutil, "which", lambda name: None)
    sass = box.run("sass_summary", {})
    assert sass.is_error and "cuobjdump" in sass.text and "GPU machine only" in sass.text
    ncu = box.run("ncu_profile", {"scenario": "smoke_basic"})
    assert ncu.is_error and "ncu" in ncu.text and "GPU machine only" in ncu.text


def test_recorded_gpu_tool_output_is_replayed(box):
    box.recorded = {"toolu_1": ("SASS instructions: 10", False)}
    assert box.run("sass_summary", {}, call_id="toolu_1").text == "SASS instructions: 10"


def test_sass_summary_counts_opcodes():
    sass = """
        /*0070*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;
        /*0080*/              @!P0 FFMA R2, R3, R4, R5 ;
        /*0090*/                   MUFU.EX2 R6, R7 ;
        /*00a0*/                   LDL.64 R8, [R1] ;
        /*00b0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
    """
    text = summarise_sass(sass)
    assert "HGMMA=1" in text and "FFMA=1" in text and "MUFU.EX2=1" in text and "LDL=1" in text and "BAR=1" in text


def test_format_result_shows_the_table_geomeans_and_stop(tmp_path):
    class Req:
        kernel_path, suite, stop_expr = "// k", "smoke", "geomean_vs_original >= 2"
    text = format_result(standin_result(Req, 2.5, flags=["noisy:1"]), "ab" * 32)
    assert "smoke_basic" in text and "x2.50 vs original" in text and "HOLDS" in text and "noisy:1" in text


def test_workspace_create_refuses_an_existing_id(tmp_path):
    Workspace.create(tmp_path, "c1", None, {}, kernel_text="x")
    with pytest.raises(WorkspaceError, match="already exists"):
        Workspace.create(tmp_path, "c1", None, {}, kernel_text="x")
    with pytest.raises(WorkspaceError, match="campaign id"):
        Workspace.create(tmp_path, "../evil", None, {}, kernel_text="x")


def test_long_files_are_read_in_windows(box):
    box.run("write_file", {"path": "long.txt", "content": "".join(f"line {i}\n" for i in range(1, 2501))})
    first = box.run("read_file", {"path": "long.txt"}).text
    assert first.startswith("line 1\n") and "[lines 1-2000 of 2500; read on with offset=2001]" in first
    rest = box.run("read_file", {"path": "long.txt", "offset": 2001}).text
    assert rest.startswith("line 2001\n") and "[lines 2001-2500 of 2500]" in rest
    assert box.run("read_file", {"path": "kernel.cu"}).text == KERNEL


def test_unknown_ncu_metrics_are_recognised_for_a_retry():
    from workbench.agent.tools import NCU_METRICS, unknown_ncu_metrics
    out = ("==PROF== Connected to process 1\n==ERROR== Failed to find metric "
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\n")
    assert unknown_ncu_metrics(out, list(NCU_METRICS)) == {
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"}
    assert unknown_ncu_metrics("==PROF== Disconnected\n", list(NCU_METRICS)) == set()


def _ncu_csv(launches):
    head = '"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"'
    rows = [f'"{i}","1","{k}","{m}","{u}","{v}"' for i, k in enumerate(launches)
            for m, u, v in (("gpu__time_duration.sum", "ns", 1000 + i), ("launch__grid_size", "", 64))]
    return "==PROF== Connected\n" + "\n".join([head, *rows]) + "\n"


def test_ncu_summary_shows_only_the_profiled_call_of_the_candidate():
    from workbench.agent.tools import summarise_ncu_csv
    fills = ["void at::<unnamed>::distribution_elementwise_grid_stride_kernel<float>(int)"] * 3
    out = summarise_ncu_csv(_ncu_csv(fills + ["attn_fwd_kernel<64>(AttnParams)"] * 2))
    assert "distribution" not in out and "1 kernel launch(es) of attn_fwd_kernel<64>" in out
    assert "1004" in out and "1003" not in out          # the profiled (second) call, not the warm-up
    # a split-KV kernel: two kernels per call; both of the second call are shown
    out = summarise_ncu_csv(_ncu_csv(fills + ["split_kernel", "combine_kernel"] * 2))
    assert "2 kernel launch(es) of split_kernel, combine_kernel" in out and "1005" in out and "1006" in out
    assert "1003" not in out and "1004" not in out
    assert "no kernel of the candidate" in summarise_ncu_csv(_ncu_csv(fills))
