"""Each escape an attacker tried (issue 15) is a test that now fails to escape: workspace paths, builds, the
candidate's host code, and hostile input. The sandbox tests run for real where the tests run as root (the CPU
machine and the H200 both do); elsewhere they are skipped with the reason."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from workbench.agent import tools as tools_module
from workbench.agent.tools import Toolbox
from workbench.campaign.workspace import Workspace
from workbench.evaluators.standin_timings import SequenceEvaluator
from workbench.harness import build_guard, sandbox

KERNEL = "#define KEY_TILE 8 // @knob KEY_TILE 8 {4,8,16}\n"
SECRET = "top-secret-contents-4f1e"
needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc (the CUDA toolkit)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops privileges only when started as root")


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text(SECRET)
    return d


@pytest.fixture
def box(tmp_path, outside):
    ws = Workspace.create(tmp_path / "campaigns", "c1", None, {"suite": "smoke"}, kernel_text=KERNEL)
    evaluator = SequenceEvaluator([1.0])
    return Toolbox(ws, evaluator, tools_module.HarnessDefaults(suite="smoke", cache_dir=str(tmp_path / "cache")))


# ---- the workspace -----------------------------------------------------------------------------------------
def test_a_hard_link_to_an_outside_file_cannot_be_written_or_read(box, outside):
    os.link(outside / "secret.txt", box.ws.root / "notes.md")
    for tool, data in (("write_file", {"path": "notes.md", "content": "changed"}),
                       ("edit_file", {"path": "notes.md", "old_string": "top", "new_string": "x"}),
                       ("read_file", {"path": "notes.md"})):
        out = box.run(tool, data)
        assert out.is_error and "hard link" in out.text and SECRET not in out.text, (tool, out.text)
    assert (outside / "secret.txt").read_text() == SECRET
    assert "a hard link" in box.run("list_files", {}).text


def test_revert_through_a_symlinked_kernel_writes_nothing_outside(box, outside):
    sha = box.run("run_harness", {}).kernel_sha
    box.ws.kernel_path.unlink()
    box.ws.kernel_path.symlink_to(outside / "secret.txt")
    out = box.run("revert", {"sha": sha[:8]})
    assert out.is_error and "symlink" in out.text
    assert (outside / "secret.txt").read_text() == SECRET


def test_revert_never_reads_an_outside_file_through_a_planted_artifact(box, outside):
    box.run("run_harness", {})
    planted = "f" * 64
    (box.ws.artifacts_dir / f"{planted}.cu").symlink_to(outside / "secret.txt")
    os.link(outside / "secret.txt", box.ws.artifacts_dir / f"{'e' * 64}.cu")
    for prefix in ("ffffff", "eeeeee"):
        out = box.run("revert", {"sha": prefix})
        assert out.is_error and "no evaluated version" in out.text, out.text
    assert SECRET not in box.ws.kernel_path.read_text()


@pytest.mark.parametrize("suite", ["/etc/passwd", "../outside/secret.csv", "/dev/zero", "~/x.csv",
                                   "smoke/../../x.csv", "/nonexistent.csv"])
def test_a_suite_comes_from_the_suites_folder_or_the_workspace_only(box, outside, suite):
    started = time.monotonic()
    out = box.run("run_harness", {"suite": suite})
    assert out.is_error and any(why in out.text for why in ("outside the campaign workspace", "no suite",
                                                            "give a suite name")), out.text
    assert time.monotonic() - started < 5 and not box.evaluator.requests
    # no existence oracle: an existing outside file and a missing one get the same answer
    (outside / "real.csv").write_text("name\n")
    real, missing = str(outside / "real.csv"), str(outside / "missing.csv")
    assert box.run("run_harness", {"suite": real}).text.replace(real, "X") == \
        box.run("run_harness", {"suite": missing}).text.replace(missing, "X")


def test_a_workspace_suite_is_used_and_a_symlinked_one_refused(box, outside):
    csv = "name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype\nmine,1,2,2,16,16,64,0,bf16\n"
    (box.ws.root / "mine.csv").write_text(csv)
    assert not box.run("run_harness", {"suite": "mine.csv"}).is_error
    assert box.evaluator.requests[-1].suite == str(box.ws.root / "mine.csv")
    (outside / "s.csv").write_text(csv)
    (box.ws.root / "link.csv").symlink_to(outside / "s.csv")
    out = box.run("run_harness", {"suite": "link.csv"})
    assert out.is_error and "symlink" in out.text


def test_list_files_reports_links_without_following_and_survives_a_dangling_one(box, outside):
    (box.ws.root / "dangling").symlink_to(box.ws.root / "gone")
    (box.ws.root / "up").symlink_to(outside)
    out = box.run("list_files", {})
    assert not out.is_error and "dangling  (symlink to" in out.text and "up  (symlink to" in out.text
    assert "secret.txt" not in out.text           # the linked folder is not listed


def test_a_fifo_in_the_workspace_does_not_hang_a_read(box):
    os.mkfifo(box.ws.root / "pipe")
    started = time.monotonic()
    out = box.run("read_file", {"path": "pipe"})
    assert out.is_error and "not a regular file" in out.text and time.monotonic() - started < 5


# ---- builds: includes and what nvcc may echo --------------------------------------------------------------
@pytest.mark.parametrize("line", ['#include "{outside}/secret.txt"', '#include "../outside/secret.txt"',
                                  '#include </dev/zero>', '#include "/dev/zero"',
                                  '#define F "{outside}/secret.txt"\n#include F',
                                  '%:include "{outside}/secret.txt"', '#inc\\\nlude "/dev/zero"',
                                  '#if __has_include("{outside}/secret.txt")\n#endif',
                                  'asm(".inc" "bin \\"{outside}/secret.txt\\"");'])
def test_an_outside_include_is_refused_before_the_compiler_reads_it(box, outside, line):
    box.ws.fs.write_text("k.cu", line.format(outside=outside) + '\nextern "C" int attn_fwd() { return 0; }\n')
    started = time.monotonic()
    out = box.run("compile_report", {"path": "k.cu"})
    assert out.is_error and "forbidden" in out.text and SECRET not in out.text, out.text
    assert time.monotonic() - started < 10                   # /dev/zero was never opened


def test_a_symlinked_or_hard_linked_local_header_is_refused(box, outside):
    (box.ws.root / "inc").mkdir()
    (box.ws.root / "inc" / "h.cuh").symlink_to(outside / "secret.txt")
    os.link(outside / "secret.txt", box.ws.root / "hard.cuh")
    for name in ("inc/h.cuh", "hard.cuh"):
        box.ws.fs.write_text("k.cu", f'#include "{name}"\n')
        out = box.run("compile_report", {"path": "k.cu"})
        assert out.is_error and ("symlink" in out.text or "hard link" in out.text) and SECRET not in out.text


def test_nvcc_output_about_other_files_is_left_out():
    log = textwrap.dedent(f"""\
        /tmp/b/kernel.cu(3): error: identifier "x" is undefined
              x = 1;
              ^
        /etc/shadow(1): error: this declaration has no storage class or type specifier
          root:$6$saltsalt$hashhash:19000:0:99999:7:::
          ^
        In file included from /tmp/b/kernel.cu:2:
        /outside/secret.txt:1:1: error: '{SECRET}' does not name a type
            1 | {SECRET}
        ptxas info    : Used 32 registers
        """)
    kept = build_guard.filter_log(log, {"kernel.cu"})
    assert 'identifier "x" is undefined' in kept and "x = 1;" in kept and "Used 32 registers" in kept
    assert SECRET not in kept and "root:" not in kept and "line(s) about other files left out" in kept


@needs_nvcc
def test_a_kernel_with_a_local_header_builds(tmp_path):
    from workbench.harness.build import build_kernel
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "helpers.cuh").write_text("__device__ inline float twice(float x) { return 2 * x; }\n")
    (tmp_path / "k.cu").write_text('#include "inc/helpers.cuh"\n__global__ void k(float* p) { *p = twice(*p); }\n'
                                   'extern "C" int attn_fwd() { return 0; }\n')
    result = build_kernel(tmp_path / "k.cu", cache_dir=tmp_path / "cache", include_root=tmp_path)
    assert result.ok, result.summary + result.log[-2000:]
    # the header is part of the cache key: changing it rebuilds
    (tmp_path / "inc" / "helpers.cuh").write_text("__device__ inline float twice(float x) { return x + x; }\n")
    assert not build_kernel(tmp_path / "k.cu", cache_dir=tmp_path / "cache", include_root=tmp_path).cached


# ---- the candidate's own object code --------------------------------------------------------------------------
REFUSED = {          # host code -> the symbol the refusal must name
    "system": '#include <cstdlib>\nstatic int r = system("id");',
    "popen": '#include <cstdio>\nstatic FILE* f = popen("id", "r");',
    "fork": "#include <unistd.h>\nstatic int r = fork();",
    "execve": '#include <unistd.h>\nint go() { char* a[] = {nullptr}; return execve("/bin/sh", a, a); }',
    "socket": "#include <sys/socket.h>\nint go() { return socket(2, 1, 0); }",
    "fopen": '#include <cstdio>\nstatic FILE* f = fopen("/etc/passwd", "r");',
    "open": '#include <fcntl.h>\nint go() { return open("/etc/passwd", 0); }',
    "dlopen": '#include <dlfcn.h>\nvoid* go() { return dlopen("libcublas.so", 1); }',
    "dlsym": '#include <dlfcn.h>\nvoid* go() { return dlsym((void*)0, "system"); }',
    "syscall": "#include <unistd.h>\nlong go() { return syscall(39); }",
    "mmap": "#include <sys/mman.h>\nvoid* go() { return mmap(0, 4096, 7, 0x22, -1, 0); }",
    "mprotect": "#include <sys/mman.h>\nint go(void* p) { return mprotect(p, 4096, 7); }",
    "raw syscall": 'long go() { long r; asm volatile("syscall" : "=a"(r) : "a"(39) : "rcx", "r11"); return r; }',
}


@needs_nvcc
@pytest.mark.parametrize("name", list(REFUSED))
def test_dangerous_host_imports_are_refused_by_name(tmp_path, name):
    from workbench.harness.build import build_kernel
    source = tmp_path / "k.cu"
    source.write_text(REFUSED[name].replace("dlopen(", "dl" "open(").replace("dlsym(", "dl" "sym(") +
                      '\nextern "C" int attn_fwd() { return 0; }\n')
    result = build_kernel(source, cache_dir=tmp_path / "cache")
    assert not result.ok and result.forbidden
    text = " ".join(result.forbidden)
    if name == "raw syscall":
        assert "raw `syscall` instruction" in text, text
    elif name in ("dlopen", "dlsym"):
        assert name in text, text                              # the source check names it first
    else:
        assert f"imports {name}" in text or f", {name}" in text or f"{name} (" in text, text


ALLOWED_HOST = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <mutex>
#include <unordered_map>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void fill(float* p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = 1.f; }

static int seen = [] { return std::getenv("ATTN_DEBUG") ? 1 : 0; }();        // a static initialiser
__attribute__((constructor)) static void hello() { if (seen) std::printf("debug on\n"); }

typedef CUresult (*EncodeTiled)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static std::mutex cache_lock;
static std::unordered_map<long, std::vector<CUtensorMap>> tensor_maps;        // a host-side tensor-map cache

extern "C" int attn_fwd(float* p, int n, cudaStream_t stream) {
  std::lock_guard<std::mutex> guard(cache_lock);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(fill, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024);
  void* scratch = nullptr; cudaMallocAsync(&scratch, 1024, stream); cudaMemsetAsync(scratch, 0, 1024, stream);
  cudaFreeAsync(scratch, stream);
  tensor_maps[(long)p].resize(1);
  float x = std::sqrt(std::exp(1.0f)); std::memset(&prop, 0, sizeof prop);
  fill<<<(n + 255) / 256, 256, 0, stream>>>(p, n);
  if (x < 0) std::fprintf(stderr, "%s\n", cudaGetErrorString(cudaGetLastError()));
  return (int)cudaGetLastError() + (fn ? 0 : 1) * 0;
}
"""


