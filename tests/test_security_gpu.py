"""The walls on the GPU machine, with CUDA working behind them (issue 25): the socket filter and the PID
namespace around a contained worker on the GPU, the original kernel verified and timed there, and ncu_profile of
a kernel whose constructor tries to read the key or write outside — it gets nothing and changes nothing.

    bash scripts/gpu_run.sh walls          # on the H200 (root): < 3 minutes
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from workbench.harness import sandbox

KEY = "sk-ant-api03-" + "Zq9" * 12 + "-GPU0"
ROOT = Path(__file__).resolve().parents[1]


def _gpu() -> bool:
    from workbench.harness.check import gpu_available
    return gpu_available()


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(os.geteuid() != 0, reason="the walls are built as root"),
              pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc"),
              pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU")]
needs_ncu = pytest.mark.skipif(not shutil.which("ncu"), reason="needs Nsight Compute")

PROBE = r"""
#include <cuda_runtime.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
static const char* arg(const char* name) { const char* v = getenv(name); return v ? v : ""; }
__global__ void touch(float* p) { p[threadIdx.x] = 1.f; }
static const char* cuda_works() {
  float* d = nullptr;
  if (cudaMalloc(&d, 1024) != cudaSuccess) return "cudaMalloc failed";
  touch<<<1, 32>>>(d);
  cudaError_t e = cudaDeviceSynchronize();
  cudaFree(d);
  return cudaGetErrorString(e);
}
static const char* unix_connect(const char* path) {
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0) { static char e[96]; snprintf(e, sizeof e, "socket: %s", strerror(errno)); return e; }
  struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path, sizeof a.sun_path - 1);
  return connect(s, (struct sockaddr*)&a, sizeof a) == 0 ? "CONNECTED" : strerror(errno);
}
static const char* try_write(const char* folder) {
  char path[512]; snprintf(path, sizeof path, "%s/escaped", folder);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return strerror(errno);
  write(fd, "x", 1); close(fd); return "WROTE";
}
static const char* read_environ(const char* pid) {       /* the harness's environment holds the API key */
  char path[64]; snprintf(path, sizeof path, "/proc/%s/environ", pid);
  int fd = open(path, O_RDONLY); if (fd < 0) return strerror(errno);
  char buf[65536]; ssize_t n = read(fd, buf, sizeof buf - 1); close(fd);
  if (n < 0) return strerror(errno);
  for (ssize_t i = 0; i < n; ++i) if (!strncmp(buf + i, "sk-ant", 6)) return "KEY";
  return "no key";
}
__attribute__((constructor)) static void probe(void) {
  if (fork() == 0) {                     /* a setsid grandchild, holding every fd, that would sleep 10 minutes */
    setsid();
    if (fork() == 0) { prctl(PR_SET_NAME, arg("WORKBENCH_PROBE_NAME")); sleep(600); }
    _exit(0);
  }
  fprintf(stderr, "probe uid=[%d] unix=[%s] inet=[%s] cuda=[%s] outside=[%s] environ=[%s] key=[%s]\n",
          (int)getuid(), unix_connect(arg("WORKBENCH_PROBE_SOCK")),
          socket(AF_INET, SOCK_STREAM, 0) >= 0 ? "OPEN" : strerror(errno), cuda_works(),
          try_write(arg("WORKBENCH_PROBE_DIR")), read_environ(arg("WORKBENCH_PROBE_PID")),
          getenv("ANTHROPIC_API_KEY") ? "SET" : "unset");
  if (arg("WORKBENCH_PROBE_ABORT")[0]) abort();
}
extern "C" int attn_fwd(const void*, const void*, const void*, void* o, void*, int, int, int, int, int, int, int,
                        float, cudaStream_t stream) {
  touch<<<1, 32, 0, stream>>>((float*)o);
  return (int)cudaGetLastError();
}
"""


@pytest.fixture
def walls(tmp_path, monkeypatch):
    """The probe built with nvcc, a host UNIX socket (0666, under /run), a root-only folder, a marked name for
    the grandchild, the API key in this process's environment. Yields what the checks need."""
    (tmp_path / "probe.cu").write_text(PROBE)
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode=arch=compute_90a,code=sm_90a", "-o",
                    tmp_path / "probe.so", tmp_path / "probe.cu"], check=True, capture_output=True)
    run_dir = Path("/run") / f"wb-gpu-walls-{uuid.uuid4().hex[:8]}"
    run_dir.mkdir(mode=0o755)
    import socket
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(run_dir / "s.sock"))
    os.chmod(run_dir / "s.sock", 0o666)
    server.listen(4)
    name = f"wbgpu{uuid.uuid4().hex[:8]}"
    for key, value in {"WORKBENCH_PROBE_SOCK": str(run_dir / "s.sock"), "WORKBENCH_PROBE_DIR": str(run_dir),
                       "WORKBENCH_PROBE_PID": str(os.getpid()), "WORKBENCH_PROBE_NAME": name,
                       "ANTHROPIC_API_KEY": KEY}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    yield {"so": tmp_path / "probe.so", "dir": run_dir, "name": name, "tmp": tmp_path}
    server.close()
    shutil.rmtree(run_dir, ignore_errors=True)
    for pid in _alive_named(name):
        os.kill(pid, 9)


