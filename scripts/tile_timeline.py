"""Where an attention kernel's time goes per tile: times a ladder kernel plain and built with -DTIMELINE=1, then
reads the per-tile records the instrumented build writes and prints the SM time accounting and tile phases.

    python3 scripts/tile_timeline.py --kernels kernels/attn_fwd/ladder/04_pingpong.cu \
        --only A_d128_c1_s1k A_d128_c0_s4k --anchors fa3

A kernel spec is scripts/ladder_bench.py's `path.cu[:NAME=VALUE,...]`; each is built twice, as given and with
TIMELINE=1 added, and the instrumented .so must export `int attn_timeline(uint32_t* dst, int max_records)` (copies
the records of the launches since the last call, resets the counter, returns how many were written or a negative
CUDA error). Per (kernel, shape): both builds timed with ladder_bench.time_ms (the instrumentation's overhead),
then one more call of the instrumented build, its records analysed by scripts/tile_timeline_analysis.py (the
record layout is documented there). Everything goes to $OUT/tile_timeline.json (OUT defaults to /tmp/out).
Bad input (a missing .cu or suite, an unknown scenario, a build without attn_timeline) exits 2 with one line
before any GPU work; torch is imported only once the arguments hold.
"""
import argparse
import csv
import ctypes
import difflib
import json
import math
import os
import re
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tile_timeline_analysis as tta  # noqa: E402
from term_grace import exit_if_stuck_after_sigterm  # noqa: E402

DEFAULT_SUITE = "kernels/attn_fwd/suites/full.csv"
KNOWN_ANCHORS = ("fa3", "fa2", "cudnn")
TIMELINE_DEF = "TIMELINE=1"


class BadInput(Exception):
    """An argument that cannot be used; the message says what, where and what to do."""


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", nargs="+", required=True, metavar="SPEC", help="path.cu[:NAME=VALUE,...]")
    ap.add_argument("--suite", default=DEFAULT_SUITE)
    ap.add_argument("--only", nargs="*", default=[], metavar="NAME", help="scenario names, exact")
    ap.add_argument("--match", default=None, metavar="REGEX", help="also every scenario whose name matches")
    ap.add_argument("--anchors", default="", help=f"comma list of {', '.join(KNOWN_ANCHORS)}: timed beside")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cap", type=float, default=0.5, help="seconds of timed launches per (build, shape) at most")
    ap.add_argument("--max-records", type=int, default=0, help="records read per call (0: sized from "
                    "the shape, read again with room for all if more came)")
    ap.add_argument("--save-records", action="store_true", help="also write each shape's raw records to $OUT/*.bin")
    return ap.parse_args(argv)


def suite_names(path):
    """The scenario names of a suite CSV (ladder_bench.load_suite reads the rest once torch is in)."""
    with open(path, newline="") as f:
        return [r["name"] for r in csv.DictReader(line for line in f if not line.lstrip().startswith("#"))]


def validate(args):
    """The scenario names to run; BadInput for anything that cannot work. Touches no GPU and imports no torch."""
    for spec in args.kernels:
        path, _, defs = spec.partition(":")
        if not os.path.isfile(path):
            raise BadInput(f"--kernels {spec}: no file {path}; pass an existing .cu (e.g. "
                           "kernels/attn_fwd/ladder/04_pingpong.cu)")
        if any(d.split("=")[0] == "TIMELINE" for d in defs.split(",") if d):
            raise BadInput(f"--kernels {spec}: names TIMELINE itself; leave it out (the tool builds both ways)")
    if not os.path.isfile(args.suite):
        raise BadInput(f"--suite {args.suite}: no such file; pass a suite CSV (e.g. {DEFAULT_SUITE})")
    names = suite_names(args.suite)
    if not args.only and args.match is None:
        raise BadInput("no scenario chosen: pass --only NAME... (exact names) or --match REGEX")
    for name in args.only:
        if name not in names:
            near = difflib.get_close_matches(name, names, n=3)
            raise BadInput(f"--only {name}: no such scenario in {args.suite}"
                           + (f"; did you mean {', '.join(near)}?" if near else ""))
    picked = set(args.only)
    if args.match is not None:
        try:
            rx = re.compile(args.match)
        except re.error as e:
            raise BadInput(f"--match {args.match}: not a regular expression ({e})") from None
        picked |= {n for n in names if rx.search(n)}
        if not picked:
            raise BadInput(f"--match {args.match}: matches no scenario in {args.suite}")
    unknown = [a for a in args.anchors.split(",") if a and a not in KNOWN_ANCHORS]
    if unknown:
        raise BadInput(f"--anchors {args.anchors}: unknown {', '.join(unknown)}; "
                       f"choose from {', '.join(KNOWN_ANCHORS)}")
    if args.reps < 1 or args.cap <= 0 or args.max_records < 0:
        raise BadInput("--reps must be >= 1, --cap > 0 and --max-records >= 0")
    return [n for n in names if n in picked]


