"""scripts/tile_timeline.py end to end on a real GPU, on tests/fixtures/timeline_stub.cu: a stand-in kernel that
writes the timeline records for a schedule of known spins; the tool must read them all back as that schedule."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]
STUB = "tests/fixtures/timeline_stub.cu"
SHAPES = {"A_d128_c1_s1k": (16 * 16 * 8, 8), "C_s3000_d128_c1": (2 * 16 * 24, 24)}   # (tiles, key blocks)


def test_the_tool_reads_back_every_record_of_the_stub_schedule(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    env = dict(os.environ, OUT=str(tmp_path / "out"), LADDER_BUILD=str(tmp_path / "build"))
    run = subprocess.run([sys.executable, "scripts/tile_timeline.py", "--kernels", STUB, "--only", *SHAPES,
                          "--reps", "5", "--cap", "0.1", "--save-records"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=400)
    print(run.stdout[-6000:], run.stderr[-3000:])
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "out" / "tile_timeline.json").read_text())["results"]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert [r["shape"] for r in results] == list(SHAPES)
    for r in results:
        tiles, key_blocks = SHAPES[r["shape"]]
        a = r["analysis"]
        assert r["records_reported"] == r["records_copied"] == tiles
        assert (a["bad_records"], a["tiles"], a["ctas"], a["warpgroups"]) == (0, tiles, min(tiles, 2 * sms), [0])
        assert a["sm"]["n_sms"] >= sms // 2
        assert math.isclose(sum(a["sm"]["frac"].values()), 1.0, rel_tol=1e-9)
        assert math.isclose(sum(a["all"]["phase_frac"].values()), 1.0, rel_tol=1e-9)
        assert 0.2 < a["ns_per_cycle"] < 3.0                       # an SM clock between ~0.33 and 5 GHz
        assert 500 <= a["all"]["steady_block_cycles_median"] < 900   # the stub spins 500 cycles per further block
        assert 700 <= a["all"]["first_block_cycles_median"] < 1200   # first S 300 + first softmax 400
        want = [c for c, lo, hi in [("0", 0, 0), ("1", 1, 1), ("2-3", 2, 3), ("4-7", 4, 7), ("8-15", 8, 15),
                                    ("16-31", 16, 31), ("32+", 32, 10**9)] if lo <= key_blocks]
        assert list(a["by_length"]) == want
        assert math.isfinite(r["overhead_pct"]) and r["plain_us"] > 0
        assert os.path.getsize(r["records_file"]) == 64 * tiles


def test_a_max_records_below_the_count_is_reported_not_hidden(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    env = dict(os.environ, OUT=str(tmp_path / "out"), LADDER_BUILD=str(tmp_path / "build"))
    run = subprocess.run([sys.executable, "scripts/tile_timeline.py", "--kernels", STUB, "--only", "A_d128_c1_s1k",
                          "--reps", "3", "--cap", "0.05", "--max-records", "100"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    (r,) = json.loads((tmp_path / "out" / "tile_timeline.json").read_text())["results"]
    assert (r["records_reported"], r["records_copied"], r["analysis"]["records"]) == (16 * 16 * 8, 100, 100)
    assert f"{16 * 16 * 8 - 100} records not copied" in run.stdout
