"""A Ray head node of this script's own, started the way the README starts a cluster (`ray start --head`), so a
RayPool reaches it by address as `--ray-address HEAD:PORT` does: the checkout shipped as the job's working_dir,
builds on the node, token authentication. `ray start --block` runs as this process's child and takes its GCS,
raylet and workers down when it is sent SIGTERM; nothing else on the machine is touched (no `ray stop`)."""
from __future__ import annotations

import atexit
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

START_LIMIT_S = 180          # a loaded 2-core machine starts a head in ~10 s; this bound is only for a head that hangs
# Ray 2.60's raylet gives its dashboard agent a fixed 15 s to write its port files and aborts when the agent's imports
# take longer (raylet.err: "Check failed" in NodeManager::WaitForDashboardAgentPorts), which a loaded 2-core machine
# does now and then (CI, 2026-12-04: the four tests of test_ray_pool_check_script.py); no setting moves that 15 s, and
# a second start finds the imports warm, so a head whose `ray start` exits while starting is started again
START_ATTEMPTS = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def head_command(port: str, temp_dir: str, gpus: int, cpus: int) -> list[str]:
    """`ray start --head` as this process's child (--block: it lives until SIGTERM)."""
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block", "--disable-usage-stats",
               "--include-dashboard=false", f"--port={port}", f"--temp-dir={temp_dir}",
               "--node-ip-address=127.0.0.1", f"--num-gpus={gpus}"]
    return command + ([f"--num-cpus={cpus}"] if cpus else [])


def session_pids(temp_dir: str) -> list[int]:
    """Live processes (not this one) whose command line names temp_dir; a zombie's is empty, so it is not one."""
    found, me = [], os.getpid()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(entry.name) != me and temp_dir.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class RayHead:
    """`with RayHead(gpus=1) as head: RayPool(head.address)`; head.start_s is how long it took to come up."""

    def __init__(self, *, gpus: int = 0, cpus: int = 0, log: str = ""):
        self.temp_dir = tempfile.mkdtemp(prefix="rayh-", dir="/tmp")     # short: Ray's socket paths have a limit
        self._log = open(log or os.devnull, "ab")
        # Token authentication, decided here and not by the machine: Ray 2.60's `ray start --head` turns it on only
        # when ~/.ray/auth_token exists (this CPU machine had one, the fresh H200 of session 9 did not, and a driver
        # told RAY_AUTH_MODE=token then refused to connect). The head gets a token of its own, 0600 in its temp dir,
        # and this process (the driver) the same mode and path.
        token_path = Path(self.temp_dir) / "auth_token"
        token_path.touch(mode=0o600)
        token_path.write_text(secrets.token_hex(32))
        self.auth_env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token_path)}
        t0 = time.monotonic()
        # the head's workers inherit this environment (WORKBENCH_CACHE, PYTHONPATH with the carried wheels)
        env = {**{k: v for k, v in os.environ.items() if k != "RAY_AUTH_TOKEN"}, **self.auth_env}
        address_file = Path(self.temp_dir) / "ray_current_cluster"
        for self.attempts in range(1, START_ATTEMPTS + 1):
            self.address = f"127.0.0.1:{free_port()}"
            self.process = subprocess.Popen(head_command(self.address.split(":")[1], self.temp_dir, gpus, cpus),
                                            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
            while not address_file.exists() and self.process.poll() is None:   # written once GCS and raylet are up
                if time.monotonic() - t0 > START_LIMIT_S:
                    self.stop()
                    raise RuntimeError(f"`ray start --head` did not come up in {START_LIMIT_S} s; its output: "
                                       f"{log or 'pass log=PATH'}")
                time.sleep(0.2)
            if address_file.exists():
                break
            self._stop_process()                           # exited while starting: what it left, then again
            self._log.write(f"ray_head: `ray start --head` exited {self.process.returncode} while starting "
                            f"(attempt {self.attempts} of {START_ATTEMPTS})\n".encode())
            self._log.flush()
        else:
            self._log.close()
            raise RuntimeError(f"`ray start --head` did not come up in {START_ATTEMPTS} attempts (last exit "
                               f"{self.process.returncode}); its output: {log or 'pass log=PATH'}")
        self.start_s = time.monotonic() - t0
        # the driver (this process) uses this head's token until stop(), which puts back what was there: a later
        # `ray.init()` in the same process (a test run) must not start its own instance with a dead head's token
        self._driver_env = {k: os.environ.get(k) for k in (*self.auth_env, "RAY_AUTH_TOKEN")}
        os.environ.pop("RAY_AUTH_TOKEN", None)             # would win over the path: the driver uses this head's
        os.environ.update(self.auth_env)
        # the head runs in a session of its own and outlives this process unless stopped: a SIGTERM turned into
        # SystemExit between the caller's start and its try/finally (the loaded CI machine, 2026-12-05: six of the
        # head's processes left) still stops it at the interpreter's exit
        atexit.register(self.stop)

    def stop(self) -> None:
        """SIGTERM to `ray start` alone, which stops its GCS, raylet and workers (~3 s here; a SIGTERM to the whole
        group instead left `ray start` waiting on its dead children), then SIGKILL to whatever of its session is
        left. Once only: a second call (atexit after the caller's own) does nothing."""
        atexit.unregister(self.stop)
        if self._log.closed:
            return
        self._stop_process()
        self._log.close()
        for key, value in getattr(self, "_driver_env", {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def _stop_process(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)      # a raylet or worker the head left behind
        except ProcessLookupError:
            pass
        self.process.wait()
        # Ray's workers and helpers can sit in sessions of their own, out of the group's reach, and exit only later
        # (the loaded CI machine showed six alive after the script's SIGTERM): every process naming this head's
        # temp dir is this head's, and none may outlive stop()
        deadline = time.monotonic() + 30
        while (left := session_pids(self.temp_dir)) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
