"""scripts/cache_trim.py: which of a timing cache's tensors travel when the cache is too large for a device call (the
most expensive to recompute per byte, up to a budget), on a cache the harness itself wrote."""
import subprocess
import sys
from pathlib import Path

from test_cache_state_order import _run

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "cache_trim.py"


def _trim(cache: Path, budget) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(cache), str(budget)], capture_output=True, text=True,
                          timeout=300)


def test_the_rows_of_a_suite_scenario_travel_within_the_budget_and_unknown_tensors_do_not(tmp_path):
    cache = tmp_path / "cache"
    _run(cache)                                          # the original's timing and rows of smoke's first shape
    rows = [p.name for p in (cache / "tensors").glob("*.pt")]
    assert len(rows) == 1
    (cache / "tensors" / ("0" * 32 + ".pt")).write_bytes(b"x" * 1000)      # rows no suite names
    whole = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    roomy = _trim(cache, whole)
    assert roomy.returncode == 0, roomy.stderr
    assert roomy.stdout.splitlines() == ["./tensors/" + "0" * 32 + ".pt"]
    assert "1 of 2 tensors kept" in roomy.stderr
    none = _trim(cache, 0)
    assert sorted(none.stdout.splitlines()) == sorted(f"./tensors/{n}" for n in rows + ["0" * 32 + ".pt"])


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    for args in ([str(tmp_path / "absent"), "5"], [str(tmp_path), "lots"], [str(tmp_path)]):
        done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
