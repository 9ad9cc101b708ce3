"""Where an attention kernel's time went per tile, from the per-tile records a `-DTIMELINE=1` build writes.

Pure Python (no torch, no GPU): scripts/tile_timeline.py reads the records off the GPU and hands the bytes to
`parse_records`, then `analyze`; tests/test_tile_timeline.py feeds it synthetic records in the same layout.
A record is 16 little-endian uint32 (the kernel's contract, written by each consumer warpgroup's first thread
at the end of a tile):
    [0],[1] gt_start lo, hi   [2],[3] gt_end lo, hi      %globaltimer ns: tile entry, after the epilogue
    [4] c_q  [5] c_s0  [6] c_b0  [7] c_loop  [8] c_pv  [9] c_end   SM cycles from entry: Q arrived, first S GEMM
        done, first block's mask+softmax done, main loop done, last P.V done, epilogue done
    [10] blockIdx.x  [11] smid  [12] k (tile index within its CTA)  [13] wq (consumer warpgroup)
    [14] m_block  [15] n_iter (key blocks visited; 0: c_s0..c_pv carry no information)

    python3 scripts/tile_timeline_analysis.py RECORDS.bin   # the table for records saved by --save-records
"""
import statistics
import struct
import sys

RECORD_WORDS = 16
RECORD_BYTES = 4 * RECORD_WORDS
CYCLE_FIELDS = ("c_q", "c_s0", "c_b0", "c_loop", "c_pv", "c_end")
ID_FIELDS = ("cta", "smid", "k", "wq", "m_block", "n_iter")
PHASES = ("wait_q", "first_s", "first_softmax", "steady_loop", "last_pv", "epilogue")
LENGTH_CLASSES = (("0", 0, 0), ("1", 1, 1), ("2-3", 2, 3), ("4-7", 4, 7), ("8-15", 8, 15), ("16-31", 16, 31),
                  ("32+", 32, None))


def parse_records(data):
    """bytes (a multiple of 64) -> one dict per record with gt_start, gt_end, the cycle stamps and the ids."""
    if len(data) % RECORD_BYTES:
        raise ValueError(f"timeline records: {len(data)} bytes is not a multiple of {RECORD_BYTES}")
    out = []
    for w in struct.iter_unpack(f"<{RECORD_WORDS}I", data):
        rec = dict(gt_start=w[0] | w[1] << 32, gt_end=w[2] | w[3] << 32)
        rec.update(zip(CYCLE_FIELDS, w[4:10]))
        rec.update(zip(ID_FIELDS, w[10:16]))
        out.append(rec)
    return out


def problem(rec):
    """Why a record cannot be used, or None."""
    if rec["gt_end"] < rec["gt_start"]:
        return "gt_end < gt_start"
    if rec["n_iter"] == 0:
        return None if rec["c_q"] <= rec["c_end"] else "c_q > c_end (n_iter 0)"
    stamps = [rec[f] for f in CYCLE_FIELDS]
    if any(a > b for a, b in zip(stamps, stamps[1:])):
        return "cycles not monotone"
    return None


def phases(rec):
    """The tile's cycles split into PHASES (a tile with no key block: wait for Q, then the epilogue)."""
    if rec["n_iter"] == 0:
        return dict(zip(PHASES, (rec["c_q"], 0, 0, 0, 0, rec["c_end"] - rec["c_q"])))
    s = [0] + [rec[f] for f in CYCLE_FIELDS]
    return dict(zip(PHASES, (b - a for a, b in zip(s, s[1:]))))


def median(xs):
    return statistics.median(xs) if xs else None


def tile_stats(recs):
    """Phase sums and fractions of the summed c_end, the first and the steady block's median cycles."""
    sums = dict.fromkeys(PHASES, 0)
    for r in recs:
        for name, c in phases(r).items():
            sums[name] += c
    total = sum(r["c_end"] for r in recs)
    return dict(
        records=len(recs), cycles=total, phase_cycles=sums,
        phase_frac={n: (c / total if total else None) for n, c in sums.items()},
        first_block_cycles_median=median([r["c_b0"] - r["c_q"] for r in recs if r["n_iter"] >= 1]),
        steady_block_cycles_median=median([(r["c_loop"] - r["c_b0"]) / (r["n_iter"] - 1)
                                           for r in recs if r["n_iter"] >= 2]),
        tile_ns_median=median([r["gt_end"] - r["gt_start"] for r in recs]),
        n_iter_median=median([r["n_iter"] for r in recs]))


