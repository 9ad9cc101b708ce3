"""Secrets never reach disk or a terminal: one redaction rule for every string the workbench writes or prints.

    redact(text)                  -> text with credentials replaced by [REDACTED]
    redact_pieces([a, b, ...])    -> the same pieces, also catching a secret split across neighbouring pieces
    redact_json(obj)              -> a JSON-like object with every string redacted
    RedactingStream(sys.stdout)   -> a text stream that redacts each line before it reaches the terminal

What counts as a secret:
  * the value of every environment variable whose name contains KEY, TOKEN, SECRET, PASSWORD (or PASSWD,
    CREDENTIAL), when it is at least 8 characters long: the whole value, its JSON-escaped form, and any
    fragment of 16 or more characters of it (a key printed in two halves is still caught);
  * shapes of known credentials: Anthropic and OpenAI keys (sk-ant-..., sk-...), AWS access key ids
    (AKIA..., ASIA...) and secret keys (40 base64 characters of mixed case, or any value after
    aws_secret_access_key), GitHub, Hugging Face, Slack and Google keys, PEM private key blocks;
  * the whole value after a credential-ish name (Authorization, X-Api-Key, api_key, access_token, password,
    ...), after an optional Bearer/Basic/Token scheme, including '/', '+', '=' and '.' in it, in plain text and
    inside JSON-escaped text (`{\\"Authorization\\": \\"Bearer X\\"}`), and any `Bearer <token>`;
  * the password of a URL (`https://user:password@host`).
Over-redaction is the safe failure: a hash or identifier that looks like a key loses its value in the
record, a key never survives.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from typing import Iterable, TextIO

REDACTED = "[REDACTED]"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MIN_SECRET_CHARS = 8          # shorter env values ("1", "true") are not treated as secrets
MIN_FRAGMENT_CHARS = 16       # a piece of an env secret this long is redacted wherever it appears
_BLOCK = 8                    # fragment search: every fragment >= 15 chars holds one aligned 8-char block
_MAX_HITS_PER_BLOCK = 1000

# an optional quote, possibly JSON-escaped once or twice (" \" \\\")
_Q = r"""(?:\\*["'])?"""
_SEP = rf"""\s*{_Q}\s*[:=]\s*{_Q}\s*"""
_TOKEN_CHAR = r"""(?:[A-Za-z0-9\-._~+/=%!*#$&?^|@]|\\/)"""
_NAMES = (r"(?:proxy-)?authorization|x-api-key|x-auth-token|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|"
          r"refresh[_-]?token|id[_-]?token|client[_-]?secret|secret[_-]?key|password|passwd|aws[_-]?secret"
          r"(?:[_-]?access)?[_-]?key|secret[_-]?access[_-]?key")

# (cheap test that the pattern might match, pattern, group holding the secret: 0 = the whole match)
PATTERNS = [
    (lambda t: "PRIVATE KEY" in t,
     re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S), 0),
    (lambda t: "sk-" in t, re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), 0),
    (lambda t: "sk-" in t, re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), 0),
    (lambda t: "A" in t,
     re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)"
                r"[A-Z0-9]{16}(?![A-Z0-9])"), 0),
    # an AWS secret access key by shape: 40 base64 characters with upper, lower and a digit, standing alone
    (lambda t: len(t) >= 40,
     re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), 0),
    (lambda t: "_" in t or "xox" in t or "AIza" in t,
     re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}|hf_[A-Za-z0-9]{30,}|"
                r"xox[abprs]-[A-Za-z0-9\-]{10,}|AIza[0-9A-Za-z\-_]{35})"), 0),
    (lambda t: ":" in t or "=" in t,
     re.compile(rf"(?i)(?:{_NAMES}){_SEP}(?:(?:Bearer|Basic|Token|Digest|Bot|ApiKey)\s+)?({_TOKEN_CHAR}{{4,}})"), 1),
    (lambda t: "earer" in t or "EARER" in t or "asic" in t or "ASIC" in t,
     re.compile(rf"(?i)\b(?:Bearer|Basic)\s+({_TOKEN_CHAR}{{8,}})"), 1),
    (lambda t: "://" in t, re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^/\s:@\"'\\]+:([^/\s@\"'\\]+)@"), 1),
]
_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """Lone UTF-16 surrogates (from JSON such as "\\ud800") cannot be encoded as UTF-8: make them U+FFFD."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# ---- secrets from the environment --------------------------------------------------------------------
_env_cache: tuple = (None, ())


def env_secrets() -> tuple:
    """(value, its plain and JSON-escaped forms) of the environment's secret-named variables, longest first;
    re-read when the environment changes."""
    global _env_cache
    data = getattr(os.environ, "_data", None)
    items = tuple(data.items()) if isinstance(data, dict) else tuple(os.environb.items())
    if items == _env_cache[0]:
        return _env_cache[1]
    values = set()
    for name, value in items:
        name = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
        value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if SECRET_NAME.search(name) and len(value.strip()) >= MIN_SECRET_CHARS:
            values.add(value.strip())
    secrets = tuple((v, tuple({v, json.dumps(v)[1:-1], json.dumps(json.dumps(v)[1:-1])[1:-1]}))
                    for v in sorted(values, key=len, reverse=True))
    _env_cache = (items, secrets)
    return secrets


def _fragment_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Spans of text that repeat >= MIN_FRAGMENT_CHARS consecutive characters of secret."""
    spans = []
    for j in range(0, len(secret) - _BLOCK + 1, _BLOCK):
        block = secret[j:j + _BLOCK]
        start, hits = text.find(block), 0
        while start >= 0 and hits < _MAX_HITS_PER_BLOCK:
            hits += 1
            left, right = start, start + _BLOCK
            s_left, s_right = j, j + _BLOCK
            while left > 0 and s_left > 0 and text[left - 1] == secret[s_left - 1]:
                left, s_left = left - 1, s_left - 1
            while right < len(text) and s_right < len(secret) and text[right] == secret[s_right]:
                right, s_right = right + 1, s_right + 1
            if right - left >= MIN_FRAGMENT_CHARS or (s_left == 0 and s_right == len(secret)):
                spans.append((left, right))
            start = text.find(block, start + 1)
    return spans


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Merged, sorted (start, end) spans of every secret in text."""
    spans = []
    for secret, forms in env_secrets():
        for form in forms:
            start = text.find(form)
            while start >= 0:
                spans.append((start, start + len(form)))
                start = text.find(form, start + 1)
        if len(secret) >= MIN_FRAGMENT_CHARS:
            spans += _fragment_spans(text, secret)
    for might_match, pattern, group in PATTERNS:
        if not might_match(text):
            continue
        pos = 0
        while (m := pattern.search(text, pos)) is not None:
            if m.end(group) > m.start(group):
                spans.append((m.start(group), m.end(group)))
            # go on from the secret itself: it may be the name of the next credential ("Authorization: x-api-key: K")
            pos = m.start(group) if group and m.start(group) > pos else max(m.end(), pos + 1)
    spans.sort()
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _apply(text: str, spans) -> str:
    out, pos = [], 0
    for start, end in spans:
        out += [text[pos:start], REDACTED]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact(text):
    """text with every secret replaced by [REDACTED] (None and '' pass through)."""
    if not text or not isinstance(text, str):
        return text
    if len(text) < MIN_SECRET_CHARS:
        return text
    spans = secret_spans(text)
    return _apply(text, spans) if spans else text


def redact_pieces(pieces: Iterable[str | None]) -> list:
    """Redact each piece, and also what only shows when neighbouring pieces are read together (a key split
    over two tool outputs, or over two writes of a log). Whitespace at the boundaries is ignored for that."""
    pieces = list(pieces)
    texts = [p if isinstance(p, str) else "" for p in pieces]
    cores, starts, offsets, pos = [], [], [], 0
    for i, text in enumerate(texts):
        lead = len(text) - len(text.lstrip()) if i > 0 else 0
        trail = len(text) - len(text.rstrip()) if i < len(texts) - 1 else 0
        core = text[lead:len(text) - trail] if trail else text[lead:]
        cores.append(core)
        starts.append(pos)
        offsets.append(lead)
        pos += len(core)
    joined = "".join(cores)
    cuts: list[list[tuple[int, int]]] = [[] for _ in texts]
    for a, b in secret_spans(joined) if len(texts) > 1 else []:
        owners = [i for i in range(len(texts)) if starts[i] < b and starts[i] + len(cores[i]) > a]
        if len(owners) < 2:
            continue                       # inside one piece: redact() below finds it anyway
        for i in owners:
            lo = max(a, starts[i]) - starts[i] + offsets[i]
            hi = min(b, starts[i] + len(cores[i])) - starts[i] + offsets[i]
            cuts[i].append((lo, hi))
    out = []
    for piece, text, spans in zip(pieces, texts, cuts):
        if not isinstance(piece, str):
            out.append(piece)
            continue
        out.append(redact(_apply(text, sorted(spans)) if spans else text))
    return out


def redact_json(obj):
    """Every string value of a JSON-like object redacted, split secrets across its strings included."""
    strings: list[str] = []

    def collect(o):
        if isinstance(o, str):
            strings.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                collect(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                collect(v)

    collect(obj)
    clean = iter(redact_pieces(strings))

    def rebuild(o):
        if isinstance(o, str):
            return next(clean)
        if isinstance(o, dict):
            return {k: rebuild(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [rebuild(v) for v in o]
        return o

    return rebuild(obj)


class RedactingStream(io.TextIOBase):
    """A line-buffered text stream: each complete line is redacted (with the previous line as context, so a
    key split over two prints is caught) and written to `target`; flush() passes on a partial line too."""

    def __init__(self, target: TextIO):
        self.target = target
        self._pending = ""
        self._previous = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            complete, _, self._pending = self._pending.rpartition("\n")
            self._emit(complete + "\n")
        return len(text)

    def _emit(self, text: str) -> None:
        previous, current = redact_pieces([self._previous, text])
        self._previous = text[-4096:]
        self.target.write(replace_surrogates(current))

    def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            self._emit(text)
        self.target.flush()

    @property
    def encoding(self):
        return getattr(self.target, "encoding", "utf-8")

    def isatty(self) -> bool:
        return getattr(self.target, "isatty", lambda: False)()

    def fileno(self) -> int:
        return self.target.fileno()

    @property
    def buffer(self):
        """The target's binary stream, for a library that writes bytes (a protocol, not a log): not redacted."""
        return self.target.buffer


@contextlib.contextmanager
def redacted_output():
    """sys.stdout and sys.stderr redacted line by line for the block (a CLI command's whole log)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(saved[0])
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(saved[1])
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        sys.stdout, sys.stderr = saved
