"""Contain a candidate's host code: it runs as an unprivileged uid in namespaces of its own (mount, network, PID),
with a size-capped private /tmp, read-only mounts, a socket filter, rlimits and an allowlisted environment, never
as the user who started the harness.

Three things run untrusted text: nvcc (the source is the agent's), the evaluation worker (it loads the built
library, whose constructors and entry point are the agent's host code) and a profiler run (ncu_profile loads it
too). All go through here (the entry points are in sandbox_entry.py):

    python -m workbench.harness.sandbox_entry exec --uid U --gid G --dir D [limits] -- nvcc ...   # the build
    python -m workbench.harness.sandbox_entry worker              # the evaluation worker, in new namespaces
    python -m workbench.harness.sandbox_entry run --plan JSON [--copy N=P] -- ncu ...   # contained_run.py

`worker` enters a new mount and network namespace while the process is still single-threaded, then a PID
namespace (proc_tree.py: the whole process tree dies with the evaluation), then runs workbench.harness.worker,
which calls `contain()` once CUDA is initialised, the anchors are imported and the caches are read — i.e. after
it opened everything it needs as root, and before the candidate is loaded. `contain()` attaches the private
tmpfs (mounts.py: the size cap) over the private folder, copies the kernel libraries into it, mounts it over
/tmp, /var/tmp, /dev/shm and /run/lock, remounts every other filesystem read-only (device nodes, /proc and /sys
stay as they are: the GPU stays usable), sets rlimits (file size, processes, CPU time, no core dumps), switches
to a dedicated uid/gid (one per evaluation, with no supplementary groups and no_new_privs) and installs the
socket filter (seccomp.py). Caches the worker writes afterwards are staged in the private folder; the parent
merges them (staged_cache.py) after the worker exits, never following a link the candidate may have planted.

What is contained depends on the machine, and is said: each missing piece is a printed notice, and the
result records what held (`versions["sandbox"]`). WORKBENCH_SANDBOX=off turns containment off, =require
makes any missing piece an error. Started as a non-root user nothing can be dropped: the candidate runs as
that user (notice). See docs/security.md for the threat model.
"""
from __future__ import annotations

import ctypes
import os
import pwd
import re
import resource
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workbench.harness import mounts, seccomp
from workbench.harness.paths import REPO_ROOT

MODE_ENV = "WORKBENCH_SANDBOX"          # auto | off | require
NS_ENV = "WORKBENCH_SANDBOX_NS"         # set by `sandbox worker` for the worker: which namespaces it entered
UID_BASE = int(os.environ.get("WORKBENCH_SANDBOX_UID_BASE", "61000"))
UID_RANGE = 4000
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PWD|AUTH|COOKIE|SESSION", re.IGNORECASE)
# The only variables a contained process gets (and none whose name looks like a secret): what the CUDA driver,
# torch, the compiler and the worker read. Anything else (DATABASE_URL, HTTPS_PROXY, SLACK_WEBHOOK_URL, ...) stays out.
ENV_ALLOWED = re.compile(r"^(?:PATH|LANG|LANGUAGE|TZ|LC_[A-Z]+|LD_LIBRARY_PATH|CUDA_[A-Z0-9_]+|NVIDIA_[A-Z0-9_]+|"
                         r"PYTORCH_[A-Z0-9_]+|TORCH_[A-Z0-9_]+|WORKBENCH_[A-Z0-9_]+|OMP_NUM_THREADS|MKL_NUM_THREADS|"
                         r"OPENBLAS_NUM_THREADS|PYTHONHASHSEED|PYTHONUNBUFFERED|NVCC_[A-Z_]+|CC|CXX|CUDAHOSTCXX|"
                         r"CPATH|C_INCLUDE_PATH|CPLUS_INCLUDE_PATH|LIBRARY_PATH|VIRTUAL_ENV|CONDA_PREFIX)$")
PRIVATE_CAP_ENV = "WORKBENCH_SANDBOX_PRIVATE_MB"   # the private folder's size cap (MiB) for evaluations

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_REC, MS_PRIVATE = 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38


