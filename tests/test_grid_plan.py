"""Rung 04's launch rules on the CPU: the real dispatch_cfg (which Cfg), plan_grid (which grid and which walk a launch
takes), pack_gqa, choose_splits, has_keyless_tiles and three_consumers_pay (d64's tile), cut out of the .cu with its
knob defaults and compiled with g++. Each case is a shape class whose walk a GPU run chose (docs/kernel_ladder.md, the
run in the comment); a changed rule that moves one of them fails here before any device time is spent."""
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from grid_plan import main, plans, tile, walk  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ (host build of the launch rules)")

# (name, (head_dim, batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal), the walk v26 takes, why)
CASES = [
    ("B_h32x8_d128_c1_s2k", (128, 8, 32, 8, 2048, 2048, 1), "pair_tail", "run 73: GQA up to 32 blocks"),
    ("B_h32x8_d128_c1_s8k", (128, 2, 32, 8, 8192, 8192, 1), "static_walk", "64 blocks: the one-order walk"),
    ("B_h32x8_d128_c1_s16k", (128, 1, 32, 8, 16384, 16384, 1), "counter", "run 54: DYN_LONG from 128 blocks"),
    ("A_d128_c1_s4k", (128, 4, 16, 16, 4096, 4096, 1), "counter", "runs 67-68: DYN_PAIRS from 16 blocks"),
    ("A_d128_c1_s1k", (128, 16, 16, 16, 1024, 1024, 1), "pair_tail", "run 76: PAIR_TAIL 3"),
    ("A_d256_c1_s2k", (256, 8, 8, 8, 2048, 2048, 1), "persistent_pairs", "run 69: the order lost at d256"),
    ("B_h16x8_d256_c1_s8k", (256, 2, 16, 8, 8192, 8192, 1), "pair_tail", "run 73: GQA pairs relaunched before"),
    ("C_s3000_d128_c1", (128, 2, 16, 16, 3000, 3000, 1), "pair_tail", "run 84: pairs from 768 tiles"),
    ("C_s3000_d256_c1", (256, 2, 16, 16, 3000, 3000, 1), "persistent_pairs", "run 84: pairs from 768 tiles"),
    ("C_s1500_d128_c1", (128, 2, 16, 16, 1500, 1500, 1), "static_walk", "384 tiles: no pairs, no chunks"),
    ("A_d256_c1_s16k", (256, 1, 8, 8, 16384, 16384, 1), "cta_per_tile", "run 54: no counter walk at d256"),
    ("E_d256_q4097_k129_mqa_causal", (256, 1, 8, 1, 4097, 129, 1), "cta_per_tile", "runs 57-66: EMPTY_SOLO"),
    ("A_d128_c0_s4k", (128, 4, 16, 16, 4096, 4096, 0), "persistent", "non-causal: one CTA per SM, no walk"),
    ("A_d64_c1_s512", (64, 32, 32, 32, 512, 512, 1), "pair_tail", "run 76: PAIR_TAIL 3 at d64"),
    ("A_d64_c1_s4k", (64, 4, 32, 32, 4096, 4096, 1), "counter", "run 53: DYN_CHUNKS' d64 gainers"),
    ("B_h64x8_d64_c1_s2k", (64, 8, 64, 8, 2048, 2048, 1), "static_walk", "GQA past 8 d64 blocks: the walk"),
    ("C_s3000_d64_c1", (64, 2, 16, 16, 3000, 3000, 1), "static_walk", "512 tiles of 192 rows (run 84: unmoved)"),
]


