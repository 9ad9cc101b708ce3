"""A suite of attention shapes nobody tuned on: random, seeded, written as a suite CSV (category R).

A gain measured on `full` may be a gain on `full` only; the question bank asks whether it survives on
scenarios never looked at (q003). This draws them: head_dim 64/128/256, causal or not, GQA groups 1-8,
query and key lengths log-uniform from 1 to 16k at odd values (tile tails everywhere), the batch sized so
a shape is 0.05-40 GFLOP (the timing stays short). The seed is in every name, so two draws never share one.
    python3 scripts/random_suite.py --seed 7 --n 40 > /tmp/fresh.csv
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

from workbench.harness.scenarios import Scenario, write_suite

MAX_GFLOP, MIN_GFLOP = 40.0, 0.05


def _gflop(b: int, hq: int, sq: int, sk: int, d: int, causal: bool) -> float:
    return 4.0 * b * hq * sq * sk * d / (2.0 if causal and sq == sk else 1.0) / 1e9


def draw(seed: int, n: int) -> list[Scenario]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        d = rng.choice((64, 128, 256))
        causal = rng.random() < 0.5
        hkv = rng.choice((1, 2, 4, 8))
        hq = hkv * rng.choice((1, 2, 4, 8))
        sq = max(1, int(math.exp(rng.uniform(0.0, math.log(16384)))) | 1)
        sk = sq if rng.random() < 0.4 else max(1, int(math.exp(rng.uniform(0.0, math.log(16384)))) | 1)
        if causal and sk < sq and rng.random() < 0.7:   # fewer keys than queries leaves causal rows empty:
            sk = sq                                     # allowed, but mostly the common case is drawn
        per_batch = _gflop(1, hq, sq, sk, d, causal)
        b = max(1, min(64, int(MAX_GFLOP / max(per_batch, 1e-9) * rng.uniform(0.05, 1.0))))
        if _gflop(b, hq, sq, sk, d, causal) < MIN_GFLOP and b == 64:
            continue
        if _gflop(b, hq, sq, sk, d, causal) > MAX_GFLOP:
            continue
        name = f"R{seed}_{len(out):02d}_b{b}_h{hq}x{hkv}_q{sq}_k{sk}_d{d}_c{int(causal)}"
        out.append(Scenario(name, b, hq, hkv, sq, sk, d, causal, "bf16", "R"))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--out", default="-", help="CSV path (default: stdout)")
    args = ap.parse_args(argv)
    if args.n < 1:
        print("random_suite: --n must be at least 1", file=sys.stderr)
        return 2
    path = Path("/dev/stdout" if args.out == "-" else args.out)
    write_suite(path, draw(args.seed, args.n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
