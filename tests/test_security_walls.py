"""The evaluation worker's walls (issue 25, items 2-6), each against the attack that got through: candidate host
code built with nvcc and loaded by the real contained worker on its CPU path (no GPU needed). The probes skip the
build's guard on purpose (they call socket(), fork(), open() freely): these are the walls alone.

Run as root (the CPU machine and the H200 both are); elsewhere skipped with the reason."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from workbench.harness import sandbox

needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc (the CUDA toolkit)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops privileges only when started as root")
pytestmark = [needs_nvcc, needs_root]

PRELUDE = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
static const char* arg(const char* name) { const char* v = getenv(name); return v ? v : ""; }
static void to_result_pipe(const char* line) {       /* the worker's private copy of stdout: a pipe, write end */
  for (int fd = 3; fd < 1024; ++fd) {
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY)
      write(fd, line, strlen(line));
  }
}
extern "C" int attn_fwd(void) { return 0; }
"""


def run_probe(tmp_path: Path, body: str, n_scenarios: int = 1, timeout_s: float = 60, bound_s: float = 150):
    """Build PRELUDE + body with nvcc, run it as the candidate in a contained CPU worker; (rows, info, seconds).
    run_worker runs on a thread so that a wait that is not bounded fails the test instead of hanging it."""
    from workbench.harness.check import run_worker
    from workbench.harness.scenarios import load_suite

    (tmp_path / "probe.cu").write_text(PRELUDE + body)
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-o", tmp_path / "probe.so", tmp_path / "probe.cu"],
                   check=True, capture_output=True)
    scenarios = load_suite("smoke")[:n_scenarios]
    job = {"request": {"kernel_path": "probe", "suite": "smoke", "anchors": [], "cache_dir": str(tmp_path / "c")},
           "candidate": {"kind": "so", "path": str(tmp_path / "probe.so"), "sha": "probe"}, "baseline": None,
           "device": "cpu", "scenarios": [s.to_dict() for s in scenarios]}
    out: dict = {}

    def call():
        try:
            out["result"] = run_worker(job, scenarios, timeout_s, lambda line: None)
        except BaseException as err:                 # noqa: BLE001  (reported in the test's own thread)
            out["error"] = err

    start = time.monotonic()
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(bound_s)
    seconds = time.monotonic() - start
    assert not thread.is_alive(), f"run_worker still waiting after {bound_s:.0f} s"
    if "error" in out:
        pytest.fail(f"run_worker raised {type(out['error']).__name__}: {out['error']}")
    rows, info = out["result"]
    return rows, info, seconds


def probe_line(info: dict) -> dict:
    """key=[value] pairs of the `probe ...` line the constructor printed before abort()."""
    detail = info.get("error", "")
    assert "probe " in detail, detail
    return dict(re.findall(r"(\w+)=\[([^\]]*)\]", detail.split("probe ", 1)[1]))


@pytest.fixture(autouse=True)
def _contained(monkeypatch):
    monkeypatch.delenv(sandbox.MODE_ENV, raising=False)


# ---- 2: no socket family the candidate does not need --------------------------------------------------------
SOCKETS = r"""
static const char* unix_connect(const char* path) {
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  if (s < 0) { static char e[96]; snprintf(e, sizeof e, "socket: %s", strerror(errno)); return e; }
  struct sockaddr_un a; memset(&a, 0, sizeof a); a.sun_family = AF_UNIX;
  strncpy(a.sun_path, path, sizeof a.sun_path - 1);
  return connect(s, (struct sockaddr*)&a, sizeof a) == 0 ? "CONNECTED" : strerror(errno);
}
static const char* opens(int family, int type) {
  int s = socket(family, type, 0); return s >= 0 ? "OPEN" : strerror(errno);
}
__attribute__((constructor)) static void probe(void) {
  int pair[2]; const char* paired = socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0 ? "ok" : strerror(errno);
  fprintf(stderr, "probe unix=[%s] inet=[%s] netlink=[%s] pair=[%s]\n", unix_connect(arg("WORKBENCH_PROBE_SOCK")),
          opens(AF_INET, SOCK_STREAM), opens(AF_NETLINK, SOCK_RAW), paired);
  abort();
}
"""


