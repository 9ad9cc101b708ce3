"""Read run 96's rest A/B: per timing regime, each long row's x FA3 for the rung timed first and again as its own
baseline, the SM clocks, and how far two runs of the same regime lie apart.

    python3 scripts/rest_ab.py OUT/rest96/rest0_1.json OUT/rest96/rest1.5_1.json ...   (regime = the name's rest)

Less spread between runs with the rest, and the two timings of the same code in one row closer together, would
make the rest the default; a rest that moves the geomean but not the spread is only another operating point.
"""
from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict


def rows(path: str) -> dict:
    out = {}
    for r in json.load(open(path))["rows"]:
        refs = r.get("reference_stats") or {}
        if not r.get("stats") or "fa3" not in refs or "original" not in refs:
            continue
        fa3, base, ours = refs["fa3"], refs["original"], r["stats"]
        out[r["scenario"]["name"]] = dict(first=fa3["median_us"] / ours["median_us"],
                                          again=fa3["median_us"] / base["median_us"],
                                          clocks=(ours["clock_mhz"], base["clock_mhz"], fa3["clock_mhz"]))
    return out


def _cell(row: dict) -> str:
    clocks = "/".join(f"{c or 0:.0f}" for c in row["clocks"])
    return f"{row['first']:.3f}/{row['again']:.3f} @{clocks}"


def main(paths: list[str]) -> int:
    runs = defaultdict(list)
    for p in paths:
        m = re.search(r"rest([0-9.]+)_", p.rsplit("/", 1)[-1])
        runs[m.group(1) if m else "?"].append(rows(p))
    for regime, found in sorted(runs.items()):
        names = sorted(set.intersection(*(set(f) for f in found)))
        print(f"rest {regime} s: {len(found)} runs, {len(names)} rows")
        for n in names:
            cells = "  ".join(_cell(f[n]) for f in found)
            print(f"  {n:24s} {cells}")
        geo = [math.exp(sum(math.log(f[n]["first"]) for n in names) / len(names)) for f in found]
        apart = [abs(math.log(found[0][n]["first"] / found[-1][n]["first"])) for n in names] if len(found) > 1 else []
        same = [abs(math.log(f[n]["first"] / f[n]["again"])) for f in found for n in names]
        print(f"  geomean x FA3 per run {' '.join(f'{g:.4f}' for g in geo)}; between runs mean |dlog| "
              f"{sum(apart) / max(1, len(apart)):.4f} (max {max(apart, default=0):.4f}); first vs again in a row "
              f"{sum(same) / max(1, len(same)):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
