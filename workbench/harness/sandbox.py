"""Contain a candidate's host code: it runs as an unprivileged uid with a private /tmp, no network, read-only
mounts and rlimits, never as the user who started the harness.

Two things run untrusted text: nvcc (the source is the agent's) and the evaluation worker (it loads the built
library, whose constructors and entry point are the agent's host code). Both go through here:

    python -m workbench.harness.sandbox exec --uid U --gid G --dir D [limits] -- nvcc ...   # the build
    python -m workbench.harness.sandbox worker                    # the evaluation worker, in new namespaces

`worker` enters a new mount and network namespace while the process is still single-threaded, then runs
workbench.harness.worker, which calls `contain()` once CUDA is initialised, the anchors are imported and the
caches are read — i.e. after it opened everything it needs as root, and before the candidate is loaded.
`contain()` copies the kernel libraries into the private folder, mounts that folder over /tmp, /var/tmp,
/dev/shm and /run/lock, remounts every other filesystem read-only (device nodes, /proc and /sys stay as they
are: the GPU stays usable), sets rlimits (file size, processes, CPU time, no core dumps), and switches to a
dedicated uid/gid (one per evaluation, with no supplementary groups and no_new_privs). Caches the worker
writes afterwards are staged in the private folder; the parent merges them (staged_cache.py) after the worker
exits, never following a link the candidate may have planted.

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

from workbench.harness.paths import REPO_ROOT

MODE_ENV = "WORKBENCH_SANDBOX"          # auto | off | require
NS_ENV = "WORKBENCH_SANDBOX_NS"         # set by `sandbox worker` for the worker: which namespaces it entered
UID_BASE = int(os.environ.get("WORKBENCH_SANDBOX_UID_BASE", "61000"))
UID_RANGE = 4000
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
WRITABLE_SHARED = ("/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue", "/tmp")   # /tmp last
KEEP_WRITABLE = ("/proc", "/sys", "/dev", "/dev/pts")
CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
PR_SET_NO_NEW_PRIVS = 38


@dataclass
class Limits:
    cpu_s: int = 3600                    # CPU seconds of the whole process (all threads)
    fsize_bytes: int = 256 << 20         # largest file it may write
    nproc: int = 512                     # tasks (threads included) of its uid
    address_space_bytes: int = 0         # 0: unlimited (CUDA maps far more virtual memory than it uses)


def mode() -> str:
    value = os.environ.get(MODE_ENV, "auto").strip().lower()
    return value if value in ("auto", "off", "require") else "auto"


def secret_free_env(env: dict) -> dict:
    """The environment without the variables that hold secrets (API keys must never reach candidate code)."""
    return {k: v for k, v in env.items() if not SECRET_NAME.search(k)}


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
    return Plan(True, uid, gid, str(directory), limits)


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


def cleanup(p: Plan) -> None:
    if p.dir:
        shutil.rmtree(p.dir, ignore_errors=True)     # rmtree never follows a symlink the candidate left


def worker_command(p: Plan) -> list[str]:
    module = "workbench.harness.sandbox" if p.enabled else "workbench.harness.worker"
    return [sys.executable, "-m", module] + (["worker"] if p.enabled else [])


def exec_command(p: Plan, argv: list[str]) -> list[str]:
    """argv run by the `exec` helper: rlimits, no network, then (when enabled) the dropped uid."""
    lim = p.limits
    ids = ["--uid", str(p.uid), "--gid", str(p.gid)] if p.enabled else []
    return [sys.executable, "-m", "workbench.harness.sandbox", "exec", *ids, "--dir", p.dir or os.getcwd(),
            "--cpu", str(lim.cpu_s), "--fsize", str(lim.fsize_bytes), "--nproc", str(lim.nproc),
            "--as", str(lim.address_space_bytes), "--", *argv]


def child_env(env: dict, p: Plan) -> dict:
    env = secret_free_env(env)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
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
def enter_namespaces() -> list[str]:
    """New mount and network namespaces for this (still single-threaded) process; what was entered."""
    if os.geteuid() != 0 or mode() == "off":
        return []
    libc = _libc()
    entered = []
    if not _call(libc.unshare, CLONE_NEWNS) and not _call(libc.mount, None, b"/", None, MS_REC | MS_PRIVATE, None):
        entered.append("mnt")
    if not _call(libc.unshare, CLONE_NEWNET):
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


def _mount_points() -> list[tuple[str, set]]:
    points = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return points
    for line in lines:
        fields = line.split()
        if len(fields) > 5:
            target = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            points.append((target, set(fields[5].split(","))))
    return points


def _still_needed_under(target: str) -> list[str]:
    """Folders the worker still reads after containment (the Python installation, the package, sys.path) that lie
    inside `target`, outermost only: a checkout or virtual environment under /tmp (a CI clone, say) must stay
    visible when the private folder covers /tmp, or the next lazy import fails."""
    wanted = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(REPO_ROOT), *(x for x in sys.path if x)}
    inside = sorted({os.path.realpath(x) for x in wanted if os.path.isdir(x)})
    inside = [x for x in inside if x.startswith(target.rstrip("/") + "/")]
    return [x for x in inside if not any(x.startswith(o + "/") for o in inside if o != x)]


def private_mounts(private: Path) -> list[str]:
    """Mount `private` over the world-writable folders and remount everything else read-only (in this mount
    namespace only). Folders the worker still needs below a covered one are bound back in (read-only, like
    everything else). Returns what could not be done."""
    libc = _libc()
    problems = []
    for target in WRITABLE_SHARED:
        if os.path.isdir(target) and not os.path.islink(target):
            # held open across the cover: /proc/self/fd/N still names the folder underneath afterwards
            keep = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in _still_needed_under(target)}
            why = _call(libc.mount, os.fsencode(private), os.fsencode(target), None, MS_BIND, None)
            if why:
                problems.append(f"{target} stays shared ({why})")
            for path, fd in keep.items():
                if not why:
                    point = Path(path)
                    point.mkdir(parents=True, exist_ok=True)   # inside the private folder now
                    again = _call(libc.mount, os.fsencode(f"/proc/self/fd/{fd}"), os.fsencode(path), None,
                                  MS_BIND | MS_REC, None)
                    if again:
                        problems.append(f"{path} is hidden by the private {target} ({again})")
                os.close(fd)
    bound = set(WRITABLE_SHARED)
    failed = 0
    for target, options in _mount_points():
        if target in bound or any(target == k or target.startswith(k + "/") for k in ("/proc", "/sys")) \
                or target in KEEP_WRITABLE:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        flags |= MS_NOSUID if "nosuid" in options else 0
        flags |= MS_NODEV if "nodev" in options else 0
        flags |= MS_NOEXEC if "noexec" in options else 0
        if _call(libc.mount, None, os.fsencode(target), None, flags, None):
            failed += 1
    if failed:
        problems.append(f"{failed} mount(s) stay writable")
    return problems


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
        if mode() == "require":
            raise RuntimeError("WORKBENCH_SANDBOX=require: " + "; ".join(notices or ["no sandbox"]))
        return Contained(libraries, "not contained: " + (notices[0] if notices else "sandbox disabled"), notices,
                         None)
    private = Path(p.dir)
    (private / "lib").mkdir(exist_ok=True)
    names = {}
    for name, path in libraries.items():            # the build cache may sit where the uid cannot read
        target = private / "lib" / f"{name}.so"
        shutil.copyfile(path, target)
        os.chmod(target, 0o444)
        names[name] = target.name
    for sub in ("cache", "home"):
        (private / sub).mkdir(exist_ok=True)
        os.chown(private / sub, p.uid, p.gid)
    namespaces = os.environ.get(NS_ENV, "").split(",")
    inside = private
    if "mnt" in namespaces:
        problems = private_mounts(private)
        notices += [f"sandbox: {x}" for x in problems]
        if not any(x.startswith("/tmp ") for x in problems):
            inside = Path("/tmp")                    # the private folder is mounted there now
    else:
        notices.append("sandbox: no mount namespace here: the candidate can write to world-writable folders")
    if "net" not in namespaces:
        notices.append("sandbox: no network namespace here: the candidate can open network connections")
    os.chdir(inside)
    os.environ.update(TMPDIR=str(inside), HOME=str(inside / "home"), TEMP=str(inside), TMP=str(inside))
    tempfile.tempdir = str(inside)
    set_limits(p.limits)
    drop_privileges(p.uid, p.gid)
    if mode() == "require" and len(notices) > len(p.notices):
        raise RuntimeError("WORKBENCH_SANDBOX=require: " + "; ".join(notices[len(p.notices):]))
    held = [f"uid {p.uid}", "no network" if "net" in namespaces else "network",
            "private /tmp, read-only mounts" if "mnt" in namespaces else "shared /tmp",
            f"rlimits cpu {p.limits.cpu_s} s, file {p.limits.fsize_bytes >> 20} MiB, tasks {p.limits.nproc}"]
    return Contained({name: str(inside / "lib" / n) for name, n in names.items()}, ", ".join(held), notices,
                     inside / "cache")


# ---- the two entry points ---------------------------------------------------------------------------------
def _exec_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="workbench.harness.sandbox exec")
    parser.add_argument("--uid", type=int)
    parser.add_argument("--gid", type=int)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--fsize", type=int, default=0)
    parser.add_argument("--nproc", type=int, default=0)
    parser.add_argument("--as", dest="address_space", type=int, default=0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if os.geteuid() == 0 and mode() != "off":
        _call(_libc().unshare, CLONE_NEWNET)         # no network for the compiler either
    os.chdir(args.dir)
    set_limits(Limits(args.cpu, args.fsize, args.nproc, args.address_space))
    if args.uid is not None:
        drop_privileges(args.uid, args.gid)
    env = dict(os.environ, TMPDIR=args.dir, HOME=args.dir)
    try:
        os.execvpe(command[0], command, env)
    except OSError as err:
        print(f"sandbox: cannot run {command[0]}: {err.strerror}", file=sys.stderr)
        return 127


def _worker_main() -> int:
    import runpy

    os.environ[NS_ENV] = ",".join(enter_namespaces())
    sys.argv = ["workbench.harness.worker"]
    runpy.run_module("workbench.harness.worker", run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["exec"]:
        sys.exit(_exec_main(sys.argv[2:]))
    if sys.argv[1:2] == ["worker"]:
        sys.exit(_worker_main())
    print("usage: python -m workbench.harness.sandbox exec|worker ...", file=sys.stderr)
    sys.exit(2)
