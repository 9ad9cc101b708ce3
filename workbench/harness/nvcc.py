"""nvcc on untrusted source, contained: a dropped uid, no network, rlimits, a time limit that kills the whole
process tree, and at most LOG_CAP_BYTES of output kept.

    with ContainedBuild(timeout_s=300) as build:
        source = build.write_sources("kernel.cu", text, headers)        # the only files nvcc is given
        run = build.run([nvcc, *flags, "-c", "-o", build.path("kernel.o"), source])
        obj = build.path("kernel.o")

The work folder belongs to the build's uid; the compiler reads the CUDA and system headers (world-readable)
and the copies written here, nothing else the user could read but others could not. If nvcc cannot run as
an unprivileged user on this machine (installed in a private home), the build runs as the caller with the
rlimits only, and says so (`notice`).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.harness import sandbox

LOG_CAP_BYTES = 4 << 20
BUILD_MEMORY_ENV = "WORKBENCH_BUILD_MEMORY_GB"        # address-space cap of every compiler process
_probe_result: dict = {}


@dataclass
class NvccRun:
    log: str
    returncode: int
    seconds: float
    timed_out: bool = False
    truncated: bool = False


def build_limits(timeout_s: float) -> sandbox.Limits:
    memory_gb = float(os.environ.get(BUILD_MEMORY_ENV, "16"))
    return sandbox.Limits(cpu_s=int(timeout_s * 4) + 60, fsize_bytes=2 << 30, nproc=512,
                          address_space_bytes=int(memory_gb * (1 << 30)))


def _contained_plan(nvcc: str, timeout_s: float) -> tuple[sandbox.Plan, str]:
    """The plan for a build, and a notice when it could not be contained."""
    plan = sandbox.plan("build", build_limits(timeout_s))
    if not plan.enabled:
        return plan, plan.notices[0] if plan.notices else ""
    ok = _probe_result.get(nvcc)
    if ok is None:                 # once per process: can the dropped uid run this nvcc at all?
        run = _run(plan, [nvcc, "--version"], 120)
        ok = _probe_result[nvcc] = run.returncode == 0
    if ok:
        return plan, ""
    sandbox.cleanup(plan)
    plan = sandbox.Plan(False, limits=build_limits(timeout_s))
    return plan, (f"the build ran unconfined (rlimits only): {nvcc} cannot run as an unprivileged user here "
                  "(install the CUDA toolkit where others can read it)")


def _run(plan: sandbox.Plan, argv: list, timeout_s: float) -> NvccRun:
    env = sandbox.child_env(dict(os.environ), plan)
    start = time.monotonic()
    proc = subprocess.Popen(sandbox.exec_command(plan, [str(a) for a in argv]), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, cwd=plan.dir or None, start_new_session=True)
    chunks, size, truncated = [], 0, False

    def pump():
        nonlocal size, truncated
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            if size < LOG_CAP_BYTES:
                chunks.append(chunk[:LOG_CAP_BYTES - size])
            size += len(chunk)
            if size > LOG_CAP_BYTES and not truncated:
                truncated = True
                _kill_tree(proc)          # a flood of output (an error storm) ends the build

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_tree(proc)
        proc.wait()
    reader.join(timeout=10)
    proc.stdout.close()                  # the pipe is at its end once nvcc is gone (no ResourceWarning)
    log = b"".join(chunks).decode("utf-8", "replace")
    if truncated:
        log += f"\n[build output cut at {LOG_CAP_BYTES >> 20} MiB; the build was stopped]"
    return NvccRun(log, proc.returncode if not timed_out else -1, time.monotonic() - start, timed_out, truncated)


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)      # nvcc's children (cicc, ptxas, the host compiler) too
    except (ProcessLookupError, PermissionError):
        pass


class ContainedBuild:
    def __init__(self, nvcc: str, timeout_s: float):
        self.timeout_s = timeout_s
        self.plan, self.notice = _contained_plan(nvcc, timeout_s)
        if not self.plan.dir:
            self.plan.dir = tempfile.mkdtemp(prefix=f"workbench-build-{os.getpid()}-")
        self.work = Path(self.plan.dir)
        self.env = sandbox.child_env(dict(os.environ), self.plan)     # what the compiler runs with

    def __enter__(self) -> "ContainedBuild":
        return self

    def __exit__(self, *exc) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def path(self, name: str) -> Path:
        return self.work / name

    def write_sources(self, name: str, text: str, headers: dict) -> Path:
        """The kernel and its local headers, copied into src/ (readable, not writable, by the build's uid)."""
        src = self.work / "src"
        for rel, body in {**headers, name: text}.items():
            target = src / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body)
        return src / name

    def run(self, argv: list) -> NvccRun:
        return _run(self.plan, argv, self.timeout_s)
