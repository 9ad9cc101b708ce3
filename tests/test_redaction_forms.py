"""Redaction of a secret however it is written: encoded, cut by line breaks or invisible characters, split over
two turns, used as a file name, in a report title, in the traceback of an uncaught error."""
from __future__ import annotations

import base64
import codecs
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from workbench.redaction import REDACTED, redact, redact_pieces

API_KEY = "sk-ant-api03-RdXq7Lm2Vb9Zt4Kw8Ns1Pj6Hc3Fy5Ga0Ue-Tr7Wi2Oo4Mm9Nn1Bb6Vv3Cc8Xx5Zz0Ll_Kk2Jj7Hh4Gg9Ff1-QqAA"
PASSWORD = "p@ss/w0rd+with=some&more chars"       # changes under URL encoding
NOT_IN_ENV = "sk-ant-api03-" + "NoTiNeNv0123456789_" * 5             # 108 characters, as real keys
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def planted(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)


def _leaks(text: str, secret: str) -> list[str]:
    """Pieces of 12 characters of secret that are still in text."""
    return [secret[i:i + 12] for i in range(0, len(secret) - 11, 4) if secret[i:i + 12] in text]


def _b64_in_context(secret: str, prefix: str) -> str:
    return base64.b64encode(f"{prefix}{secret}\n".encode()).decode()


