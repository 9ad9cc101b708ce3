"""A candidate's device time on the C_s100 shapes in four states of the timing cache, on the GPU: whole (timings and
the original's output rows), timings only (the rows recomputed, as when a cache travels without tensors/), the
long shapes' rows missing (the original's seconds-long calls made just before the C_s100 shapes), whole again.

    python3 scripts/cache_states.py --kernel kernels/attn_fwd/ladder/04_pingpong.cu --out /tmp/out/states

The suite is full's two B_h16x8_d256 32k shapes (the original's longest calls, 1-2 s each), then the six C_s100
shapes and C_s1000_d64_c0, in full's order. `workbench warm` fills a fresh cache; each state is a copy of it judged
by `workbench check --json`. Prints one line per shape and state (median, p10-p90, samples, call_us, SM clock) and
the spread of the C_s100 medians against the whole cache's; writes cache_states.json. The campaign h200-fa3-race
read 8.2-9.1 us on C_s100_d64_c0 with a whole cache and 11.5 us (noisy) with timings only (2026-12-02, before the
worker made the original's first call after the candidate's timing).
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from cache_trim import tensor_worth  # noqa: E402  (scripts/ is this file's folder)

SHAPES = ["B_h16x8_d256_c0_s32k", "B_h16x8_d256_c1_s32k", "C_s100_d64_c0", "C_s100_d64_c1", "C_s100_d128_c0",
          "C_s100_d128_c1", "C_s100_d256_c0", "C_s100_d256_c1", "C_s1000_d64_c0"]
STATES = ["whole", "timings_only", "long_rows_missing", "whole_again"]
LONG_US = 5e5          # a cached original median above this: one of the long shapes, whose rows go missing


def suite(out: Path) -> Path:
    with open(REPO / "kernels/attn_fwd/suites/full.csv") as handle:
        rows = list(csv.reader(handle))
    path = out / "cache_states.csv"
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows([rows[0]] + [r for r in rows[1:] if r and r[0] in SHAPES])
    return path


def wb(*args: str, log: Path) -> int:
    with open(log, "w") as handle:
        return subprocess.run([sys.executable, "-m", "workbench.cli", *args], stdout=handle,
                              stderr=subprocess.STDOUT, cwd=REPO).returncode


def prepare(state: str, base: Path, target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target, symlinks=True)
    if state == "timings_only":
        shutil.rmtree(target / "tensors", ignore_errors=True)
    elif state == "long_rows_missing":
        for name, median_us in tensor_worth(target).items():
            if median_us > LONG_US:
                (target / name).unlink(missing_ok=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="kernels/attn_fwd/ladder/04_pingpong.cu")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--anchors", default="fa3")
    a = ap.parse_args()
    if not (REPO / a.kernel).is_file() and not Path(a.kernel).is_file():
        sys.stderr.write(f"cache_states: no kernel at {a.kernel}; give --kernel a .cu file\n")
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    csv_path, base = suite(a.out), a.out / "caches" / "warmed"
    shutil.rmtree(base, ignore_errors=True)
    rc = wb("warm", "--suite", str(csv_path), "--anchors", a.anchors, "--cache-dir", str(base),
            log=a.out / "warm.log")
    if rc:
        sys.stderr.write(f"cache_states: workbench warm failed ({rc}); see {a.out / 'warm.log'}\n")
        return 1
    table: dict = {}
    for state in STATES:
        cache = a.out / "caches" / state
        prepare(state.replace("_again", ""), base, cache)
        json_path = a.out / f"{state}.json"
        rc = wb("check", a.kernel, "--suite", str(csv_path), "--anchors", a.anchors, "--cache-dir", str(cache),
                "--json", str(json_path), "--traces", "", log=a.out / f"{state}.log")
        rows = json.loads(json_path.read_text())["rows"] if json_path.is_file() else []
        table[state] = {r["scenario"]["name"]: r.get("stats") for r in rows}
        print(f"== {state}: rc {rc}; " + " ".join(line.strip() for line in open(a.out / f"{state}.log")
                                                if line.startswith(("timing cache:", "baseline rows:"))))
        for name in SHAPES:
            st = table[state].get(name)
            if st:
                print(f"   {name:<22} {st['median_us']:9.1f} us  p10-p90 {st['p10_us']:.1f}-{st['p90_us']:.1f}"
                      f"  n {st['n']:3d}  call {st['call_us']:.1f} us  clock {st.get('clock_mhz')} MHz")
    small = [n for n in SHAPES if n.startswith("C_s100_")]
    shift = {}
    for state in STATES[1:]:
        diffs = [table[state][n]["median_us"] - table["whole"][n]["median_us"] for n in small
                 if table[state].get(n) and table["whole"].get(n)]
        shift[state] = statistics.median(diffs) if len(diffs) == len(small) else None
        print(f"C_s100 median shift vs whole: {state} "
              + (f"{shift[state]:+.2f} us" if shift[state] is not None else "(shapes missing)"))
    (a.out / "cache_states.json").write_text(json.dumps({"table": table, "shift_us": shift}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
