"""The sandbox's three process entry points (sandbox.py says what each wall is):

    python -m workbench.harness.sandbox_entry exec --uid U --gid G --dir D [limits] -- nvcc ...   # a build
    python -m workbench.harness.sandbox_entry worker            # the evaluation worker (its job on stdin)
    python -m workbench.harness.sandbox_entry run --plan JSON [--copy NAME=PATH] -- ARGV...     # contained_run.py

`exec` runs a trusted program (the compiler) on untrusted input: no network, rlimits, the build's uid. `worker`
enters the namespaces, then runs the worker module, which contains itself once its imports are done
(sandbox.contain). `run` runs a program that loads candidate code itself (Nsight Compute and launch_one): every
wall is up before it starts — namespaces (with a loopback of its own, for the profiler's connection to its
target), the private folder (NAME copied to {private}/lib/NAME; `{private}` in ARGV names it), the host's
filesystem UNIX sockets hidden (host_sockets.py), rlimits, the uid, the socket filter (inet and UNIX sockets
allowed: the namespace holds nothing but the loopback, and the profiler's frontend talks to its target over both).
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import shutil
import sys
import tempfile
from pathlib import Path

from workbench.harness import host_sockets, mounts, proc_tree, sandbox, seccomp


def _exec_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="workbench.harness.sandbox_entry exec")
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
    if os.geteuid() == 0 and sandbox.mode() != "off":
        sandbox._call(sandbox._libc().unshare, sandbox.CLONE_NEWNET)         # no network for the compiler either
    os.chdir(args.dir)
    sandbox.set_limits(sandbox.Limits(args.cpu, args.fsize, args.nproc, args.address_space))
    if args.uid is not None:
        sandbox.drop_privileges(args.uid, args.gid)
    env = dict(os.environ, TMPDIR=args.dir, HOME=args.dir)
    try:
        os.execvpe(command[0], command, env)
    except OSError as err:
        print(f"sandbox: cannot run {command[0]}: {err.strerror}", file=sys.stderr)
        return 127


def _enter_pid_namespace(entered: list[str]) -> list[str]:
    """The PID namespace on top of the mount and network ones, with a /proc of its own (the CUDA driver reads
    /proc/<getpid()>); without a private mount namespace there is no /proc to replace, so no PID namespace."""
    if "mnt" not in entered or not proc_tree.fork_into_pid_namespace():
        return entered
    why = mounts.mount_own_proc()
    if why:   # the driver would fail on the parent's /proc: stop here, the harness reports the worker's exit
        print(f"sandbox: cannot mount a /proc for the PID namespace: {why}", file=sys.stderr)
        sys.exit(4)
    return entered + ["pid"]


def _worker_main() -> int:
    proc_tree.die_with_parent()          # before anything else: a harness killed now takes this process with it
    entered = _enter_pid_namespace(sandbox.enter_namespaces())
    os.environ[sandbox.NS_ENV] = ",".join(entered)
    sys.argv = ["workbench.harness.worker"]
    runpy.run_module("workbench.harness.worker", run_name="__main__", alter_sys=True)
    return 0


def _run_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="workbench.harness.sandbox_entry run")
    parser.add_argument("--plan", required=True, help="sandbox.Plan as JSON")
    parser.add_argument("--copy", action="append", default=[], help="NAME=PATH: copied to {private}/lib/NAME")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    plan = sandbox.Plan.from_dict(json.loads(args.plan))
    files = dict(item.split("=", 1) for item in args.copy)
    notices = list(plan.notices)
    if not plan.enabled:                  # nothing to drop (not root) or WORKBENCH_SANDBOX=off
        inside = Path(plan.dir or tempfile.mkdtemp(prefix="workbench-run-"))
        for sub in ("lib", "home"):
            (inside / sub).mkdir(exist_ok=True)
        for name, path in files.items():
            Path(inside / "lib" / name).write_bytes(Path(path).read_bytes())
        if sandbox.mode() != "off":
            sandbox.set_limits(plan.limits)
            if seccomp.install(seccomp.PROFILE_FAMILIES):
                notices.append("sandbox: no socket filter here")
            notices.append("sandbox: no mount namespace here: the host's UNIX sockets stay reachable")
    else:
        relax = set(plan.relax)            # diagnostics only (contained_run.RELAXABLE), empty otherwise
        host_sockets_bound = host_sockets.bound_paths()     # the host's network namespace's, read before leaving it
        entered = sandbox.enter_namespaces(net="net" not in relax)
        why = mounts.bring_up_loopback() if "net" in entered else ""
        if why:                            # the profiler cannot reach its target then: say why it will fail
            notices.append(f"sandbox: the new network namespace has no loopback ({why})")
        if "pid" not in relax:
            entered = _enter_pid_namespace(entered)
        program = shutil.which(command[0]) if command else None
        reach = [os.path.dirname(os.path.realpath(program))] if program else []
        inside, _ = sandbox.private_folder(plan, files, entered, notices, reach)
        if "mnt" in entered and "sockets" not in relax:   # the filter lets AF_UNIX through: the host's stay hidden
            _, problems = host_sockets.mask(host_sockets_bound + host_sockets.scanned_paths())
            notices += [f"sandbox: {x}" for x in problems]
        elif "sockets" not in relax:
            notices.append("sandbox: no mount namespace here: the host's UNIX sockets stay reachable")
        if "limits" not in relax:
            sandbox.set_limits(plan.limits)
        if "uid" not in relax:
            sandbox.drop_privileges(plan.uid, plan.gid)
        why = "" if "seccomp" in relax else seccomp.install(seccomp.PROFILE_FAMILIES)
        if why:
            notices.append(f"sandbox: {why}")
    for notice in notices:
        print(notice, file=sys.stderr)
    if sandbox.mode() == "require" and (notices or not plan.enabled):
        print("sandbox: WORKBENCH_SANDBOX=require: " + "; ".join(notices or ["no sandbox"]), file=sys.stderr)
        return 3
    command = [part.replace("{private}", str(inside)) for part in command]
    os.chdir(inside)
    env = dict(os.environ, TMPDIR=str(inside), TEMP=str(inside), TMP=str(inside), HOME=str(inside / "home"))
    try:
        os.execvpe(command[0], command, env)
    except OSError as err:
        print(f"sandbox: cannot run {command[0]}: {err.strerror}", file=sys.stderr)
        return 127


def main(argv: list[str]) -> int:
    if argv[:1] == ["exec"]:
        return _exec_main(argv[1:])
    if argv[:1] == ["worker"]:
        return _worker_main()
    if argv[:1] == ["run"]:
        return _run_main(argv[1:])
    print("usage: python -m workbench.harness.sandbox_entry exec|worker|run ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
