import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("WORKBENCH_CACHE", str(ROOT / ".cache" / "test"))


def pytest_sessionfinish(session, exitstatus):
    # CI must never pass on "no tests collected" (pytest exit code 5): make it a failure instead.
    if exitstatus == 5:
        session.exitstatus = 1


@pytest.fixture(scope="session")
def imported_fixture_traces(tmp_path_factory):
    """The hand-counted transcripts of tests/fixtures/transcripts imported once: Claude Code as arm `human`,
    Codex as arm `tools_only` (the counts are in that folder's README)."""
    from workbench.traces.importers import import_paths

    fixtures = Path(__file__).parent / "fixtures" / "transcripts"
    root = tmp_path_factory.mktemp("traces")
    import_paths([fixtures / "claude_code"], root, arm="human")
    import_paths([fixtures / "codex"], root, arm="tools_only")
    return root