@pytest.mark.skipif(not os.access("/run", os.W_OK), reason="needs a writable /run for the host's socket")
def test_a_filesystem_unix_socket_of_the_host_cannot_be_reached(tmp_path, monkeypatch):
    folder = Path("/run") / f"wb-walls-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(folder / "s.sock"))
        os.chmod(folder / "s.sock", 0o666)             # any uid may connect, as the attack's socket allowed
        server.listen(4)
        server.settimeout(0.1)
        monkeypatch.setenv("WORKBENCH_PROBE_SOCK", str(folder / "s.sock"))
        _, info, _ = run_probe(tmp_path, SOCKETS)
        seen = probe_line(info)
        with pytest.raises(OSError):                   # nothing knocked
            server.accept()
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert seen["unix"] == "socket: Permission denied", seen      # refused at socket(), whatever the path
    assert seen["inet"] == "Permission denied" and seen["netlink"] == "Permission denied", seen
    assert seen["pair"] == "ok", seen


# ---- 3: no candidate process outlives its evaluation --------------------------------------------------------
ORPHAN = r"""
__attribute__((constructor)) static void probe(void) {
  if (fork() == 0) {                           /* a child, in a session of its own, whose child holds every fd */
    setsid();
    if (fork() == 0) { prctl(PR_SET_NAME, arg("WORKBENCH_PROBE_NAME")); sleep(600); _exit(0); }
    _exit(0);
  }
  if (arg("WORKBENCH_PROBE_HANG")[0]) sleep(600);
}
"""


