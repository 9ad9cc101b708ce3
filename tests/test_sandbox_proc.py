"""A contained process sees its own PID namespace in /proc: the CUDA driver reads /proc/<getpid()>/..., and with
the parent's /proc (pid 2 there is the host's kthreadd) every contained worker failed cuInit with error 304 on the
H200 (2026-12-01). The worker and `run` enter the namespaces through the same function (sandbox_entry.py)."""
from __future__ import annotations

import os
import sys

import pytest

from workbench.harness import sandbox
from workbench.harness.contained_run import run_contained

PROBE = ("import os; me = os.getpid(); stat = open('/proc/self/stat').read().split()[0]; "
         "cmd = open(f'/proc/{me}/cmdline', 'rb').read().split(b'\\0')[0].decode(); "
         "print(f'getpid={me} self={stat} cmd={os.path.basename(cmd)}')")


@pytest.mark.skipif(os.geteuid() != 0 or sandbox.mode() == "off", reason="namespaces are made only as root")
def test_the_contained_process_reads_its_own_pid_in_proc():
    result = run_contained([sys.executable, "-c", PROBE], timeout_s=120)
    assert result.returncode == 0, (result.stdout, result.stderr)
    line = next(x for x in result.stdout.splitlines() if x.startswith("getpid="))
    fields = dict(part.split("=", 1) for part in line.split())
    assert fields["getpid"] == "2", line            # pid 2 of a namespace of its own (init is pid 1)
    assert fields["self"] == fields["getpid"], line
    assert fields["cmd"].startswith("python"), line
