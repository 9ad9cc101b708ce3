"""scripts/tile_timeline.py and its analysis: synthetic per-tile records (the kernel's 16 x uint32 layout) for a
known schedule come back as exactly that schedule's gaps, tails, phases and medians; bad input exits 2."""
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import tile_timeline_analysis as tta  # noqa: E402

BASE = (7 << 32) - 2000   # the schedule's times straddle a 2^32 boundary: lo and hi words both matter


def record(t0, t1, cycles, cta, smid, k, wq, n_iter, m_block=0):
    """One record's 64 bytes; t0/t1 in ns after BASE, cycles (c_q, c_s0, c_b0, c_loop, c_pv, c_end)."""
    a, b = BASE + t0, BASE + t1
    return struct.pack("<16I", a & 0xFFFFFFFF, a >> 32, b & 0xFFFFFFFF, b >> 32, *cycles,
                       cta, smid, k, wq, m_block, n_iter)


# SM 0: CTA 0, tile k=0 on two warpgroups, then k=1.  SM 1: CTA 1 from 200 ns in, a 500 ns gap, CTA 2 (two
# warpgroups), then 500 ns of tail. Every tile's c_end is half its ns: 2.0 ns per cycle.
SCHEDULE = [
    (1000, 2800, (100, 200, 350, 650, 750, 900), 0, 0, 0, 0, 4),     # A: steady 300 / 3 blocks = 100
    (1000, 3000, (100, 200, 400, 730, 850, 1000), 0, 0, 0, 1, 4),    # B: steady 110
    (3000, 5000, (50, 250, 500, 500, 600, 1000), 0, 0, 1, 0, 1),     # C: one block
    (1200, 3000, (0, 150, 300, 420, 500, 900), 1, 1, 0, 0, 2),       # D: steady 120
    (3500, 4500, (80, 80, 80, 80, 80, 500), 2, 1, 0, 0, 0),          # E: no key block
    (3600, 4400, (0, 10, 30, 381, 390, 400), 2, 1, 0, 1, 40),        # F: steady 351 / 39 = 9
]


def schedule_bytes():
    return b"".join(record(*row) for row in SCHEDULE)


def test_parse_records_reads_the_layout_back():
    recs = tta.parse_records(schedule_bytes())
    assert len(recs) == 6
    assert recs[3] == dict(gt_start=BASE + 1200, gt_end=BASE + 3000, c_q=0, c_s0=150, c_b0=300, c_loop=420,
                           c_pv=500, c_end=900, cta=1, smid=1, k=0, wq=0, m_block=0, n_iter=2)
    with pytest.raises(ValueError, match="not a multiple of 64"):
        tta.parse_records(schedule_bytes()[:-4])


def test_the_analysis_returns_the_schedules_gaps_tails_phases_and_medians():
    a = tta.analyze(tta.parse_records(schedule_bytes()), device_sms=132)
    assert (a["records"], a["bad_records"], a["tiles"], a["ctas"], a["warpgroups"]) == (6, 0, 4, 3, [0, 1])
    sm = a["sm"]
    assert (sm["span_ns"], sm["n_sms"], sm["unused_sms"]) == (4000, 2, 130)
    assert sm["per_sm"][0] == dict(busy=4000, head=0, tail=0, gaps=0, stretches=1)   # k=0 and k=1 touch
    assert sm["per_sm"][1] == dict(busy=2800, head=200, tail=500, gaps=500, stretches=2)
    assert sm["ns"] == dict(busy=6800, gaps=500, head=200, tail=500)
    assert sm["frac"] == dict(busy=0.85, gaps=0.0625, head=0.025, tail=0.0625)
    assert a["ns_per_cycle"] == 2.0 and a["gt_step_ns"] == 100
    s = a["all"]
    want = dict(wait_q=330, first_s=560, first_softmax=770, steady_loop=1101, last_pv=409, epilogue=1530)
    assert s["phase_cycles"] == want and s["cycles"] == 4700
    assert s["phase_frac"] == {name: c / 4700 for name, c in want.items()}
    assert s["first_block_cycles_median"] == 300        # of 250, 300, 450, 300, 30 (E has no block)
    assert s["steady_block_cycles_median"] == 105.0     # of 100, 110, 120, 9
    assert s["tile_ns_median"] == 1800
    assert list(a["by_length"]) == ["0", "1", "2-3", "4-7", "32+"]
    four = a["by_length"]["4-7"]
    assert (four["records"], four["cycles"], four["first_block_cycles_median"],
            four["steady_block_cycles_median"]) == (2, 1900, 275.0, 105.0)
    assert a["by_length"]["0"]["phase_cycles"] == dict(wait_q=80, first_s=0, first_softmax=0, steady_loop=0,
                                                       last_pv=0, epilogue=420)
    assert a["by_length"]["32+"]["steady_block_cycles_median"] == 9.0
    lines = tta.table(a)
    assert len(lines) <= 25
    assert any("busy   85 %  gaps    6 %  head    2 %  tail    6 %" in line for line in lines)


