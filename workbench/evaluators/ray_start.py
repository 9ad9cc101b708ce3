"""Start a new local Ray instance, again when its node dies while starting (the one place every local start goes).

Ray 2.60's raylet gives its dashboard agent a fixed 15 s to write its port files and aborts when the agent's imports
take longer ("Check failed" in NodeManager::WaitForDashboardAgentPorts; `ray.init` then raises "The current node
timed out during startup"). A loaded 2-core machine does that now and then (CI, 2026-12-04: the four tests of
test_ray_node.py). No setting moves the 15 s, and a second start finds the imports warm, so a local start that fails
so is made again, up to LOCAL_START_ATTEMPTS times. A cluster reached by address is never retried: its failure is
the caller's to report.
"""
from __future__ import annotations

import time

LOCAL_START_ATTEMPTS = 3
RETRY_PAUSE_S = 2.0          # the dead node's processes exit first


def starts_locally(address) -> bool:
    return not address or address == "local"


def init_ray(ray, **kwargs):
    """ray.init(**kwargs); for a new local instance, up to LOCAL_START_ATTEMPTS tries. Returns what ray.init does."""
    attempts = LOCAL_START_ATTEMPTS if starts_locally(kwargs.get("address")) else 1
    for attempt in range(1, attempts + 1):
        try:
            return ray.init(**kwargs)
        except Exception as err:          # Ray raises a bare Exception for a node that died while starting
            if attempt == attempts or "during startup" not in str(err):
                raise
            ray.shutdown()                # what the dead node's driver half left, so the next init starts clean
            time.sleep(RETRY_PAUSE_S)
