"""What the foreign-kernel check costs: harness wall time of one kernel on one suite, with the check off and on.

    PYTHONPATH=. python3 scripts/foreign_check_cost.py --kernel kernels/attn_fwd/ladder/02_mma.cu --suite full \
        --anchors fa3 --rounds 2

One untimed warm-up run first (builds, and fills the timing cache of the original kernel and the anchors, so the
measured runs time only the candidate, as a campaign's runs do); then `rounds` pairs of runs with
WORKBENCH_FOREIGN_CHECK=off and =all, the order alternating per round so drift does not favour either. Prints
one line per run (wall s, scenarios passed, calls recorded, seconds the worker spent in the check) and the
median extra wall time of `all` over `off` in percent (target: under 5 %). The geomeans of both are printed too:
recording a call must not change what the candidate's timed calls measure. JSON goes to $OUT when set.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.harness.check import check  # noqa: E402
from workbench.harness.result import CheckRequest  # noqa: E402

COST_LINE = re.compile(r"foreign-kernel check: (\d+) call\(s\) recorded, ([\d.]+) s")


def one_run(args, policy: str) -> dict:
    os.environ["WORKBENCH_FOREIGN_CHECK"] = policy
    lines: list[str] = []
    request = CheckRequest(kernel_path=args.kernel, suite=args.suite,
                           anchors=tuple(a for a in args.anchors.split(",") if a),
                           cache_dir=os.environ.get("WORKBENCH_CACHE"))
    result = check(request, progress=lines.append)
    cost = next((COST_LINE.search(l) for l in lines if COST_LINE.search(l)), None)
    failed = [(r.name, r.reason, r.detail[:160]) for r in result.rows if r.status != "passed"]
    return {"policy": policy, "wall_s": result.wall_s, "passed": result.counts()["passed"], "rows": len(result.rows),
            "calls": int(cost.group(1)) if cost else None, "check_s": float(cost.group(2)) if cost else None,
            "flags": result.flags, "failed": failed[:5],
            "geomeans": {n: result.geomean_vs(n) for n in ("original", *request.anchors)}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernel", default="kernels/attn_fwd/ladder/02_mma.cu")
    p.add_argument("--suite", default="full")
    p.add_argument("--anchors", default="fa3")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    print(f"warm-up: {args.kernel} on {args.suite} (not counted)", flush=True)
    warm = one_run(args, "off")
    print(f"  wall {warm['wall_s']:.1f} s, {warm['passed']}/{warm['rows']} passed", flush=True)
    runs = []
    for r in range(args.rounds):
        for policy in (("off", "all") if r % 2 == 0 else ("all", "off")):
            run = one_run(args, policy)
            runs.append(run)
            print(f"round {r + 1} {policy:<4} wall {run['wall_s']:7.1f} s  {run['passed']}/{run['rows']} passed  "
                  f"{run['calls']} calls recorded, {run['check_s']} s in the check  geomeans "
                  + " ".join(f"x{v:.3f} {n}" for n, v in run["geomeans"].items()) + f"  {run['failed'] or ''}",
                  flush=True)
    off = statistics.median(r["wall_s"] for r in runs if r["policy"] == "off")
    on = statistics.median(r["wall_s"] for r in runs if r["policy"] == "all")
    extra = (on - off) / off * 100
    print(f"median wall: off {off:.1f} s, all {on:.1f} s -> the check adds {extra:+.1f} % (target < 5 %)")
    if os.environ.get("OUT"):
        out = Path(os.environ["OUT"]) / "foreign_check_cost.json"
        out.write_text(json.dumps({"kernel": args.kernel, "suite": args.suite, "anchors": args.anchors,
                                   "warm_up": warm, "runs": runs, "extra_percent": extra}, indent=1))
    all_passed = all(r["passed"] == r["rows"] for r in runs)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