def union(intervals):
    """Sorted, merged [start, end] intervals."""
    merged = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return merged


def sm_accounting(recs, device_sms=None):
    """Per SM: busy (the union of its records' intervals), gaps between busy stretches, head before its first
    start and tail after its last end, against the kernel's span; totals as fractions of n_sms * span."""
    t0, t1 = min(r["gt_start"] for r in recs), max(r["gt_end"] for r in recs)
    span = t1 - t0
    per_sm = {}
    for r in recs:
        per_sm.setdefault(r["smid"], []).append((r["gt_start"], r["gt_end"]))
    rows = {}
    for sm, ivs in sorted(per_sm.items()):
        busy = union(ivs)
        rows[sm] = dict(busy=sum(b - a for a, b in busy), head=busy[0][0] - t0, tail=t1 - busy[-1][1],
                        gaps=sum(c - b for (_, b), (c, _) in zip(busy, busy[1:])), stretches=len(busy))
    totals = {key: sum(row[key] for row in rows.values()) for key in ("busy", "gaps", "head", "tail")}
    whole = len(rows) * span
    out = dict(span_ns=span, n_sms=len(rows), ns=totals,
               frac={key: (v / whole if whole else None) for key, v in totals.items()}, per_sm=rows)
    if device_sms is not None:
        out.update(device_sms=device_sms, unused_sms=device_sms - len(rows))
    return out


def cta_balance(recs, early_frac=0.05):
    """Per CTA (its distinct tiles): key blocks, last end and busy time. Says whether CTAs that end early had less
    work (blocks short: the walk's assignment) or ran slower (equal blocks, more ns per block: the SM). A CTA is early
    when it ends more than early_frac of the span before the last one."""
    t1 = max(r["gt_end"] for r in recs)
    span = t1 - min(r["gt_start"] for r in recs)
    tiles, ivs = {}, {}
    for r in recs:
        tiles[(r["cta"], r["k"])] = r["n_iter"]
        ivs.setdefault(r["cta"], []).append((r["gt_start"], r["gt_end"]))
    blocks = {}
    for (cta, _), n in tiles.items():
        blocks[cta] = blocks.get(cta, 0) + n
    end = {cta: max(b for _, b in iv) for cta, iv in ivs.items()}
    busy = {cta: sum(b - a for a, b in union(iv)) for cta, iv in ivs.items()}
    early = sorted(c for c in end if t1 - end[c] > early_frac * span)
    rest = [c for c in end if c not in early]
    per_block = sorted(busy[c] / blocks[c] for c in blocks if blocks[c] > 0)
    q = (lambda f: per_block[min(len(per_block) - 1, int(f * len(per_block)))]) if per_block else (lambda f: None)
    out = dict(blocks_min=min(blocks.values()), blocks_median=median(list(blocks.values())),
               blocks_max=max(blocks.values()), early_ctas=early, ns_per_block_p10=q(0.1), ns_per_block_p90=q(0.9))
    if early and rest:
        out.update(early_end_ns_median=median([t1 - end[c] for c in early]),
                   early_blocks_short=median([blocks[c] for c in rest]) - median([blocks[c] for c in early]))
    return out


def length_class(n_iter):
    return next(name for name, lo, hi in LENGTH_CLASSES if n_iter >= lo and (hi is None or n_iter <= hi))


def timer_step(recs):
    """The smallest positive step between distinct %globaltimer values seen: the timer's resolution at best."""
    ts = sorted({t for r in recs for t in (r["gt_start"], r["gt_end"])})
    steps = [b - a for a, b in zip(ts, ts[1:])]
    return min(steps) if steps else None


def analyze(recs, device_sms=None):
    """Everything about one (kernel, shape)'s records; impossible records counted by reason and left out."""
    bad = {}
    good = []
    for r in recs:
        why = problem(r)
        if why:
            bad[why] = bad.get(why, 0) + 1
        else:
            good.append(r)
    out = dict(records=len(recs), bad_records=sum(bad.values()), bad_reasons=bad)
    if not good:
        return out
    ratio = [(r["gt_end"] - r["gt_start"]) / r["c_end"] for r in good if r["c_end"] > 0]
    classes = {}
    for r in good:
        classes.setdefault(length_class(r["n_iter"]), []).append(r)
    out.update(
        sm=sm_accounting(good, device_sms), balance=cta_balance(good), ctas=len({r["cta"] for r in good}),
        tiles=len({(r["cta"], r["k"]) for r in good}), warpgroups=sorted({r["wq"] for r in good}),
        ns_per_cycle=median(ratio), gt_step_ns=timer_step(good), all=tile_stats(good),
        by_length={name: tile_stats(classes[name]) for name, _, _ in LENGTH_CLASSES if name in classes})
    return out


