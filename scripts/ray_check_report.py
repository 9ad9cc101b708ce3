"""What scripts/ray_pool_check.py reads and reports: the uid and cache lines a result carries; one `verdict:`
line per claim, the figures for --json, and a short table (--table) a person reads first."""
from __future__ import annotations

import json
import re
from pathlib import Path

HELD = re.compile(r"uid (\d+), no network, private /tmp, read-only mounts, .*own PID namespace, socket filter")
TIMED_NOW = re.compile(r"timing cache: timed now (.+?); cached before")
FIGURES: dict = {"verdicts": [], "table": [], "notes": []}
CPU = {"on": False}                     # --cpu: the stand-ins, whose timings mean nothing


def verdict(name: str, ok: bool, detail: str, timing: bool = False) -> bool:
    """A claim; one that rests on timings (speedup, geomeans) is only shown on the CPU stand-ins, not judged."""
    if timing and CPU["on"]:
        print(f"verdict: cpu {name}: {detail} (stand-in timings: not judged)", flush=True)
        FIGURES["verdicts"].append({"name": name, "ok": None, "detail": detail})
        return True
    print(f"verdict: {'ok' if ok else 'FAIL'} {name}: {detail}", flush=True)
    FIGURES["verdicts"].append({"name": name, "ok": bool(ok), "detail": detail})
    return ok


def timed_now(lines: list) -> dict:
    """{role: timings made by this evaluation} from the harness's summary line ({} when it printed none)."""
    for line in lines:
        match = TIMED_NOW.search(line)
        if match:
            return {role: int(n) for role, n in re.findall(r"(\w+) (\d+) \(", match.group(1))}
    return {}


def contained_uid(result) -> int:
    """The uid the contained worker ran as, from versions["sandbox"] (0: not contained)."""
    match = HELD.search(result.versions.get("sandbox", ""))
    return int(match.group(1)) if match else 0


def row(*cells) -> None:
    """A table row; the first row given is the header."""
    FIGURES["table"].append([c if isinstance(c, str) else f"{c:.4g}" if isinstance(c, float) else str(c)
                             for c in cells])


def note(line: str) -> None:
    FIGURES["notes"].append(line)


def failed() -> list:
    return [v["name"] for v in FIGURES["verdicts"] if v["ok"] is False]


def table_text(title: str) -> str:
    rows = FIGURES["table"]
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(max(map(len, rows)))] if rows else []
    lines = [title, ""]
    for n, cells in enumerate(rows):
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |")
        if n == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += [""] + FIGURES["notes"] + [""]
    lines += [f"{'ok  ' if v['ok'] else 'cpu ' if v['ok'] is None else 'FAIL'} {v['name']}: {v['detail']}"
              for v in FIGURES["verdicts"]]
    return "\n".join(lines) + "\n"


def write(json_path: str, table_path: str, title: str) -> None:
    if json_path:
        Path(json_path).write_text(json.dumps(FIGURES, indent=2, default=str))
    if table_path:
        Path(table_path).write_text(table_text(title))