def build_pair(lb, specs):
    """[(plain, instrumented)] built kernels (ladder_bench dicts); BadInput for a failed build or a missing export."""
    ks = []
    for spec in specs:
        ks += [lb.parse_spec(spec), lb.parse_spec(spec + ("," if ":" in spec else ":") + TIMELINE_DEF)]
    with ThreadPoolExecutor(max_workers=min(len(ks), os.cpu_count() or 2)) as pool:
        ks = list(pool.map(lb.build, ks))
    for k in ks:
        if "error" in k:
            raise BadInput(f"{k['spec']}: " + k["error"].splitlines()[-1][:300])
    pairs = list(zip(ks[0::2], ks[1::2]))
    for _, tl in pairs:
        try:
            fn = tl["lib"].attn_timeline
        except AttributeError:
            raise BadInput(f"{tl['spec']}: the -D{TIMELINE_DEF} build exports no attn_timeline; the kernel must "
                           "implement the timeline contract (scripts/tile_timeline.py's docstring)") from None
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_int], ctypes.c_int
    return pairs


def record_capacity(sc, asked):
    """Records to make room for in one launch (a record per 64 query rows per head, x4; more: read again)."""
    return asked or 4 * sc["batch"] * sc["heads_q"] * math.ceil(sc["seqlen_q"] / 64) + 4096


def read_timeline(lib, buf, cap):
    """(records reported by the kernel, the bytes of those copied)."""
    n = lib.attn_timeline(ctypes.addressof(buf), cap)
    if n < 0:
        raise RuntimeError(f"attn_timeline returned CUDA error {n}")
    return n, ctypes.string_at(buf, min(n, cap) * tta.RECORD_BYTES)


