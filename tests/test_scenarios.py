import pytest

from scripts.make_suites import SUITES
from workbench.harness.scenarios import Scenario, SuiteError, geomean, load_suite


def test_suite_counts():
    assert len(load_suite("smoke")) <= 8
    dev = load_suite("dev26")
    assert len(dev) == 26 and {s.category for s in dev} == {"A", "B", "C", "D"}
    full = load_suite("full")
    assert len(full) == 182
    counts = {c: sum(s.category == c for s in full) for c in "ABCD"}
    assert counts == {"A": 36, "B": 72, "C": 36, "D": 38}
    assert len({s.name for s in full}) == 182
    assert {s.name for s in dev} <= {s.name for s in full}


def test_committed_csvs_match_the_generator():
    for name, make in SUITES.items():
        assert load_suite(name) == make(), f"{name}.csv is stale: run python scripts/make_suites.py"


def test_full_suite_definition_details():
    full = {s.name: s for s in load_suite("full")}
    a = full["A_d128_c1_s16k"]
    assert (a.batch, a.heads_q, a.seqlen_q, a.head_dim, a.causal) == (1, 16, 16384, 128, True)
    b = full["B_h64x8_d128_c0_s32k"]
    assert (b.batch, b.heads_q, b.heads_kv) == (1, 64, 8)
    assert full["B_h28x4_d128_c1_s1k"].batch == 16
    d = full["D_prefill_q128_k16k_h16x8_d256"]
    assert (d.seqlen_q, d.seqlen_k, d.causal, d.heads_kv) == (128, 16384, True, 8)
    x = full["D_cross_q4k_k77_d64"]
    assert (x.batch, x.heads_q, x.seqlen_k, x.causal) == (4, 16, 77, False)


def brute_force_pairs(s: Scenario) -> int:
    return sum(sum(1 for j in range(s.seqlen_k) if (not s.causal) or j <= i + s.seqlen_k - s.seqlen_q)
               for i in range(s.seqlen_q))


@pytest.mark.parametrize("sq,sk", [(64, 64), (33, 200), (70, 30), (1, 5), (5, 1), (128, 129), (100, 100)])
def test_attended_pairs_match_brute_force(sq, sk):
    s = Scenario("x", 1, 1, 1, sq, sk, 64, True)
    assert s.attended_pairs() == brute_force_pairs(s)
    assert all(s.visible_keys(i) == sum(1 for j in range(sk) if j <= i + sk - sq) for i in range(sq))


def test_flops():
    dense = Scenario("d", 2, 8, 2, 1024, 1024, 128, False)
    assert dense.flops() == 4 * 2 * 8 * 1024 * 1024 * 128
    causal = Scenario("c", 2, 8, 2, 1024, 1024, 128, True)
    assert causal.flops() == dense.flops() / 2          # FlashAttention's convention when Sq == Sk
    prefill = Scenario("p", 1, 4, 1, 128, 4096, 64, True)
    # rows see 3969..4096 keys: exact area, not half
    assert prefill.flops() == 4 * 4 * 64 * sum(4096 - 127 + i for i in range(128))


def test_geomean():
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([1.0, None, float("nan"), 4.0]) == pytest.approx(2.0)
    assert geomean([]) != geomean([])  # nan


HEADER = "name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype\n"


@pytest.mark.parametrize("row,needle", [
    ("bad,1,6,4,64,64,64,0,bf16", "heads_q=6 is not a multiple of heads_kv=4"),
    ("bad,1,4,4,0,64,64,0,bf16", "seqlen_q must be positive"),
    ("bad,1,4,4,64,64,64,0,fp8", "unknown dtype 'fp8'"),
    ("bad,1,4,4,64,64,300,0,bf16", "head_dim=300"),
    ("bad,x,4,4,64,64,64,0,bf16", "'batch' must be an integer"),
    ("bad,1,4,4,64,64,64,maybe,bf16", "causal"),
])
def test_bad_rows_are_refused_with_file_line_and_reason(tmp_path, row, needle):
    path = tmp_path / "mine.csv"
    path.write_text(HEADER + "ok,1,4,4,64,64,64,0,bf16\n" + row + "\n")
    with pytest.raises(SuiteError) as err:
        load_suite(path)
    message = str(err.value)
    assert f"{path}:3:" in message and needle in message and "\n" not in message


def test_missing_column_and_missing_suite(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("name,batch\nx,1\n")
    with pytest.raises(SuiteError, match="header lacks column"):
        load_suite(path)
    with pytest.raises(SuiteError, match="suite not found"):
        load_suite("no_such_suite")


def test_user_csv_with_comments(tmp_path):
    path = tmp_path / "u.csv"
    path.write_text("# my shapes\n" + HEADER + "mine,1,8,2,100,300,128,1,bf16\n")
    (s,) = load_suite(path)
    assert s.category == "user" and s.group_size == 4 and s.causal