@dataclass
class Limits:
    cpu_s: int = 3600                    # CPU seconds of the whole process (all threads)
    fsize_bytes: int = 256 << 20         # largest file it may write
    nproc: int = 512                     # tasks (threads included) of its uid
    address_space_bytes: int = 0         # 0: unlimited (CUDA maps far more virtual memory than it uses)
    private_bytes: int = 0               # total size of the private folder (a tmpfs); 0: a plain folder, no cap


def mode() -> str:
    value = os.environ.get(MODE_ENV, "auto").strip().lower()
    return value if value in ("auto", "off", "require") else "auto"


def allowed_env(env: dict) -> dict:
    """The environment a contained process gets: the allowlisted names only, never one named like a secret."""
    return {k: v for k, v in env.items() if ENV_ALLOWED.match(k) and not SECRET_NAME.search(k)}


def private_cap_bytes() -> int:
    """The evaluation's private folder cap: WORKBENCH_SANDBOX_PRIVATE_MB (default 512 MiB; a tmpfs, so memory)."""
    value = os.environ.get(PRIVATE_CAP_ENV, "").strip()
    return (int(value) if value.isdigit() and int(value) > 0 else 512) << 20


def pick_ids() -> tuple[int, int]:
    """A uid/gid no account uses, different for each evaluation (workers cannot signal one another)."""
    start = os.getpid() + int.from_bytes(os.urandom(2), "little")
    for k in range(UID_RANGE):
        uid = UID_BASE + (start + k) % UID_RANGE
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid, uid
    raise RuntimeError(f"no free uid in {UID_BASE}..{UID_BASE + UID_RANGE}; set WORKBENCH_SANDBOX_UID_BASE")


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _call(fn, *args) -> str:
    """'' on success, else the error text."""
    if fn(*args) == 0:
        return ""
    return os.strerror(ctypes.get_errno())


# ---- parent side ------------------------------------------------------------------------------------------
@dataclass
class Plan:
    """How one evaluation worker (or one nvcc run) is contained; crosses to the worker as job["sandbox"]."""
    enabled: bool
    uid: int = -1
    gid: int = -1
    dir: str = ""
    limits: Limits = field(default_factory=Limits)
    notices: list = field(default_factory=list)
    tmpfs_fd: int = -1       # the parent's fd of the private tmpfs (mounts.detached_tmpfs), passed to the child
    relax: list = field(default_factory=list)   # walls left down: diagnostics only (contained_run.RELAXABLE)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> "Plan":
        data = dict(data or {"enabled": False})
        data["limits"] = Limits(**data.get("limits", {}))
        return cls(**data)


def plan(prefix: str, limits: Limits | None = None) -> Plan:
    """A uid and a private folder (owned by it) when this process may drop privileges, else a Plan that says
    why not (mode off, or not root)."""
    limits = limits or Limits()
    if mode() == "off":
        return Plan(False, limits=limits, notices=[f"{MODE_ENV}=off: candidate code runs unconfined, as "
                                                   f"{_whoami()}"])
    if os.geteuid() != 0:
        return Plan(False, limits=limits, notices=[f"not started as root: the candidate runs as {_whoami()} "
                                                   "(only rlimits apply); start as root to contain it"])
    uid, gid = pick_ids()
    _remove_stale_dirs()
    directory = Path(tempfile.mkdtemp(prefix=f"workbench-{prefix}-{os.getpid()}-"))
    os.chown(directory, uid, gid)
    os.chmod(directory, 0o700)
    p = Plan(True, uid, gid, str(directory), limits)
    if limits.private_bytes > 0:
        p.tmpfs_fd, why = mounts.detached_tmpfs(limits.private_bytes, uid, gid)
        if why:
            p.notices.append(f"sandbox: no size cap on the private folder here ({why})")
    return p


_stale_checked = False


def _remove_stale_dirs() -> None:
    """Private folders left by a harness process that was killed (its pid, in the name, is gone); once per process."""
    global _stale_checked
    if _stale_checked:
        return
    _stale_checked = True
    for directory in Path(tempfile.gettempdir()).glob("workbench-*-*-*"):
        pid = directory.name.split("-")[2]
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                shutil.rmtree(directory, ignore_errors=True)
            except PermissionError:
                pass


def staged_dir(p: Plan) -> Path:
    """Where the parent reads what the contained process left in its private folder (after it exited): the tmpfs,
    through the parent's fd, when the process attached it (the folder on the host then stays empty)."""
    attached = p.tmpfs_fd >= 0 and p.dir and not any(Path(p.dir).iterdir())
    return mounts.through_fd(p.tmpfs_fd) if attached else Path(p.dir)


