"""Find where a ladder kernel hangs: each (kernel, shape) launched in a child process that polls for completion.

A hung launch blocks every CUDA call of its process, and ladder_bench's or the harness's timeout then only
says "no progress". Here each (kernel build, scenario) runs in a process of its own: it launches the kernel
--launches times, polling the stream (no blocking call), then checks it as ladder_bench does (one more launch).
A launch still running after --timeout seconds is a hang: the child prints what a WATCHDOG=1 build wrote into
mapped host memory (every CTA's and warpgroup's last progress mark, and the mbarrier waits stuck for over a
second: CTA, thread, barrier address, parity, the barrier's raw state) and exits at once, which ends its CUDA
context and with it the launch.

--sequence runs the shapes in suite order in one process per kernel (what a shape leaves reaches the next),
--replays adds CUDA-graph replays after a 256 MB write (the timing path). --together is run 57's path exactly: one
process loads every kernel and, per shape, checks each with ladder_bench's check and then times them round-robin
(bench_timing.time_interleaved); the calls block there, so a thread reports the hang with every kernel's marks
(runs 60-62 of docs/kernel_ladder.md: the rung's hang came only with two libraries timed this way). A WATCHDOG=2
build records the stuck waits without the per-tile marks, whose host-memory writes hid the hang in run 66.

    python3 scripts/hang_probe.py --suite kernels/attn_fwd/suites/edge.csv --only E_d256 \\
        --kernels kernels/attn_fwd/ladder/04_pingpong.cu "kernels/attn_fwd/ladder/04_pingpong.cu:WATCHDOG=1"

Marks (the rung's WD_MARK / WD_POINT): consumer 1 tile start, 2 Q arrived, 3 previous store retired, 4 past the
O-staging barrier, 5 past the warpgroup's barrier, 6 store issued, 7 done; producer 10 tile start, 11 Q loaded,
12 empty tile's O wait passed, 13 last V loaded, 14 done.
"""
import argparse, ctypes, json, math, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

HANG_RC = 3
WD_CTAS, WD_RECORDS, WD_RECORD_WORDS = 1024, 256, 8          # the rung's watchdog section
WD_COUNT = 4 * WD_CTAS
WD_WORDS = WD_COUNT + 1 + WD_RECORDS * WD_RECORD_WORDS
POINTS = {1: "tile start", 2: "Q arrived", 3: "store retired", 4: "O-staging barrier passed",
          5: "warpgroup barrier passed", 6: "store issued", 7: "done", 10: "producer tile start",
          11: "Q loaded", 12: "empty tile's O wait passed", 13: "last V loaded", 14: "producer done"}