ENCODED = {
    "base64, aligned": lambda s: base64.b64encode(s.encode()).decode(),
    "base64 inside a longer text, offset 1": lambda s: _b64_in_context(s, "K="),
    "base64 inside a longer text, offset 2": lambda s: _b64_in_context(s, "KEY="),
    "base64 wrapped at 76 columns": lambda s: base64.encodebytes(b"export KEY=" + s.encode()).decode(),
    "base64url": lambda s: base64.urlsafe_b64encode(b"x" + s.encode()).decode(),
    "base32": lambda s: base64.b32encode(b"abc" + s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "HEX": lambda s: s.encode().hex().upper(),
    "reversed": lambda s: s[::-1],
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "url-encoded": lambda s: quote(s, safe=""),
    "url-encoded with +": lambda s: quote_plus(s),
    "JSON-escaped twice": lambda s: json.dumps(json.dumps(s)),
}


@pytest.mark.parametrize("name", sorted(ENCODED))
@pytest.mark.parametrize("secret", [API_KEY, PASSWORD], ids=["api key", "password"])
def test_every_encoding_of_an_environment_secret_is_redacted(name, secret):
    encoded = ENCODED[name](secret)
    out = redact(f"output: {encoded} end")
    assert REDACTED in out and out.endswith(" end")
    flat = encoded.replace("\n", "")
    assert not _leaks(out, flat[16:-4]), (name, out)          # the ends may encode the text around the secret


def test_half_of_an_encoded_key_is_redacted_too():
    half = base64.b64encode(API_KEY[:60].encode()).decode()        # 80 characters: the key's first half
    assert half[:40] not in redact(f"a: {half}") and half[-40:] not in redact(f"a: {half}")


@pytest.mark.parametrize("cut", [10, 25, 60])
@pytest.mark.parametrize("brk", ["\n", "\r\n", "\\n", "\\\\n"], ids=["LF", "CRLF", "escaped", "escaped twice"])
@pytest.mark.parametrize("key", [NOT_IN_ENV, API_KEY], ids=["shape only", "env"])
def test_a_key_cut_by_a_line_break_loses_both_halves(key, brk, cut):
    out = redact(f"print: {key[:cut]}{brk}{key[cut:]}\n(next line)")
    assert not _leaks(out, key[:cut]) and not _leaks(out, key[cut:]), out
    assert key[cut:][-10:] not in out and out.endswith("\n(next line)")


def test_a_whole_key_at_the_end_of_a_line_leaves_the_next_line_alone():
    out = redact(f"ANTHROPIC_API_KEY={NOT_IN_ENV}\nOTHER_SETTING=1\n")
    assert out == f"ANTHROPIC_API_KEY={REDACTED}\nOTHER_SETTING=1\n"


@pytest.mark.parametrize("where", [3, 20, 50])
@pytest.mark.parametrize("mark", ["\u200b", "\u200d", "\ufeff", "\u00ad", "\u2060", "\U000e0041"])
@pytest.mark.parametrize("key", [NOT_IN_ENV, API_KEY], ids=["shape only", "env"])
def test_a_key_with_an_invisible_character_inside_is_redacted(key, mark, where):
    out = redact(f"key: {key[:where]}{mark}{key[where:]} end")
    assert out == f"key: {REDACTED} end", out
    every = mark.join(key)                                       # one after every character
    assert redact(f"k {every} end") == f"k {REDACTED} end"


def test_a_key_split_over_two_pieces_with_the_first_in_the_context():
    """The end of the turn before is the context: only the second half is in this turn's rows."""
    cut = 30
    (out,) = redact_pieces([f"{NOT_IN_ENV[cut:]} ok"], context=f"earlier: {NOT_IN_ENV[:cut]}")
    assert out == f"{REDACTED} ok"
    (alone,) = redact_pieces([f"{NOT_IN_ENV[cut:]} ok"])
    assert alone == f"{NOT_IN_ENV[cut:]} ok"             # without the context, the second half is just text


def test_a_key_said_over_two_turns_never_reaches_disk(tmp_path):
    from workbench.agent.backends.fake import FakeBackend, say
    from workbench.agent.loop import Campaign
    from workbench.campaign.config import Budget, CampaignConfig
    from workbench.evaluators.standin_timings import SequenceEvaluator
    from test_agent_secrets import all_strings_on_disk

    cut = 40                                                   # both halves are long enough to be a leak
    backend = FakeBackend([[say(f"The key is {NOT_IN_ENV[:cut]}")], [say(f"{NOT_IN_ENV[cut:]} (end of key)")],
                           [say("done")]])
    config = CampaignConfig(suite="smoke", mode="tools_only", root=str(tmp_path), campaign_id="c-turns",
                            agent="fake", stop_expr="geomean_vs_original >= 100", budget=Budget(turns=3))
    campaign = Campaign.create(config, backend, evaluator=SequenceEvaluator([1.0]),
                               kernel_text="#define A 1 // @knob A 1 {1,2}\n")
    campaign.run()
    texts = list(all_strings_on_disk(tmp_path / "c-turns" / "traces"))
    assert any("(end of key)" in text for _, text in texts)
    for path, text in texts:
        assert not _leaks(text, NOT_IN_ENV[cut:]) and not _leaks(text, NOT_IN_ENV[:cut]), path


def test_rows_of_one_table_are_redacted_as_a_stream(tmp_path):
    from workbench.traces.writer import TraceWriter, read_table

    cut = 35
    rows = [{"message_id": "m1", "text": f"first half {NOT_IN_ENV[:cut]}", "turn": 1},
            {"message_id": "m2", "text": f"{NOT_IN_ENV[cut:]} second half", "turn": 1}]
    TraceWriter(tmp_path, "s1").append("messages", rows)
    texts = read_table(tmp_path, "messages")["text"].tolist()
    assert texts[1].endswith(" second half") and not _leaks(" ".join(texts), NOT_IN_ENV[cut:]), texts


def test_a_key_as_a_file_name_is_refused_and_never_created(tmp_path):
    from workbench.agent.backends.fake import FakeBackend, call, say
    from workbench.agent.loop import Campaign
    from workbench.campaign.config import Budget, CampaignConfig
    from workbench.evaluators.standin_timings import SequenceEvaluator

    backend = FakeBackend([[call("write_file", path=f"{NOT_IN_ENV}.txt", content="x"),
                            call("write_file", path=f"notes/{API_KEY[::-1]}/a.md", content="y")], [say("done")]])
    config = CampaignConfig(suite="smoke", mode="tools_only", root=str(tmp_path), campaign_id="c-names",
                            agent="fake", stop_expr="geomean_vs_original >= 100", budget=Budget(turns=2))
    campaign = Campaign.create(config, backend, evaluator=SequenceEvaluator([1.0]),
                               kernel_text="#define A 1 // @knob A 1 {1,2}\n")
    campaign.run()
    names = [str(p) for p in tmp_path.rglob("*")]
    assert not any(_leaks(n, NOT_IN_ENV) or _leaks(n, API_KEY[::-1]) for n in names), names
    from workbench.traces.writer import read_table
    outputs = read_table(campaign.ws.traces_dir, "tool_calls")["output_text"].tolist()
    assert all("holds a secret" in o for o in outputs), outputs


def test_an_output_path_holding_a_key_is_refused(tmp_path, capsys):
    from workbench.traces.importers import import_main
    out = tmp_path / NOT_IN_ENV
    assert import_main([str(ROOT / "tests" / "fixtures" / "transcripts" / "claude_code"), "-o", str(out)]) == 2
    assert not out.exists() and "holds a secret" in capsys.readouterr().err


def test_report_title_and_trace_root_are_redacted(tmp_path):
    from workbench.traces.importers import import_paths
    from workbench.traces.report import build_report

    root = tmp_path / "traces"
    import_paths([ROOT / "tests" / "fixtures" / "transcripts" / "claude_code"], root)
    page = build_report([root], tmp_path / "r.html", title=f"Report for {API_KEY} and {NOT_IN_ENV}").read_text()
    assert "Report for [REDACTED] and [REDACTED]" in page
    assert not _leaks(page, API_KEY) and not _leaks(page, NOT_IN_ENV)


def test_an_uncaught_error_prints_a_redacted_traceback(tmp_path):
    """cli.main restores the raw streams on its way out; the traceback Python prints after that is redacted."""
    (tmp_path / "boom_command.py").write_text(textwrap.dedent(f"""
        import threading

        def fail():
            raise KeyError("{NOT_IN_ENV}")

        def main(argv):
            print("before the error")
            if argv == ["thread"]:
                worker = threading.Thread(target=fail)
                worker.start()
                worker.join()
                return 0
            if argv == ["exit"]:
                raise SystemExit("could not go on with {NOT_IN_ENV}")
            raise RuntimeError("the key was {NOT_IN_ENV} and {API_KEY[::-1]}")
    """))
    program = ("import sys; sys.path.insert(0, sys.argv[1]); from workbench import cli; "
               "cli.SUBCOMMANDS['boom'] = ('boom_command', 'test'); sys.exit(cli.main(['boom'] + sys.argv[2:]))")
    for extra, shown in (([], "RuntimeError"), (["thread"], "KeyError"), (["exit"], "could not go on")):
        env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin", "ANTHROPIC_API_KEY": API_KEY}
        done = subprocess.run([sys.executable, "-c", program, str(tmp_path)] + extra, capture_output=True,
                              text=True, cwd=ROOT, timeout=120, env=env)
        text = done.stdout + done.stderr
        assert "before the error" in done.stdout and shown in done.stderr, text
        assert done.returncode == (0 if extra == ["thread"] else 1), text
        assert not _leaks(text, NOT_IN_ENV) and not _leaks(text, API_KEY[::-1]), text


def test_a_long_secret_split_over_many_pieces_is_found_beyond_the_first_window():
    """Boundaries are searched in windows; a private key block longer than a window, one line per piece, and
    a key in three pieces are still redacted in every piece (a guard of the windowing, not of a new rule)."""
    body = [base64.b64encode(bytes([n % 251] * 48)).decode() for n in range(60)]          # 60 lines of 64
    pieces = ["-----BEGIN RSA PRIVATE KEY-----"] + body + ["-----END RSA PRIVATE KEY-----", "after the key"]
    out = redact_pieces(pieces)
    assert all(REDACTED in p or p == "" for p in out[:-1]) and out[-1] == "after the key"
    assert not any(line in " ".join(out) for line in body)
    thirds = [NOT_IN_ENV[:30], NOT_IN_ENV[30:70], NOT_IN_ENV[70:] + " end"]
    out = redact_pieces(["said:"] + thirds)
    assert not _leaks(" ".join(out), NOT_IN_ENV) and out[-1].endswith(" end"), out