def measure(lb, torch, plain, tl, sc, args, device_sms):
    """One (kernel, shape): both builds' times, then one instrumented call's records, analysed."""
    scale = 1.0 / math.sqrt(sc["head_dim"])
    q, kk, v = lb.make_inputs(sc, 3, 1.0)
    o = torch.empty_like(q)
    lse = torch.empty(sc["batch"], sc["heads_q"], sc["seqlen_q"], device="cuda")
    r = dict(kernel=plain["label"], spec=plain["spec"], shape=sc["name"])
    for k in (plain, tl):
        rc = lb.call_kernel(k["lib"], sc, q, kk, v, o, lse, scale)
        torch.cuda.synchronize()
        if rc != 0:
            return dict(r, error=f"{k['label']}: unsupported (rc={rc})")
    r["plain_us"] = 1e3 * lb.time_ms(lambda: lb.call_kernel(plain["lib"], sc, q, kk, v, o, lse, scale),
                                     args.reps, args.cap)
    r["timeline_us"] = 1e3 * lb.time_ms(lambda: lb.call_kernel(tl["lib"], sc, q, kk, v, o, lse, scale),
                                        args.reps, args.cap)
    r["overhead_pct"] = 100.0 * (r["timeline_us"] / r["plain_us"] - 1.0)
    cap = record_capacity(sc, args.max_records)
    for _ in range(2):   # a launch that wrote more records than there was room for: once more with room for all
        buf = (ctypes.c_uint32 * (tta.RECORD_WORDS * cap))()
        torch.cuda.synchronize()
        read_timeline(tl["lib"], buf, cap)   # drains what the earlier launches left
        lb.call_kernel(tl["lib"], sc, q, kk, v, o, lse, scale)
        torch.cuda.synchronize()
        n, data = read_timeline(tl["lib"], buf, cap)
        if n <= cap or args.max_records:
            break
        cap = n
    r.update(records_reported=n, records_copied=len(data) // tta.RECORD_BYTES, max_records=cap)
    if args.save_records:
        r["records_file"] = save_records(args.out, plain["label"], sc["name"], data)
    r["analysis"] = tta.analyze(tta.parse_records(data), device_sms)
    return r


def save_records(out, label, shape, data):
    path = os.path.join(out, re.sub(r"[^A-Za-z0-9_.-]", "_", f"timeline_{label}_{shape}") + ".bin")
    with open(path, "wb") as f:
        f.write(data)
    return path


def report(r, anchor_us):
    """The (kernel, shape)'s header line and table."""
    head = f"== {r['kernel']} {r['shape']}: "
    if "error" in r:
        return [head + r["error"]]
    head += (f"plain {r['plain_us']:.1f} us, TIMELINE {r['timeline_us']:.1f} us ({r['overhead_pct']:+.1f} %)"
             + "".join(f", {a} {us:.1f} us (plain x{us / r['plain_us']:.2f})" for a, us in anchor_us.items()))
    lines = [head]
    dropped = r["records_reported"] - r["records_copied"]
    if dropped:
        lines.append(f"   ! {dropped} records not copied (more than {r['max_records']} records: raise --max-records)")
    if r["records_reported"] == 0:
        lines.append("   ! the instrumented call wrote no record: does the -DTIMELINE=1 build write them?")
    return lines + tta.table(r["analysis"])


def write_json(path, meta, results):
    with open(path + ".tmp", "w") as f:
        json.dump(dict(meta=meta, results=results), f, indent=1)
    os.replace(path + ".tmp", path)


def main(argv):
    args = parse_args(argv)
    try:
        names = validate(args)
        import ladder_bench as lb   # torch from here on
        pairs = build_pair(lb, args.kernels)
    except BadInput as e:
        print(f"tile_timeline: {e}", file=sys.stderr)
        return 2
    import torch
    args.out = os.environ.get("OUT", "/tmp/out")
    os.makedirs(args.out, exist_ok=True)
    scs = [s for s in lb.load_suite(args.suite) if s["name"] in names]
    device_sms = torch.cuda.get_device_properties(0).multi_processor_count
    anc = lb.anchors([a for a in args.anchors.split(",") if a])
    meta = dict(gpu=torch.cuda.get_device_name(), device_sms=device_sms, torch=torch.__version__, suite=args.suite,
                argv=sys.argv, kernels=[{key: v for key, v in k.items() if key != "lib"} for p in pairs for k in p])
    print(f"# {len(pairs)} kernel(s) x {len(scs)} shape(s) on {meta['gpu']} ({device_sms} SMs)", flush=True)
    for plain, tl in pairs:
        print(f"# {plain['label']}: {'; '.join(lb.resource_summary(plain))}\n# {tl['label']}: "
              f"{'; '.join(lb.resource_summary(tl))}", flush=True)
    results, json_path = [], os.path.join(args.out, "tile_timeline.json")

    def stop(signum, frame):   # `timeout` sends SIGTERM: what was measured is already in the JSON
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    exit_if_stuck_after_sigterm()          # a hung kernel blocks the handler: term_grace.py
    try:
        for sc in scs:
            anchor_us = time_anchors(lb, anc, sc, args)
            for plain, tl in pairs:
                try:
                    r = measure(lb, torch, plain, tl, sc, args, device_sms)
                except RuntimeError as e:   # attn_timeline's CUDA error: this pair only
                    r = dict(kernel=plain["label"], spec=plain["spec"], shape=sc["name"], error=str(e))
                r["anchor_us"] = anchor_us
                results.append(r)
                print("\n".join(report(r, anchor_us)), flush=True)
                write_json(json_path, meta, results)
            torch.cuda.empty_cache()
    except KeyboardInterrupt:
        print(f"# interrupted after {len(results)} (kernel, shape) pairs", flush=True)
    write_json(json_path, meta, results)
    print(f"# JSON: {json_path}")
    return 0


def time_anchors(lb, anc, sc, args):
    """us per anchor on this shape (an anchor that fails is left out, with a note)."""
    out = {}
    if not anc:
        return out
    q, kk, v = lb.make_inputs(sc, 3, 1.0)
    scale = 1.0 / math.sqrt(sc["head_dim"])
    for name, fn in anc.items():
        try:
            out[name] = 1e3 * lb.time_ms(lambda: fn(q, kk, v, bool(sc["causal"]), scale), args.reps, args.cap)
        except Exception as e:  # noqa: BLE001
            print(f"# {name} on {sc['name']}: {type(e).__name__}: {str(e)[:120]}", flush=True)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
