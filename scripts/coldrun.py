"""Issue 24's acceptance: a first `full` run on a fresh cache, the same run warm, and a fresh-cache run SIGKILLed
half way and resumed; wall times, what each run timed, per-category geomeans, JSON under --out.

    PYTHONPATH=. python3 scripts/coldrun.py --out "$OUT"          # scripts/gpu_run.sh coldrun, on the H200

1. cold: `workbench check KERNEL --suite full --anchors fa3,cudnn,fa2` with an empty WORKBENCH_CACHE (builds too),
   timed by /usr/bin/time.                                       target <= 240 s
2. warm: the same command on that cache.                          target <= 60 s
3. killed: a new empty cache (only the cold run's *builds* copied in: builds are not timings), the same command,
   SIGKILLed (the whole process group) once --kill-at scenarios (default half) have printed their line.
4. resumed: the same command on the killed run's cache. It must re-time nothing the killed run finished (every
   cached entry after the kill is found unchanged in its JSON) and take less than the cold run's remaining share.
The geomeans of cold and warm must agree within 2 % per category. Each leg has a time limit, so the whole stays
inside --budget-s; a leg that runs out is killed and reported as such.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.harness import cache_file  # noqa: E402

PROGRESS = re.compile(r"^\[\s*(\d+)/(\d+)\]")
TIMED = re.compile(r"^timing cache: timed now (.*); cached before: (.*)$")
WALL = re.compile(r"^wall ([\d.]+) s$")


def command(args, json_out: Path) -> list[str]:
    cmd = ["/usr/bin/time", "-f", "wall %e s", sys.executable, "-m", "workbench.cli", "check", args.kernel,
           "--suite", args.suite, "--anchors", args.anchors, "--json", str(json_out), "--traces", ""]
    return cmd + (["--baseline", args.baseline] if args.baseline else [])


def run_leg(name: str, args, cache: Path, limit_s: float, kill_at: int = 0) -> dict:
    """One `workbench check` on `cache`; SIGKILLed at `kill_at` scenario lines (0: never) or at limit_s."""
    json_out, log = Path(args.out) / f"coldrun_{name}.json", Path(args.out) / f"coldrun_{name}.log"
    # ROOT goes in front of the caller's PYTHONPATH, never in its place: on the GPU machine that path holds the
    # carried wheels (FA3), and replacing it ran every leg without FA3 (H200, 2026-12-01)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, WORKBENCH_CACHE=str(cache), PYTHONUNBUFFERED="1", PYTHONPATH=path)
    start = time.monotonic()
    proc = subprocess.Popen(command(args, json_out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=ROOT, start_new_session=True)
    leg = {"name": name, "scenarios_done": 0, "killed": "", "wall_s": None, "timed": "", "cached_before": ""}
    watchdog = _Watchdog(proc, limit_s)
    with open(log, "w") as handle:
        for line in proc.stdout:
            handle.write(line)
            line = line.rstrip()
            if (m := PROGRESS.match(line)):
                leg["scenarios_done"], leg["scenarios"] = int(m.group(1)), int(m.group(2))
                if kill_at and leg["scenarios_done"] >= kill_at:
                    leg["killed"] = f"SIGKILL after {kill_at} scenarios"
                    os.killpg(proc.pid, signal.SIGKILL)
                    break
            elif (m := TIMED.match(line)):
                leg["timed"], leg["cached_before"] = m.group(1), m.group(2)
            elif (m := WALL.match(line)):
                leg["wall_s"] = float(m.group(1))
    proc.wait()
    proc.stdout.close()
    watchdog.cancel()
    if watchdog.fired and not leg["killed"]:
        leg["killed"] = f"time limit {limit_s:.0f} s reached at scenario {leg['scenarios_done']}"
    if leg["wall_s"] is None:
        leg["wall_s"] = round(time.monotonic() - start, 1)
    leg["rc"] = proc.returncode
    leg["result"] = json.loads(json_out.read_text()) if json_out.exists() and not leg["killed"] else None
    print(f"== {name}: wall {leg['wall_s']} s, {leg['scenarios_done']} scenarios"
          + (f", {leg['killed']}" if leg["killed"] else "") + (f"; timed now {leg['timed']}" if leg["timed"] else ""),
          flush=True)
    return leg


class _Watchdog:
    def __init__(self, proc, limit_s: float):
        import threading
        self.fired = False
        self.timer = threading.Timer(max(1.0, limit_s), self._fire, args=(proc,))
        self.timer.daemon = True
        self.timer.start()

    def _fire(self, proc):
        self.fired = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cancel(self):
        self.timer.cancel()


def geomeans(leg: dict) -> dict:
    return (leg.get("result") or {}).get("geomeans", {})


def retimed(kept: dict, resumed: dict | None) -> tuple[int, int]:
    """(entries the killed run left that the resumed run reports with other figures, entries compared)."""
    if not resumed:
        return -1, 0
    rows = {_scenario_key(r["scenario"]): r for r in resumed["rows"]}
    changed = compared = 0
    for key, entry in kept.items():
        parts = key.split("|")
        role = "original" if parts[0] == "original" else parts[0]
        row = rows.get(parts[2])
        if row is None or role not in row.get("reference_stats", {}):
            continue
        compared += 1
        changed += row["reference_stats"][role] != entry["stats"]
    return changed, compared


def _scenario_key(raw: dict) -> str:
    from workbench.harness.scenarios import Scenario
    return Scenario(**raw).key


def table(legs: list[dict]) -> list[str]:
    lines = [f"{'run':<9} {'wall s':>7} {'done':>9}  {'killed/limit':<34} timed now"]
    for leg in legs:
        done = f"{leg['scenarios_done']}/{leg.get('scenarios', '?')}"
        lines.append(f"{leg['name']:<9} {leg['wall_s']:>7.1f} {done:>9}  {leg['killed'][:34]:<34} {leg['timed']}")
    ref = geomeans(legs[0])
    for leg in legs:
        g = geomeans(leg)
        for cat in sorted(g):
            vals = "  ".join(f"x{name} {value:.3f}" for name, value in sorted(g[cat].items()) if value)
            lines.append(f"  {leg['name']:<8} {cat:<8} {vals}")
    for leg in legs[1:]:
        g = geomeans(leg)
        worst = max((abs(g[c][n] / ref[c][n] - 1) for c in g if c in ref for n in g[c]
                     if n in ref[c] and ref[c][n] and g[c][n]), default=None)
        if worst is not None:
            lines.append(f"  {leg['name']} vs cold: largest per-category geomean difference {100 * worst:.2f} %")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", default="kernels/attn_fwd/ladder/04_pingpong.cu")
    p.add_argument("--suite", default="full")
    p.add_argument("--anchors", default="fa3,cudnn,fa2")
    p.add_argument("--baseline", default=None, help="default: the original (CPU tests: standin:slow_correct)")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    p.add_argument("--kill-at", type=int, default=0, help="scenarios before the SIGKILL (default: half the suite)")
    p.add_argument("--budget-s", type=float, default=560.0, help="the whole script, all four runs")
    p.add_argument("--keep-cache", default="", help="copy the cold run's cache here at the end (the call's next runs)")
    p.add_argument("--cold-limit-s", type=float, default=300.0)
    p.add_argument("--warm-limit-s", type=float, default=90.0)
    args = p.parse_args()
    from workbench.harness.scenarios import load_suite
    total = len(load_suite(args.suite))
    kill_at = args.kill_at or total // 2
    Path(args.out).mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    left = lambda: max(5.0, deadline - time.monotonic())
    cold_cache, kill_cache = Path(tempfile.mkdtemp(prefix="coldrun-")), Path(tempfile.mkdtemp(prefix="coldrun-"))
    for cache in (cold_cache, kill_cache):
        os.chmod(cache, 0o755)          # as a cache folder normally is (mkdtemp makes 0700)
    legs = [run_leg("cold", args, cold_cache, min(args.cold_limit_s, left() - 200))]
    legs.append(run_leg("warm", args, cold_cache, min(args.warm_limit_s, left() - 150)))
    if (cold_cache / "build").is_dir():
        shutil.copytree(cold_cache / "build", kill_cache / "build")
    legs.append(run_leg("killed", args, kill_cache, left() - 30, kill_at=kill_at))
    kept = cache_file.read_entries(kill_cache)
    legs.append(run_leg("resumed", args, kill_cache, left()))
    changed, compared = retimed(kept, legs[3]["result"])
    cold, resumed, killed = legs[0], legs[3], legs[2]
    share = cold["wall_s"] * (1 - killed["scenarios_done"] / total) if not cold["killed"] else None
    summary = {"kernel": args.kernel, "suite": args.suite, "anchors": args.anchors, "kill_at": kill_at,
               "legs": [{k: v for k, v in leg.items() if k != "result"} for leg in legs],
               "geomeans": {leg["name"]: geomeans(leg) for leg in legs},
               "kept_after_kill": len(kept), "kept_compared": compared, "kept_retimed": changed,
               "cold_remaining_share_s": share,
               "checks": {"cold <= 240 s": not cold["killed"] and cold["wall_s"] <= 240,
                          "warm <= 60 s": not legs[1]["killed"] and legs[1]["wall_s"] <= 60,
                          "resumed re-timed nothing kept": changed == 0 and compared > 0,
                          "resumed < remaining share of cold": share is not None and not resumed["killed"]
                          and resumed["wall_s"] < share}}
    lines = table(legs)
    lines.append(f"after the kill the cache held {len(kept)} timings; the resumed run reports {compared} of them, "
                 f"{changed} with other figures (re-timed)")
    if share is not None:
        lines.append(f"resumed {resumed['wall_s']:.1f} s against the cold run's remaining share {share:.1f} s")
    lines += [f"check: {name}: {'PASS' if ok else 'FAIL'}" for name, ok in summary["checks"].items()]
    print("\n".join(lines), flush=True)
    (Path(args.out) / "coldrun_summary.json").write_text(json.dumps(summary, indent=1))
    (Path(args.out) / "coldrun_table.txt").write_text("\n".join(lines) + "\n")
    if args.keep_cache:   # the cold run's cache (baseline and anchors timed once) for the next command of the call
        shutil.copytree(cold_cache, args.keep_cache, dirs_exist_ok=True)
    for cache in (cold_cache, kill_cache):
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