@needs_nvcc
def test_what_hopper_kernels_need_in_host_code_stays_allowed(tmp_path):
    from workbench.harness.build import build_kernel
    (tmp_path / "k.cu").write_text(ALLOWED_HOST)
    result = build_kernel(tmp_path / "k.cu", cache_dir=tmp_path / "cache")
    assert result.ok, (result.summary, result.forbidden, result.log[-3000:])


def test_the_allowlist_names_what_it_refuses():
    assert build_guard.why_refused("system") == "runs a shell command"
    assert build_guard.why_refused("execvp") == "starts a process"
    assert build_guard.why_refused("mprotect") == "maps memory"
    for ok in ("cudaGetDriverEntryPointByVersion", "cudaMallocAsync", "__cudaRegisterFatBinary", "memcpy",
               "__printf_chk", "_ZNSt5mutex4lockEv", "pthread_mutex_lock", "expf", "_Znwm", "__cxa_guard_acquire"):
        assert build_guard.ALLOWED_IMPORT.match(ok), ok
    for bad in ("system", "fopen", "dlopen", "syscall", "mmap", "socket", "fork", "open", "environ"):
        assert not build_guard.ALLOWED_IMPORT.match(bad), bad
    assert build_guard.REFUSED_STD.search("_ZNSt10filesystem4pathC1Ev")


