"""The agent's GPU-machine tools on a real GPU: SASS summary through cuobjdump and one ncu profile."""
import shutil

import pytest

from workbench.agent.tools import Toolbox
from workbench.campaign.workspace import Workspace
from workbench.harness.check import gpu_available

pytestmark = pytest.mark.gpu
ORIGINAL = "kernels/attn_fwd/original.cu"


@pytest.fixture
def toolbox(tmp_path):
    if not gpu_available():
        pytest.skip("needs a CUDA GPU")
    return Toolbox(Workspace.create(tmp_path, "gpu-tools", ORIGINAL, {"suite": "smoke"}))


def test_sass_summary_counts_instructions(toolbox):
    out = toolbox.run("sass_summary", {})
    print(out.text)
    assert not out.is_error, out.text
    assert "FFMA" in out.text            # the original is fp32 math: FFMA must be counted


@pytest.mark.skipif(not shutil.which("ncu"), reason="needs Nsight Compute")
def test_ncu_profile_one_scenario(toolbox):
    from workbench.harness.scenarios import load_suite
    scenario = load_suite(toolbox.defaults.suite)[0].name
    out = toolbox.run("ncu_profile", {"scenario": scenario})
    print(out.text)
    assert not out.is_error, out.text
    assert "gpu__time_duration" in out.text and "distribution" not in out.text   # the candidate only
