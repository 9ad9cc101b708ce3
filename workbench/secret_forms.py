"""The environment's secrets in every form they can be written in, and where a piece of one sits in a text.
`env_secret_spans(text)` gives the spans; workbench/redaction.py is the module to use.

A secret is the value of an environment variable whose name contains KEY, TOKEN, SECRET, PASSWORD (or PASSWD,
CREDENTIAL), at least 8 characters long. A program that holds it can print it in any form; these are the forms
that a person (or an agent, or candidate code) gets by one standard step, each matched whole and by any piece
of 16 or more characters of it:
  * as it is, JSON-escaped once and twice, reversed, ROT13;
  * percent-encoded (URL quoting, with `+` for spaces or not);
  * hex (lower and upper case);
  * base64 and base64url, base32: an encoding of a longer text shows the secret's bytes at one of 3 (base32: 5)
    byte alignments, so each alignment is a form of its own (the encoding of the secret's bytes from the first
    whole group on).
A form is matched across the line breaks (`base64` wraps at 76 columns) and the invisible characters that
redaction.py takes out before matching. A transform outside this list (an XOR, two steps, a cipher) is not
caught: redaction is the last wall, not the containment (docs/security.md).
"""
from __future__ import annotations

import base64
import codecs
import contextlib
import json
import os
import re
import threading
from urllib.parse import quote, quote_plus

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MIN_SECRET_CHARS = 8          # shorter env values ("1", "true") are not treated as secrets
MIN_FRAGMENT_CHARS = 16       # a piece of a secret's form this long is redacted wherever it appears
PROBE = 8                     # every piece of >= 15 characters holds a PROBE-long block starting at a multiple of PROBE
MAX_HITS_PER_PROBE = 64
# what a form may be cut by in a text and still be read as one: line breaks, escaped or not
SKIPPABLE = re.compile(r"\r\n|\n|\r|\\{1,3}[rn]")


def forms_of(secret: str) -> list[str]:
    """Every form of the module docstring of one secret, at least MIN_SECRET_CHARS long, longest first."""
    raw = secret.encode("utf-8", "surrogatepass")
    once = json.dumps(secret)[1:-1]
    forms = {secret, once, json.dumps(once)[1:-1], secret[::-1], codecs.encode(secret, "rot13"),
             quote(secret, safe=""), quote_plus(secret, safe=""), raw.hex(), raw.hex().upper()}
    for group, encode in ((3, base64.b64encode), (3, base64.urlsafe_b64encode), (5, base64.b32encode)):
        for skip in range(group):
            whole = (len(raw) - skip) // group * group
            if whole > 0:
                forms.add(encode(raw[skip:skip + whole]).decode("ascii"))
    return sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=len, reverse=True)


