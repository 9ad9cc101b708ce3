"""Issue 28 on the GPU: the Ray pool against the local pool with today's contained worker, device timing and
foreign-kernel guard. Each claim is one `verdict: ok|FAIL NAME: detail` line; the figures go to --json.

    python3 scripts/ray_pool_check.py one  --suite dev26 --anchors fa3 --rounds 2        # one H200 (gpu_run.sh ray1)
    python3 scripts/ray_pool_check.py two  --suite dev26 --anchors fa3 --candidates 10   # two GPUs (gpu_run.sh ray2)
    python3 scripts/ray_pool_check.py kill --suite dev26 --anchors fa3 --candidates 6    # two GPUs (or one)
    python3 scripts/ray_pool_check.py two --cpu --suite smoke --anchors '' --candidates 4   # the plumbing, no GPU

one   the node's timing cache warmed by a local run (not counted), then ROUNDS x (local pool, Ray pool of one GPU)
      on the same kernel: both geomeans, each path's wall time, Ray's start and its overhead per evaluation, what
      held on the node (versions["sandbox"]), the foreign-kernel check, the cache lines the node sent back.
two   a fresh cache: one Ray evaluation alone times the baseline and anchors on the node, then a batch of single-knob
      variants on a Ray pool of 1 GPU and of all GPUs: throughput, each kernel's geomeans 1 vs N GPUs, no later
      evaluation timed anything again (merged once per node), every result contained under a dropped uid, the guard
      on every GPU (kernels/attn_fwd/wrong/borrowed_gemm.cu rejected with foreign_kernel on each device).
kill  a batch on the Ray pool; one Ray worker SIGKILLed while its contained worker runs: that evaluation judged again
      once (versions["retried"]), every result there, its geomeans those of a second, unkilled evaluation.
--cpu runs the same paths on the CPU stand-ins (standin:correct for every kernel, standin:foreign_gemm for the
borrowing one, CPU slots for GPUs): a dry run of this script, whose timings and speedup mean nothing (the verdicts
that rest on them are shown as `verdict: cpu`, not judged). --head puts each Ray pool on a `ray start --head` of
its own, reached by address as the README's `--ray-address` is (scripts/ray_head.py); --table writes a short table.
"""
from __future__ import annotations

import argparse
import math
import os
import shlex
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from pool_bench import knob_variants  # noqa: E402
from workbench.evaluators.evaluator import BUILD_WORKERS, local_gpus, prebuild  # noqa: E402
from workbench.evaluators.local_pool import LocalPool  # noqa: E402
from workbench.evaluators.ray_pool import RayPool  # noqa: E402
from workbench.harness.result import CheckRequest  # noqa: E402
from ray_check_report import CPU, FIGURES, contained_uid, failed, note, row, timed_now, verdict, write  # noqa: E402
from ray_head import RayHead  # noqa: E402

BORROWED = "kernels/attn_fwd/wrong/borrowed_gemm.cu"
HEAD = {"on": False, "log": ""}         # --head: each Ray pool on a `ray start --head` of its own, by address


def kernel_paths(kernel: str, count: int, prefix: str) -> list:
    """`count` single-knob variants of `kernel` written to a fresh folder (--cpu: standin:correct each)."""
    if CPU["on"]:
        return ["standin:correct"] * count
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    paths = []
    for i, (label, text) in enumerate(knob_variants(Path(kernel).read_text(), count)):
        paths.append(workdir / f"v{i:02d}_{label.replace('=', '_')}.cu")
        paths[-1].write_text(text)
    return paths


def gpu_count() -> int:
    return 2 if CPU["on"] else len(local_gpus())


def local_pool() -> LocalPool:
    return LocalPool(1) if CPU["on"] else LocalPool(gpus=[0])


def judge(pool, request: CheckRequest):
    """(result, wall seconds from submit to result, the progress lines)"""
    lines: list = []
    t0 = time.monotonic()
    result = pool.submit(request, progress=lines.append).result()
    return result, time.monotonic() - t0, lines


def batch(pool, requests: list):
    """[(result, lines)] in request order, and the wall time of the whole batch."""
    t0 = time.monotonic()
    jobs = []
    for r in requests:
        lines: list = []
        jobs.append((pool.submit(r, progress=lines.append), lines))
    out = [(future.result(), lines) for future, lines in jobs]
    return out, time.monotonic() - t0


def geomeans(result, anchors) -> dict:
    return {name: result.geomean_vs(name) for name in ("original", *anchors)}