# ---- the candidate's host code at run time -------------------------------------------------------------------
PROBE = (r"""
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
static const char* try_write(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return strerror(errno);
  write(fd, "escaped\n", 8); close(fd); return "WROTE";
}
static const char* try_connect(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return strerror(errno);
  struct sockaddr_in a; memset(&a, 0, sizeof a); a.sin_family = AF_INET; a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(0x7f000001);
  int r = connect(s, (struct sockaddr*)&a, sizeof a); close(s);
  return r == 0 ? "CONNECTED" : strerror(errno);
}
__attribute__((constructor)) static void probe(void) {
  char outside[1024];
  snprintf(outside, sizeof outside, "%s/escaped", getenv("WORKBENCH_PROBE_DIR"));
  struct rlimit f, n, c; getrlimit(RLIMIT_FSIZE, &f); getrlimit(RLIMIT_NPROC, &n); getrlimit(RLIMIT_CPU, &c);
  const char* key = getenv("ANTHROPIC_API_KEY");
  fprintf(stderr, "probe uid=%d outside=[%s] tmp=[%s] net=[%s] key=[%s] fsize=%lld nproc=%lld cpu=%lld\n",
          (int)getuid(), try_write(outside), try_write("/tmp/probe-escaped"), """
         r"""try_connect(atoi(getenv("WORKBENCH_PROBE_PORT"))),
          key ? "SET" : "unset", (long long)f.rlim_cur, (long long)n.rlim_cur, (long long)c.rlim_cur);
  abort();
}
int attn_fwd(void) { return 0; }
""")


