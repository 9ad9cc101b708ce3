"""scripts/hang_probe.py on the CPU: the watchdog words (the rung's WATCHDOG=1 layout) read back as where each
CTA's roles stopped and which waits were stuck, bad input answered in one line before any build, and the rung
builds with the watchdog (every function, the default build's SASS untouched is checked by the ladder diary)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
hp = pytest.importorskip("hang_probe")


def words_with(marks, records):
    w = [0] * hp.WD_WORDS
    for (cta, wg), value in marks.items():
        w[4 * cta + wg] = value
    w[hp.WD_COUNT] = len(records)
    for i, rec in enumerate(records):
        base = hp.WD_COUNT + 1 + hp.WD_RECORD_WORDS * i
        w[base:base + len(rec)] = rec
    return w


def test_marks_are_grouped_by_role_tile_and_point_and_stuck_waits_listed():
    marks = {(0, 0): 1 << 8 | 12, (0, 1): 1 << 8 | 4, (0, 2): 1 << 8 | 3, (1, 1): 1 << 8 | 4,
             (1, 0): 0xFFFF << 8 | 14, (5, 1): 1 << 8 | 4}
    recs = [[3, 256, 0x380c0, 0, 0xdeadbeef, 0x1], [1, 288, 0x380c0, 0, 0, 0], [3, 0, 0x38090, 0, 0, 0]]
    lines = hp.summarize_watchdog(words_with(marks, recs), ctas=4)
    text = "\n".join(lines)
    assert "mark consumer 0 tile    1 O-staging barrier passed        2 CTAs (0,1)" in text   # CTA 5: past the grid
    assert "mark consumer 1 tile    1 store retired                   1 CTAs (0)" in text
    assert "mark producer   tile    1 empty tile's O wait passed      1 CTAs (0)" in text
    assert "mark producer   tile  end producer done" in text
    assert lines[-3] == "stuck waits recorded: 3"
    assert lines[-2] == "stuck producer   barrier 0x38090 parity 0: 1 warps in 1 CTAs (3); e.g. cta 3 thread 0 state " \
                        "0x0000000000000000"
    assert lines[-1] == "stuck consumer 1 barrier 0x380c0 parity 0: 2 warps in 2 CTAs (1,3); e.g. cta 3 thread 256 " \
                        "state 0x00000001deadbeef"


def test_more_stuck_waits_than_kept_say_so():
    recs = [[i, 0, 0x38000, 1, 0, 0] for i in range(hp.WD_RECORDS)]
    w = words_with({}, recs)
    w[hp.WD_COUNT] = hp.WD_RECORDS + 44
    lines = hp.summarize_watchdog(w, ctas=1)
    assert lines[0] == f"stuck waits recorded: {hp.WD_RECORDS + 44} (first {hp.WD_RECORDS} kept)"
    assert len(lines) == 2 and "256 warps in 256 CTAs" in lines[1]


@pytest.mark.parametrize("args, message", [
    (["--suite", "no/such.csv"], "hang_probe: no suite file no/such.csv"),
    (["--suite", "kernels/attn_fwd/suites/edge.csv", "--only", "nothing_like_this"], "matches --only"),
])
def test_bad_input_is_one_line_before_any_build(args, message, tmp_path):
    r = subprocess.run([sys.executable, "scripts/hang_probe.py", *args], capture_output=True, text=True, cwd=ROOT,
                       env={"PATH": "/usr/bin:/bin", "LADDER_BUILD": str(tmp_path / "b")}, timeout=120)
    assert r.returncode != 0 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_rung_builds_with_the_watchdog(tmp_path):
    r = subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O1", "-std=c++17", "-DWATCHDOG=1",
                        "-cubin", "-o", str(tmp_path / "k.cubin"), "kernels/attn_fwd/ladder/04_pingpong.cu"],
                       capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