def close(a: dict, b: dict, tol: float) -> tuple[bool, float]:
    worst = max((abs(b[k] / a[k] - 1.0) for k in a if a[k] and b.get(k) and math.isfinite(a[k] * b[k])),
                default=float("nan"))
    return worst == worst and worst <= tol, worst


def guard_applied(result) -> bool:
    return not any(flag.startswith("foreign_check:") for flag in result.flags)


def requests_for(paths, args, cache: str | None, **kw) -> list:
    anchors = tuple(a for a in args.anchors.split(",") if a)
    if CPU["on"]:
        kw.setdefault("baseline_path", "standin:slow_correct")
        paths = [p if str(p).startswith("standin:") else "standin:correct" for p in paths]
    return [CheckRequest(kernel_path=str(p), suite=args.suite, anchors=kw.pop("anchors", anchors), cache_dir=cache,
                         **kw) for p in paths]


def build_all(requests: list) -> None:
    with ThreadPoolExecutor(BUILD_WORKERS) as builders:
        list(builders.map(prebuild, requests))


def leave_on_sigterm() -> None:
    """`timeout` sends SIGTERM: leave through the finally blocks, which stop the Ray head this script started.
    Set after each ray.init, whose core worker installs a SIGTERM handler that aborts the process."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def start_ray(gpus: int) -> tuple[RayPool, float]:
    """A Ray pool of `gpus` slots and the seconds it took to come up (with --head: the head's start too)."""
    t0 = time.monotonic()
    if not HEAD["on"]:
        pool = RayPool(num_cpus=gpus) if CPU["on"] else RayPool(num_gpus=gpus)
        leave_on_sigterm()
        return pool, time.monotonic() - t0
    head = RayHead(gpus=0 if CPU["on"] else gpus, cpus=gpus if CPU["on"] else 0, log=HEAD["log"])
    try:
        pool = RayPool(head.address)
    except BaseException:
        head.stop()
        raise
    leave_on_sigterm()
    pool.head = head
    FIGURES.setdefault("ray_heads", []).append({"address": head.address, "temp_dir": head.temp_dir,
                                                "start_s": round(head.start_s, 2)})
    print(f"  Ray head {head.address} up in {head.start_s:.1f} s (temp dir {head.temp_dir}); {pool.describe()}",
          flush=True)
    return pool, time.monotonic() - t0


def stop_ray(pool: RayPool) -> None:
    pool.close()
    if getattr(pool, "head", None):
        pool.head.stop()


# ---- one: a Ray pool of one GPU against the local pool ------------------------------------------------------
def check_one(args) -> None:
    anchors = tuple(a for a in args.anchors.split(",") if a)
    request = requests_for([args.kernel], args, None)[0]
    build_all([request])
    with local_pool() as warm:
        first, wall, _ = judge(warm, request)
    print(f"warm-up (local, not counted): {first.status}, {wall:.1f} s, gpu {first.gpu}", flush=True)
    local = local_pool()
    runs = {"local": [], "ray": []}
    ray_pool, ray_start = start_ray(1)          # then straight into the try: its finally stops the head
    try:
        for r in range(args.rounds):
            order = ("local", "ray") if r % 2 == 0 else ("ray", "local")
            for path in order:
                result, wall, lines = judge(local if path == "local" else ray_pool, request)
                runs[path].append({"result": result, "wall_s": wall, "lines": lines})
                print(f"  round {r} {path:<5} {result.status} wall {wall:6.1f} s (harness {result.wall_s:6.1f} s) "
                      f"{' '.join(f'x{k} {v:.4f}' for k, v in geomeans(result, anchors).items())} "
                      f"device {result.versions.get('device')}", flush=True)
    finally:
        stop_ray(ray_pool)
        local.close()
    walls = {p: sum(x["wall_s"] for x in v) / len(v) for p, v in runs.items()}
    harness = {p: sum(x["result"].wall_s for x in v) / len(v) for p, v in runs.items()}
    means = {p: {k: math.exp(sum(math.log(geomeans(x["result"], anchors)[k]) for x in v) / len(v))
                 for k in ("original", *anchors)} for p, v in runs.items()}
    print(f"local pool: geomeans {means['local']}, wall {walls['local']:.1f} s per evaluation", flush=True)
    print(f"ray pool:   geomeans {means['ray']}, wall {walls['ray']:.1f} s per evaluation; Ray start "
          f"{ray_start:.1f} s (once per pool)", flush=True)
    print(f"ray overhead: {walls['ray'] - walls['local']:+.1f} s per evaluation (wall), harness inside "
          f"{harness['ray'] - harness['local']:+.1f} s", flush=True)
    FIGURES.update(mode="one", kernel=args.kernel, suite=args.suite, ray_start_s=round(ray_start, 2),
                   wall_s={p: round(w, 2) for p, w in walls.items()}, geomeans=means,
                   runs={p: [{"wall_s": round(x["wall_s"], 2), "harness_s": round(x["result"].wall_s, 2),
                              "geomeans": geomeans(x["result"], anchors), "versions": x["result"].versions,
                              "timed_now": timed_now(x["lines"])} for x in v] for p, v in runs.items()})
    row("pool", "evaluations", "wall per evaluation s", "harness inside s", *(f"x {k}" for k in means["local"]))
    for p, v in runs.items():
        row(p if p == "local" else f"ray ({'own head' if HEAD['on'] else 'local instance'}, 1 GPU)", len(v),
            walls[p], harness[p], *means[p].values())
    note(f"Ray start {ray_start:.1f} s once per pool; Ray overhead {walls['ray'] - walls['local']:+.2f} s per "
         f"evaluation (wall), {harness['ray'] - harness['local']:+.2f} s inside the harness")
    ok, worst = close(means["local"], means["ray"], args.tol)
    locals_ = [geomeans(x["result"], anchors) for x in runs["local"]]
    noise = close(locals_[0], locals_[-1], 1.0)[1] if len(locals_) > 1 else float("nan")
    verdict("same geomeans", ok, f"worst |ray/local - 1| {worst:.4f} (tol {args.tol}); local round to round "
                                 f"{noise:.4f}", timing=True)
    everything = [x["result"] for v in runs.values() for x in v]
    verdict("evaluated", all(r.all_correct for r in everything), f"{sum(r.all_correct for r in everything)} of "
                                                                  f"{len(everything)} all correct")
    uids = [contained_uid(x["result"]) for x in runs["ray"]]
    held = runs["ray"][0]["result"].versions.get("sandbox")
    verdict("contained on the Ray node", all(u > 0 for u in uids), f"uids {uids}; {held}")
    verdict("foreign-kernel check on every scenario", all(guard_applied(r) for r in everything),
            str(sorted({f for r in everything for f in r.flags})))
    timed = [timed_now(x["lines"]) for x in runs["ray"]]
    verdict("the Ray node read the cache the local run merged", all(t and not any(t.values()) for t in timed),
            f"timed now per Ray evaluation: {timed}")


# ---- two: throughput, geomeans, cache, containment and the guard on every GPU ------------------------------
def check_two(args) -> None:
    anchors = tuple(a for a in args.anchors.split(",") if a)
    gpus = gpu_count()
    cache = args.cache or tempfile.mkdtemp(prefix="ray2-cache-")   # fresh: the node's own merge is what fills it
    requests = requests_for(kernel_paths(args.kernel, args.candidates, "ray2-kernels-"), args, cache)
    seed = requests_for([args.kernel], args, cache)[0]
    t0 = time.monotonic()
    build_all(requests + [seed])
    print(f"{len(requests)} variants of {args.kernel} built in {time.monotonic() - t0:.1f} s; {gpus} GPUs", flush=True)
    runs = {}
    for n in sorted({1, gpus}):
        pool, started = start_ray(n)
        try:
            if n == 1:       # the seed alone first: the node times the baseline and anchors, its parent merges them
                first, wall, first_lines = judge(pool, seed)
                print(f"  first Ray evaluation (fresh cache): {first.status} in {wall:.1f} s, timed now "
                      f"{timed_now(first_lines)}", flush=True)
            results, wall = batch(pool, requests)
            guards = []
            if n == gpus:    # the guard on every GPU: two borrowed_gemm per GPU, all at once
                borrowed = "standin:foreign_gemm" if CPU["on"] else BORROWED
                guards, _ = batch(pool, requests_for([borrowed] * 2 * n, args, cache, anchors=(), fail_fast=True))
        finally:
            stop_ray(pool)
        runs[n] = {"results": results, "wall_s": wall, "start_s": started, "guards": guards}
        devices = sorted({r.versions.get("device", "") for r, _ in results})
        print(f"  ray x{n} GPU: {len(results)} candidates in {wall:.1f} s ({60 * len(results) / wall:.2f}/min), "
              f"{sum(r.all_correct for r, _ in results)} all correct, devices {devices}; Ray start {started:.1f} s",
              flush=True)
    row("pool", "candidates", "batch wall s", "candidates per min", "Ray start s", "all correct")
    for n, run in runs.items():
        row(f"ray x{n} GPU", len(run["results"]), run["wall_s"], 60 * len(run["results"]) / run["wall_s"],
            run["start_s"], sum(r.all_correct for r, _ in run["results"]))
    one, many = runs[1], runs[gpus]
    speedup = one["wall_s"] / many["wall_s"]
    verdict(f"throughput {gpus} GPUs vs 1", gpus > 1 and speedup >= 1.8, f"{speedup:.2f}x (aim >= 1.8x)", timing=True)
    worst = [close(geomeans(a, anchors), geomeans(b, anchors), 1.0)[1]
             for (a, _), (b, _) in zip(one["results"], many["results"])]
    verdict("same geomeans per kernel, 1 vs N GPUs", max(worst) <= args.tol,
            f"worst |N/1 - 1| {max(worst):.4f} (tol {args.tol}); per kernel {[round(w, 4) for w in worst]}",
            timing=True)
    later = [timed_now(lines) for run in runs.values() for _, lines in run["results"]]
    verdict("cache merged once per node", timed_now(first_lines).get("original", 0) > 0
            and all(t and not any(t.values()) for t in later),
            f"first {timed_now(first_lines)}; {sum(bool(t and not any(t.values())) for t in later)} of {len(later)} "
            f"later evaluations timed nothing")
    everything = [r for run in runs.values() for r, _ in run["results"]] + [first]
    uids = [contained_uid(r) for r in everything]
    verdict("no candidate host code privileged", all(u > 0 and u != os.getuid() for u in uids),
            f"{len(set(uids))} distinct uids for {len(uids)} evaluations, min {min(uids)}; {first.versions['sandbox']}")
    rejected = {r.versions.get("device") for r, _ in many["guards"]
                if any(row.reason == "foreign_kernel" for row in r.rows)}
    all_devices = {r.versions.get("device") for r, _ in many["results"]}
    verdict("foreign-kernel guard on every GPU", rejected >= all_devices and all(
        guard_applied(r) for r in everything), f"borrowed_gemm rejected with foreign_kernel on {sorted(rejected)}; "
                                               f"devices of the batch {sorted(all_devices)}")
    FIGURES.update(mode="two", kernel=args.kernel, suite=args.suite, gpus=gpus, speedup=round(speedup, 3),
                   runs={n: {"wall_s": round(r["wall_s"], 2), "ray_start_s": round(r["start_s"], 2),
                             "kernels": [{"path": res.kernel_path, "device": res.versions.get("device"),
                                          "geomeans": geomeans(res, anchors), "timed_now": timed_now(lines)}
                                         for res, lines in r["results"]]} for n, r in runs.items()})


# ---- kill: one Ray worker SIGKILLed mid-evaluation -----------------------------------------------------------
def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _ray_workers_judging() -> list[int]:
    """Ray worker pids (descendants of this process, `ray::...`) whose contained evaluation worker is running."""
    mine = os.getpid()
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if not (entry.name.isdigit() and b"sandbox_entry" in (entry / "cmdline").read_bytes()):
                continue
            pid, chain = int(entry.name), []
            while pid > 1:
                chain.append(pid)
                pid = _parent(pid)
            if mine in chain:
                found.update(p for p in chain if Path(f"/proc/{p}/cmdline").read_bytes().startswith(b"ray::"))
        except (OSError, ValueError, IndexError):
            continue
    return sorted(found)


def _killer(stop: threading.Event, record: dict, settle_s: float) -> None:
    """Kill the first Ray worker seen judging for `settle_s` (its worker started, a scenario under way)."""
    seen: dict = {}
    while not stop.is_set():
        now = time.monotonic()
        for pid in _ray_workers_judging():
            seen.setdefault(pid, now)
            if now - seen[pid] >= settle_s:
                os.kill(pid, signal.SIGKILL)
                record.update(pid=pid, judging_s=round(now - seen[pid], 1))
                print(f"  killed Ray worker {pid} after {now - seen[pid]:.1f} s of its evaluation", flush=True)
                return
        time.sleep(0.2)


def check_kill(args) -> None:
    anchors = tuple(a for a in args.anchors.split(",") if a)
    requests = requests_for(kernel_paths(args.kernel, args.candidates, "raykill-kernels-"), args, args.cache)
    build_all(requests)
    pool, _ = start_ray(gpu_count())
    stop, record = threading.Event(), {}
    killer = threading.Thread(target=_killer, args=(stop, record, args.settle_s), daemon=True)
    try:
        killer.start()
        results, wall = batch(pool, requests)
        stop.set()
        retried = [r for r, _ in results if r.versions.get("retried")]
        again = [judge(pool, requests_for([r.kernel_path], args, args.cache)[0])[0] for r in retried]
    finally:
        stop.set()
        stop_ray(pool)
    print(f"  {len(results)} results in {wall:.1f} s; retried: {[r.kernel_path for r in retried]}", flush=True)
    row("candidates", "results", "all correct", "retried", "batch wall s", "killed Ray worker")
    row(len(requests), len(results), sum(r.all_correct for r, _ in results), len(retried), wall,
        f"pid {record.get('pid')} after {record.get('judging_s')} s" if record else "none")
    verdict("a worker was killed mid-evaluation", bool(record), str(record))
    verdict("judged again once, reported once", len(retried) == 1 and all(
        "WorkerCrashedError" in r.versions["retried"] for r in retried), f"{[r.versions['retried'] for r in retried]}")
    verdict("no result lost", len(results) == len(requests) and all(r.all_correct for r, _ in results),
            f"{sum(r.all_correct for r, _ in results)} of {len(requests)} all correct; statuses "
            f"{sorted({r.status for r, _ in results})}")
    if retried:
        ok, worst = close(geomeans(retried[0], anchors), geomeans(again[0], anchors), args.tol)
        verdict("the retried evaluation's geomeans", ok, f"|again/retried - 1| {worst:.4f} (tol {args.tol})",
                timing=True)
    FIGURES.update(mode="kill", killed=record, results=len(results), wall_s=round(wall, 2),
                   retried=[{"path": r.kernel_path, "why": r.versions["retried"], "geomeans": geomeans(r, anchors)}
                            for r in retried])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 scripts/ray_pool_check.py", description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("one", "two", "kill"))
    parser.add_argument("--kernel", default="kernels/attn_fwd/ladder/02_mma.cu")
    parser.add_argument("--suite", default="dev26")
    parser.add_argument("--anchors", default="fa3", help="comma-separated anchors ('' for none)")
    parser.add_argument("--rounds", type=int, default=2, help="one: local and Ray evaluations each")
    parser.add_argument("--candidates", type=int, default=10, help="two, kill: single-knob variants in the batch")
    parser.add_argument("--tol", type=float, default=0.03, help="largest relative geomean difference called the same")
    parser.add_argument("--settle-s", type=float, default=5.0, help="kill: seconds a contained worker runs first")
    parser.add_argument("--cpu", action="store_true", help="a dry run on the CPU stand-ins (figures mean nothing)")
    parser.add_argument("--cache", default=None, help="two: a new folder for the caches (default a temporary one); "
                                                       "kill: the caches to use (default WORKBENCH_CACHE's)")
    parser.add_argument("--head", action="store_true",
                        help="each Ray pool on a `ray start --head` of its own, reached by address (the README's way)")
    parser.add_argument("--head-log", default="", help="--head: where `ray start`'s output goes")
    parser.add_argument("--json", default="")
    parser.add_argument("--table", default="", help="a short table of the figures and verdicts")
    args = parser.parse_args(argv)
    if args.mode == "two" and args.cache and Path(args.cache).exists() and any(Path(args.cache).iterdir()):
        print(f"ray_pool_check: --cache {args.cache} is not empty; `two` proves the node's merge into a new one",
              file=sys.stderr)
        return 2
    if args.mode == "two" and not args.cpu and len(local_gpus()) < 2:
        print(f"ray_pool_check: `two` compares 1 GPU with all of them; this machine has {len(local_gpus())} "
              "(on one GPU: `one`, or `kill`)", file=sys.stderr)
        return 2
    CPU["on"] = args.cpu
    HEAD.update(on=args.head, log=args.head_log)
    leave_on_sigterm()
    if not (args.cpu or local_gpus()):
        print("ray_pool_check: no GPU here; the CPU side is tests/test_ray_node.py", file=sys.stderr)
        return 2
    {"one": check_one, "two": check_two, "kill": check_kill}[args.mode](args)
    write(args.json, args.table, f"ray_pool_check.py {shlex.join(argv if argv is not None else sys.argv[1:])}"
                                 f"{' (CPU stand-ins: timings mean nothing)' if args.cpu else ''}")
    bad = failed()
    judged = sum(v["ok"] is not None for v in FIGURES["verdicts"])
    print(f"ray_pool_check {args.mode}: {judged - len(bad)} ok, {len(bad)} FAIL {bad if bad else ''}".rstrip(),
          flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