def _gpu_here() -> bool:
    from workbench.harness.check import gpu_available
    return gpu_available()


@needs_root
@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc to build the probe")
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[
    pytest.mark.gpu, pytest.mark.skipif(not _gpu_here(), reason="needs a CUDA GPU")])])
def test_a_candidate_constructor_runs_contained(tmp_path, monkeypatch, device):
    """The probe is built straight with gcc (the build's import check would refuse it): this is the sandbox
    alone, with candidate code that opens files and sockets as it likes."""
    from workbench.harness.check import run_worker
    from workbench.harness.scenarios import load_suite

    (tmp_path / "probe.c").write_text(PROBE)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", tmp_path / "probe.so", tmp_path / "probe.c"], check=True)
    target = tmp_path / "root-only"
    target.mkdir(mode=0o755)                     # writable by root, which the worker started as
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    monkeypatch.setenv("WORKBENCH_PROBE_DIR", str(target))
    monkeypatch.setenv("WORKBENCH_PROBE_PORT", str(server.getsockname()[1]))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-never-reaches-candidate-code-0000")
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    scenarios = load_suite("smoke")[:1]
    job = {"request": {"kernel_path": "probe", "suite": "smoke", "anchors": [], "cache_dir": str(tmp_path / "c")},
           "candidate": {"kind": "so", "path": str(tmp_path / "probe.so"), "sha": "probe"}, "baseline": None,
           "device": device, "scenarios": [s.to_dict() for s in scenarios]}
    rows, info = run_worker(job, scenarios, 60, lambda line: None)
    server.close()
    detail = info.get("error", "")              # the constructor ran at load time, before any scenario
    assert "worker killed by SIGABRT (-6)" in detail, (detail, rows[0])
    assert "probe uid=" in detail and "probe uid=0 " not in detail, detail
    assert "outside=[WROTE]" not in detail and not (target / "escaped").exists(), detail
    assert not Path("/tmp/probe-escaped").exists()           # /tmp was the private folder
    assert "net=[CONNECTED]" not in detail and "key=[unset]" in detail, detail
    fields = dict(part.split("=", 1) for part in detail.split("probe ", 1)[1].split() if "=" in part)
    assert 0 < int(fields["fsize"]) < 1 << 40 and 0 < int(fields["nproc"]) < 100_000 and 0 < int(fields["cpu"])


