"""A seccomp filter on socket families: candidate code may not open a socket of a family it does not need.

A network namespace hides every network interface but its own loopback; it does not hide filesystem UNIX sockets
(a 0666 socket under /run answers a connect() from any namespace). So the contained processes also get a BPF
filter, installed for all threads at once (SECCOMP_FILTER_FLAG_TSYNC) after no_new_privs:

  * socket(family, ...) fails with EACCES unless `family` is in the allowed set (none for the evaluation worker;
    AF_INET/AF_INET6/AF_UNIX for a profiler run, whose target talks to Nsight Compute over UNIX sockets and the
    loopback of its own, empty network namespace: abstract UNIX names are that namespace's, and the host's
    filesystem sockets are hidden under /dev/null in its mount namespace, host_sockets.py). socketpair() stays
    allowed: a pair is connected only to itself.
  * connect() fails with EACCES when no family is allowed (a socket inherited from elsewhere is not a way out);
  * io_uring_setup/enter/register fail with ENOSYS (io_uring can open and connect sockets without socket());
  * a system call of another ABI (i386 `int $0x80`, x32) fails with ENOSYS: only the native table is checked.

The CUDA driver talks to the GPU through ioctl() on /dev/nvidia*, which this filter does not touch; the
nvidia-persistenced socket is optional for CUDA (and CUDA is initialised before the filter is installed).
Linux on x86_64 and aarch64; elsewhere `install` says why it did nothing.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import socket
import struct

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
X32_SYSCALL_BIT = 0x40000000

# machine -> (audit arch, seccomp, socket, connect, io_uring_setup/enter/register)
_ABI = {
    "x86_64": (0xC000003E, 317, 41, 42, (425, 426, 427)),
    "aarch64": (0xC00000B7, 277, 198, 203, (425, 426, 427)),
}
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16                          # offsets in struct seccomp_data (args[0]: its low 32 bits)
WORKER_FAMILIES: frozenset = frozenset()
PROFILE_FAMILIES = frozenset({socket.AF_INET, socket.AF_INET6, socket.AF_UNIX})   # ncu needs all three


class _Program:
    """A BPF program with symbolic jump targets (resolved when built)."""

    def __init__(self):
        self.ops: list = []          # (code, jt, jf, k); jt/jf may be label names
        self.labels: dict = {}

    def op(self, code: int, k: int, jt=0, jf=0) -> None:
        self.ops.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ops)

    def build(self) -> bytes:
        out = b""
        for i, (code, jt, jf, k) in enumerate(self.ops):
            jt = self.labels[jt] - i - 1 if isinstance(jt, str) else jt
            jf = self.labels[jf] - i - 1 if isinstance(jf, str) else jf
            out += struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)
        return out


def program(families: frozenset, machine: str | None = None) -> bytes:
    """The filter as struct sock_filter[] bytes."""
    arch, _, nr_socket, nr_connect, uring = _ABI[machine or platform.machine()]
    p = _Program()
    p.op(_LD_W_ABS, _ARCH)
    p.op(_JEQ_K, arch, 0, "enosys")
    p.op(_LD_W_ABS, _NR)
    p.op(_JGE_K, X32_SYSCALL_BIT, "enosys", 0)
    p.op(_JEQ_K, nr_socket, "socket", 0)
    if not families:
        p.op(_JEQ_K, nr_connect, "eacces", 0)
    for nr in uring:
        p.op(_JEQ_K, nr, "enosys", 0)
    p.op(_RET_K, RET_ALLOW)
    p.label("socket")
    p.op(_LD_W_ABS, _ARG0)
    for family in sorted(families):
        p.op(_JEQ_K, family, "allow", 0)
    p.label("eacces")
    p.op(_RET_K, RET_ERRNO | errno.EACCES)
    p.label("enosys")
    p.op(_RET_K, RET_ERRNO | errno.ENOSYS)
    p.label("allow")
    p.op(_RET_K, RET_ALLOW)
    return p.build()


def install(families: frozenset = WORKER_FAMILIES) -> str:
    """Install the filter on every thread of this process (irreversible, inherited by children and exec).
    Returns '' on success, else why not."""
    machine = platform.machine()
    if machine not in _ABI:
        return f"no socket filter on {machine} (x86_64 and aarch64 only)"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no socket filter: no_new_privs: {ctypes.get_errno()}"
    code = program(families, machine)
    filters = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = SockFprog(len(code) // 8, ctypes.addressof(filters))
    libc.syscall.restype = ctypes.c_long
    rc = libc.syscall(ctypes.c_long(_ABI[machine][1]), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                      ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(prog))
    if rc == 0:
        return ""
    if rc > 0:
        return f"no socket filter: thread {rc} could not be synchronised"
    return f"no socket filter: seccomp: {errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())}"