def pass_fds(p: Plan) -> tuple:
    """The fds the contained process must inherit (Popen(pass_fds=...))."""
    return (p.tmpfs_fd,) if p.tmpfs_fd >= 0 else ()


def cleanup(p: Plan) -> None:
    if p.tmpfs_fd >= 0:
        os.close(p.tmpfs_fd)                         # the tmpfs and its contents are freed with the last reference
        p.tmpfs_fd = -1
    if p.dir:
        shutil.rmtree(p.dir, ignore_errors=True)     # rmtree never follows a symlink the candidate left


def worker_command(p: Plan) -> list[str]:
    module = "workbench.harness.sandbox_entry" if p.enabled else "workbench.harness.worker"
    return [sys.executable, "-m", module] + (["worker"] if p.enabled else [])


def exec_command(p: Plan, argv: list[str]) -> list[str]:
    """argv run by the `exec` helper: rlimits, no network, then (when enabled) the dropped uid."""
    lim = p.limits
    ids = ["--uid", str(p.uid), "--gid", str(p.gid)] if p.enabled else []
    return [sys.executable, "-m", "workbench.harness.sandbox_entry", "exec", *ids, "--dir", p.dir or os.getcwd(),
            "--cpu", str(lim.cpu_s), "--fsize", str(lim.fsize_bytes), "--nproc", str(lim.nproc),
            "--as", str(lim.address_space_bytes), "--", *argv]


def child_env(env: dict, p: Plan) -> dict:
    # the caller's import path stays (where the anchors' packages were installed, e.g. FA3 under
    # scripts/gpu_wheels.sh's --target folder); allowed_env alone dropped it, and the H200 run of 2026-12-01
    # judged every kernel without FA3 ('No module named fa3_fwd_interface' in the worker only)
    import_path = env.get("PYTHONPATH", "")
    env = allowed_env(env)
    if p.enabled:
        env["HOME"] = str(Path(p.dir) / "home")     # the contained process's own (contain() makes it)
    elif "HOME" in os.environ:
        env["HOME"] = os.environ["HOME"]             # not contained: it runs as this user anyway
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), import_path]).rstrip(os.pathsep)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def describe_exit(returncode: int | None) -> str:
    """'exited with code 3' or 'killed by SIGABRT (-6)'."""
    import signal

    if returncode is None:
        return "did not exit"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} ({returncode})"
    return f"exited with code {returncode}"


def _whoami() -> str:
    uid = os.geteuid()
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


# ---- child side ---------------------------------------------------------------------------------------------
def enter_namespaces(net: bool = True) -> list[str]:
    """New mount and (unless `net` is false: a diagnosis only) network namespaces for this (still
    single-threaded) process; what was entered."""
    if os.geteuid() != 0 or mode() == "off":
        return []
    libc = _libc()
    entered = []
    if not _call(libc.unshare, CLONE_NEWNS) and not _call(libc.mount, None, b"/", None, MS_REC | MS_PRIVATE, None):
        entered.append("mnt")
    if net and not _call(libc.unshare, CLONE_NEWNET):
        entered.append("net")
    return entered


def set_limits(limits: Limits) -> None:
    def cap(kind, value):
        if value and value > 0:
            hard = resource.getrlimit(kind)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value if kind != resource.RLIMIT_CPU else value + 30))
    cap(resource.RLIMIT_CPU, limits.cpu_s)
    cap(resource.RLIMIT_FSIZE, limits.fsize_bytes)
    cap(resource.RLIMIT_NPROC, limits.nproc)
    cap(resource.RLIMIT_AS, limits.address_space_bytes)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError(f"could not become uid {uid}")
    _libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


@dataclass
class Contained:
    libraries: dict            # name -> path to load the library from now on
    summary: str               # one line: what holds (recorded with the results)
    notices: list              # what does not hold, to print
    cache_dir: Path | None     # where caches are staged for the parent (None: write the real cache)


