"""Which of a timing cache's tensors (the original's output rows) travel with it when the whole cache is too large
for the device call's limits: the ones that cost most to recompute per byte, up to a byte budget.

    python3 scripts/cache_trim.py CACHE_DIR BUDGET_BYTES > excluded.txt

Prints the tensors/ files to leave out, one path a line relative to CACHE_DIR (for `tar --exclude-from`), and a
summary on stderr. A tensor's worth is what a run without it pays: one call of the original on its scenario, its
cached median (the timing entry the rows belong to); its cost is its size on disk (fp32 rows: gzip saves ~nothing).
The rows key is BaselineRole._rows_key's, matched through every problem's suites (a tensor no suite names is left
out first). On the H200's `full` the whole cache was 73 MiB with tensors (2026-12-02), past the 64 MiB a call
carries beside the 27 MiB FA3 wheel; without them a run recomputed the rows with 181 calls (34.8 s).
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from workbench.harness import cache_file  # noqa: E402
from workbench.harness.problem import Problem  # noqa: E402
from workbench.harness.scenarios import load_suite  # noqa: E402
from workbench.harness.timing_cache import TimingCache  # noqa: E402
from workbench.harness.verify import rows_for_seed  # noqa: E402


def suite_scenarios() -> list:
    """(problem, scenario) of every suite of every problem folder."""
    found = []
    for toml in sorted((REPO / "kernels").glob("*/problem.toml")):
        if toml.parent.name.startswith("_"):
            continue
        problem = Problem.load(toml.parent.name)
        for csv in sorted(problem.definition.suites_dir.glob("*.csv")):
            found += [(problem, s) for s in load_suite(csv, problem=problem.definition)]
    return found


def tensor_worth(cache_dir: Path) -> dict[str, float]:
    """tensors/<name>.pt -> the us one original call costs to recompute it (its cached median), for every rows
    tensor a cached original timing and a suite's scenario name."""
    medians = {}       # (sha16, scenario key, gpu) -> median us
    for key, entry in cache_file.read_entries(cache_dir).items():
        parts = key.split("|")
        if len(parts) >= 4 and parts[0] == "original":
            medians[(parts[1], parts[2], parts[3])] = float(entry.get("stats", {}).get("median_us") or 0.0)
    worth = {}
    for problem, s in suite_scenarios():
        tol, judge = problem.tolerances, problem.judge
        seed = tol.seeds[0]
        count = len(rows_for_seed(s, tol, seed, judge)[: tol.original_rows])
        for (sha16, scenario_key, gpu), median in medians.items():
            if scenario_key == s.key:
                key = f"original-rows|{sha16}|{s.key}|{seed}|{count}|{gpu}"
                worth[TimingCache._tensor_name(key)] = median
    return worth


def excluded(cache_dir: Path, budget: int) -> tuple[list[str], dict]:
    worth = tensor_worth(cache_dir)
    files = sorted((cache_dir / "tensors").glob("*.pt")) if (cache_dir / "tensors").is_dir() else []
    rest = sum(p.stat().st_size for p in cache_dir.rglob("*") if p.is_file() and "tensors" not in p.parts
               and "build" not in p.relative_to(cache_dir).parts[:1])
    sized = [(f"tensors/{p.name}", p.stat().st_size) for p in files]
    ranked = sorted(sized, key=lambda item: -(worth.get(item[0], 0.0) / max(1, item[1])))
    kept, left, total = [], [], rest
    for name, size in ranked:
        if name in worth and total + size <= budget:
            kept.append(name)
            total += size
        else:
            left.append(name)
    summary = {"tensors": len(files), "kept": len(kept), "kept_bytes": total,
               "recompute_s_left": sum(worth.get(n, 0.0) for n in left) * 1e-6}
    return left, summary


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit() or not Path(argv[1]).is_dir():
        sys.stderr.write("usage: cache_trim.py CACHE_DIR BUDGET_BYTES (an existing cache folder, a whole number)\n")
        return 2
    left, summary = excluded(Path(argv[1]), int(argv[2]))
    sys.stdout.write("".join(f"./{name}\n" for name in left))
    sys.stderr.write(f"# cache trim: {summary['kept']} of {summary['tensors']} tensors kept, "
                     f"{summary['kept_bytes'] >> 20} MiB with the timings; the rest costs ~"
                     f"{summary['recompute_s_left']:.1f} s of original calls to recompute\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
