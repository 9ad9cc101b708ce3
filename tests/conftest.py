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


@pytest.fixture
def run_cli(capsys):
    """`workbench ARGS...` in this process: (exit code, stdout, stderr). An argparse refusal is an exit code too."""
    from workbench.cli import main

    def run(argv):
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as stop:
            code = stop.code
        out, err = capsys.readouterr()
        return code, out, err
    return run


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


@pytest.fixture(scope="session")
def three_source_traces(tmp_path_factory, imported_fixture_traces):
    """One trace root holding a recorded H200 campaign (data/campaigns/c-offline-1), a campaign judged by the
    CPU stand-in evaluator (run here, made-up timings) and the imported test-fixture transcripts."""
    import shutil

    from workbench.agent.backends.offline import ScriptedAgent
    from workbench.agent.loop import Campaign
    from workbench.campaign.config import Budget, CampaignConfig
    from workbench.evaluators.standin_timings import KnobEvaluator

    root = tmp_path_factory.mktemp("three_sources")
    shutil.copytree(imported_fixture_traces, root, dirs_exist_ok=True)
    shutil.copytree(ROOT / "data" / "campaigns" / "c-offline-1" / "traces", root, dirs_exist_ok=True)
    config = CampaignConfig(kernel_path=str(ROOT / "kernels" / "attn_fwd" / "ladder" / "02_mma.cu"), suite="smoke",
                            mode="bank", campaign_id="standin-demo", root=str(tmp_path_factory.mktemp("campaigns")),
                            budget=Budget(turns=4, tool_calls=12), stop_expr="all_correct and geomean_vs_fa3 >= 5")
    campaign = Campaign.create(config, ScriptedAgent(), evaluator=KnobEvaluator())
    campaign.run()
    shutil.copytree(campaign.ws.traces_dir, root, dirs_exist_ok=True)
    return root
