"""Re-measure the figures that came from per-call timing, with device timing (issue 11, item 5). H200 + FA3:

    source scripts/gpu_wheels.sh && python3 scripts/device_time_remeasure.py --stages STAGES [--budget-s 560]
        [--cache-dir .cache/wb] [--cache-tgz .gpucache/wbcache.tgz] [--resume-dir .gpucache/remeasure]

Stages (comma list, run in the order given; each skipped with a message when the wall-clock budget cannot
hold it, so one device call of at most 10 minutes never dies half-way):
  check:original, check:01_tiled, check:02_mma, check:03_wgmma, check:04_pingpong
                   `workbench check KERNEL --suite full --anchors fa3,cudnn,fa2 --json` (the first one run on a
                   cold cache also times the original and the anchors)
  wall             harness wall time of `full` and `dev26` for ladder/02_mma.cu with --anchors fa3, the
                   original's and FA3's timings cached by the check stages and the candidate's build cached
  twice            ladder/02_mma.cu on dev26 with FA3 twice (fresh seeds): the geomean's spread
Always, at the end: a summary of everything measured in this call and in --resume-dir (an earlier call's
returned files): geomeans x FA3 per implementation and category, the per-shape best of FA3/cuDNN/FA2 as a
geomean over `full`, the noisy-flag counts before (docs/data per-call JSONs) and after, timing methods, wall
times, the spread. Writes under $OUT (default /tmp/out), flat: remeasure.json, remeasure.md, remeasure.log,
check_<kernel>_full.json per check stage (at most 4 per call, so $OUT holds at most 8 files), wbcache.tgz (the
timing cache without builds and tensors, to carry into the next call as --cache-tgz).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KERNELS = {"original": "kernels/attn_fwd/original.cu", "01_tiled": "kernels/attn_fwd/ladder/01_tiled.cu",
           "02_mma": "kernels/attn_fwd/ladder/02_mma.cu", "03_wgmma": "kernels/attn_fwd/ladder/03_wgmma.cu",
           "04_pingpong": "kernels/attn_fwd/ladder/04_pingpong.cu"}
ANCHORS = ("fa3", "cudnn", "fa2")
CATEGORIES = ("A", "B", "C", "D")
# rough H200 seconds per stage, to decide what still fits in the budget (a cold cache costs more)
ESTIMATE_S = {"check:original": 330, "check:01_tiled": 150, "check:02_mma": 150, "check:03_wgmma": 90,
              "check:04_pingpong": 90, "wall": 70, "twice": 45}
BEFORE = {"02_mma": "docs/data/h200_ladder_02_mma_full_2026-11-30.json",     # per-call timing, 2026-11-30
          "01_tiled": "docs/data/h200_ladder_01_tiled_full_2026-11-30.json"}
SPREAD_THRESHOLDS = (0.02, 0.05, 0.10)


class Run:
    def __init__(self, args):
        self.out = Path(os.environ.get("OUT") or "/tmp/out")
        self.out.mkdir(parents=True, exist_ok=True)
        self.args, self.t0 = args, time.monotonic()
        self.log = open(self.out / "remeasure.log", "a")
        self.results: dict = {"stages": {}}

    def say(self, line: str) -> None:
        stamp = f"[{time.monotonic() - self.t0:6.0f} s]"
        print(f"{stamp} {line}", flush=True)
        self.log.write(f"{stamp} {line}\n")
        self.log.flush()

    def left_s(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.t0)

    def workbench(self, argv: list[str], what: str) -> tuple[int, float, list[str]]:
        """Run `workbench ...` in a subprocess with the rest of the budget as its limit; progress to stdout."""
        cmd = [sys.executable, "-m", "workbench.cli", *argv]
        self.log.write("$ " + " ".join(cmd) + "\n")
        start, lines = time.monotonic(), []
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"))
        deadline = start + max(10.0, self.left_s() - 10.0)
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            self.log.write(line + "\n")
            progress = line.startswith("[")
            if not progress or line.startswith("[  1/") or "FAIL" in line or len(lines) % 40 == 0:
                if not line.startswith(("-", "scenario ")) and not _table_row(line):
                    print(f"    {what}: {line[:160]}", flush=True)
            if time.monotonic() > deadline:
                proc.kill()
                self.say(f"{what}: stopped at the budget ({self.args.budget_s:.0f} s)")
                break
        code = proc.wait()
        return code, time.monotonic() - start, lines


def _table_row(line: str) -> bool:
    parts = line.split()
    return len(parts) >= 6 and parts[1] in ("passed", "FAIL", "failed", "unsupported", "skipped")


# ---- stages ---------------------------------------------------------------------------------------------
def stage_check(run: Run, name: str) -> None:
    out_json = run.out / f"check_{name}_full.json"
    code, wall, _ = run.workbench(["check", KERNELS[name], "--suite", "full", "--anchors", ",".join(ANCHORS),
                                   "--json", str(out_json), "--traces", "", "--cache-dir", run.args.cache_dir],
                                  f"check {name}")
    run.results["stages"][f"check:{name}"] = {"exit": code, "wall_s": round(wall, 1), "json": out_json.name,
                                              "complete": out_json.exists()}


def stage_wall(run: Run) -> None:
    from workbench.harness.build import build_kernel
    build = build_kernel(ROOT / KERNELS["02_mma"], cache_dir=run.args.cache_dir)   # untimed: the build is cached
    walls = {"build_cached_before": build.ok}
    for suite in ("full", "dev26"):
        code, wall, lines = run.workbench(["check", KERNELS["02_mma"], "--suite", suite, "--anchors", "fa3",
                                           "--traces", "", "--cache-dir", run.args.cache_dir], f"wall {suite}")
        harness_s = next((float(l.rsplit("wall_s:", 1)[1]) for l in lines if l.startswith("suite:") and "wall_s:" in l),
                         None)
        walls[suite] = {"exit": code, "wall_s": round(wall, 1), "harness_wall_s": harness_s,
                        "geomean_vs_fa3": _key_value(lines, "geomean_vs_fa3")}
        run.say(f"wall {suite}: {wall:.1f} s (exit {code})")
    walls["cached"] = "the original's and FA3's timings (check stages, same cache dir); 02_mma's build"
    run.results["stages"]["wall"] = walls


def stage_twice(run: Run) -> None:
    values = []
    for n in (1, 2):
        out_json = run.out / f"twice_{n}.json"
        code, wall, _ = run.workbench(["check", KERNELS["02_mma"], "--suite", "dev26", "--anchors", "fa3",
                                       "--json", str(out_json), "--traces", "", "--cache-dir", run.args.cache_dir],
                                      f"twice {n}")
        if out_json.exists():
            values.append(json.loads(out_json.read_text())["geomeans"]["overall"].get("fa3"))
            out_json.unlink()      # only the two numbers are kept (the file count under $OUT is limited)
    spread = abs(values[0] / values[1] - 1) if len(values) == 2 and all(values) else None
    run.results["stages"]["twice"] = {"geomean_vs_fa3": values, "spread": spread}
    run.say(f"twice: geomean x FA3 {values}, spread {spread if spread is None else f'{spread:.2%}'}")


def _key_value(lines: list[str], key: str):
    for line in lines:
        if line.startswith(key + ":"):
            value = line.split(":", 1)[1].split()[0]
            try:
                return float(value)
            except ValueError:
                return value
    return None


# ---- summary --------------------------------------------------------------------------------------------
def _geomean(values) -> float:
    xs = [v for v in values if v and v > 0 and math.isfinite(v)]
    return math.exp(sum(math.log(v) for v in xs) / len(xs)) if xs else float("nan")


def _spread(st: dict) -> float:
    return (st["p90_us"] - st["p10_us"]) / st["median_us"] if st and st.get("median_us") else float("nan")


def _times(rows: list[dict], who: str) -> dict:
    """scenario -> (category, median us) of the candidate ("candidate") or a reference, passed rows only."""
    out = {}
    for r in rows:
        st = r.get("stats") if who == "candidate" else (r.get("reference_stats") or {}).get(who)
        if r.get("status") == "passed" and st:
            out[r["scenario"]["name"]] = (r["scenario"].get("category", "user"), st["median_us"])
    return out


def _per_category(ratio: dict) -> dict:
    """{'all': geomean, 'A': ..., ...} of scenario -> (category, ratio)."""
    out = {"all": _geomean(v for _, v in ratio.values())}
    for c in CATEGORIES:
        out[c] = _geomean(v for cat, v in ratio.values() if cat == c)
    return out


def summarise_suite(data: dict) -> dict:
    rows = data["rows"]
    fa3 = _times(rows, "fa3")
    impls = {"candidate": _times(rows, "candidate"), **{n: _times(rows, n) for n in ("original", *ANCHORS)}}
    x_fa3 = {n: _per_category({s: (c, fa3[s][1] / us) for s, (c, us) in t.items() if s in fa3})
             for n, t in impls.items()}
    best = {}
    for s in fa3:
        options = [impls[a][s][1] for a in ANCHORS if s in impls[a]]
        best[s] = (fa3[s][0], min(options))
    methods, calls = {}, {}
    for who in ("candidate", "original", *ANCHORS):
        for r in rows:
            st = r.get("stats") if who == "candidate" else (r.get("reference_stats") or {}).get(who)
            if st:
                key = st.get("method") or "per_call_events"
                methods.setdefault(who, {}).setdefault(key, 0)
                methods[who][key] += 1
                if st.get("call_us"):
                    calls.setdefault(who, []).append(st["call_us"] / st["median_us"])
    noisy = {}
    for who in ("candidate", "original", *ANCHORS):
        spreads = [_spread(r.get("stats") if who == "candidate" else (r.get("reference_stats") or {}).get(who))
                   for r in rows
                   if (r.get("stats") if who == "candidate" else (r.get("reference_stats") or {}).get(who))]
        noisy[who] = {f"> {t:g}": sum(x > t for x in spreads) for t in SPREAD_THRESHOLDS}
        noisy[who]["rows"] = len(spreads)
    return {"kernel": data.get("kernel_path"), "gpu": data.get("gpu"), "versions": data.get("versions"),
            "wall_s": data.get("wall_s"), "flags": data.get("flags"), "all_correct": data.get("all_correct"),
            "n_rows": len(rows), "geomeans": data.get("geomeans"), "x_fa3": x_fa3,
            "best_of_libraries_x_fa3": _per_category({s: (c, fa3[s][1] / b) for s, (c, b) in best.items()}),
            "candidate_vs_best_of_libraries": _per_category(
                {s: (c, best[s][1] / us) for s, (c, us) in impls["candidate"].items() if s in best}),
            "timing_methods": methods, "noisy_rows": noisy,
            "call_over_device_median": {w: sorted(v)[len(v) // 2] for w, v in calls.items() if v}}


def summary(run: Run) -> None:
    dirs = [run.out] + ([Path(run.args.resume_dir)] if run.args.resume_dir else [])
    previous = next((d / "remeasure.json" for d in dirs[1:] if (d / "remeasure.json").exists()), None)
    if previous:   # stages of an earlier call that this one did not repeat
        for k, v in json.loads(previous.read_text()).get("stages", {}).items():
            run.results["stages"].setdefault(k, v)
    suites = {}
    for name in KERNELS:
        path = next((d / f"check_{name}_full.json" for d in dirs if (d / f"check_{name}_full.json").exists()), None)
        if path:
            suites[name] = summarise_suite(json.loads(path.read_text()))
    run.results["full"] = suites
    run.results["before_per_call"] = {n: summarise_suite(json.loads((ROOT / p).read_text()))["noisy_rows"]
                                      for n, p in BEFORE.items() if (ROOT / p).exists()}
    from workbench.harness.problem import Problem
    run.results["noisy_rel_spread"] = Problem.load().timing.noisy_rel_spread
    (run.out / "remeasure.json").write_text(json.dumps(run.results, indent=1, default=str))
    (run.out / "remeasure.md").write_text(markdown(run.results))
    run.say("summary: remeasure.json, remeasure.md")
    print(markdown(run.results), flush=True)


def _f(x, spec=".3f") -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, spec)


def _methods_text(counts) -> str:
    return ", ".join(f"{m} {n}" for m, n in (counts or {}).items()) or "-"


def _method_word(suite: dict) -> str:
    return "per-call" if set(suite["timing_methods"].get("candidate", {})) <= {"per_call_events"} else "device"


def markdown(res: dict) -> str:
    full = res.get("full", {})
    lines = ["# Device-time re-measurement (scripts/device_time_remeasure.py)", ""]
    any_suite = next(iter(full.values()), None)
    if any_suite:
        lines += [f"GPU {any_suite['gpu']}, versions {json.dumps(any_suite['versions'])}", "",
                  "## Geomean x FA3 on `full`", "",
                  "| implementation | A | B | C | D | all | timed by |", "|---|---|---|---|---|---|---|"]
        ref = full.get("02_mma") or any_suite
        for who in ("fa3", "cudnn", "fa2", "original"):
            g = ref["x_fa3"].get(who, {})
            lines.append(f"| {who} | " + " | ".join(_f(g.get(c)) for c in (*CATEGORIES, "all")) +
                         f" | {_methods_text(ref['timing_methods'].get(who))} |")
        b = ref["best_of_libraries_x_fa3"]
        lines.append("| best of FA3/cuDNN/FA2 per shape | "
                     + " | ".join(_f(b.get(c)) for c in (*CATEGORIES, "all")) + " | |")
        for name, s in full.items():
            g = s["x_fa3"]["candidate"]
            lines.append(f"| {name} | " + " | ".join(_f(g.get(c)) for c in (*CATEGORIES, "all")) +
                         f" | {_methods_text(s['timing_methods'].get('candidate'))} |")
        lines += ["", "## Per kernel", "", "| kernel | all correct | wall s | x best-of-libraries (all) | flags |",
                  "|---|---|---|---|---|"]
        for name, s in full.items():
            lines.append(f"| {name} | {s['all_correct']} | {_f(s['wall_s'], '.1f')} | "
                         f"{_f(s['candidate_vs_best_of_libraries'].get('all'))} | {', '.join(s['flags'] or [])} |")
        lines += ["", f"## Noisy rows ((p90 - p10) / median above a threshold; the flag uses "
                      f"{res.get('noisy_rel_spread')})", "",
                  "| run | implementation | rows | " + " | ".join(f"> {t:g}" for t in SPREAD_THRESHOLDS) + " |",
                  "|---|---|---|" + "---|" * len(SPREAD_THRESHOLDS)]
        for label, table in [*((f"before (per-call) {n}", v) for n, v in res.get("before_per_call", {}).items()),
                             *((f"this run ({_method_word(s)}) {n}", s["noisy_rows"]) for n, s in full.items())]:
            for who, counts in table.items():
                lines.append(f"| {label} | {who} | {counts['rows']} | " +
                             " | ".join(str(counts[f'> {t:g}']) for t in SPREAD_THRESHOLDS) + " |")
    stages = res.get("stages", {})
    if "wall" in stages:
        w = stages["wall"]
        lines += ["", "## Harness wall time (02_mma, --anchors fa3; cached: " + w.get("cached", "") + ")", "",
                  f"- full: {w.get('full', {}).get('wall_s')} s, dev26: {w.get('dev26', {}).get('wall_s')} s"]
    if "twice" in stages:
        t = stages["twice"]
        lines += ["", f"## Same kernel twice (02_mma, dev26, FA3): {t.get('geomean_vs_fa3')}, spread "
                      f"{_f(t.get('spread'), '.2%')}"]
    lines += ["", "## Stages", "", "```", json.dumps(stages, indent=1, default=str), "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stages", default="check:02_mma,wall,twice,check:01_tiled",
                   help="comma list of " + ", ".join(ESTIMATE_S))
    p.add_argument("--budget-s", type=float, default=560.0, help="wall-clock budget of this call (default 560)")
    p.add_argument("--cache-dir", default=".cache/wb", help="harness build and timing cache (default .cache/wb)")
    p.add_argument("--cache-tgz", default=".gpucache/wbcache.tgz", help="timing cache from an earlier call")
    p.add_argument("--resume-dir", default="", help="an earlier call's returned files (its check JSONs are reused)")
    args = p.parse_args(argv)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in ESTIMATE_S]
    if unknown:
        print(f"device_time_remeasure: unknown stage(s) {', '.join(unknown)}; choose from {', '.join(ESTIMATE_S)}",
              file=sys.stderr)
        return 2
    run = Run(args)
    cache = Path(args.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    if Path(args.cache_tgz).is_file() and not (cache / "timing_cache.json").exists():
        with tarfile.open(args.cache_tgz) as tar:
            tar.extractall(cache, filter="data")
        run.say(f"timing cache restored from {args.cache_tgz}")
    try:
        for stage in stages:
            if run.left_s() < ESTIMATE_S[stage]:
                run.say(f"budget: {stage} skipped ({run.left_s():.0f} s left, it needs ~{ESTIMATE_S[stage]} s); "
                        f"run it in another call with --stages {stage}")
                continue
            run.say(f"stage {stage}")
            if stage.startswith("check:"):
                stage_check(run, stage.split(":", 1)[1])
            elif stage == "wall":
                stage_wall(run)
            else:
                stage_twice(run)
    finally:
        with tarfile.open(run.out / "wbcache.tgz", "w:gz") as tar:   # the timing cache for the next call
            if (cache / "timing_cache.json").exists():
                tar.add(cache / "timing_cache.json", arcname="timing_cache.json")
        summary(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
