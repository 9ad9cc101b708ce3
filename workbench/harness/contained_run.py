"""Run a program that loads candidate code outside the evaluation worker — Nsight Compute profiling
launch_one — behind the same walls, all of them up before the program starts.

    result = run_contained([ncu, ..., sys.executable, "-m", "workbench.agent.launch_one", "--so",
                            "{private}/lib/kernel.so", ...], files={"kernel.so": so_path}, timeout_s=600)

The program (and everything it starts) runs as a fresh unprivileged uid, in its own mount, network and PID
namespaces, with the allowlisted environment (no API key: no transform of it can reach the output), a
size-capped private folder over /tmp (`{private}` in the argv; `files` are copied to {private}/lib/), every
other mount read-only, the host's filesystem UNIX sockets hidden (host_sockets.py), rlimits, and the socket filter
with inet and UNIX sockets allowed: Nsight Compute talks to its target over UNIX sockets and the loopback of the
new network namespace, which holds nothing else. Its output is kept in files
the program writes through inherited descriptors (bounded by the file-size rlimit); the caller reads the last
OUTPUT_KEEP bytes of each. When it runs past `timeout_s` the whole tree is killed.

Started as a non-root user nothing can be dropped (rlimits, the socket filter and the environment still apply,
and a notice says so); WORKBENCH_SANDBOX=require refuses to run there.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from workbench.harness import sandbox

OUTPUT_KEEP = 4 << 20
OUTPUT_FILE_BYTES = 64 << 20


@dataclass
class ContainedRun:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    notices: list = field(default_factory=list)


def _tail(handle) -> str:
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - OUTPUT_KEEP))
    return handle.read().decode("utf-8", "replace")


# Walls a diagnosis may leave down, one at a time, to find which one a program fails behind (issue 25: Nsight
# Compute stops behind them and finishes without them). Only this module's callers set them, never a CLI or an env.
RELAXABLE = ("uid", "net", "pid", "sockets", "seccomp", "limits")    # sockets: the host's left unhidden


def run_contained(argv: list[str], files: dict | None = None, timeout_s: float = 600.0,
                  extra_env: dict | None = None, relax: tuple = ()) -> ContainedRun:
    """argv run inside the walls (see the module doc); never raises for what the program does. `relax` (diagnostics,
    RELAXABLE) leaves the named walls down, and each one left down is a notice of the result."""
    unknown = [name for name in relax if name not in RELAXABLE]
    if unknown:
        raise ValueError(f"run_contained: cannot relax {', '.join(unknown)}; one of {', '.join(RELAXABLE)}")
    limits = sandbox.Limits(cpu_s=int(timeout_s * 4) + 60, fsize_bytes=OUTPUT_FILE_BYTES,
                            private_bytes=sandbox.private_cap_bytes())
    plan = sandbox.plan("run", limits)
    if plan.enabled and relax:
        plan.relax = list(relax)
        plan.notices.append(f"sandbox: diagnostics, walls left down: {', '.join(relax)}")
    if not plan.dir:                    # not contained: still a folder of its own, removed afterwards
        plan.dir = tempfile.mkdtemp(prefix=f"workbench-run-{os.getpid()}-")
    try:
        env = sandbox.child_env(dict(os.environ), plan)
        env.update(sandbox.allowed_env(extra_env or {}))
        command = [sys.executable, "-m", "workbench.harness.sandbox_entry", "run", "--plan", json.dumps(plan.to_dict()),
                   *[f"--copy={name}={path}" for name, path in (files or {}).items()], "--", *argv]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    cwd=str(sandbox.REPO_ROOT), pass_fds=sandbox.pass_fds(plan))
            try:
                proc.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                proc.kill()             # the caller of the PID namespace: its init, and all in it, die too
                proc.wait()
                timed_out = True
            return ContainedRun(proc.returncode, _tail(out), _tail(err), timed_out, list(plan.notices))
    finally:
        sandbox.cleanup(plan)