def _alive_named(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


def _fields(text: str) -> dict:
    assert "probe " in text, text[-3000:]
    return dict(re.findall(r"(\w+)=\[([^\]]*)\]", text.split("probe ", 1)[1].splitlines()[0]))


def _nothing_stolen(seen: dict, walls: dict, profiler: bool = False) -> None:
    assert seen["uid"] != "0" and seen["key"] == "unset" and seen["environ"] != "KEY", seen
    # the worker may not open a UNIX socket; a profiler run may (ncu needs it), and the host's is hidden from it
    assert seen["unix"] == ("Connection refused" if profiler else "socket: Permission denied"), seen
    assert seen["outside"] != "WROTE" and not (walls["dir"] / "escaped").exists(), seen


def test_the_original_kernel_passes_behind_every_wall():
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest

    result = check(CheckRequest(kernel_path=str(ROOT / "kernels" / "attn_fwd" / "original.cu"), suite="smoke",
                                anchors=("fa3",), cache_dir=os.environ.get("WORKBENCH_CACHE")), progress=print)
    held = result.versions.get("sandbox", "")
    print("held:", held)
    for wall in ("no network", "private /tmp", "own PID namespace", "socket filter"):
        assert wall in held, held
    assert "private folder" in held and "no cap" not in held, held
    assert result.all_correct, [(r.name, r.reason, r.detail) for r in result.rows if r.status != "passed"]


def test_walls_hold_in_a_gpu_worker_and_cuda_works_behind_them(walls, monkeypatch):
    from workbench.harness.check import run_worker
    from workbench.harness.scenarios import load_suite

    monkeypatch.setenv("WORKBENCH_PROBE_ABORT", "1")
    scenarios = load_suite("smoke")[:1]
    job = {"request": {"kernel_path": "probe", "suite": "smoke", "anchors": [], "cache_dir": str(walls["tmp"] / "c")},
           "candidate": {"kind": "so", "path": str(walls["so"]), "sha": "probe"}, "baseline": None,
           "device": "cuda", "scenarios": [s.to_dict() for s in scenarios]}
    started = time.monotonic()
    rows, info = run_worker(job, scenarios, 120, print)
    seen = _fields(info.get("error", ""))
    print(seen, f"{time.monotonic() - started:.1f} s")
    assert seen["cuda"] == "no error", seen                 # the driver works under the socket filter and the uid
    assert seen["inet"] == "Permission denied", seen
    _nothing_stolen(seen, walls)
    time.sleep(1)
    assert not _alive_named(walls["name"]), "the setsid grandchild outlived the GPU worker"


def test_a_grandchild_dies_with_a_gpu_worker_that_finishes(walls):
    from workbench.harness.check import run_worker
    from workbench.harness.scenarios import load_suite

    scenarios = load_suite("smoke")[:2]
    job = {"request": {"kernel_path": "probe", "suite": "smoke", "anchors": [], "cache_dir": str(walls["tmp"] / "c")},
           "candidate": {"kind": "so", "path": str(walls["so"]), "sha": "probe"}, "baseline": None,
           "device": "cuda", "scenarios": [s.to_dict() for s in scenarios]}
    started = time.monotonic()
    rows, info = run_worker(job, scenarios, 120, print)
    seconds = time.monotonic() - started
    assert all(r.reason != "timeout" for r in rows) and seconds < 100, (seconds, [r.detail for r in rows])
    # it ran on the GPU and wrote the wrong thing: on the H200 (2026-12-02) the probe's first call returned 400
    # (its constructor forks after touching CUDA) and its second wrote 64 of 32768 elements
    assert any(r.status == "failed" and r.reason == "unwritten" for r in rows), [(r.status, r.reason) for r in rows]
    time.sleep(1)
    assert not _alive_named(walls["name"]), "the setsid grandchild outlived the GPU worker"


@needs_ncu
def test_ncu_on_a_hostile_constructor_gets_nothing_and_changes_nothing(walls):
    from workbench.agent.tools import NCU_METRICS, ncu_argv
    from workbench.harness.contained_run import run_contained

    run = run_contained(ncu_argv(shutil.which("ncu"), list(NCU_METRICS), "smoke", "smoke_basic"),
                        {"kernel.so": str(walls["so"])}, timeout_s=300)
    text = run.stdout + run.stderr
    print(text[-4000:])
    assert "ERR_NVGPUCTRPERM" not in text, "performance counters restricted to admins on this machine"
    seen = _fields(text)
    _nothing_stolen(seen, walls, profiler=True)
    assert seen["cuda"] == "no error", seen
    # profiled behind the walls; the probe's attn_fwd may return 400 on its first call (its constructor's CUDA use,
    # as in the worker test above): launch_one then exits 1 after the profiled launches
    assert "gpu__time_duration" in run.stdout, text[-3000:]
    assert run.returncode == 0 or (run.returncode == 1 and "returned 400 on smoke_basic" in text), text[-3000:]
    assert KEY not in text and KEY[::-1] not in text
    time.sleep(1)
    assert not _alive_named(walls["name"]), "the setsid grandchild outlived the profile"


@needs_ncu
def test_ncu_profile_tool_of_a_key_reading_constructor(tmp_path, monkeypatch):
    from workbench.evaluators.standin_timings import SequenceEvaluator
    from workbench.agent.tools import HarnessDefaults, Toolbox
    from workbench.campaign.workspace import Workspace

    stealer = (ROOT / "kernels" / "attn_fwd" / "original.cu").read_text() + r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
__attribute__((constructor)) static void steal_the_key() {
  const char* key = std::getenv("ANTHROPIC_API_KEY");
  char reversed[512] = "none";
  if (key) { size_t n = std::strlen(key) < 511 ? std::strlen(key) : 511;
             for (size_t i = 0; i < n; ++i) reversed[i] = key[n - 1 - i]; reversed[n] = 0; }
  std::printf("stolen=[%s]\n", reversed);
}
"""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    ws = Workspace.create(tmp_path / "campaigns", "c1", None, {"suite": "smoke"}, kernel_text=stealer)
    box = Toolbox(ws, SequenceEvaluator([1.0]), HarnessDefaults(suite="smoke", cache_dir=str(tmp_path / "cache")))
    out = box.run("ncu_profile", {"scenario": "smoke_basic"})
    print(out.text)
    assert not out.is_error and "gpu__time_duration" in out.text, out.text
    for form in (KEY, KEY[::-1], KEY[10:40], KEY[::-1][10:40]):
        assert form not in out.text