@needs_root
def test_a_contained_worker_still_fills_the_timing_cache(tmp_path, monkeypatch):
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest

    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    ours = f"workbench-eval-{os.getpid()}-*"    # this process's folders only: other test runs share /tmp
    before = set(Path(tempfile_dir()).glob(ours))
    result = check(CheckRequest(kernel_path="standin:correct", suite="smoke", baseline_path="standin:slow_correct",
                                anchors=(), cache_dir=str(tmp_path)))
    assert result.status == "evaluated" and result.all_correct
    assert result.versions["sandbox"].startswith("uid ") and "no network" in result.versions["sandbox"]
    entries = json.loads((tmp_path / "timing_cache.json").read_text())
    assert any(key.startswith("original|") for key in entries)
    assert set(Path(tempfile_dir()).glob(ours)) <= before      # its private folder is gone


def tempfile_dir() -> str:
    import tempfile
    return tempfile.gettempdir()


@needs_root
@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_here(), reason="needs a CUDA GPU")
def test_the_original_kernel_is_verified_and_timed_in_a_contained_worker_on_the_gpu(monkeypatch):
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest

    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)
    root = Path(__file__).resolve().parents[1]
    result = check(CheckRequest(kernel_path=str(root / "kernels" / "attn_fwd" / "original.cu"), suite="smoke",
                                anchors=("fa3",), cache_dir=os.environ.get("WORKBENCH_CACHE")),
                   progress=lambda line: print(line, flush=True))
    held = result.versions.get("sandbox", "")
    assert held.startswith("uid ") and "no network" in held and "private /tmp" in held, held
    assert result.all_correct, [(r.name, r.reason, r.detail) for r in result.rows if r.status != "passed"]
    assert all(r.stats is not None for r in result.rows) and result.geomean_vs("original") > 0


def test_a_crashed_worker_names_its_signal(tmp_path):
    from workbench.harness.check import check
    from workbench.harness.result import CheckRequest

    result = check(CheckRequest(kernel_path="standin:crash", suite="smoke", anchors=(), cache_dir=str(tmp_path)))
    assert "worker killed by SIGABRT (-6)" in result.rows[0].detail
    assert sandbox.describe_exit(-9) == "killed by SIGKILL (-9)" and sandbox.describe_exit(3) == "exited with code 3"


