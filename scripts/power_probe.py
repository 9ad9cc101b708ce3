"""Energy per call of ladder kernels and FA3 on a few shapes, each held alone on the GPU: does 04 spend more energy
than FA3 for the same work (so the power cap clocks it lower on the long shapes), or did the timer's order do it?

    python3 scripts/power_probe.py --suite kernels/attn_fwd/suites/full.csv --only A_d128_c0_s16k \
        --kernels kernels/attn_fwd/ladder/04_pingpong.cu --anchors fa3 --rest 2 --hold 3 --rounds 2

Per shape and round, every implementation in turn (the order reversed in odd rounds: ABBA): the GPU idles --rest
seconds, then one CUDA graph of back-to-back calls (about 50 ms) replays for --hold seconds, no L2 flush, no host
gap. `nvidia-smi -lms 20` samples board power, SM clock and temperature all along (power_samples.py does the
arithmetic). No correctness check here: run ladder_bench or `workbench check` for that. Table to stdout; rows to
$OUT/power_probe.json when OUT is set.
"""
import argparse, json, math, os, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ladder_bench import anchors, build, call_kernel, load_suite, make_inputs, parse_spec  # noqa: E402
from power_samples import (POWER_FIELDS, REASON_FIELDS, energy_row, parse_line, query_fields,  # noqa: E402
                           ratio_table, window_stats)

GRAPH_TARGET_S = 0.05    # one graph's length: short enough to end a hold on time, long enough to hide replays


def start_sampler(path):
    """nvidia-smi in the background, one CSV row per 20 ms into path, with the first power and reason fields this
    driver accepts (an unknown field fails the whole query)."""
    gpu = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
    for power in POWER_FIELDS:
        for reason in REASON_FIELDS:
            fields = ",".join(query_fields(power, reason))
            probe = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", gpu],
                                   capture_output=True, text=True)
            if probe.returncode == 0 and parse_line(probe.stdout.strip().splitlines()[0] if probe.stdout else ""):
                cmd = ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-lms", "20", "-i", gpu]
                return subprocess.Popen(cmd, stdout=open(path, "w"), stderr=subprocess.DEVNULL), f"{power},{reason}"
    sys.exit("power_probe: nvidia-smi answers none of " + ", ".join(POWER_FIELDS) + "; no power to sample")


def graph_of(fn, calls_hint):
    """fn warmed up, then captured `n` times back to back in one CUDA graph, n sized to ~GRAPH_TARGET_S."""
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(calls_hint):
        fn()
    torch.cuda.synchronize()
    per_call = (time.time() - t0) / calls_hint
    n = max(1, min(1000, int(GRAPH_TARGET_S / max(per_call, 1e-6))))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(side):
        with torch.cuda.graph(graph):
            for _ in range(n):
                fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    return graph, n


def hold(graph, n, seconds):
    """Replays graph until `seconds` have passed; (calls, wall seconds, t_start, t_end)."""
    torch.cuda.synchronize()
    t0 = time.time()
    reps = 0
    while time.time() - t0 < seconds:
        graph.replay()
        reps += 1
        if reps % 4 == 0:
            torch.cuda.synchronize()   # keep the host within ~4 graphs of the GPU, so the window is the GPU's
    torch.cuda.synchronize()
    t1 = time.time()
    return reps * n, t1 - t0, t0, t1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="kernels/attn_fwd/suites/full.csv")
    ap.add_argument("--only", required=True, help="comma list: scenarios whose name contains one of these")
    ap.add_argument("--kernels", nargs="+", required=True, help="path.cu[:NAME=VALUE,...] as ladder_bench")
    ap.add_argument("--anchors", default="fa3")
    ap.add_argument("--rest", type=float, default=2.0, help="idle seconds before each hold")
    ap.add_argument("--hold", type=float, default=3.0, help="seconds of back-to-back calls per hold")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per shape; odd rounds reverse the order")
    args = ap.parse_args()
    only = [o for o in args.only.split(",") if o]
    scs = [s for s in load_suite(args.suite) if any(o in s["name"] for o in only)]
    if not scs:
        sys.exit(f"power_probe: no scenario of {args.suite} matches --only {args.only}; pick names from that CSV")
    with ThreadPoolExecutor(max_workers=len(args.kernels)) as pool:   # nvcc runs ~1 min a build
        ks = list(pool.map(build, map(parse_spec, args.kernels)))
    for k in ks:
        if "lib" not in k:
            sys.exit(f"power_probe: {k['label']}: {k['error'][:300]}")
    anc = anchors([a for a in args.anchors.split(",") if a])
    reference = "fa3" if "fa3" in anc else ks[0]["label"]
    log = tempfile.NamedTemporaryFile(suffix=".csv", delete=False).name
    sampler, field = start_sampler(log)
    n_holds = len(scs) * args.rounds * (len(ks) + len(anc))
    print(f"# GPU {torch.cuda.get_device_name()}, power field {field}, {len(scs)} shapes, rest {args.rest} s, "
          f"hold {args.hold} s, {args.rounds} rounds: {n_holds} holds, about "
          f"{n_holds * (args.rest + args.hold):.0f} s", flush=True)
    t_start = time.time()
    holds, rows = [], []
    try:
        for sc in scs:
            scale = 1.0 / math.sqrt(sc["head_dim"])
            q, kk, v = make_inputs(sc, 3, 1.0)
            fns = {}
            for k in ks:
                o = torch.empty_like(q)
                lse = torch.empty(sc["batch"], sc["heads_q"], sc["seqlen_q"], device="cuda")
                fns[k["label"]] = lambda lib=k["lib"], o=o, lse=lse: call_kernel(lib, sc, q, kk, v, o, lse, scale)
            for name, fn in anc.items():
                fns[name] = lambda fn=fn: fn(q, kk, v, sc["causal"], scale)
            graphs = {name: graph_of(fn, 3) for name, fn in fns.items()}
            for rnd in range(args.rounds):
                order = list(graphs) if rnd % 2 == 0 else list(graphs)[::-1]
                for name in order:
                    time.sleep(args.rest)
                    calls, secs, t0, t1 = hold(*graphs[name], args.hold)
                    holds.append((name, sc["name"], calls, secs, t0, t1))
                    left = (n_holds - len(holds)) * (time.time() - t_start) / len(holds)
                    print(f"#  [{len(holds)}/{n_holds}] {sc['name']} {name}: {calls} calls in {secs:.2f} s; "
                          f"~{left:.0f} s left", flush=True)
            del graphs, fns, q, kk, v
            torch.cuda.empty_cache()
    finally:
        time.sleep(0.2)
        sampler.terminate()
        sampler.wait()
    samples = [s for s in (parse_line(line) for line in open(log)) if s]
    for name, shape, calls, secs, t0, t1 in holds:
        rows.append(energy_row(name, shape, calls, secs, window_stats(samples, t0, t1)))
    print("\n".join(ratio_table(rows, reference)))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "power_probe.json"), "w") as f:
            json.dump(dict(gpu=torch.cuda.get_device_name(), power_field=field, args=vars(args), rows=rows,
                           samples=len(samples)), f, indent=1)


if __name__ == "__main__":
    main()
