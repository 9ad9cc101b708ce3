"""Where a cold `full` run's time goes, from coldrun.py's leg logs (their progress lines), on any machine.

    python3 scripts/coldrun_profile.py LOGS [--rows EVAL.json] [--anchor-rows EVAL.json]

LOGS: a folder holding coldrun_<leg>.log files, or a .tgz of one (scripts/gpu_run.sh proofab/coldrun's
coldrun.tgz). Each progress line ends with its scenario's wall seconds and what it timed afresh
('(3.4 s; timed now original 2.9 s, cudnn 0.5 s, fa2 0.0 s)'); a line without 'timed now' had everything cached.
Per implementation: the seconds it timed afresh, per scenario and in all; the rest of each scenario (the
candidate's verification, timing and references, the scenario's fixed costs); and an estimate for the whole
suite: each implementation per scenario fitted on the scenarios seen (the original as a + b x its one-call device
time from --rows, an evaluation JSON whose rows carry `reference_stats.original`; cuDNN by head dimension; the
other anchors as a + b x their device time from --anchor-rows), the rest at its mean.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LINE = re.compile(r"^\[\s*(\d+)/(\d+)\]\s+(\S+)\s+(\S+)\s.*\(([\d.]+) s(?:; timed now ([^)]*))?\)\s*$")
LEGS = ("cold", "killed", "resumed", "warm")


def read_leg(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        timed = {}
        for part in (m.group(6) or "").split(", "):
            if part.endswith(" s") and " " in part[:-2]:
                role, seconds = part[:-2].rsplit(" ", 1)
                timed[role] = float(seconds)
        rows.append({"index": int(m.group(1)), "name": m.group(3), "wall": float(m.group(5)), "timed": timed})
    return rows


def legs_in(source: Path) -> dict[str, list[dict]]:
    if source.is_file():
        tmp = Path(tempfile.mkdtemp(prefix="coldrun-profile-"))
        with tarfile.open(source) as tar:
            tar.extractall(tmp, filter="data")
        source = tmp
    found = {}
    for leg in LEGS:
        hits = sorted(source.rglob(f"coldrun_{leg}.log"))
        if hits:
            found[leg] = read_leg(hits[0])
    return found


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y ~ a + b x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var > 0 else 0.0
    return my - b * mx, b


def device_s(path: str | None, role: str) -> dict[str, float]:
    """Scenario name -> one call's device seconds of `role` from an evaluation JSON's rows."""
    if not path:
        return {}
    rows = json.loads(Path(path).read_text()).get("rows", [])
    return {r["scenario"]["name"]: r["reference_stats"][role]["median_us"] * 1e-6
            for r in rows if (r.get("reference_stats") or {}).get(role)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("logs")
    p.add_argument("--rows", help="evaluation JSON with the original's device time per scenario")
    p.add_argument("--anchor-rows", help="evaluation JSON with the anchors' device times per scenario")
    p.add_argument("--suite", default="full")
    args = p.parse_args()
    from workbench.harness.scenarios import load_suite

    legs = legs_in(Path(args.logs))
    if not legs:
        print(f"coldrun_profile: no coldrun_<leg>.log under {args.logs}", file=sys.stderr)
        return 2
    suite = {s.name: s for s in load_suite(args.suite)}
    print(f"{'leg':<8} {'lines':>5} {'fresh':>5} {'walls s':>8}  timed afresh (s)  rest of fresh / cached (s)")
    seen: dict[str, dict] = {}
    for leg, rows in legs.items():
        fresh = [r for r in rows if r["timed"]]
        cached = [r for r in rows if not r["timed"]]
        roles: dict[str, float] = {}
        for r in fresh:
            for role, seconds in r["timed"].items():
                roles[role] = roles.get(role, 0.0) + seconds
            seen.setdefault(r["name"], r)
        rest = sum(r["wall"] for r in fresh) - sum(roles.values())
        parts = ", ".join(f"{k} {v:.1f}" for k, v in roles.items())
        print(f"{leg:<8} {len(rows):>5} {len(fresh):>5} {sum(r['wall'] for r in rows):>8.1f}  {parts:<40}"
              f" {rest:.1f} / {sum(r['wall'] for r in cached):.1f} ({len(cached)} cached)")
    names = [n for n in seen if n in suite]
    print(f"\nper scenario, over the {len(names)} distinct scenarios timed afresh:")
    estimate: dict[str, float] = {}
    rest = [seen[n]["wall"] - sum(seen[n]["timed"].values()) for n in names]
    print(f"  rest (candidate verification + timing, references, fixed): mean {statistics.mean(rest):.3f} s")
    estimate["rest (candidate, references, fixed)"] = statistics.mean(rest) * len(suite)
    roles = sorted({role for n in names for role in seen[n]["timed"]})
    one_call = {"original": device_s(args.rows, "original")}
    for role in roles:
        if role == "original" or role != "cudnn":
            table = one_call.get(role) or device_s(args.anchor_rows, role)
            have = [n for n in names if n in table and role in seen[n]["timed"]]
            if len(have) >= 3 and all(n in table for n in suite):
                a, b = fit([table[n] for n in have], [seen[n]["timed"][role] for n in have])
                estimate[role] = sum(a + b * table[n] for n in suite)
                print(f"  {role}: {a:.3f} s + {b:.2f} x one call (one-call sum over the suite "
                      f"{sum(table.values()):.1f} s)")
                continue
        by_d: dict[int, list[float]] = {}
        for n in names:
            if role in seen[n]["timed"]:
                by_d.setdefault(suite[n].head_dim, []).append(seen[n]["timed"][role])
        means = {d: statistics.mean(v) for d, v in by_d.items()}
        estimate[role] = sum(means.get(s.head_dim, statistics.mean(sum(by_d.values(), []))) for s in suite.values())
        print(f"  {role}: " + ", ".join(f"d{d} {means[d]:.2f} s (n={len(by_d[d])})" for d in sorted(by_d)))
    print(f"\nestimate for all {len(suite)} scenarios of {args.suite} (seconds):")
    for role, seconds in estimate.items():
        print(f"  {role:<40} {seconds:6.1f}")
    print(f"  {'sum (before the first scenario not included)':<40} {sum(estimate.values()):6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
