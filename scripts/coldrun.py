"""Issue 24's acceptance: a first `full` run on a fresh cache, the same run warm, and a fresh-cache run SIGKILLed
half way and resumed; wall times, what each run timed, per-category geomeans, JSON under --out.

    PYTHONPATH=. python3 scripts/coldrun.py --out "$OUT"          # scripts/gpu_run.sh coldrun, on the H200

1. cold: `workbench check KERNEL --suite full --anchors fa3,cudnn,fa2` with an empty WORKBENCH_CACHE (builds too),
   timed by /usr/bin/time.                                       target <= 240 s
2. warm: the same command on that cache.                          target <= 60 s
3. killed: a new empty cache (only the cold run's *builds* copied in: builds are not timings), the same command,
   SIGKILLed (the whole process group) once --kill-at scenarios (default half) have printed their line.
4. resumed: the same command on the killed run's cache. It must re-time nothing the killed run finished: every
   timing cached after the kill is in the cache unchanged after it, and no progress line of the resumed run says it
   timed one of them afresh (nor, when the run finished, does its JSON report other figures); the candidate's rows
   the killed run recorded (harness/resume_rows.py) are reused, not judged again: its `resume: N of M` line names
   all of them, none has a progress line, and its JSON carries them unchanged; and it must take less than the cold
   run's remaining share.
The geomeans of cold and warm must agree within 2 % per category, on the scenarios both reached. Each leg has a
time limit inside --budget-s; a leg that runs out is killed and reported as such, and its rows are still written
(`coldrun_<leg>.partial.json`, from its progress lines: each scenario's wall time, what it timed afresh, its
speedups to 2 decimals) where `workbench check` had no time to write `coldrun_<leg>.json`.

Before any GPU time is spent, a requested anchor that cannot be loaded in the legs' environment (PYTHONPATH as the
legs get it) stops the script with one line and exit 2: a cold run without FA3 measures something else.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.harness import cache_file, resume_rows  # noqa: E402

PROGRESS = re.compile(r"^\[\s*(\d+)/(\d+)\]\s+(\S+)\s+(\S+)")
TIMED_NOW = re.compile(r"\(([\d.]+) s(?:; timed now ([^)]*))?\)\s*$")      # progress_cache.wall_and_timed
SPEEDUP = re.compile(r"\bx([\d.]+) ([A-Za-z0-9_]+)")
TIMED = re.compile(r"^timing cache: timed now (.*); cached before: (.*)$")
WALL = re.compile(r"^wall ([\d.]+) s$")
RESUMED = re.compile(r"^resume: (\d+) of (\d+) scenarios from")                # resume_rows.ResumeRecord.line
ANCHOR_PROBE = ("import json, sys\nimport torch\nfrom workbench.harness.anchors import load_anchors\n"
                "names = [n for n in sys.argv[1].split(',') if n]\n"
                "_, _, missing = load_anchors(names)\n"
                "if not torch.cuda.is_available():\n"
                "    missing = {n: 'no CUDA GPU in this environment' for n in names}\n"
                "print(json.dumps(missing))\n")


def leg_env(cache: Path | None = None) -> dict:
    # ROOT goes in front of the caller's PYTHONPATH, never in its place: on the GPU machine that path holds the
    # carried wheels (FA3), and replacing it ran every leg without FA3 (H200, 2026-12-01)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path)
    if cache is not None:
        env["WORKBENCH_CACHE"] = str(cache)
    return env


def unavailable_anchors(anchors: str) -> dict:
    """{anchor: why} for each requested anchor the legs could not load (a subprocess with the legs' env)."""
    if not [n for n in anchors.split(",") if n]:
        return {}
    run = subprocess.run([sys.executable, "-c", ANCHOR_PROBE, anchors], capture_output=True, text=True,
                         env=leg_env(), cwd=ROOT, timeout=300)
    if run.returncode != 0:
        tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return {name: f"the probe failed: {tail}" for name in anchors.split(",") if name}
    return json.loads(run.stdout.strip().splitlines()[-1])


def command(args, json_out: Path) -> list[str]:
    cmd = ["/usr/bin/time", "-f", "wall %e s", sys.executable, "-m", "workbench.cli", "check", args.kernel,
           "--suite", args.suite, "--anchors", args.anchors, "--json", str(json_out), "--traces", ""]
    return cmd + (["--baseline", args.baseline] if args.baseline else [])


def parse_row(line: str) -> dict | None:
    """One progress line: name, status, the scenario's wall seconds, what it timed afresh, speedups (2 decimals)."""
    m = PROGRESS.match(line)
    if not m:
        return None
    row = {"index": int(m.group(1)), "name": m.group(3), "status": m.group(4).lower(), "wall_s": None,
           "timed_now_s": {}, "x": {name: float(x) for x, name in SPEEDUP.findall(line)}}
    if (t := TIMED_NOW.search(line)):
        row["wall_s"] = float(t.group(1))
        for part in (t.group(2) or "").split(", "):
            if part.endswith(" s") and " " in part[:-2]:
                role, seconds = part[:-2].rsplit(" ", 1)
                row["timed_now_s"][role] = float(seconds)
    return row


def run_leg(name: str, args, cache: Path, limit_s: float, kill_at: int = 0) -> dict:
    """One `workbench check` on `cache`; SIGKILLed at `kill_at` scenario lines (0: never) or at limit_s."""
    json_out, log = Path(args.out) / f"coldrun_{name}.json", Path(args.out) / f"coldrun_{name}.log"
    json_out.unlink(missing_ok=True)
    start = time.monotonic()
    proc = subprocess.Popen(command(args, json_out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=leg_env(cache), cwd=ROOT, start_new_session=True)
    leg = {"name": name, "scenarios_done": 0, "killed": "", "wall_s": None, "timed": "", "cached_before": "",
           "limit_s": round(limit_s, 1), "resumed_rows": 0}
    rows: list[dict] = []
    watchdog = threading.Timer(max(1.0, limit_s), _kill_group, args=(proc, leg))
    watchdog.daemon = True
    watchdog.start()
    with open(log, "w") as handle:
        for line in proc.stdout:
            handle.write(line)
            line = line.rstrip()
            if (row := parse_row(line)) is not None:
                rows.append(row)
                leg["scenarios_done"], leg["scenarios"] = row["index"], int(PROGRESS.match(line).group(2))
                if kill_at and leg["scenarios_done"] >= kill_at:
                    leg["killed"] = f"SIGKILL after {kill_at} scenarios"
                    os.killpg(proc.pid, signal.SIGKILL)
                    break
            elif (m := TIMED.match(line)):
                leg["timed"], leg["cached_before"] = m.group(1), m.group(2)
            elif (m := WALL.match(line)):
                leg["wall_s"] = float(m.group(1))
            elif (m := RESUMED.match(line)):
                leg["resumed_rows"] = int(m.group(1))
    proc.wait()
    proc.stdout.close()
    watchdog.cancel()
    if leg.get("fired") and not leg["killed"]:
        leg["killed"] = f"time limit {limit_s:.0f} s reached at scenario {leg['scenarios_done']}"
    leg.pop("fired", None)
    if leg["wall_s"] is None:
        leg["wall_s"] = round(time.monotonic() - start, 1)
    leg["rc"] = proc.returncode
    leg["rows"] = rows
    complete = json_out.exists() and not leg["killed"]
    leg["result"] = json.loads(json_out.read_text()) if complete else None
    if complete:
        leg["json"] = str(json_out)
    else:        # `workbench check` writes its JSON at the end: what the leg reached comes from its progress lines
        partial = Path(args.out) / f"coldrun_{name}.partial.json"
        partial.write_text(json.dumps({"partial": True, "why": leg["killed"] or f"exit {proc.returncode}",
                                       "scenarios_done": leg["scenarios_done"], "rows": rows}, indent=1))
        leg["json"] = str(partial)
    print(f"== {name}: wall {leg['wall_s']} s, {leg['scenarios_done']} scenarios"
          + (f", {leg['killed']}" if leg["killed"] else "") + (f"; timed now {leg['timed']}" if leg["timed"] else "")
          + f"; rows in {Path(leg['json']).name}", flush=True)
    return leg


def _kill_group(proc, leg: dict) -> None:
    leg["fired"] = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def speedups(leg: dict) -> dict[str, dict[str, float]]:
    """Scenario name -> {reference: speedup} of the passed rows: the JSON's figures, else the progress lines'."""
    if leg.get("result"):
        out = {}
        for row in leg["result"]["rows"]:
            mine = (row.get("stats") or {}).get("median_us")
            if row.get("status") != "passed" or not mine:
                continue
            out[row["scenario"]["name"]] = {ref: st["median_us"] / mine
                                            for ref, st in (row.get("reference_stats") or {}).items() if st}
        return out
    return {r["name"]: r["x"] for r in leg.get("rows", []) if r["status"] == "passed"}


def category_geomeans(xs: dict, categories: dict, names) -> dict:
    """{category: {reference: geomean}} over `names` (and 'overall')."""
    groups: dict = {}
    for name in names:
        for cat in ("overall", categories.get(name, "?")):
            for ref, x in xs[name].items():
                if x and x > 0:
                    groups.setdefault(cat, {}).setdefault(ref, []).append(math.log(x))
    return {cat: {ref: math.exp(sum(v) / len(v)) for ref, v in refs.items()} for cat, refs in groups.items()}


def compare_geomeans(a: dict, b: dict, categories: dict) -> tuple[float | None, int, dict, dict]:
    """(largest per-category relative difference, scenarios compared, a's and b's geomeans) on the common rows."""
    xa, xb = speedups(a), speedups(b)
    common = sorted(set(xa) & set(xb))
    ga, gb = category_geomeans(xa, categories, common), category_geomeans(xb, categories, common)
    diffs = [abs(gb[c][r] / ga[c][r] - 1) for c in ga if c in gb for r in ga[c] if r in gb[c] and ga[c][r]]
    return (max(diffs) if diffs else None), len(common), ga, gb


def kept_roles(kept: dict, scenarios) -> set[tuple[str, str]]:
    """(role, scenario name) of each timing cached after the kill (keys: role|version|shape key|environment)."""
    names: dict[str, list[str]] = {}
    for s in scenarios:
        names.setdefault(s.key, []).append(s.name)
    out = set()
    for key in kept:
        parts = key.split("|")
        if len(parts) >= 3:
            out.update((parts[0], name) for name in names.get(parts[2], []))
    return out


def retimed(kept: dict, after: dict, resumed: dict, scenarios, kept_rows: dict | None = None) -> dict:
    """What the resumed run did with the timings and the candidate's rows the killed one left (module doc, leg 4)."""
    kept_rows = kept_rows or {}
    changed_in_cache = sorted(k for k, entry in kept.items() if after.get(k, {}).get("stats") != entry["stats"])
    judged = {r["name"]: r for r in resumed.get("rows", [])}
    result_rows = {r["scenario"]["name"]: r for r in (resumed.get("result") or {}).get("rows", [])}
    if resumed.get("result"):
        reused = {n for n, r in result_rows.items() if r.get("resumed_from")}
    else:           # cut off before its JSON: its resume line says how many of the record's rows it took
        reused = set(kept_rows) if resumed.get("resumed_rows") == len(kept_rows) else set()
    reached = {**{n: {"timed_now_s": {}} for n in reused}, **judged}      # a reused row timed nothing
    pairs = kept_roles(kept, scenarios)
    compared = sorted((role, name) for role, name in pairs if name in reached)
    timed_again = sorted((role, name) for role, name in compared if role in reached[name]["timed_now_s"])
    json_changed = rows_changed = None
    if resumed.get("result"):
        by_key = {(k.split("|")[0], n): e for k, e in kept.items() for n in _names_of(k, scenarios)}
        json_changed = sum(result_rows[n].get("reference_stats", {}).get(role) != by_key[(role, n)]["stats"]
                           for role, n in compared
                           if n in result_rows and role in result_rows[n].get("reference_stats", {}))
        rows_changed = sum(n not in result_rows or _as_judged(result_rows[n]) != _as_judged(row)
                           for n, row in kept_rows.items())
    return {"kept": len(kept), "compared": len(compared), "timed_again": [f"{r} {n}" for r, n in timed_again],
            "changed_in_cache": len(changed_in_cache), "json_reports_other_figures": json_changed,
            "kept_rows": len(kept_rows), "rows_reused": len(reused & set(kept_rows)),
            "rows_judged_again": sorted(set(kept_rows) & set(judged)), "rows_changed_in_json": rows_changed}


def _as_judged(row: dict) -> dict:
    """A row without what the parent adds after judging (check.apply_flags' flags and floor, the resume mark)."""
    return {k: v for k, v in row.items() if k not in ("flags", "floor_us", "resumed_from")}


def _names_of(key: str, scenarios) -> list[str]:
    parts = key.split("|")
    return [s.name for s in scenarios if len(parts) >= 3 and s.key == parts[2]]


def table(legs: list[dict], categories: dict) -> list[str]:
    lines = [f"{'run':<9} {'wall s':>7} {'done':>9}  {'killed/limit':<40} timed now"]
    for leg in legs:
        done = f"{leg['scenarios_done']}/{leg.get('scenarios', '?')}"
        lines.append(f"{leg['name']:<9} {leg['wall_s']:>7.1f} {done:>9}  {leg['killed'][:40]:<40} {leg['timed']}")
    for leg in legs[1:]:
        worst, n, ref, mine = compare_geomeans(legs[0], leg, categories)
        source = "JSON" if legs[0].get("result") and leg.get("result") else "progress lines, 2 decimals"
        for cat in sorted(mine):
            vals = "  ".join(f"x{r} {mine[cat][r]:.3f} (cold {ref[cat][r]:.3f})" for r in sorted(mine[cat]))
            lines.append(f"  {leg['name']:<8} {cat:<8} {vals}")
        if worst is not None:
            lines.append(f"  {leg['name']} vs cold on the {n} scenarios both reached ({source}): largest "
                         f"per-category geomean difference {100 * worst:.2f} %")
    return lines


def time_profile(leg: dict) -> list[str]:
    """Where a leg's time went, from its progress lines: scenario walls and the seconds per role timed afresh."""
    rows = [r for r in leg.get("rows", []) if r["wall_s"] is not None]
    if not rows:
        return []
    roles: dict[str, float] = {}
    for r in rows:
        for role, seconds in r["timed_now_s"].items():
            roles[role] = roles.get(role, 0.0) + seconds
    walls = sum(r["wall_s"] for r in rows)
    parts = ", ".join(f"{role} {s:.1f} s" for role, s in sorted(roles.items(), key=lambda kv: -kv[1]))
    rest = walls - sum(roles.values())
    reused = (f" (and {leg['resumed_rows']} rows reused from the interrupted run, not judged)"
              if leg.get("resumed_rows") else "")
    return [f"  {leg['name']}: {len(rows)} scenarios{reused}, {walls:.1f} s in them (of {leg['wall_s']:.1f} s wall); "
            f"timed afresh: {parts or 'nothing'}; the rest (candidate, references, fixed costs) {rest:.1f} s"]


def acceptance(legs: list[dict], total: int, again: dict, share, worst) -> dict:
    """Issue 24's checks, by name. A leg's time counts only when it judged the whole suite: a leg whose worker
    crashed at once is fast and not killed (the H200 run of 2026-12-02 00:01 passed 'cold <= 240 s' so, 0 of 182)."""
    cold, warm, _, resumed = legs
    whole = lambda leg: not leg["killed"] and leg["scenarios_done"] == total
    return {"cold <= 240 s": whole(cold) and cold["wall_s"] <= 240,
            "warm <= 60 s": whole(warm) and warm["wall_s"] <= 60,
            "resumed re-timed nothing kept": (again["compared"] > 0 and not again["timed_again"]
                                              and again["changed_in_cache"] == 0
                                              and not again["json_reports_other_figures"]
                                              and again.get("rows_reused", 0) == again.get("kept_rows", 0)
                                              and not again.get("rows_judged_again")
                                              and not again.get("rows_changed_in_json")),
            "resumed < remaining share of cold": share is not None and whole(resumed) and resumed["wall_s"] < share,
            "cold and warm geomeans within 2 %": worst is not None and worst <= 0.02}


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
    from workbench.harness.scenarios import SuiteError, load_suite
    try:
        scenarios = load_suite(args.suite)
    except SuiteError as err:
        print(f"coldrun: {err}", file=sys.stderr)
        return 2
    if not args.kernel.startswith("standin:") and not (ROOT / args.kernel).exists() and not Path(args.kernel).exists():
        print(f"coldrun: --kernel {args.kernel}: no such file (give a .cu path or standin:NAME)", file=sys.stderr)
        return 2
    missing = unavailable_anchors(args.anchors)
    if missing:
        name, why = next(iter(missing.items()))
        print(f"coldrun: anchor {name} is unavailable where the legs run ({why}); "
              f"{len(missing)} of the requested anchors are; install it (scripts/gpu_wheels.sh) or pass --anchors "
              f"without it; nothing was run", file=sys.stderr)
        return 2
    total, categories = len(scenarios), {s.name: s.category for s in scenarios}
    kill_at = args.kill_at or total // 2
    Path(args.out).mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.budget_s
    left = lambda: max(5.0, deadline - time.monotonic())
    cold_cache, kill_cache = Path(tempfile.mkdtemp(prefix="coldrun-")), Path(tempfile.mkdtemp(prefix="coldrun-"))
    for cache in (cold_cache, kill_cache):
        os.chmod(cache, 0o755)          # as a cache folder normally is (mkdtemp makes 0700)
    # the killed and the resumed legs together redo about the cold leg's work: leave them as much as it had
    legs = [run_leg("cold", args, cold_cache, min(args.cold_limit_s, (left() - args.warm_limit_s - 20) / 2))]
    cold = legs[0]
    cold_estimate = cold["wall_s"] * (total / max(1, cold["scenarios_done"]) if cold["killed"] else 1.0)
    legs.append(run_leg("warm", args, cold_cache, min(args.warm_limit_s, max(10.0, left() - cold_estimate - 20))))
    if args.keep_cache:   # the cold run's cache for the call's next commands, kept before a later leg can be cut off
        shutil.copytree(cold_cache, args.keep_cache, dirs_exist_ok=True)
    if (cold_cache / "build").is_dir():
        shutil.copytree(cold_cache / "build", kill_cache / "build")
    # the resumed leg needs what the kill leaves of the cold run's work; a budget too small for both halves
    # (a device call that also runs the proof) splits what is left between them
    resumed_needs = min(max(30.0, 1.2 * cold_estimate * (1 - kill_at / total)), left() / 2)
    legs.append(run_leg("killed", args, kill_cache, max(10.0, left() - resumed_needs), kill_at=kill_at))
    kept, kept_rows = cache_file.read_entries(kill_cache), resume_rows.recorded_rows(kill_cache)
    legs.append(run_leg("resumed", args, kill_cache, left()))
    killed, resumed = legs[2], legs[3]
    again = retimed(kept, cache_file.read_entries(kill_cache), resumed, scenarios, kept_rows)
    share = cold["wall_s"] * (1 - killed["scenarios_done"] / total) if not cold["killed"] else None
    worst, compared_rows, _, _ = compare_geomeans(cold, legs[1], categories)
    summary = {"kernel": args.kernel, "suite": args.suite, "anchors": args.anchors, "kill_at": kill_at,
               "legs": [{k: v for k, v in leg.items() if k not in ("result", "rows")} for leg in legs],
               "geomeans": {leg["name"]: compare_geomeans(cold, leg, categories)[3] for leg in legs},
               "resumed_vs_kept": again, "cold_remaining_share_s": share,
               "cold_vs_warm_geomean_difference": worst, "cold_vs_warm_scenarios": compared_rows,
               "checks": acceptance(legs, total, again, share, worst)}
    lines = table(legs, categories)
    lines.append(f"after the kill the cache held {again['kept']} timings; the resumed run reached "
                 f"{again['compared']} of them: {len(again['timed_again'])} timed afresh by its progress lines, "
                 f"{again['changed_in_cache']} changed in the cache"
                 + ("" if again["json_reports_other_figures"] is None
                    else f", {again['json_reports_other_figures']} reported with other figures in its JSON"))
    lines.append(f"the kill left {again['kept_rows']} rows of the candidate recorded; the resumed run reused "
                 f"{again['rows_reused']}, judged {len(again['rows_judged_again'])} of them again"
                 + ("" if again["rows_changed_in_json"] is None
                    else f", {again['rows_changed_in_json']} differ in its JSON"))
    if share is not None:
        lines.append(f"resumed {resumed['wall_s']:.1f} s against the cold run's remaining share {share:.1f} s")
    lines.append("where the time went (per-scenario wall and timed-afresh seconds from the progress lines):")
    for leg in legs:
        lines += time_profile(leg)
    lines += [f"check: {name}: {'PASS' if ok else 'FAIL'}" for name, ok in summary["checks"].items()]
    print("\n".join(lines), flush=True)
    (Path(args.out) / "coldrun_summary.json").write_text(json.dumps(summary, indent=1))
    (Path(args.out) / "coldrun_table.txt").write_text("\n".join(lines) + "\n")
    for cache in (cold_cache, kill_cache):
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