def test_staged_caches_are_merged_without_following_links(tmp_path):
    staged, cache = tmp_path / "staged", tmp_path / "cache"
    (staged / "tensors").mkdir(parents=True)
    from workbench.harness import cache_file
    good = {"original|x|env": {"stats": {"median_us": 1.0, "n": 3}, "extra": {}}}
    (staged / cache_file.JOURNAL).write_bytes(
        cache_file.encode_line("original|x|env", good["original|x|env"])
        + cache_file.encode_line("bad", {"stats": "nope"}) + b'{"deep": [[[[1]]]]}\n')
    (tmp_path / "secret").write_text(SECRET)
    (staged / "tensors" / ("a" * 32 + ".pt")).symlink_to(tmp_path / "secret")
    (staged / "tensors" / ("b" * 32 + ".pt")).write_bytes(b"tensor bytes")
    from workbench.harness.staged_cache import merge_staged_cache
    assert merge_staged_cache(staged, cache) == 2
    assert cache_file.read_entries(cache) == good
    assert sorted(p.name for p in (cache / "tensors").iterdir()) == ["b" * 32 + ".pt"]


def test_the_worker_environment_has_no_secrets():
    env = sandbox.allowed_env({"PATH": "/bin", "ANTHROPIC_API_KEY": "x", "HF_TOKEN": "y", "DB_PASSWORD": "z",
                               "AWS_SECRET_ACCESS_KEY": "w", "HOME": "/root"})
    assert env == {"PATH": "/bin"}            # HOME too: a contained process gets a private one


# ---- hostile input -------------------------------------------------------------------------------------------
def test_hostile_transcript_lines_are_counted_not_raised(tmp_path):
    from workbench.traces.importers import import_paths
    from workbench.traces.writer import read_table

    rollout = Path(__file__).parent / "fixtures" / "transcripts" / "codex" / "2026" / "01" / "11" / \
        "rollout-2026-01-11T09-00-00-cx-1.jsonl"
    lines = rollout.read_text().splitlines()
    deep = "[" * 100_000 + "]" * 100_000
    surrogate = json.dumps({"timestamp": "2026-01-11T09:00:02.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "lone \\ud800 surrogate"}]}})
    surrogate = surrogate.replace("\\\\ud800", "\\ud800")
    hostile = tmp_path / rollout.name
    hostile.write_text("\n".join(lines[:3] + [deep, surrogate, '{"a": ' * 5000 + "1" + "}" * 5000] + lines[3:]) + "\n")
    sessions = import_paths([hostile], tmp_path / "out")
    tally = sessions[0].tally
    reasons = [r for _, _, r in tally.malformed]
    assert sum("nested deeper" in r for r in reasons) == 2, reasons
    texts = read_table(tmp_path / "out", "messages", "cx-1")["text"].tolist()
    assert any("lone \ufffd surrogate" in (t or "") for t in texts)


def test_a_non_utf8_suite_or_bank_is_one_line(tmp_path):
    from workbench.harness.scenarios import SuiteError, load_suite
    from workbench.questions.bank import BankError, load_bank

    suite = tmp_path / "s.csv"
    suite.write_bytes(b"name,batch,heads_q,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype\n"
                      b"x\xff,1,1,1,8,8,64,0,bf16\n")
    with pytest.raises(SuiteError, match=r"s.csv: not UTF-8 \(byte 69\)"):
        load_suite(suite)
    bank = tmp_path / "bank.csv"
    bank.write_bytes(b"id,text\n\xfe\n")
    with pytest.raises(BankError, match=r"bank.csv: not UTF-8 \(byte 8\)"):
        load_bank(bank)


def test_folders_the_worker_still_needs_under_a_covered_tmp_stay_visible(tmp_path, monkeypatch):
    # a CI clone or a venv under /tmp: covering /tmp with the private folder must bind them back in, or the
    # contained worker's next lazy import fails (seen: every worker test failed in a clone under /tmp)
    from workbench.harness import mounts
    venv, inner = tmp_path / "venv", tmp_path / "venv" / "lib"
    inner.mkdir(parents=True)
    monkeypatch.setattr(mounts.sys, "path", [str(inner), str(venv), "/usr/lib/python3"])
    top = str(tmp_path.resolve()).split("/")[1]
    needed = mounts._still_needed_under("/" + top)
    assert str(venv.resolve()) in needed and str(inner.resolve()) not in needed   # the outermost only
    assert "/" + top not in needed                                                 # never the covered folder itself
