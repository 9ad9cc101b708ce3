"""Candidate code outside the evaluation worker (issue 25, item 1): `ncu_profile` loaded the candidate with no
containment; its constructor ran as uid 0, wrote into a root-only folder and printed the API key reversed into
the tool result. Every path that loads candidate code now runs behind the worker's walls (contained_run.py).

There is no Nsight Compute here: a stand-in `ncu` on PATH does what matters of it on this machine — it loads the
library it is given (the candidate's constructors run in it) and reports what it could do. The kernel is built by
the real tool path (nvcc, the build's guard: getenv and printf are allowed host code). On the GPU machine the
same test runs with the real ncu (tests/test_security_gpu.py)."""
from __future__ import annotations

import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import pytest

from workbench.evaluators.standin_timings import SequenceEvaluator
from workbench.agent.tools import HarnessDefaults, Toolbox
from workbench.campaign.workspace import Workspace
from workbench.harness import sandbox

KEY = "sk-ant-api03-" + "Q7x" * 12 + "-AAAA"
STEALER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
__attribute__((constructor)) static void steal() {
  const char* key = std::getenv("ANTHROPIC_API_KEY");
  char reversed[512] = "none";
  if (key) { size_t n = std::strlen(key) < 511 ? std::strlen(key) : 511;
             for (size_t i = 0; i < n; ++i) reversed[i] = key[n - 1 - i]; reversed[n] = 0; }
  std::printf("stolen=[%s]\n", reversed);
  std::fflush(stdout);
}
extern "C" int attn_fwd(const void*, const void*, const void*, void*, void*, int, int, int, int, int, int, int,
                        float, void*) { return 0; }
"""
FAKE_NCU = """#!{python}
# a stand-in for Nsight Compute: it loads the target's kernel library as the profiled process would
import ctypes, os, sys
os.dup2(2, 1)                                    # everything it and the candidate print, on one stream
args = sys.argv[1:]
ctypes.CDLL(args[args.index("--so") + 1])        # the candidate's constructor runs here
target = os.path.join(os.environ.get("WORKBENCH_PROBE_DIR", "/nonexistent"), "escaped")
try:
    open(target, "w").write("escaped")
    wrote = "WROTE"
except OSError as err:
    wrote = err.strerror
keyed = any("sk-ant" in value for value in os.environ.values())
import socket
try:                                             # inet sockets are allowed here (ncu needs them): reach nothing
    socket.create_connection(("127.0.0.1", int(os.environ["WORKBENCH_PROBE_PORT"])), timeout=5).close()
    net = "CONNECTED"
except OSError as err:
    net = err.strerror or type(err).__name__
