"""run_contained's diagnostics-only relaxations (issue 25's ncu hang): each named wall, and only it, is left down,
and the result says so; unknown names are refused before anything runs."""
import os
import sys

import pytest

from workbench.harness.contained_run import RELAXABLE, run_contained

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops privileges only when started as root")
PROBE = ("import os, socket\n"
         "def unix():\n"
         "    try:\n"
         "        socket.socket(socket.AF_UNIX).close(); return 'allowed'\n"
         "    except OSError as e:\n"
         "        return 'denied'\n"
         "nets = sorted(line.split(':')[0].strip() for line in open('/proc/self/net/dev').readlines()[2:])\n"
         "print(os.getuid(), os.getpid(), unix(), nets)\n")


def _probe(relax=()):
    run = run_contained([sys.executable, "-c", PROBE], timeout_s=60, relax=relax)
    assert run.returncode == 0, run.stderr
    uid, pid, unix, *nets = run.stdout.split(maxsplit=3)
    return int(uid), int(pid), unix, nets[0].strip(), run.notices


def test_an_unknown_wall_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="cannot relax root; one of uid, net"):
        run_contained(["true"], relax=("root",))
    assert "seccomp" in RELAXABLE


@needs_root
def test_every_wall_is_up_by_default_and_one_relaxed_wall_leaves_the_others_up():
    uid, pid, unix, nets, notices = _probe()        # pid: the program under the namespace's init; AF_UNIX for ncu
    assert uid != 0 and pid <= 3 and unix == "allowed" and nets == "['lo']"
    assert not any("left down" in n for n in notices)
    uid, pid, unix, nets, notices = _probe(("uid",))
    assert uid == 0 and pid <= 3 and unix == "allowed" and nets == "['lo']"
    assert "sandbox: diagnostics, walls left down: uid" in notices
    uid, pid, unix, nets, notices = _probe(("sockets",))
    assert uid != 0 and "sandbox: diagnostics, walls left down: sockets" in notices
    uid, pid, _, nets, _ = _probe(("pid", "net"))
    assert uid != 0 and pid > 3 and nets != "['lo']"
