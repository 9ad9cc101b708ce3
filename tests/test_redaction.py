"""workbench.redaction: every secret form, whole, split over two pieces, and JSON-escaped (once and twice)."""
import io
import json

import pytest

from workbench.redaction import (REDACTED, RedactingStream, redact, redact_json, redact_pieces,
                                 replace_surrogates)

ENV_SECRET = "plantedSecretValue-9f8e7d6c5b4a-0123"
# (name, text holding the secret, the secret itself)
FORMS = [
    ("anthropic", "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_xyz end",
     "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_xyz"),
    ("openai", "key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 end", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("aws access key", "id AKIAIOSFODNN7EXAMPLE end", "AKIAIOSFODNN7EXAMPLE"),
    ("aws secret by shape", "secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY end",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("aws secret by name", "aws_secret_access_key = abcdefghijklmnop1234 end", "abcdefghijklmnop1234"),
    ("basic auth", "Authorization: Basic dXNlcjpodW50ZXIyLXNlY3JldA== end", "dXNlcjpodW50ZXIyLXNlY3JldA=="),
    ("bearer with slash", "Authorization: Bearer abc.DEF-123/ghiJKL+456/xyz== end", "abc.DEF-123/ghiJKL+456/xyz=="),
    ("bare bearer", "curl -H 'x: y' --oauth2-bearer x; Bearer q1w2e3r4t5y6/u7i8o9p0 end", "q1w2e3r4t5y6/u7i8o9p0"),
    ("x-api-key header", "x-api-key: zz9Zz9Zz9Zz9Zz9Zz9 end", "zz9Zz9Zz9Zz9Zz9Zz9"),
    ("env value", f"echo {ENV_SECRET} end", ENV_SECRET),
    ("url password", "git clone https://me:hunter2secret@example.com/x.git end", "hunter2secret"),
]


@pytest.fixture(autouse=True)
def planted(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_SECRET)


@pytest.mark.parametrize("name, text, secret", FORMS, ids=[f[0] for f in FORMS])
def test_each_form_is_redacted(name, text, secret):
    out = redact(text)
    assert secret not in out and REDACTED in out and out.endswith(" end")


@pytest.mark.parametrize("name, text, secret", FORMS, ids=[f[0] for f in FORMS])
def test_each_form_inside_json_escaped_text(name, text, secret):
    once = json.dumps({"Authorization": text} if "Authorization" not in text else {"log": text})
    twice = json.dumps({"body": once})
    for blob in (once, twice):
        out = redact(blob)
        assert secret not in out and secret.replace("/", "\\/") not in out, (blob, out)
    header = json.dumps(json.dumps({"Authorization": "Bearer X1y2Z3w4/v5u6T7s8"}))
    assert "X1y2Z3w4" not in redact(header) and "v5u6T7s8" not in redact(header)


@pytest.mark.parametrize("name, text, secret", FORMS, ids=[f[0] for f in FORMS])
def test_each_form_split_over_two_pieces(name, text, secret):
    cut = text.index(secret) + len(secret) // 2
    first, second = text[:cut], text[cut:]
    out = redact_pieces([first, "\n", second])
    joined = "".join(out)
    assert secret not in joined
    assert secret[len(secret) // 2:] not in out[2] and secret[:len(secret) // 2] not in out[0], out
    assert out[2].endswith(" end")


def test_env_secret_fragments_are_caught_anywhere():
    half_a, half_b = ENV_SECRET[:18], ENV_SECRET[18:]
    assert half_a not in redact(f"first half: {half_a}!")
    assert half_b not in redact(f"second half: {half_b}!")


def test_ordinary_text_is_left_alone():
    for text in ("kernel 3f5a" + "0123456789abcdef" * 4, "git 1234567890abcdef1234567890abcdef12345678",
                 "the bearer of bad news", "Basic block", "geomean_vs_fa3: 0.73", "x = y", "",
                 "#define KEY_TILE 64 // @knob KEY_TILE 64 {32,64,128}"):
        assert redact(text) == text, text


def test_redact_json_catches_a_key_split_over_two_tool_outputs():
    key = "sk-ant-api03-PLANTEDkeyPLANTEDkeyPLANTEDkey-0123456789abcdef"
    cut = 10                                        # "sk-ant-api" | "03-PLANTED..." : neither half looks like a key
    turn = {"content": [{"type": "tool_result", "content": f"out: {key[:cut]}"},
                        {"type": "tool_result", "content": f"{key[cut:]} rest"}]}
    clean = json.dumps(redact_json(turn))
    assert "PLANTEDkey" not in clean and key[:cut] not in clean and "rest" in clean


def test_the_stream_redacts_lines_and_a_key_split_over_two_prints():
    target = io.StringIO()
    stream = RedactingStream(target)
    key = "sk-ant-api03-PLANTEDkeyPLANTEDkeyPLANTEDkey-0123456789abcdef"
    print(f"  -> read_file: {key[:10]}", file=stream)
    print(f"{key[10:]} and {ENV_SECRET}", file=stream, flush=True)
    print("partial line without newline " + "sk-ant-" + "z" * 20, end="", file=stream)
    stream.flush()
    text = target.getvalue()
    assert "PLANTEDkey" not in text and ENV_SECRET not in text and "zzzzzzzz" not in text
    assert text.count(REDACTED) >= 3


def test_lone_surrogates_are_replaced():
    assert replace_surrogates("a\ud800b") == "a\ufffdb"
    assert replace_surrogates("ok \U0001F600") == "ok \U0001F600"
    replace_surrogates("a\udfff").encode("utf-8")


def test_short_neighbouring_values_that_run_together_into_40_characters_are_kept():
    # a campaign's state on the H200 (2026-12-03): the values joined make a 40-character mixed-case run, the shape
    # of an AWS secret key; redacting it had replaced the question id, the trigger and the source
    question = {"kind": "intervention_fired", "turn": 9, "intervention_id": "da8c93057742", "trigger": "suspicious",
                "source": "bank", "question_id": "q038", "text": "Could a race between the stage"}
    assert redact_json(question) == question


def test_a_key_by_shape_split_over_two_values_is_still_caught():
    clean = redact_json({"a": "key wJalrXUtnFEMI/K7MDEN", "b": "G/bPxRfiCYEXAMPLEKEY end"})
    assert "wJalrXUtnFEMI" not in json.dumps(clean) and "EXAMPLEKEY" not in json.dumps(clean)