def summarize_watchdog(words, ctas):
    """Lines from the watchdog's words: how many (CTA, warpgroup) pairs stopped at each (tile, point), then the
    stuck waits. `words` is a sequence of WD_WORDS unsigned ints, `ctas` the launched grid (marks beyond 1024
    CTAs are not kept)."""
    lines, where = [], {}
    for cta in range(min(ctas, WD_CTAS)):
        for wg in range(4):
            w = words[4 * cta + wg]
            if w == 0:
                continue
            tile, point = w >> 8, w & 0xFF
            role = "producer" if wg == 0 else f"consumer {wg - 1}"
            key = (role, "end" if tile == 0xFFFF else tile, POINTS.get(point, f"point {point}"))
            where.setdefault(key, []).append(cta)
    for (role, tile, point), ctas_at in sorted(where.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        shown = ",".join(str(c) for c in ctas_at[:8]) + (",..." if len(ctas_at) > 8 else "")
        lines.append(f"mark {role:10s} tile {tile!s:>4} {point:28s} {len(ctas_at):4d} CTAs ({shown})")
    n = words[WD_COUNT]
    lines.append(f"stuck waits recorded: {n}" + (f" (first {WD_RECORDS} kept)" if n > WD_RECORDS else ""))
    stuck = {}        # (barrier, parity, warpgroup) -> [(cta, thread, state)]
    for i in range(min(n, WD_RECORDS)):
        r = words[WD_COUNT + 1 + WD_RECORD_WORDS * i: WD_COUNT + 1 + WD_RECORD_WORDS * (i + 1)]
        stuck.setdefault((r[2], r[3], r[1] // 128), []).append((r[0], r[1], r[4] | (r[5] << 32)))
    for (bar, parity, wg), recs in sorted(stuck.items()):
        role = "producer" if wg == 0 else f"consumer {wg - 1}"
        ctas = sorted({c for c, _, _ in recs})
        shown = ",".join(str(c) for c in ctas[:8]) + (",..." if len(ctas) > 8 else "")
        cta, thread, state = recs[0]
        lines.append(f"stuck {role:10s} barrier 0x{bar:05x} parity {parity}: {len(recs)} warps in {len(ctas)} CTAs "
                     f"({shown}); e.g. cta {cta} thread {thread} state 0x{state:016x}")
    return lines


def grid_ctas_hint(sc):
    """An upper bound on the CTAs a launch of `sc` has (tiles of 64 query rows), for reading the marks."""
    return sc["batch"] * sc["heads_q"] * max(1, math.ceil(sc["seqlen_q"] / 64)) * 4


# ---- child: one kernel on one scenario, or on several in order ---------------------------------------------
def open_lib(so):
    """The kernel's library with its entry's types, and the watchdog's words (None without WATCHDOG=1)."""
    lib = ctypes.CDLL(so)
    lib.attn_fwd.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_void_p]
    lib.attn_fwd.restype = ctypes.c_int
    if not hasattr(lib, "attn_watchdog_open"):
        return lib, None
    lib.attn_watchdog_open.restype = ctypes.c_uint64
    addr = lib.attn_watchdog_open()
    if not addr:
        print("watchdog: attn_watchdog_open failed", flush=True)
        return lib, None
    return lib, (ctypes.c_uint32 * WD_WORDS).from_address(addr)


def report_marks(labelled_words, sc):
    """After a hang: each library's watchdog summary (label None: the only one, printed without a heading)."""
    if any(words is not None for _, words in labelled_words):
        time.sleep(1.5)                     # past the watchdog's one-second threshold
    for label, words in labelled_words:
        if words is None:
            print(f"{label}: no watchdog in this build (WATCHDOG=1 shows where)" if label else
                  "(no watchdog in this build: WATCHDOG=1 shows where)", flush=True)
        else:
            lines = summarize_watchdog(list(words), grid_ctas_hint(sc))
            print((f"watchdog of {label}:\n" if label else "") + "\n".join(lines), flush=True)


def wait_or_report(words, sc, what, timeout):
    """Poll the stream; on a hang print where (the watchdog's marks) and end the process (and its context)."""
    import torch
    stream, t0 = torch.cuda.current_stream(), time.time()
    while not stream.query():
        if time.time() - t0 > timeout:
            print(f"HANG on {sc['name']} at {what} (running {timeout:.0f} s)", flush=True)
            report_marks([(None, words)], sc)
            os._exit(HANG_RC)
        time.sleep(0.002)


def run_one(lib, words, sc, launches, replays, timeout):
    """`launches` plain launches, then `replays` CUDA-graph replays of the call with a 256 MB write between them
    (ladder_bench's and the harness's timing), each polled; then ladder_bench's check with its scaled inputs."""
    import torch
    from bench_timing import L2_FLUSH_BYTES
    from ladder_bench import call_kernel, check, guarded, make_inputs
    b, sq, hq, d = sc["batch"], sc["seqlen_q"], sc["heads_q"], sc["head_dim"]
    scale = 1.0 / math.sqrt(d)
    q, k, v = make_inputs(sc, 0, 1.0)
    _, o = guarded(q.numel(), torch.bfloat16)
    _, lse = guarded(b * hq * sq, torch.float32)
    t_start = time.time()
    for i in range(launches):
        if words is not None:
            lib.attn_watchdog_open()        # zeroes the marks: a hang shows this launch's
        rc = call_kernel(lib, sc, q, k, v, o, lse, scale)
        if rc != 0:
            print(f"{sc['name']} launch {i}: rc {rc}", flush=True)
            os._exit(2)
        wait_or_report(words, sc, f"launch {i} of {launches}", timeout)
    if replays:
        flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            call_kernel(lib, sc, q, k, v, o, lse, scale)          # warm-up on the capture stream
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            call_kernel(lib, sc, q, k, v, o, lse, scale)
        for i in range(replays):
            flush.fill_(i)
            if words is not None:
                lib.attn_watchdog_open()
            graph.replay()
            wait_or_report(words, sc, f"graph replay {i} of {replays}", timeout)
        del graph, flush
    wall = time.time() - t_start
    status, worst = check({"lib": lib}, sc, [0], 7)     # ladder_bench's check with its scaled seed (x16 inputs)
    return dict(scenario=sc["name"], status=status, launches=launches, replays=replays, wall_s=round(wall, 3), **worst)


def child(so, scs, launches, replays, timeout):
    """Every scenario of `scs` in order in this one process: state one shape leaves (the walk's counter, the
    split workspace, the L2) reaches the next, as in ladder_bench and the harness. Exit 0, 4 (wrong) or HANG_RC."""
    lib, words = open_lib(so)
    bad = False
    for sc in scs:
        r = run_one(lib, words, sc, launches, replays, timeout)
        print(json.dumps(r), flush=True)
        bad = bad or r["status"] != "ok"
    os._exit(4 if bad else 0)


def child_together(libs, scs, timeout, reps, cap):
    """Run 57's path in one process for every kernel: per shape (suite order), ladder_bench's check of each kernel
    (x16 inputs, seeds 0 and 1), then the kernels that passed timed round-robin (bench_timing.time_interleaved:
    graph replays after a 256 MB write, the kernels alternating). The calls block, so a thread watches: no progress
    for `timeout` seconds is a hang, reported with every kernel's watchdog marks. Exit 0, 4 (wrong) or HANG_RC."""
    import threading
    import torch
    from bench_timing import time_interleaved
    from ladder_bench import call_kernel, check, make_inputs
    opened = [(label, *open_lib(so)) for label, so in libs]
    state = dict(step="start", t=time.time(), sc=scs[0])

    def progress(step, sc):
        state.update(step=step, t=time.time(), sc=sc)

    def monitor():
        while time.time() - state["t"] <= timeout:
            time.sleep(0.25)
        print(f"HANG on {state['sc']['name']} at {state['step']} (no progress for {timeout:.0f} s)", flush=True)
        report_marks([(label, words) for label, _, words in opened], state["sc"])
        os._exit(HANG_RC)

    threading.Thread(target=monitor, daemon=True).start()
    bad = False
    for sc in scs:
        for _, lib, words in opened:
            if words is not None:
                lib.attn_watchdog_open()    # zeroes the marks: a hang shows this shape's last launch
        status = {}
        for label, lib, _ in opened:
            progress(f"the check of {label}", sc)
            status[label] = check({"lib": lib}, sc, [0, 1], 7)[0]
        b, sq, hq = sc["batch"], sc["seqlen_q"], sc["heads_q"]
        scale = 1.0 / math.sqrt(sc["head_dim"])
        q, k, v = make_inputs(sc, 3, 1.0)
        fns = {}
        for label, lib, _ in opened:
            if status[label] == "ok":
                o, lse = torch.empty_like(q), torch.empty(b, hq, sq, device="cuda")
                fns[label] = lambda lib=lib, o=o, lse=lse: call_kernel(lib, sc, q, k, v, o, lse, scale)
        progress("the round-robin timing", sc)
        ms = time_interleaved(fns, reps, cap) if fns else {}
        print(json.dumps(dict(scenario=sc["name"], status=status, us={n: round(1e3 * t, 2) for n, t in ms.items()})),
              flush=True)
        bad = bad or any(st != "ok" for st in status.values())
        del q, k, v, fns
        torch.cuda.empty_cache()
    os._exit(4 if bad else 0)


# ---- parent: build, then one child per (kernel, scenario) --------------------------------------------------
def run_child(ks, scs, args):
    """One child process for the kernels `ks` (one, or all with --together) on the scenarios `scs` (one, or the
    whole list with --sequence or --together)."""
    libs = [[k["label"], k["so"]] for k in ks]
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(libs), "--scenario", json.dumps(scs),
           "--launches", str(args.launches), "--replays", str(args.replays), "--timeout", str(args.timeout)]
    cmd += ["--together"] if args.together else []
    t0 = time.time()
    try:
        limit = (args.timeout + 60) * len(scs) + 30
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        rc, out = r.returncode, (r.stdout + r.stderr).strip()
    except subprocess.TimeoutExpired as e:
        rc, out = -9, f"child killed after {limit} s: {(e.stdout or b'')!s:.400}"
    status = {0: "ok", HANG_RC: "HANG", 4: "WRONG", 2: "rc"}.get(rc, f"exit {rc}")
    name = scs[0]["name"] if len(scs) == 1 else f"{len(scs)} in order"
    return dict(kernel=" + ".join(k["label"] for k in ks), scenario=name, status=status,
                seconds=round(time.time() - t0, 1), log=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="kernels/attn_fwd/suites/edge.csv")
    ap.add_argument("--only", default="", help="scenarios whose name contains one of these (comma list)")
    ap.add_argument("--kernels", nargs="+", default=["kernels/attn_fwd/ladder/04_pingpong.cu"])
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--replays", type=int, default=0, help="CUDA-graph replays after the launches, 256 MB written "
                    "between them (the timing path of ladder_bench and the harness)")
    ap.add_argument("--sequence", action="store_true", help="one process per kernel runs the scenarios in suite "
                    "order (what one shape leaves reaches the next), instead of one process per scenario")
    ap.add_argument("--together", action="store_true", help="one process for every kernel, the scenarios in suite "
                    "order, each checked then timed round-robin as ladder_bench does (run 57's hang needed this)")
    ap.add_argument("--reps", type=int, default=40, help="--together: timing samples per kernel and shape")
    ap.add_argument("--cap", type=float, default=0.3, help="--together: seconds of samples per shape at most")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds one launch may run before it is a hang")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--scenario", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        libs, scs = json.loads(args.child), json.loads(args.scenario)
        if args.together:
            child_together(libs, scs, args.timeout, args.reps, args.cap)
        child(libs[0][1], scs, args.launches, args.replays, args.timeout)
        return
    from ladder_bench import build, load_suite, parse_spec
    if not os.path.isfile(args.suite):
        sys.exit(f"hang_probe: no suite file {args.suite}: pass --suite path/to/suite.csv")
    only = [o for o in args.only.split(",") if o]
    scs = [s for s in load_suite(args.suite) if not only or any(o in s["name"] for o in only)]
    if not scs:
        sys.exit(f"hang_probe: no scenario of {args.suite} matches --only {args.only!r}")
    ks = [parse_spec(s) for s in args.kernels]
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=len(ks)) as pool:
        ks = list(pool.map(build, ks))
    for k in ks:
        k.pop("lib", None)                 # the children load their own copy and own the GPU
        print(f"# {k['label']}: " + (k.get("error") or f"built in {k['build_s']} s"), flush=True)
    ks = [k for k in ks if "error" not in k]
    print(f"# {len(ks)} builds in {time.time() - t0:.0f} s; {len(scs)} scenarios, {args.launches} launches each",
          flush=True)
    results = []
    for group in ([scs] if args.sequence or args.together else [[sc] for sc in scs]):
        for kernels in ([ks] if args.together else [[k] for k in ks]):
            r = run_child(kernels, group, args)
            results.append(r)
            print(f"{r['scenario']:34s} {r['kernel']:44s} {r['status']:6s} {r['seconds']:6.1f} s", flush=True)
            if r["status"] != "ok":
                print("    " + r["log"].replace("\n", "\n    ")[:6000], flush=True)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "hang_probe.json"), "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(0 if all(r["status"] == "ok" for r in results) else 1)


if __name__ == "__main__":
    main()