def test_each_measured_shape_class_gets_the_walk_its_runs_chose(tmp_path):
    rows = plans(tmp_path, [shape for _, shape, _, _ in CASES])
    got = {name: walk(row) for (name, _, _, _), row in zip(CASES, rows)}
    assert got == {name: want for name, _, want, _ in CASES}
    by_name = dict(zip((c[0] for c in CASES), rows))
    assert by_name["A_d128_c0_s4k"][5] == 132                 # persistent: one CTA per SM
    assert by_name["E_d256_q4097_k129_mqa_causal"][5] == 264  # one CTA per tile: 33 query blocks x 8 heads
    for name in ("B_h32x8_d128_c1_s2k", "A_d128_c1_s1k", "B_h16x8_d256_c1_s8k", "A_d128_c1_s4k"):
        assert by_name[name][5] == 132, name                  # the counter's walks: one CTA per SM
    # d64 by three_consumers_pay on 132 SMs: C_s3000_d64_c1 in 192-row tiles (16 per head, 512 in all), the
    # non-causal A_d64_c0_s512 too (two waves of 192-row tiles), causal A_d64_c1_s512 in 128-row ones
    assert by_name["C_s3000_d64_c1"][6] == 16 * 32
    assert plans(tmp_path, [(64, 32, 32, 32, 512, 512, 0)])[0][6] == 3 * 32 * 32
    assert by_name["A_d64_c1_s512"][6] == 4 * 32 * 32
    # PAIR_TAIL's tail covers >= 4 rounds of 132 tiles: ceil(4 * 132 / n) heads
    assert by_name["B_h32x8_d128_c1_s2k"][4] == -(-4 * 132 // 16)
    assert by_name["B_h16x8_d256_c1_s8k"][4] == -(-4 * 132 // 64)


def test_without_pair_tail_the_gqa_and_group_one_grids_fall_back(tmp_path):
    picked = [c for c in CASES if c[0] in ("B_h32x8_d128_c1_s2k", "A_d128_c1_s1k", "B_h16x8_d256_c1_s8k")]
    rows = plans(tmp_path, [shape for _, shape, _, _ in picked], ("-DPAIR_TAIL=0",))
    assert [walk(r) for r in rows] == ["static_walk", "persistent_pairs", "pairs_per_cta"]


def test_d256_short_key_tiles_go_only_where_run_107_measured_a_gain(tmp_path):
    # D256_BN_SHORT=64: 64-key blocks on causal d256 calls of <= 1024 keys (run 107: s512 +9 %, s1k +4 %, s2k +-1 %)
    # and on non-causal ones where 64 pads >= 5 % less than 80 (512 keys: 512 against 560; 1000: 1024 against 1040)
    shapes = {"A_d256_c1_s512": (256, 32, 8, 8, 512, 512, 1), "A_d256_c1_s1k": (256, 16, 8, 8, 1024, 1024, 1),
              "A_d256_c1_s2k": (256, 8, 8, 8, 2048, 2048, 1), "A_d256_c0_s512": (256, 32, 8, 8, 512, 512, 0),
              "C_s1000_d256_c0": (256, 2, 16, 16, 1000, 1000, 0), "q128_k4k_c1": (256, 1, 16, 8, 128, 4096, 1),
              "k1025_c1": (256, 1, 16, 8, 1025, 1025, 1), "A_d128_c1_s512": (128, 32, 16, 16, 512, 512, 1)}
    want = {"A_d256_c1_s512": "128x64", "A_d256_c1_s1k": "128x64", "A_d256_c1_s2k": "128x80",
            "A_d256_c0_s512": "128x64", "C_s1000_d256_c0": "128x80", "q128_k4k_c1": "128x80", "k1025_c1": "128x80",
            "A_d128_c1_s512": "128x128"}
    rows = plans(tmp_path, list(shapes.values()), ("-DD256_BN_SHORT=64",))
    assert {name: tile(r) for name, r in zip(shapes, rows)} == want
    default = plans(tmp_path, list(shapes.values()))   # the knob off: every d256 call in 80-key blocks
    assert {tile(r) for name, r in zip(shapes, default) if shapes[name][0] == 256} == {"128x80"}


def test_the_cli_prints_each_shapes_walk_and_refuses_bad_input(capsys):
    suite = str(ROOT / "kernels" / "attn_fwd" / "suites" / "full.csv")
    assert main(["--suite", suite, "--only", "B_h32x8_d128_c1_s2k,A_d256_c1_s2k"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in out] == [["A_d256_c1_s2k", "persistent_pairs"],
                                                 ["B_h32x8_d128_c1_s2k", "pair_tail"]]
    assert main(["--suite", suite, "--only", "B_h32x8_d128_c1_s2k", "-D", "PAIR_TAIL=0"]) == 0
    assert capsys.readouterr().out.split()[1] == "static_walk"
    for bad in (["--suite", suite, "-D", "PAIR_TAIL"], ["--suite", "no/such.csv"], ["--suite", suite, "--only", "zz"]):
        assert main(bad) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("grid_plan: "), err


def test_a_suite_is_named_as_workbench_check_names_it(capsys):
    assert main(["--suite", "full", "--only", "A_d256_c1_s2k"]) == 0
    assert capsys.readouterr().out.split()[:2] == ["A_d256_c1_s2k", "persistent_pairs"]
    assert main(["--suite", "nope", "--only", "A_d256_c1_s2k"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no suite 'nope'" in err and "full" in err and "\n" not in err