class SecretIndex:
    """Every form of the secrets, with each PROBE-long block of each form indexed for the fragment search."""

    def __init__(self, secrets):
        self.forms = sorted({f for s in secrets for f in forms_of(s)}, key=len, reverse=True)
        self.short = [f for f in self.forms if len(f) < 2 * PROBE - 1]      # too short to hold a probe: find()
        self.chars = frozenset("".join(self.forms))
        self.blocks: dict[str, list[tuple[str, int]]] = {}
        for form in self.forms:
            if len(form) < 2 * PROBE - 1:
                continue
            for j in range(len(form) - PROBE + 1):
                self.blocks.setdefault(form[j:j + PROBE], []).append((form, j))
        # probes are read as 8-byte words (one per probe) when every block is ASCII without "?": encoding a text
        # to ASCII with "?" for anything else keeps each character at its place, and "?" is in no block, so a
        # probe is a block exactly when its word is one of these. Slicing every PROBE-th piece of every text in
        # Python was a large part of what redacting an import cost.
        plain = PROBE == 8 and all(b.isascii() and "?" not in b for b in self.blocks)
        self._words = {memoryview(b.encode("ascii")).cast("Q")[0] for b in self.blocks} if plain else None

    def __bool__(self) -> bool:
        return bool(self.forms)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every whole form of a secret, and every piece of >= MIN_FRAGMENT_CHARS of one."""
        spans = []
        for form in self.short:
            i = text.find(form)
            while i >= 0:
                spans.append((i, i + len(form)))
                i = text.find(form, i + 1)
        blocks, n = self.blocks, len(text)
        if not blocks or n < PROBE:
            return spans
        if self._words is not None:
            data = text.encode("ascii", "replace")          # one byte a character, as the words above
            words = memoryview(data)[:n - n % PROBE].cast("Q").tolist()
            if self._words.isdisjoint(words):
                return spans
            probes = [k * PROBE for k, word in enumerate(words) if word in self._words]
        else:
            probes = [p for p in range(0, n - PROBE + 1, PROBE) if text[p:p + PROBE] in blocks]
        for p in probes:
            for form, j in blocks[text[p:p + PROBE]][:MAX_HITS_PER_PROBE]:
                span = _extend(text, p, form, j)
                if span:
                    spans.append(span)
        return spans


def _skip_forward(text: str, pos: int) -> int:
    m = SKIPPABLE.match(text, pos)
    return m.end() if m else pos


def _skip_back(text: str, pos: int) -> int:
    """pos moved back over a line break that ends at pos (the form goes on before it), else pos."""
    for length in (4, 3, 2, 1):
        if pos - length >= 0 and SKIPPABLE.fullmatch(text, pos - length, pos):
            return pos - length
    return pos


def _extend(text: str, p: int, form: str, j: int) -> tuple[int, int] | None:
    """The span around text[p:p+PROBE] == form[j:j+PROBE] that repeats form, across skippable breaks; None when
    it repeats fewer than MIN_FRAGMENT_CHARS of a form that it does not hold whole."""
    left, f_left = p, j
    while f_left > 0:
        if left > 0 and text[left - 1] == form[f_left - 1]:
            left, f_left = left - 1, f_left - 1
            continue
        back = _skip_back(text, left)
        if back == left or back == 0 or text[back - 1] != form[f_left - 1]:
            break
        left = back
    right, f_right = p + PROBE, j + PROBE
    while f_right < len(form):
        if right < len(text) and text[right] == form[f_right]:
            right, f_right = right + 1, f_right + 1
            continue
        ahead = _skip_forward(text, right)
        if ahead == right or ahead >= len(text) or text[ahead] != form[f_right]:
            break
        right = ahead
    if f_right - f_left >= MIN_FRAGMENT_CHARS or (f_left == 0 and f_right == len(form)):
        return left, right
    return None


# ---- the environment's secrets, re-read when the environment changes ------------------------------------
_cache: tuple = (None, SecretIndex(()))


def env_values() -> list[str]:
    """The values of the environment's secret-named variables (module docstring), longest first."""
    data = getattr(os.environ, "_data", None)
    items = data.items() if isinstance(data, dict) else os.environb.items()
    values = set()
    for name, value in items:
        name = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
        value = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if SECRET_NAME.search(name) and len(value.strip()) >= MIN_SECRET_CHARS:
            values.add(value.strip())
    return sorted(values, key=len, reverse=True)


_pinned = threading.local()


@contextlib.contextmanager
def environment_read_once():
    """env_index() reads the environment once for the block (a whole table redacted), not once per string."""
    if getattr(_pinned, "index", None) is not None:
        yield
        return
    _pinned.index = env_index()
    try:
        yield
    finally:
        _pinned.index = None


def env_index() -> SecretIndex:
    """The SecretIndex of the environment's secrets (rebuilt only when the environment changed)."""
    global _cache
    pinned = getattr(_pinned, "index", None)
    if pinned is not None:
        return pinned
    data = getattr(os.environ, "_data", None)
    items = tuple(data.items()) if isinstance(data, dict) else tuple(os.environb.items())
    if items != _cache[0]:
        _cache = (items, SecretIndex(env_values()))
    return _cache[1]


def env_secret_spans(text: str) -> list[tuple[int, int]]:
    return env_index().spans(text)
