"""Import time grows with the number of harness runs, not with its square: counted in `same_run` checks."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from workbench.traces.importers import run_identity
from workbench.traces.importers.harness_output import find_sightings

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _output(run: int) -> str:
    """A `workbench check` summary; even runs carry an eval id, odd ones only their figures."""
    sha = f"{run * 2654435761 % (1 << 48):012x}"
    text = (f"kernel: kernel.cu (sha {sha})\nsuite: dev26  gpu: NVIDIA H200\nscenarios: 26 passed, 0 failed\n"
            f"geomean_vs_fa3: {0.4 + run * 0.001:.3f}\nall_correct: true\n")
    if run % 2 == 0:
        text += ('workbench-result: {"schema": 1, "eval_id": "e%d", "kernel_sha": "%s", "suite": "dev26", '
                 '"status": "evaluated", "all_correct": true, "geomeans": {"overall": {"fa3": %.6f}}}\n'
                 % (run, sha, 0.4 + run * 0.001))
    return text


def _checks(monkeypatch, runs: int) -> tuple[int, int]:
    """(same_run checks, runs found) for `runs` runs 3 s apart, every tenth read back 30 s later."""
    calls = [0]
    real = run_identity.same_run

    def counting(a, b):
        calls[0] += 1
        return real(a, b)

    monkeypatch.setattr(run_identity, "same_run", counting)
    merger = run_identity.RunMerger()
    outputs = [_output(n) for n in range(runs)]
    for n, text in enumerate(outputs):
        merger.add(find_sightings(text), call_id=f"c{n}", ts=START + timedelta(seconds=3 * n), source_file="f",
                   source_line=n)
        if n % 10 == 9:
            merger.add(find_sightings(outputs[n - 9]), call_id=f"r{n}", ts=START + timedelta(seconds=3 * n + 1),
                       source_file="f", source_line=n)
    monkeypatch.setattr(run_identity, "same_run", real)
    return calls[0], len(merger.rows("s"))


def test_run_matching_is_near_linear(monkeypatch):
    small, small_runs = _checks(monkeypatch, 500)
    large, large_runs = _checks(monkeypatch, 2000)
    assert (small_runs, large_runs) == (500, 2000)          # read-backs are the runs they quote, not new ones
    # four times the runs: about four times the checks when linear, sixteen when every run meets every other
    assert large < 6 * small, (small, large)
