"""Time `workbench import` of synthetic Claude Code transcripts with many tool calls (docs/benchmarks.md).

    PYTHONPATH=. .venv/bin/python scripts/bench_import.py --calls 5000 10000 20000 100000

For each size one transcript is written to a temporary folder and imported by the real CLI (`python -m workbench.cli
import FILE -o OUT`) in a child process; the script prints the wall time, the child's CPU time (user + system:
steadier than wall time on a shared machine) and its peak resident memory (getrusage of the child). The transcript
is shaped like a long campaign: every tool call is an assistant line (a tool_use block, with usage) and a user line
(its tool_result). Every third call runs `workbench check`: the human summary and, for half of them, the result line
with an eval id (the other half are older checks without one, matched by their figures); one call in 15 reads back
one of the 50 runs before it (a run seen again). The other calls read ~20 lines of kernel code, different each time. An
API key is set in the child's environment, as when a campaign runs, so redaction looks for every form of it. Calls
are 3 s apart, so hundreds of runs fall in the importer's 600 s same-run window at any time: the case where matching
every run against every earlier run was quadratic.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
SECONDS_PER_CALL = 3
PLANTED_KEY = "sk-ant-api03-" + "bEnChMaRkKeY0123456789" * 4 + "-AA"   # in the child's environment, as in real use


def _code(call: int) -> str:
    """~20 lines of kernel code, different for every call (a real transcript repeats little)."""
    return "\n".join(f"{n:6d}→  acc[{n % 8}] = mma(a_tile[{call + n}], b_tile[{n}], acc[{n % 8}]);"
                     for n in range(1, 21))


def _line(obj: dict) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _harness_output(run: int, geomean: float, with_eval_id: bool) -> str:
    sha = f"{run * 2654435761 % (1 << 48):012x}"
    text = (f"kernel: kernel.cu (sha {sha})\nsuite: dev26  gpu: NVIDIA H200  wall_s: 41.2\n"
            f"scenarios: 26 passed, 0 failed\ngeomean_vs_fa3: {geomean:.3f}   (A {geomean:.3f})\n"
            "all_correct: true\n")
    if with_eval_id:
        record = {"schema": 1, "eval_id": f"e{run:011d}", "kernel_sha": sha, "kernel_path": "kernel.cu",
                  "suite": "dev26", "status": "evaluated", "all_correct": True,
                  "geomeans": {"overall": {"fa3": round(geomean, 6), "original": round(2 * geomean, 6)}},
                  "counts": {"passed": 26, "failed": 0}, "failures": [], "gpu": "NVIDIA H200", "flags": []}
        text += "workbench-result: " + json.dumps(record) + "\n"
    return text


def write_transcript(path: Path, calls: int, seed: int = 0) -> None:
    """One Claude Code session of `calls` tool calls (module docstring)."""
    rng = random.Random(seed)
    sid = f"bench-{calls}"
    geomean, runs, outputs = 0.4, 0, []
    with open(path, "w", encoding="utf-8") as out:
        out.write(_line({"type": "user", "uuid": "u0", "parentUuid": None, "sessionId": sid,
                         "timestamp": START.isoformat(), "message": {"role": "user", "content": "Make it faster."}}))
        parent = "u0"
        for i in range(calls):
            ts = (START + timedelta(seconds=SECONDS_PER_CALL * (i + 1))).isoformat().replace("+00:00", "Z")
            call_id = f"toolu_{i:08d}"
            if i % 3 == 2:
                runs += 1
                geomean *= 1 + rng.uniform(-0.02, 0.03)
                output = _harness_output(runs, geomean, with_eval_id=runs % 2 == 0)
                outputs.append(output)
                command = "workbench check kernel.cu --suite dev26"
            elif i % 15 == 7 and outputs:                   # an earlier run read back
                output, command = rng.choice(outputs[-50:]), "cat result.txt"
            else:
                output, command = _code(i), "sed -n 1,20p kernel.cu"
            use = {"type": "assistant", "uuid": f"a{i}", "parentUuid": parent, "sessionId": sid, "timestamp": ts,
                   "requestId": f"req_{i}",
                   "message": {"id": f"msg_{i}", "role": "assistant", "model": "claude-sonnet-4-5",
                               "content": [{"type": "tool_use", "id": call_id, "name": "Bash",
                                            "input": {"command": command}}],
                               "usage": {"input_tokens": 120, "output_tokens": 80,
                                         "cache_read_input_tokens": 20000}}}
            result = {"type": "user", "uuid": f"r{i}", "parentUuid": f"a{i}", "sessionId": sid, "timestamp": ts,
                      "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                                               "content": output, "is_error": False}]}}
            out.write(_line(use) + _line(result))
            parent = f"r{i}"


def timed_import(transcript: Path, out: Path) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, exit status) of the CLI importing one transcript."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), ANTHROPIC_API_KEY=PLANTED_KEY)
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "workbench.cli", "import", str(transcript), "-o", str(out)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[5000, 10000, 20000, 100000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"{'tool calls':>10} {'file MB':>8} {'wall s':>7} {'CPU s':>6} {'peak MiB':>9} {'CPU us/call':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for calls in args.calls:
            transcript = Path(tmp) / f"bench-{calls}.jsonl"
            write_transcript(transcript, calls, args.seed)
            wall, cpu, peak, code = timed_import(transcript, Path(tmp) / f"traces-{calls}")
            if code != 0:
                print(f"import of {calls} tool calls failed (exit {code})", file=sys.stderr)
                return 1
            print(f"{calls:>10} {transcript.stat().st_size / 1e6:>8.1f} {wall:>7.1f} {cpu:>6.1f} {peak:>9.0f} "
                  f"{1e6 * cpu / calls:>12.0f}", flush=True)
            transcript.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