def _alive_named(name: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                pids.append(int(entry.name))
        except OSError:
            pass
    return pids


@pytest.mark.parametrize("worker", ["finishes", "hangs"])
def test_a_setsid_grandchild_holding_the_result_pipe_dies_with_the_evaluation(tmp_path, monkeypatch, worker):
    name = f"wborph{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("WORKBENCH_PROBE_NAME", name)
    if worker == "hangs":
        monkeypatch.setenv("WORKBENCH_PROBE_HANG", "1")
    try:
        rows, info, seconds = run_probe(tmp_path, ORPHAN, timeout_s=15 if worker == "hangs" else 120)
        survivors = _alive_named(name)
        for _ in range(50):                     # the kernel kills the namespace before the wait returns; a margin
            if not survivors:
                break
            time.sleep(0.1)
            survivors = _alive_named(name)
        assert not survivors, f"the grandchild {survivors} outlived its evaluation"
        if worker == "finishes":                # returned when the worker ended, not at a deadline
            assert seconds < 100 and all(r.reason != "timeout" for r in rows), (seconds, rows[0].detail)
        else:
            assert seconds < 100 and info.get("error", "").startswith("timeout: loading"), (rows[0], info)
    finally:
        for pid in _alive_named(name):
            os.kill(pid, 9)


# ---- 4: the caller's wait is bounded, a malformed event is one line -----------------------------------------
FORGE = r"""
__attribute__((constructor)) static void probe(void) {
  const char* line = arg("WORKBENCH_PROBE_LINE");
  int times = atoi(arg("WORKBENCH_PROBE_TIMES"));
  for (int i = 0; i < times; ++i) { to_result_pipe(line); to_result_pipe("\n"); sleep(1); }
}
"""
BEGIN = '{"event": "begin", "scenario": "smoke_basic"}'
MALFORMED = {     # what the worker's stream carried -> what the one line must say
    "unknown field": (BEGIN + '\n{"event": "result", "result": {"scenario": {"name": "smoke_basic"}, '
                      '"status": "passed", "bogus": 1}}', "unknown field 'bogus'"),
    "wrong type": (BEGIN + '\n{"event": "result", "result": {"scenario": {"name": "smoke_basic"}, '
                   '"status": "passed", "rel_l2_err": "tiny"}}', "field 'rel_l2_err' of ScenarioResult is a str"),
    "wrong stats": (BEGIN + '\n{"event": "result", "result": {"scenario": {"name": "smoke_basic"}, '
                    '"status": "passed", "stats": {"median_us": 1}}}', "missing field 'p10_us' in Stats"),
    "other scenario": (BEGIN + '\n{"event": "result", "result": {"scenario": {"name": "smoke_causal"}, '
                       '"status": "passed"}}', "a result for 'smoke_causal'"),
    "unknown event": ('{"event": "hello"}', "unknown event 'hello'"),
    "not json": ("{not json", "not JSON"),
    "deep json": ("[" * 5000 + "]" * 5000, "not JSON"),
    "unknown scenario": ('{"event": "begin", "scenario": "../../x"}', "begin of '../../x'"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_event_is_one_line_never_an_exception(tmp_path, monkeypatch, case):
    line, expected = MALFORMED[case]
    monkeypatch.setenv("WORKBENCH_PROBE_LINE", line)
    monkeypatch.setenv("WORKBENCH_PROBE_TIMES", "1")
    rows, info, _ = run_probe(tmp_path, FORGE)
    message = rows[0].detail if rows[0].reason == "crash" else info.get("error", "")
    assert "malformed event" in message and expected in message, (case, rows[0], info)
    assert "\n" not in message and len(message) < 400, message


def test_forged_begin_events_do_not_keep_the_caller_waiting(tmp_path, monkeypatch):
    # the attack: a begin every few seconds reset the scenario's timer (47 s against a 5 s limit); a begin of a
    # scenario already running is not the protocol, and no event moves the overall deadline
    monkeypatch.setenv("WORKBENCH_PROBE_LINE", BEGIN)
    monkeypatch.setenv("WORKBENCH_PROBE_TIMES", "1000")
    rows, info, seconds = run_probe(tmp_path, FORGE, timeout_s=5, bound_s=120)
    assert seconds < 100, seconds
    assert rows[0].status == "failed" and "malformed event" in rows[0].detail, rows[0]


def test_no_event_moves_the_overall_deadline():
    from workbench.harness import worker_events

    deadline = worker_events.Deadline(start_s=240, scenario_s=5, scenarios=2)
    deadline.started()
    fixed = deadline.overall
    assert fixed - time.monotonic() <= 3 * 5 + worker_events.EXIT_GRACE_S + 1
    for _ in range(1000):                   # however many begins arrive, and whenever
        deadline.begin()
        deadline.started()
        assert deadline.overall == fixed and deadline.current <= fixed


# ---- 5: the environment is an allowlist ---------------------------------------------------------------------
ENVIRONMENT = r"""
extern char** environ;
__attribute__((constructor)) static void probe(void) {
  int marked = 0; for (char** e = environ; *e; ++e) if (strstr(*e, "leak-marker")) ++marked;
  fprintf(stderr, "probe marked=[%d] path=[%s] home=[%s]\n", marked, getenv("PATH") ? "set" : "unset", arg("HOME"));
  abort();
}
"""
LEAKY = {"DATABASE_URL": "postgres://app:leak-marker-pw@db:5432/x", "HTTPS_PROXY": "http://u:leak-marker@proxy:3128",
         "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/leak-marker", "MYSQL_PWD": "leak-marker-1",
         "ANTHROPIC_API_KEY": "sk-ant-api03-leak-marker-0000", "SOME_TOOL_CONFIG": "leak-marker"}


def test_the_worker_environment_is_an_allowlist(tmp_path, monkeypatch):
    for name, value in LEAKY.items():
        monkeypatch.setenv(name, value)
    seen = probe_line(run_probe(tmp_path, ENVIRONMENT)[1])
    assert seen["marked"] == "0", seen            # none of them, in any variable
    assert seen["path"] == "set" and seen["home"] == "/tmp/home", seen     # what it needs, and a private HOME
    assert sandbox.allowed_env({**LEAKY, "PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0", "LANG": "C.UTF-8",
                                "WORKBENCH_CUDA_TOKEN": "x"}) == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0",
                                                                  "LANG": "C.UTF-8"}


# ---- 6: the private folder has a total size cap -------------------------------------------------------------
FILL = r"""
__attribute__((constructor)) static void probe(void) {
  static char chunk[1 << 20]; memset(chunk, 'x', sizeof chunk);
  long long total = 0; const char* why = "none";
  for (int f = 0; f < 6 && !strcmp(why, "none"); ++f) {          /* six 64 MiB files, each under the file limit */
    char name[64]; snprintf(name, sizeof name, "/tmp/fill-%d", f);
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { why = strerror(errno); break; }
    for (int m = 0; m < 64; ++m) {
      ssize_t n = write(fd, chunk, sizeof chunk);
      if (n < 0) { why = strerror(errno); break; }
      total += n;
    }
    close(fd);
  }
  fprintf(stderr, "probe mib=[%lld] stop=[%s]\n", total >> 20, why);
  abort();
}
"""


def test_the_private_folder_has_a_total_size_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_SANDBOX_PRIVATE_MB", "256")
    seen = probe_line(run_probe(tmp_path, FILL)[1])
    assert int(seen["mib"]) <= 256 and seen["stop"] == "No space left on device", seen