def test_impossible_records_are_counted_and_left_out():
    good = record(0, 1000, (10, 20, 30, 40, 50, 500), 0, 0, 0, 0, 3)
    bad = [record(2000, 1500, (10, 20, 30, 40, 50, 60), 1, 1, 0, 0, 3),        # ends before it starts
           record(0, 900, (10, 20, 300, 40, 50, 60), 2, 2, 0, 0, 3),           # c_loop < c_b0
           record(0, 900, (700, 0, 0, 0, 0, 600), 3, 3, 0, 0, 0)]              # n_iter 0 and c_q > c_end
    a = tta.analyze(tta.parse_records(good + b"".join(bad)))
    assert (a["records"], a["bad_records"]) == (4, 3)
    assert a["bad_reasons"] == {"gt_end < gt_start": 1, "cycles not monotone": 1, "c_q > c_end (n_iter 0)": 1}
    assert (a["all"]["records"], a["sm"]["n_sms"], a["sm"]["span_ns"], a["ns_per_cycle"]) == (1, 1, 1000, 2.0)
    none = tta.analyze(tta.parse_records(b"".join(bad)))
    assert none["bad_records"] == 3 and "sm" not in none
    assert tta.table(none)[-1].strip() == "no usable record"


def test_the_analysis_cli_prints_the_table_of_a_records_file(tmp_path):
    (tmp_path / "r.bin").write_bytes(schedule_bytes())
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "tile_timeline_analysis.py"), str(tmp_path / "r.bin")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "tiles 4  CTAs 3  SMs 2" in run.stdout and "2.000 ns/cycle" in run.stdout


# the CLI run in-process by runpy, so the test can say whether torch got imported before the refusal
PROBE = ("import runpy, sys\nsys.argv = ['tile_timeline.py'] + sys.argv[1:]\n"
         "try:\n    runpy.run_path('scripts/tile_timeline.py', run_name='__main__')\n"
         "except SystemExit as e:\n    print('rc', e.code, 'torch' in sys.modules)\n")


def probe(*args, env=None):
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env=env)


def test_a_missing_kernel_file_exits_2_with_one_line_before_torch(tmp_path):
    run = probe("--kernels", str(tmp_path / "nope.cu"), "--only", "A_d128_c1_s1k")
    assert run.stdout.strip() == "rc 2 False"
    assert run.stderr.count("\n") == 1 and "nope.cu" in run.stderr and "no file" in run.stderr


def test_an_unknown_scenario_exits_2_naming_the_nearest_before_torch():
    run = probe("--kernels", "kernels/attn_fwd/ladder/04_pingpong.cu", "--only", "A_d128_c1_s1k", "A_d128_c1_s1K")
    assert run.stdout.strip() == "rc 2 False"
    assert run.stderr.count("\n") == 1 and "--only A_d128_c1_s1K: no such scenario" in run.stderr
    assert "did you mean A_d128_c1_s1k" in run.stderr
    run = probe("--kernels", "kernels/attn_fwd/ladder/04_pingpong.cu")
    assert run.stdout.strip() == "rc 2 False" and "no scenario chosen" in run.stderr


def test_a_build_without_attn_timeline_exits_2_before_any_gpu_work(tmp_path):
    """A real nvcc build of a kernel that has attn_fwd but not the timeline export; OUT is never created."""
    cu = tmp_path / "no_timeline.cu"
    cu.write_text('extern "C" int attn_fwd(void*, void*, void*, void*, void*, int, int, int, int, int, int, int,'
                  ' float, void*) { return 0; }\n')
    out = tmp_path / "out"
    env = dict(__import__("os").environ, LADDER_BUILD=str(tmp_path / "build"), OUT=str(out))
    run = probe("--kernels", str(cu), "--only", "A_d128_c1_s1k", env=env)
    assert run.stdout.strip().startswith("rc 2"), run.stderr
    assert run.stderr.count("\n") == 1 and "exports no attn_timeline" in run.stderr
    assert "TIMELINE=1" in run.stderr and not out.exists()


def balanced_grid(blocks_of, ns_per_block):
    """Four CTAs (one SM each, one warpgroup), tiles of 4 blocks back to back from t=0: blocks_of[c] blocks for CTA c,
    each block ns_per_block[c] ns."""
    out = []
    for c, (blocks, ns) in enumerate(zip(blocks_of, ns_per_block)):
        t = 0
        for k in range(blocks // 4):
            out.append(record(t, t + 4 * ns, (0, 10, 20, 30, 40, 50), c, c, k, 0, 4))
            t += 4 * ns
    return tta.parse_records(b"".join(out))


def test_cta_balance_says_early_ctas_had_less_work_when_their_blocks_are_short():
    b = tta.cta_balance(balanced_grid([32, 32, 32, 28], [100, 100, 100, 100]))
    assert (b["blocks_min"], b["blocks_median"], b["blocks_max"]) == (28, 32, 32)
    assert b["early_ctas"] == [3] and b["early_end_ns_median"] == 400 and b["early_blocks_short"] == 4
    assert b["ns_per_block_p10"] == b["ns_per_block_p90"] == 100
    assert "1 CTAs end 0.4 us early (median) with 4 blocks fewer" in tta.balance_line(b)


def test_cta_balance_says_a_slow_sm_by_its_ns_per_block_when_the_work_is_equal():
    b = tta.cta_balance(balanced_grid([32, 32, 32, 32], [100, 100, 100, 90]))
    assert b["early_ctas"] == [3] and b["early_blocks_short"] == 0   # equal work: the SM, not the walk
    assert (b["ns_per_block_p10"], b["ns_per_block_p90"]) == (90, 100)


def test_the_table_carries_the_balance_line():
    lines = tta.table(tta.analyze(balanced_grid([32, 32, 32, 28], [100] * 4)))
    assert any(line.startswith("   CTA work: key blocks min 28 median 32 max 32") for line in lines)
