"""A list-scheduling model of one causal attention grid on the H200's SMs: the makespan of its tiles under the
hardware's dynamic CTA dispatch (each tile a CTA, to the first free SM, in the kernel's LPT order) against a
static persistent walk (one CTA per SM takes tiles c, 2G-1-c, 2G+c, ... of the LPT order: boustrophedon).

    python3 scripts/causal_schedule_model.py --batch 2 --heads 16 --seqlen 3000 [--bm 128 --bn 128]
        [--tile-us 2.6 --block-us 1.6 --persist-tile-us 0.6,1.0,1.6] [--sms 132]

Each tile costs tile_us + block_us * n for its n key blocks (the medians of the per-tile timeline, run 22 of
docs/kernel_ladder.md: 2.6 + 1.6 n us at d128); a persistent CTA pays tile_us once and persist_tile_us per further
tile (its producer loads the next tile's Q and first K while the consumers finish this one). Why: it reproduced
C_s3000_d128_c1's 160 us under the chunked order (measured 160.4) and predicted the one-order gain of run 26
(model 134 us, measured 146); it prices a persistent walk before any GPU time is spent on one.
"""
from __future__ import annotations

import argparse
import heapq


def tile_blocks(seqlen_q: int, seqlen_k: int, bm: int, bn: int) -> list[int]:
    """Key blocks of each query block of one head, causal bottom-right (row i sees keys <= i + Sk - Sq)."""
    n_mblocks = (seqlen_q + bm - 1) // bm
    out = []
    for m in range(n_mblocks):
        kend = min(seqlen_k, (m + 1) * bm + seqlen_k - seqlen_q)
        out.append(max(0, (kend + bn - 1) // bn))
    return out


def lpt_order(batch: int, heads: int, blocks: list[int]) -> list[int]:
    """Every tile's key-block count, longest first over all heads (CAUSAL_ORDER 3)."""
    return sorted((n for _ in range(batch * heads) for n in blocks), reverse=True)


def dynamic_makespan(order: list[int], sms: int, tile_us: float, block_us: float) -> float:
    free = [0.0] * sms
    heapq.heapify(free)
    for n in order:
        start = heapq.heappop(free)
        heapq.heappush(free, start + tile_us + block_us * n)
    return max(free)


def boustrophedon(n_tiles: int, grid: int, cta: int) -> list[int]:
    """The tile indices CTA `cta` of `grid` walks: c, 2G-1-c, 2G+c, 4G-1-c, ... while under n_tiles."""
    out, j = [], 0
    while True:
        index = j * grid + cta if j % 2 == 0 else (j + 1) * grid - 1 - cta
        if index >= n_tiles:
            return out
        out.append(index)
        j += 1


def persistent_makespan(order: list[int], sms: int, tile_us: float, block_us: float, persist_tile_us: float) -> float:
    grid = min(sms, len(order))
    worst = 0.0
    for cta in range(grid):
        tiles = [order[i] for i in boustrophedon(len(order), grid, cta)]
        spent = sum(block_us * n for n in tiles) + tile_us + persist_tile_us * max(0, len(tiles) - 1)
        worst = max(worst, spent)
    return worst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--seqlen", type=int, required=True, help="seqlen_q (and seqlen_k unless --seqlen-k)")
    ap.add_argument("--seqlen-k", type=int, default=0)
    ap.add_argument("--bm", type=int, default=128)
    ap.add_argument("--bn", type=int, default=128)
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--tile-us", type=float, default=2.6)
    ap.add_argument("--block-us", type=float, default=1.6)
    ap.add_argument("--persist-tile-us", default="0.6,1.0,1.6")
    args = ap.parse_args(argv)
    blocks = tile_blocks(args.seqlen, args.seqlen_k or args.seqlen, args.bm, args.bn)
    order = lpt_order(args.batch, args.heads, blocks)
    bound = (sum(args.block_us * n for n in order)) / args.sms
    print(f"{len(order)} tiles of 1..{max(blocks)} blocks on {args.sms} SMs; work bound without tile costs "
          f"{bound:.1f} us")
    print(f"dynamic, one LPT order: {dynamic_makespan(order, args.sms, args.tile_us, args.block_us):.1f} us")
    for p in (float(x) for x in args.persist_tile_us.split(",")):
        print(f"persistent boustrophedon, {p} us per further tile: "
              f"{persistent_makespan(order, args.sms, args.tile_us, args.block_us, p):.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
