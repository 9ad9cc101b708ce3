"""No candidate process outlives its evaluation: the contained process runs in a PID namespace of its own.

    if proc_tree.fork_into_pid_namespace():     # returns in the contained process only (pid 2 of the namespace)
        ...run the worker...

The caller (still single-threaded, root) unshares a PID namespace and forks its init (pid 1); init forks the
contained process (pid 2) and reaps whatever is reparented to it. When pid 2 exits, init exits with its status,
and the kernel kills every process left in the namespace — a forked, `setsid` grandchild holding the result pipe
included — before the caller's wait returns. When the caller is killed (the harness's timeout), init gets SIGKILL
(PR_SET_PDEATHSIG; init keeps root's credentials, so the candidate cannot clear it), with the same effect.

Two processes in front of the worker, not one: pid 1 ignores every signal it has no handler for, so a worker
that were pid 1 could not abort() or be told to stop; as pid 2 it keeps the ordinary signal semantics, and its
exit status (a signal included) is passed on by init and re-raised by the caller, so `killed by SIGABRT` still
reads as such. Where no PID namespace can be made (not root, WORKBENCH_SANDBOX=off), it returns False and the
caller runs the work itself.

One more link: the caller itself dies with the harness process that started it (`die_with_parent`, the same death
signal), so a harness killed alone (SIGKILL by the OOM killer, a Ray worker killed on its node) leaves no
evaluation behind it, whether or not the caller could make a namespace.
"""
from __future__ import annotations

import ctypes
import os
import resource
import select
import signal

CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
SIGNAL_BASE = 128                  # init exits with 128 + N when the contained process was killed by signal N
PARENT_ENV = "WORKBENCH_WORKER_PARENT"   # the harness's pid, set by check.py for the worker it starts


def die_with_parent() -> None:
    """SIGKILL this process when the harness process named in PARENT_ENV dies; exit at once when it is gone
    already (the death signal is armed too late for it). The first process to call it consumes the variable,
    so the processes it forks (init, the contained worker) keep their own arrangement."""
    expected = os.environ.pop(PARENT_ENV, "")
    if not expected.isdigit():
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != int(expected):
        os._exit(SIGNAL_BASE + signal.SIGKILL)


def fork_into_pid_namespace() -> bool:
    """True in the contained process (the caller's work continues there); False when no PID namespace could be
    made (the caller continues unchanged). The caller's own process and init never return: they exit with the
    contained process's status."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWPID) != 0:
        return False
    alive_r, alive_w = os.pipe()   # the caller holds alive_w until it dies: init sees EOF if it came too late
    init = os.fork()
    if init == 0:
        os.close(alive_w)
        _be_init(libc, alive_r)
        return True                # only the contained process gets here
    os.close(alive_r)
    _detach_stdio()                # the result pipe's end must depend on the namespace alone
    _, status = os.waitpid(init, 0)
    _exit_like(status)
    return False                   # not reached


def _be_init(libc, alive_r: int) -> None:
    """pid 1: fork the contained process, reap everything, exit with the contained process's status."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([alive_r], [], [], 0)[0]:     # EOF: the caller died before the death signal was armed
        os._exit(SIGNAL_BASE + signal.SIGKILL)     # (getppid() is 0 for pid 1: it cannot tell)
    worker = os.fork()
    if worker == 0:
        os.close(alive_r)
        return
    _detach_stdio()
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # a terminal's ^C reaches the worker; init waits for it
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == worker:
            break
    if os.WIFSIGNALED(status):
        os._exit(SIGNAL_BASE + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _detach_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    os.close(null)


def _exit_like(status: int) -> None:
    """Exit as init said the contained process did: the same code, or the same signal (no core file)."""
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else SIGNAL_BASE + os.WTERMSIG(status)
    if code > SIGNAL_BASE and code - SIGNAL_BASE < signal.NSIG:
        sig = code - SIGNAL_BASE
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):     # SIGKILL and SIGSTOP have no handler to reset
            pass
        os.kill(os.getpid(), sig)
    os._exit(code)
