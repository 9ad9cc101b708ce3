import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("WORKBENCH_CACHE", str(ROOT / ".cache" / "test"))


def pytest_sessionfinish(session, exitstatus):
    # CI must never pass on "no tests collected" (pytest exit code 5): make it a failure instead.
    if exitstatus == 5:
        session.exitstatus = 1
