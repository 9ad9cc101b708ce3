"""scripts/random_suite.py: shapes nobody tuned on, drawn by seed, written as a suite the harness loads."""
import subprocess
import sys
from pathlib import Path

from workbench.harness.scenarios import load_suite

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "random_suite.py"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)


def test_a_seed_draws_the_same_suite_and_another_seed_another(tmp_path):
    a, b, c = (tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv")
    for path, seed in ((a, "7"), (b, "7"), (c, "8")):
        assert run("--seed", seed, "--n", "25", "--out", str(path)).returncode == 0
    assert a.read_text() == b.read_text() and a.read_text() != c.read_text()
    shapes = load_suite(str(a))
    assert len(shapes) == 25 and {s.category for s in shapes} == {"R"}
    assert len({s.name for s in shapes}) == 25 and all(s.name.startswith("R7_") for s in shapes)
    for s in shapes:
        assert s.head_dim in (64, 128, 256) and s.heads_q % s.heads_kv == 0 and 1 <= s.seqlen_q <= 16384
        flop = 4.0 * s.batch * s.heads_q * s.seqlen_q * s.seqlen_k * s.head_dim
        assert flop / (2.0 if s.causal and s.seqlen_q == s.seqlen_k else 1.0) <= 40e9


def test_a_count_under_one_is_refused_in_one_line(tmp_path):
    out = run("--seed", "1", "--n", "0", "--out", str(tmp_path / "x.csv"))
    assert out.returncode == 2 and out.stderr.strip().count("\n") == 0 and "--n" in out.stderr
    assert not (tmp_path / "x.csv").exists()