def pct(x):
    return "   -" if x is None else f"{100 * x:4.0f}"


def num(x, scale=1.0, digits=0):
    return "   -" if x is None else f"{x * scale:6.{digits}f}"


def balance_line(b):
    """cta_balance as one line: the blocks per CTA, the early CTAs and why, the ns per block across CTAs."""
    line = f"   CTA work: key blocks min {b['blocks_min']} median {b['blocks_median']:g} max {b['blocks_max']}"
    if "early_end_ns_median" in b:
        line += (f"; {len(b['early_ctas'])} CTAs end {b['early_end_ns_median'] / 1e3:.1f} us early (median) with "
                 f"{b['early_blocks_short']:g} blocks fewer")
    if b["ns_per_block_p10"] is not None:
        line += f"; busy ns per block p10 {b['ns_per_block_p10']:.0f} p90 {b['ns_per_block_p90']:.0f}"
    return line


def table(a):
    """The analysis as <= ~20 printable lines."""
    lines = [f"   records {a['records']} (bad {a['bad_records']}"
             + (": " + ", ".join(f"{k} {v}" for k, v in a["bad_reasons"].items()) if a["bad_reasons"] else "") + ")"]
    if "sm" not in a:
        return lines + ["   no usable record"]
    sm, f = a["sm"], a["sm"]["frac"]
    npc = a["ns_per_cycle"]
    lines.append(f"   tiles {a['tiles']}  CTAs {a['ctas']}  SMs {sm['n_sms']}"
                 + (f" of {sm['device_sms']}" if "device_sms" in sm else "") + f"  warpgroups {a['warpgroups']}"
                 + f"  span {sm['span_ns'] / 1e3:.1f} us  " + ("-" if npc is None else f"{npc:.3f}")
                 + f" ns/cycle  timer step {a['gt_step_ns']} ns")
    lines.append(f"   SM time (of SMs x span): busy {pct(f['busy'])} %  gaps {pct(f['gaps'])} %"
                 f"  head {pct(f['head'])} %  tail {pct(f['tail'])} %")
    lines.append(balance_line(a["balance"]))
    cols = [("all", a["all"])] + list(a["by_length"].items())
    lines.append(f"   {'n_iter class':22s}" + "".join(f"{name:>7s}" for name, _ in cols))
    lines.append(f"   {'records':22s}" + "".join(f"{s['records']:7d}" for _, s in cols))
    lines.append(f"   {'cycles share %':22s}" + "".join(f"{pct(s['cycles'] / a['all']['cycles']):>7s}"
                                                     if a["all"]["cycles"] else "      -" for _, s in cols))
    for p in PHASES:
        lines.append(f"   {p + ' %':22s}" + "".join(f"{pct(s['phase_frac'][p]):>7s}" for _, s in cols))
    us = None if npc is None else npc / 1e3
    for label, key, scale, digits in (("tile us (median)", "tile_ns_median", 1e-3, 1),
                                      ("first block cycles", "first_block_cycles_median", 1, 0),
                                      ("steady block cycles", "steady_block_cycles_median", 1, 0)):
        lines.append(f"   {label:22s}" + "".join(f"{num(s[key], scale, digits):>7s}" for _, s in cols))
    if us is not None and a["all"]["steady_block_cycles_median"] is not None:
        lines.append(f"   steady block {a['all']['steady_block_cycles_median'] * us:.3f} us, first block "
                     f"{(a['all']['first_block_cycles_median'] or 0) * us:.3f} us (median, at {npc:.3f} ns/cycle)")
    return lines


def main(argv):
    if len(argv) != 1:
        print("usage: tile_timeline_analysis.py RECORDS.bin  (16 x uint32 per record)", file=sys.stderr)
        return 2
    try:
        with open(argv[0], "rb") as f:
            recs = parse_records(f.read())
    except (OSError, ValueError) as e:
        print(f"tile_timeline_analysis: {e}", file=sys.stderr)
        return 2
    print("\n".join(table(analyze(recs))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