print(f"probe uid=[{{os.getuid()}}] outside=[{{wrote}}] key_in_env=[{{keyed}}] net=[{{net}}]", flush=True)
sys.exit(1)
"""
needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc (the CUDA toolkit)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops privileges only when started as root")


@needs_nvcc
@needs_root
@pytest.mark.skipif(not os.access("/run", os.W_OK), reason="needs a writable /run for the root-only folder")
def test_ncu_profile_runs_the_candidate_with_nothing_to_steal(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(FAKE_NCU.format(python=sys.executable))
    (bin_dir / "ncu").chmod(0o755)
    root_only = Path("/run") / f"wb-root-only-{uuid.uuid4().hex[:8]}"
    root_only.mkdir(mode=0o755)                  # root may write here; nobody else
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("WORKBENCH_PROBE_DIR", str(root_only))
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    monkeypatch.setenv("WORKBENCH_PROBE_PORT", str(server.getsockname()[1]))
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    ws = Workspace.create(tmp_path / "campaigns", "c1", None, {"suite": "smoke"}, kernel_text=STEALER)
    box = Toolbox(ws, SequenceEvaluator([1.0]), HarnessDefaults(suite="smoke", cache_dir=str(tmp_path / "cache")))
    try:
        out = box.run("ncu_profile", {"scenario": "smoke_basic"})
        escaped = (root_only / "escaped").exists()
    finally:
        shutil.rmtree(root_only, ignore_errors=True)
        server.close()
    assert "probe uid=[" in out.text and "stolen=[" in out.text, out.text    # the candidate did run
    assert "probe uid=[0]" not in out.text, out.text
    assert "outside=[WROTE]" not in out.text and not escaped, out.text
    assert "key_in_env=[False]" in out.text and "stolen=[none]" in out.text, out.text
    assert "net=[CONNECTED]" not in out.text, out.text          # the host's loopback is not its loopback
    for form in (KEY, KEY[::-1], KEY[8:40], KEY[::-1][8:40]):                # nor any simple transform of it
        assert form not in out.text, out.text


def test_ncu_profiles_only_the_application_process():
    """With `--target-processes all` Nsight Compute follows every process the candidate's constructor forks and
    waits for it: on the H200 a setsid grandchild that sleeps kept the profile running to its 300 s limit."""
    from workbench.agent.tools import NCU_METRICS, ncu_argv
    argv = ncu_argv("ncu", list(NCU_METRICS), "smoke", "smoke_basic")
    program = argv.index(sys.executable)
    options = argv[:program]
    assert options[options.index("--target-processes") + 1] == "application-only", options


SLEEPER = r"""
#include <unistd.h>
#include <sys/prctl.h>
__attribute__((constructor)) static void linger(void) {
  if (fork() == 0) { setsid(); if (fork() == 0) { prctl(PR_SET_NAME, "%s"); sleep(600); } _exit(0); }
}
"""


@needs_root
@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_a_contained_program_that_exits_takes_the_candidates_sleeping_grandchild_with_it(tmp_path):
    """The other half of the profile's end: once the profiler exits, nothing the candidate left behind keeps the run
    (or the machine) busy: the PID namespace's init dies with it and takes every process in it along."""
    import subprocess
    import time
    from workbench.harness.contained_run import run_contained
    name = f"wbsleep{uuid.uuid4().hex[:6]}"
    (tmp_path / "s.c").write_text(SLEEPER % name)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "s.so"), str(tmp_path / "s.c")], check=True)
    started = time.monotonic()
    run = run_contained([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('loaded')",
                         "{private}/lib/s.so"], {"s.so": str(tmp_path / "s.so")}, timeout_s=60)
    took = time.monotonic() - started
    time.sleep(0.5)
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _comm(p) == name]
    for p in alive:
        os.kill(int(p.name), 9)
    assert "loaded" in run.stdout and run.returncode == 0 and not run.timed_out, (run.stdout, run.stderr)
    assert took < 30, took
    assert not alive, "the candidate's setsid grandchild outlived the contained run"


def _comm(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return ""


HANGER = r"""
__attribute__((constructor)) static void hang(void) { for (;;) asm volatile(""); }   /* never gets going */
extern "C" int attn_fwd(const void*, const void*, const void*, void*, void*, int, int, int, int, int, int, int,
                        float, void*) { return 0; }
"""


@needs_nvcc
@needs_root
def test_ncu_profile_of_a_candidate_that_hangs_returns_one_line_at_its_limit(tmp_path, monkeypatch):
    """On the H200 (session 9) a constructor that forks and touches CUDA hung under the real Nsight Compute, and the
    tool waited its full 600 s. The wait is bounded by NCU_TIMEOUT_S, the tree is killed, the answer is one line."""
    import time
    from workbench.agent import tools
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ncu").write_text(FAKE_NCU.format(python=sys.executable))
    (bin_dir / "ncu").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("WORKBENCH_PROBE_PORT", "9")
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    monkeypatch.setattr(tools, "NCU_TIMEOUT_S", 5.0)
    ws = Workspace.create(tmp_path / "campaigns", "c1", None, {"suite": "smoke"}, kernel_text=HANGER)
    box = Toolbox(ws, SequenceEvaluator([1.0]), HarnessDefaults(suite="smoke", cache_dir=str(tmp_path / "cache")))
    started = time.monotonic()
    out = box.run("ncu_profile", {"scenario": "smoke_basic"})
    took = time.monotonic() - started
    assert out.is_error and "did not finish in 5 s" in out.text and "\n" not in out.text, out.text
    assert took < 120, took                                    # the build (nvcc) and five seconds of the hang
    time.sleep(0.5)
    mine = f"workbench-run-{os.getpid()}-".encode()          # the contained run's plan names its caller's pid
    left = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and mine in _cmdline(p)]
    assert not left, left


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