def contain(p: Plan, libraries: dict | None = None) -> Contained:
    """Everything after which candidate code may run (see the module doc). Raises RuntimeError under
    WORKBENCH_SANDBOX=require when a piece is missing."""
    libraries = dict(libraries or {})
    notices = list(p.notices)
    if not p.enabled:
        set_limits(p.limits)
        if mode() != "off" and seccomp.install():    # nothing to drop, but the socket filter needs no root
            notices.append("sandbox: no socket filter here")
        if mode() == "require":
            raise RuntimeError("WORKBENCH_SANDBOX=require: " + "; ".join(notices or ["no sandbox"]))
        return Contained(libraries, "not contained: " + (notices[0] if notices else "sandbox disabled"), notices,
                         None)
    namespaces = os.environ.get(NS_ENV, "").split(",")
    inside, capped = private_folder(p, {f"{k}.so": v for k, v in libraries.items()}, namespaces, notices)
    os.chdir(inside)
    os.environ.update(TMPDIR=str(inside), HOME=str(inside / "home"), TEMP=str(inside), TMP=str(inside))
    tempfile.tempdir = str(inside)
    set_limits(p.limits)
    drop_privileges(p.uid, p.gid)
    why = seccomp.install(seccomp.WORKER_FAMILIES)
    if why:
        notices.append(f"sandbox: {why}: the candidate can open UNIX sockets")
    if mode() == "require" and len(notices) > len(p.notices):
        raise RuntimeError("WORKBENCH_SANDBOX=require: " + "; ".join(notices[len(p.notices):]))
    return Contained({k: str(inside / "lib" / f"{k}.so") for k in libraries}, held(p, namespaces, capped, not why),
                     notices, inside / "cache")


def private_folder(p: Plan, files: dict, namespaces: list, notices: list, reach=None) -> tuple[Path, bool]:
    """As root, in the new mount namespace: the private folder (the size-capped tmpfs attached over it, `files`
    (name -> path) copied into lib/, cache/ and home/ for the uid) mounted over the shared folders, the rest
    read-only. `reach` (for a program started after the uid drop): the folders it needs besides Python and the
    package, reachable even from inside a closed home (mounts.open_private_homes). Returns (where the private
    folder is seen from now on, whether it is capped); appends notices."""
    private, capped = Path(p.dir), False
    if p.tmpfs_fd >= 0:
        # never attached outside a namespace of our own: it would be a mount on the host
        why = mounts.attach(p.tmpfs_fd, private) if "mnt" in namespaces else "no mount namespace"
        os.close(p.tmpfs_fd)
        capped = not why
        if why:
            notices.append(f"sandbox: no size cap on the private folder here ({why})")
    (private / "lib").mkdir(exist_ok=True)
    for name, path in files.items():                # the build cache may sit where the uid cannot read
        target = private / "lib" / name
        shutil.copyfile(path, target)
        os.chmod(target, 0o444)
    for sub in ("cache", "home"):
        (private / sub).mkdir(exist_ok=True)
        os.chown(private / sub, p.uid, p.gid)
    inside = private
    if "mnt" in namespaces:
        problems = mounts.open_private_homes(reach) if reach is not None else []
        problems += mounts.private_mounts(private, reach or ())
        notices += [f"sandbox: {x}" for x in problems]
        if not any(x.startswith("/tmp ") for x in problems):
            inside = Path("/tmp")                    # the private folder is mounted there now
    else:
        notices.append("sandbox: no mount namespace here: the candidate can write to world-writable folders")
    if "net" not in namespaces:
        notices.append("sandbox: no network namespace here: the candidate can open network connections")
    if "pid" not in namespaces:
        notices.append("sandbox: no PID namespace here: a process the candidate starts can outlive the evaluation")
    return inside, capped


def held(p: Plan, namespaces: list, capped: bool, filtered: bool) -> str:
    """One line: what holds (recorded with the results)."""
    cap = f"{p.limits.private_bytes >> 20} MiB" if capped else "no cap"
    return ", ".join([f"uid {p.uid}", "no network" if "net" in namespaces else "network",
                      "private /tmp, read-only mounts" if "mnt" in namespaces else "shared /tmp",
                      f"private folder {cap}", "own PID namespace" if "pid" in namespaces else "shared PIDs",
                      "socket filter" if filtered else "no socket filter", f"rlimits cpu {p.limits.cpu_s} s, "
                      f"file {p.limits.fsize_bytes >> 20} MiB, tasks {p.limits.nproc}"])

