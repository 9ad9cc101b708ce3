"""A list-scheduling model of one causal attention grid on the H200's SMs: the makespan of its tiles under the
hardware's dynamic CTA dispatch (each tile a CTA, to the first free SM, in the kernel's LPT order) against a
static persistent walk (one CTA per SM takes tiles c, 2G-1-c, 2G+c, ... of the LPT order: boustrophedon).

    python3 scripts/causal_schedule_model.py --batch 2 --heads 16 --seqlen 3000 [--bm 128 --bn 128]
        [--tile-us 2.6 --block-us 1.6 --persist-tile-us 0.6,1.0,1.6] [--sms 132] [--chunk-heads 16]

Each tile costs tile_us + block_us * n for its n key blocks (the medians of the per-tile timeline, run 22 of
docs/kernel_ladder.md: 2.6 + 1.6 n us at d128); a persistent CTA pays tile_us once and persist_tile_us per further
tile (its producer loads the next tile's Q and first K while the consumers finish this one). Why: it reproduced
C_s3000_d128_c1's 160 us under the chunked order (measured 160.4) and predicted the one-order gain of run 26
(model 134 us, measured 146); it prices a persistent walk before any GPU time is spent on one. The last line
compares the rung's one-CTA-per-SM schedules: persistent pairs, the counter's chunked LPT walk (DYN_CHUNKS,
DYN_PAIRS) and PAIR_TAIL's order from the counter (run 69's prediction, at --persist-tile-us 0.8). It has no memory
system: run 67 measured its pair-against-walk gains at 16-32 query blocks (A_d128_c1_s4k: model +1.4 %, measured
+1.5-1.7 %) but not at 4-8 (model +1-2 %, measured -6..-11 %, where the pairs' merged tiles and head-major L2 reuse
count), and PAIR_TAIL's order gained more than modelled on GQA grids (runs 69, 73: B_h16x8_d256_c1_s1k +1.3 modelled,
+5.7 measured) and lost at d256 with groups of 1 (A_d256_c1_s2k: +1.4 modelled, -3.8 measured).
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


def chunked_lpt_order(units: int, blocks: list[int], chunk: int) -> list[int]:
    """DYN_CHUNKS' order: LPT inside chunks of `chunk` heads (units), chunk after chunk."""
    out = []
    for first in range(0, units, chunk):
        out += sorted((n for _ in range(min(chunk, units - first)) for n in blocks), reverse=True)
    return out


def counter_makespan(order: list[int], sms: int, per_tile_us: float, block_us: float) -> float:
    """The atomic counter's walk (kWalk 2): CTA c starts on position c and fetches its next position when it starts a
    tile (one ahead), so a position goes to the CTA that started a tile earliest, not the one free first."""
    events = [(0.0, c, c) for c in range(min(sms, len(order)))]
    heapq.heapify(events)
    nxt, end = len(events), 0.0
    while events:
        start, cta, pos = heapq.heappop(events)
        done = start + per_tile_us + block_us * order[pos]
        if nxt < len(order):
            heapq.heappush(events, (done, cta, nxt))
            nxt += 1
        end = max(end, done)
    return end


def pair_blocks(blocks: list[int]) -> list[int]:
    """A head's mirrored pairs (CAUSAL_PAIRS): query block n-1-j with block j; odd n leaves the middle one alone."""
    n = len(blocks)
    return [blocks[n - 1 - j] + (blocks[j] if j < n // 2 else 0) for j in range(n - n // 2)]


def pairs_makespan(units: int, blocks: list[int], sms: int, per_tile_us: float, block_us: float) -> float:
    """Persistent pairs, head-major: CTA c takes pair units c, c + G, ... (each pair one or two tiles)."""
    pairs, n = pair_blocks(blocks), len(blocks)
    per = [0.0] * sms
    for u in range(units * len(pairs)):
        j = u % len(pairs)
        per[u % sms] += pairs[j] * block_us + per_tile_us * (2 if j < n // 2 else 1)
    return max(per)


def pair_tail_order(units: int, blocks: list[int], rounds: int, sms: int) -> list[int]:
    """PAIR_TAIL's order (the rung's tile_of): each head's mirrored pair tiles (n-1, 0, n-2, 1, ...) head after head,
    then the last heads, enough for `rounds` rounds of tiles on `sms` CTAs, longest first."""
    n = len(blocks)
    tail = min(units, -(-rounds * sms // n))
    head = [blocks[(w >> 1) if w & 1 else n - 1 - (w >> 1)] for w in range(n)]
    return head * (units - tail) + sorted((b for _ in range(tail) for b in blocks), reverse=True)


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
    ap.add_argument("--chunk-heads", type=int, default=0, help="DYN_CHUNKS' heads per chunk (0: every head)")
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
    units, per_tile = args.batch * args.heads, float(args.persist_tile_us.split(",")[0])
    chunked = chunked_lpt_order(units, blocks, args.chunk_heads or units)
    print(f"one CTA per SM, {per_tile} us per tile: persistent pairs "
          f"{pairs_makespan(units, blocks, args.sms, per_tile, args.block_us):.1f} us, the counter's chunked walk "
          f"{counter_makespan(chunked, args.sms, per_tile, args.block_us):.1f} us, PAIR_TAIL's pairs then LPT tail "
          f"{counter_makespan(pair_tail_order(units, blocks, 4, args.sms), args.sms, per_tile, args.block_us):.1f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
