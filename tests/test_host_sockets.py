"""A profiler run keeps AF_UNIX (Nsight Compute needs it) but reaches none of the host's UNIX sockets: the host's
filesystem sockets are hidden under /dev/null in its mount namespace, its abstract names are another network
namespace's, and a socket of its own in its private /tmp still works (host_sockets.py, issue 25 attack 2)."""
import os
import shutil
import socket
import sys
import uuid
from pathlib import Path

import pytest

from workbench.harness import host_sockets
from workbench.harness.contained_run import run_contained

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox drops privileges only when started as root")
PROBE = """import os, socket, sys
def connect(address):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    try:
        s.connect(address); return 'CONNECTED'
    except OSError as e:
        return e.__class__.__name__
    finally:
        s.close()
own = socket.socket(socket.AF_UNIX); own.bind('/tmp/own.sock'); own.listen(1)
print('|'.join(connect(a.replace('@', '\\0', 1)) for a in sys.argv[1:]), connect('/tmp/own.sock'), sep='|')
"""


def test_bound_paths_keeps_the_paths_and_leaves_abstract_names_out(tmp_path):
    table = tmp_path / "unix"
    table.write_text("Num       RefCount Protocol Flags    Type St Inode Path\n"
                     "0000000064d55991: 00000003 00000000 00000000 0001 03  1059\n"
                     "0000000064d55992: 00000002 00000000 00010000 0001 01  1060 /run/dbus/system_bus_socket\n"
                     "0000000064d55993: 00000002 00000000 00010000 0001 01  1061 @/tmp/.X11-unix/X0\n"
                     "0000000064d55994: 00000002 00000000 00010000 0001 01  1062 /run/a b.sock\n"
                     "0000000064d55995: 00000002 00000000 00010000 0001 01  1063 /run/dbus/system_bus_socket\n")
    assert host_sockets.bound_paths(str(table)) == ["/run/a b.sock", "/run/dbus/system_bus_socket"]
    assert host_sockets.bound_paths(str(tmp_path / "missing")) == []


def test_scanned_paths_finds_sockets_and_stops_at_its_limit(tmp_path):
    (tmp_path / "deep" / "er").mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(tmp_path / "deep" / "er" / "s.sock"))
        (tmp_path / "plain").write_text("x")
        assert host_sockets.scanned_paths((str(tmp_path),)) == [str(tmp_path / "deep" / "er" / "s.sock")]
        assert host_sockets.scanned_paths((str(tmp_path),), limit=1) == []
    finally:
        server.close()


def _listening(path: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    if not path.startswith("\0"):
        os.chmod(path, 0o666)                       # any uid may connect, as the attack's socket allowed
    server.listen(4)
    server.settimeout(0.1)
    return server


@needs_root
@pytest.mark.skipif(not os.access("/run", os.W_OK), reason="needs a writable /run for the host's socket")
def test_a_profiler_run_reaches_no_socket_of_the_host_and_its_own_still_work():
    tag = uuid.uuid4().hex[:8]
    folders = [Path("/run") / f"wb-sock-{tag}", Path("/") / f"wb-sock-{tag}"]   # scanned / only in /proc/net/unix
    abstract = f"\0wb-sock-{tag}"
    servers = []
    try:
        for folder in folders:
            folder.mkdir(mode=0o755)
            servers.append(_listening(str(folder / "s.sock")))
        servers.append(_listening(abstract))
        run = run_contained([sys.executable, "-c", PROBE, str(folders[0] / "s.sock"), str(folders[1] / "s.sock"),
                             "@" + abstract[1:]], timeout_s=60)
        for server in servers:
            with pytest.raises(OSError):                 # nothing knocked
                server.accept()
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["ConnectionRefusedError|ConnectionRefusedError|ConnectionRefusedError|"
                                      "CONNECTED"], run.stdout
        for folder in folders:                           # the host's sockets are untouched on the host
            assert (folder / "s.sock").is_socket()
        unhidden = run_contained([sys.executable, "-c", PROBE, str(folders[0] / "s.sock")], timeout_s=60,
                                 relax=("sockets",))           # the wall that holds is the hiding, not the uid
        assert unhidden.stdout.split() == ["CONNECTED|CONNECTED"], unhidden.stdout + unhidden.stderr
    finally:
        for server in servers:
            server.close()
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
