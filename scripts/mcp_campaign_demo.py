"""A short real campaign through `workbench mcp`, driven by the mcp SDK's stdio client, as an outside agent would:
three check_kernel calls on two kernels on dev26 with FA3 as the anchor, and a person's `workbench ask` between them.

On the H200 (from the repository root; .whl/ holds the FA3 wheel and .whl/mcp/ the mcp wheels, from
scripts/prep_mcp_wheels.sh on the CPU machine; both travel with `carry: [".whl"]`):

    python3 scripts/mcp_campaign_demo.py [--id h200-mcp-1] [--suite dev26] [--out $OUT]

It installs the carried wheels first (scripts/gpu_wheels.sh, then runs itself again). The calls:
  1. kernel.cu, the campaign's copy of kernels/attn_fwd/original.cu;
  2. mma.cu, kernels/attn_fwd/ladder/02_mma.cu written into the workspace, after `workbench ask` queued a question
     (it comes back with this result, source human);
  3. mma.cu again, with a claim that it is at the hardware limit (the policy questions a claim the stop condition
     does not back).
Left in --out: <id>.tgz (the campaign folder), traces/ (its tables, `workbench import`ed), mcp_demo.log (every
reply in full). On the CPU machine: copy traces/* into data/traces/ (the sample) and the folder to
data/campaigns/<id> (notebook 01 can watch or replay it).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STOP = "all_correct and geomean_vs_fa3 >= 1.0"
QUESTION = "Before the next change: which dev26 scenarios are furthest from FA3, and is it the same layer for each?"
CALL_TIMEOUT_S = 900.0          # one dev26 run with FA3 timing takes about a minute on the H200; builds add more


def with_wheels(argv: list[str]) -> None:
    """Run again with the carried wheels installed and on PYTHONPATH (scripts/gpu_wheels.sh does both)."""
    if os.environ.get("WB_WHEELS_READY"):
        return
    script = 'source scripts/gpu_wheels.sh || exit 2; WB_WHEELS_READY=1 exec python3 "$@"'
    os.execvp("bash", ["bash", "-c", script, "demo", str(Path(__file__).resolve()), *argv])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--id", default="h200-mcp-1", help="campaign id (default %(default)s)")
    parser.add_argument("--suite", default="dev26")
    parser.add_argument("--root", default="campaigns")
    parser.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    parser.add_argument("--evaluator", default="harness", choices=("harness", "standin"),
                        help="standin: a dry run of this script on a CPU machine (made-up timings)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    if args.evaluator == "harness":
        with_wheels(argv)
    import anyio
    from mcp import Client, StdioServerParameters

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "mcp_demo.log", "a")
    # the whole environment: the SDK would pass only a few variables, and the GPU machine's NCCL settings must stay
    env = dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", str(ROOT)), PYTHONUNBUFFERED="1",
               WORKBENCH_CACHE=os.environ.get("WORKBENCH_CACHE", "/tmp/wbcache"))
    server = ["-m", "workbench.cli", "mcp", "--campaign", args.id, "--kernel", "kernels/attn_fwd/original.cu",
              "--suite", args.suite, "--mode", "hybrid", "--stop", STOP, "--root", args.root,
              "--evaluator", args.evaluator]
    workspace = ROOT / args.root / args.id

    def say(title: str, text: str = "") -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {title}", flush=True)
        log.write(f"[{stamp}] {title}\n{text}\n\n")
        log.flush()
        tail = [line for line in text.splitlines() if line.startswith(("geomean:", "stop condition", "=== QUESTION",
                                                                       "campaign ", "kernel "))]
        for line in tail:
            print("    " + line[:200], flush=True)

    async def session() -> None:
        params = StdioServerParameters(command=sys.executable, args=server, env=env, cwd=ROOT)
        async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            say(f"connected to workbench mcp; tools: {', '.join(tools)}")
            reply = await client.call_tool("check_kernel", {"notes": "the starting point"})
            say("check_kernel 1: kernel.cu (original.cu)", reply.content[0].text)
            asked = subprocess.run([sys.executable, "-m", "workbench.cli", "ask", args.id, QUESTION, "--root",
                                    args.root], capture_output=True, text=True, env=env)
            say(f"workbench ask (exit {asked.returncode}): {asked.stdout.strip() or asked.stderr.strip()}")
            (workspace / "mma.cu").write_text((ROOT / "kernels/attn_fwd/ladder/02_mma.cu").read_text())
            reply = await client.call_tool("check_kernel", {"path": "mma.cu",
                                                            "notes": "mma.sync tiles (ladder/02_mma.cu)"})
            say("check_kernel 2: mma.cu (ladder/02_mma.cu)", reply.content[0].text)
            reply = await client.call_tool("check_kernel", {"path": "mma.cu", "claim": "this is at the hardware "
                                                            "limit for mma.sync; nothing more to gain"})
            say("check_kernel 3: mma.cu again, with a claim", reply.content[0].text)
            status = await client.call_tool("campaign_status", {})
            say("campaign_status", status.content[0].text)

    t0 = time.monotonic()
    anyio.run(session)
    with tarfile.open(out / f"{args.id}.tgz", "w:gz") as tar:
        tar.add(workspace, arcname=args.id, filter=lambda info: None if info.name.endswith(".lock") else info)
    imported = subprocess.run([sys.executable, "-m", "workbench.cli", "import", str(workspace), "-o",
                               str(out / "traces")], capture_output=True, text=True, env=env)
    say(f"workbench import (exit {imported.returncode}): {imported.stdout.strip()} {imported.stderr.strip()}")
    say(f"done in {time.monotonic() - t0:.0f} s; in {out}: {args.id}.tgz, traces/, mcp_demo.log")
    return 0 if imported.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
