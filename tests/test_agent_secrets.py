"""A planted API key never reaches disk, wherever it turns up in a campaign: the agent's text, a tool input,
a file the agent writes, a tool output, a person's question."""
from pathlib import Path

import pyarrow.parquet as pq

from workbench.agent.backends.fake import FakeBackend, call, say
from workbench.agent.loop import Budget, Campaign, CampaignConfig
from workbench.agent.standin import SequenceEvaluator

PLANTED = "sk-ant-api03-PLANTEDkeyPLANTEDkeyPLANTEDkey-0123456789abcdef"
OTHER_FORMAT = "plantedSecretValue-9f8e7d6c5b4a"          # no recognisable shape: caught as the env var's value


def all_strings_on_disk(root: Path):
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            for column in table.columns:
                for value in column.to_pylist():
                    if isinstance(value, str):
                        yield path, value
        yield path, path.read_bytes().decode("utf-8", "replace")


def test_planted_keys_never_reach_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)
    monkeypatch.setenv("HF_TOKEN", OTHER_FORMAT)
    backend = FakeBackend([
        [say(f"My key is {PLANTED}; also {OTHER_FORMAT}."),
         call("write_file", path="notes.md", content=f"export ANTHROPIC_API_KEY={PLANTED}\n"),
         call("read_file", path="notes.md"),
         call("run_harness", path="kernel.cu")],
        [say("x-api-key: " + PLANTED), call("edit_file", path="notes.md", old_string="export",
                                             new_string=f"# {OTHER_FORMAT}\nexport")],
        [say("done")],
    ])
    config = CampaignConfig(suite="smoke", mode="hybrid", root=str(tmp_path), campaign_id="c-secret", agent="fake",
                            stop_expr="geomean_vs_original >= 100", budget=Budget(turns=3))
    campaign = Campaign.create(config, backend, evaluator=SequenceEvaluator([1.0]),
                               kernel_text=f"// {PLANTED}\n#define A 1 // @knob A 1 {{1,2}}\n")
    campaign.ask(f"Did you paste {PLANTED} somewhere?")
    assert campaign.run().turn == 3

    seen = 0
    for path, text in all_strings_on_disk(tmp_path):
        seen += 1
        assert PLANTED not in text, path
        assert OTHER_FORMAT not in text, path
        assert "PLANTEDkey" not in text, path
    assert seen > 20
    notes = (campaign.ws.root / "notes.md").read_text()
    assert "[REDACTED]" in notes
    # the agent is told, and the traces still hold the rest of the text
    from workbench.traces.writer import read_table
    calls = read_table(campaign.ws.traces_dir, "tool_calls")
    assert "replaced by [REDACTED]" in calls[calls.tool_name == "write_file"].iloc[0].output_text
    messages = read_table(campaign.ws.traces_dir, "messages")
    assert messages["text"].str.contains("My key is [REDACTED]", regex=False).any()
