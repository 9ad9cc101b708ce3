"""What cuDNN's first call of a shape costs and whether parallel lanes cut it (issue 24; anchor_plans.py), on a GPU.

    PYTHONPATH=. python3 scripts/cudnn_plan_probe.py [--shapes 16] [--lanes 8] [--json OUT.json]

1. serial: the first and the second call of cuDNN's SDPA (torch, the `cudnn` anchor) on --shapes shapes of `full`,
   one after the other in this thread: the first builds the cuDNN graph, the second finds it cached.
2. lanes: the first calls of --shapes *other* shapes of `full` through anchor_plans.PlanLanes with --lanes lanes:
   the chunk's wall time against the serial sum of step 1 (same mix of head dimensions).
3. same figure: one shape timed by the harness's timer in this thread (after its first call here) and in a lane
   (after its first call there): the two device-time medians, which must agree within the noise.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", type=int, default=16)
    p.add_argument("--lanes", type=int, default=8)
    p.add_argument("--json", default="")
    args = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("cudnn_plan_probe: needs a CUDA GPU", file=sys.stderr)
        return 2
    from workbench.harness.anchor_plans import PlanLanes
    from workbench.harness.anchors import LOADERS
    from workbench.harness.problem import Problem
    from workbench.harness.reference import Inputs
    from workbench.harness.scenarios import load_suite
    from workbench.harness.timing import Timer

    anchor, version = LOADERS["cudnn"]()
    suite = load_suite("full")
    serial_shapes, lane_shapes = suite[0:2 * args.shapes:2], suite[1:2 * args.shapes:2]   # interleaved: same mix
    stream = torch.cuda.Stream()

    def call(s, x=None):
        x = x if x is not None else Inputs.allocate(s, "cuda")
        x.fill(1)
        anchor(x, s)
        torch.cuda.synchronize()
        return x

    call(suite[-1])                                   # libraries loaded, as the worker's warm-up does
    rows = []
    for s in serial_shapes:
        t0 = time.perf_counter()
        x = call(s)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        call(s, x)
        rows.append({"shape": s.name, "d": s.head_dim, "first_s": first, "second_s": time.perf_counter() - t0})
    print(f"{'shape':<34} {'first s':>8} {'second s':>9}")
    for r in rows:
        print(f"{r['shape']:<34} {r['first_s']:>8.3f} {r['second_s']:>9.4f}")
    serial = sum(r["first_s"] for r in rows)
    lanes = PlanLanes({"cudnn": anchor}, lane_shapes, lambda _n, a, s: call(s), lambda _n, _s: True, lanes=args.lanes,
                      stream_of=lambda: torch.cuda.stream(stream))
    t0 = time.perf_counter()
    lanes.prepare(lane_shapes[0])
    wall = time.perf_counter() - t0
    print(f"serial first calls: {serial:.2f} s for {len(rows)} shapes; the same number of other shapes in "
          f"{args.lanes} lanes: {wall:.2f} s ({serial / wall:.1f}x); lanes' own build seconds "
          f"{lanes.build_s.get('cudnn', 0.0):.2f}")
    problem = Problem.load("attn_fwd")
    timer = Timer("cuda", problem.timing)
    s = lane_shapes[0]
    sets = [Inputs.allocate(s, "cuda") for _ in range(2)]
    for i, x in enumerate(sets):
        x.fill(11 + i)
    with torch.cuda.stream(stream):
        call(s, Inputs.allocate(s, "cuda"))          # this thread's own first call of the shape
        here = timer.time(lambda i: anchor(sets[i], s), n_sets=2)
        there = lanes.run("cudnn", s, lambda: timer.time(lambda i: anchor(sets[i], s), n_sets=2))
    lanes.close()
    print(f"{s.name}: main thread median {here.median_us:.2f} us (p10-p90 {here.p10_us:.2f}-{here.p90_us:.2f}), "
          f"in its lane {there.median_us:.2f} us ({there.p10_us:.2f}-{there.p90_us:.2f})")
    out = {"command": " ".join(sys.argv), "cudnn": version, "serial": rows, "serial_s": serial, "lanes": args.lanes,
           "lanes_wall_s": wall, "lane_shapes": [x.name for x in lane_shapes],
           "same_figure": {"shape": s.name, "main_us": here.median_us, "lane_us": there.median_us,
                           "main_p10_p90": [here.p10_us, here.p90_us], "lane_p10_p90": [there.p10_us, there.p90_us]},
           "median_first_s": statistics.median(r["first_s"] for r in rows)}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
