"""A planted API key never reaches disk, wherever it turns up in a campaign: the agent's text, a tool input,
a file the agent writes, a tool output, a person's question."""
import json
from pathlib import Path

import pyarrow.parquet as pq

from workbench.agent.backends.fake import FakeBackend, call, say
from workbench.agent.loop import Campaign
from workbench.campaign.config import Budget, CampaignConfig
from workbench.evaluators.standin_timings import SequenceEvaluator

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


# ---- every form, whole, split and JSON-escaped, through a whole campaign ---------------------------------------
ENV_SECRET = "envPlantedValue-7a6b5c4d3e2f1a0b"
SPLIT_KEY = "sk-ant-api03-SPLITkeySPLITkeySPLITkey-0123456789abcdef"
FORMS = {      # text the agent says or a tool prints -> the secret part that must never survive
    "anthropic": ("key sk-ant-api03-FormsKeyFormsKeyFormsKey-0a1b2c", "FormsKeyFormsKey"),
    "openai": ("sk-proj-OpenaiKeyOpenaiKeyOpenaiKey12", "OpenaiKeyOpenaiKey"),
    "aws id": ("AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    "aws secret": ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "bPxRfiCYEXAMPLEKEY"),
    "basic": ("Authorization: Basic dXNlcjpodW50ZXIyLXNlY3JldA==", "dXNlcjpodW50ZXIy"),
    "bearer": ("Authorization: Bearer tokenPartOne/tokenPartTwo", "tokenPartTwo"),
    "json-escaped": (json.dumps(json.dumps({"Authorization": "Bearer jsonEscaped/Tok3n"})), "jsonEscaped"),
    "env": (f"value {ENV_SECRET}", ENV_SECRET),
}


def _every_text(campaign, captured: str):
    """(where, text) for the campaign's traces, state files and config, and the captured stdout."""
    root = campaign.ws.root
    for path, text in all_strings_on_disk(root / "traces"):
        yield f"traces {path.parent.parent.name}", text
    for path in (root / "state").glob("*.json"):
        yield "state", path.read_text()
    yield "stdout", captured


def test_every_secret_form_split_and_escaped_never_reaches_traces_state_or_stdout(tmp_path, monkeypatch, capsys):
    from workbench.agent.campaign_cli import LogPrinter
    from workbench.redaction import redacted_output

    monkeypatch.setenv("MY_SERVICE_PASSWORD", ENV_SECRET)
    said = " | ".join(text for text, _ in FORMS.values())
    cut = 10                                     # "sk-ant-api" | "03-SPLIT...": neither half looks like a key
    backend = FakeBackend([
        [say(f"Here they are: {said}"), call("write_file", path="forms.txt", content=said)],
        [say("reading them back"), call("read_file", path="half1.txt"), call("read_file", path="half2.txt"),
         call("read_file", path="forms.txt"), call("edit_file", path="forms.txt", old_string="key", new_string=said)],
        [say("done")],
    ])
    config = CampaignConfig(suite="smoke", mode="tools_only", root=str(tmp_path), campaign_id="c-forms",
                            agent="fake", stop_expr="geomean_vs_original >= 100", budget=Budget(turns=3))
    with redacted_output():
        campaign = Campaign.create(config, backend, evaluator=SequenceEvaluator([1.0]),
                                   kernel_text="#define A 1 // @knob A 1 {1,2}\n")
        # a key in two files that were there before (a person's notes): two tool outputs, each half alone harmless
        (campaign.ws.root / "half1.txt").write_text(f"first {SPLIT_KEY[:cut]}")
        (campaign.ws.root / "half2.txt").write_text(f"{SPLIT_KEY[cut:]} second")
        campaign.subscribe(LogPrinter())
        assert campaign.run().turn == 3
    captured = capsys.readouterr().out
    assert "read_file" in captured                           # the log was printed, through the redacting stream
    texts = list(_every_text(campaign, captured))
    assert {where for where, _ in texts} >= {"traces messages", "traces tool_calls", "state", "stdout"}
    for where, text in texts:
        for name, (_, secret) in FORMS.items():
            assert secret not in text, (name, where)
        assert SPLIT_KEY[cut:] not in text and "SPLITkey" not in text, where
    # what went back to the model is redacted too, and the turn's rows still say what happened
    sent = json.dumps(backend.requests[-1].messages)
    assert "SPLITkey" not in sent and ENV_SECRET not in sent
    from workbench.traces.writer import read_table
    calls = read_table(campaign.ws.traces_dir, "tool_calls")
    assert "[REDACTED]" in " ".join(calls.output_text.dropna()) and len(calls) == 5


def test_the_campaign_cli_log_is_redacted(tmp_path, monkeypatch, capsys):
    from workbench.agent.campaign_cli import campaign_main
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)
    code = campaign_main(["--kernel", str(tmp_path / f"{PLANTED}.cu"), "--agent", "offline", "--evaluator",
                          "standin", "--root", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 2 and "not found" in out.err
    assert PLANTED not in out.err + out.out and "PLANTEDkey" not in out.err + out.out
