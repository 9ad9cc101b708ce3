"""Secrets never reach disk or a terminal: one redaction rule for every string the workbench writes or prints.

    redact(text)                  -> text with credentials replaced by [REDACTED]
    redact_pieces([a, b, ...])    -> the same pieces, also catching a secret split across neighbouring pieces
    with remembering(): ...       -> redact() remembers every text of the block (an import: no text twice)
    redact_json(obj)              -> a JSON-like object with every string redacted
    RedactingStream(sys.stdout)   -> a text stream that redacts each line before it reaches the terminal

What counts as a secret:
  * the value of every environment variable whose name contains KEY, TOKEN, SECRET, PASSWORD (or PASSWD,
    CREDENTIAL), when it is at least 8 characters long, in every form one standard step makes of it (as it is,
    JSON-escaped, reversed, ROT13, percent-encoded, hex, base64, base64url and base32 at every byte alignment),
    whole or any piece of 16 or more characters of a form (secret_forms.py);
  * credentials by shape: key formats (Anthropic, OpenAI, AWS, GitHub, Hugging Face, Slack, Google, PEM private
    keys, the Anthropic prefix reversed, in hex or base64), the value after a credential-ish name (Authorization,
    X-Api-Key, api_key, password, ...), any `Bearer <token>`, the password of a URL (secret_shapes.py).
Before matching, invisible characters (zero-width spaces and joiners, bidi controls, soft hyphens, BOMs,
variation selectors, tag characters) are taken out: a key with one inside is still a key, and the span redacted
covers them. A key format or an environment secret cut by a line break (wrapped output, `\\n` in JSON) is
matched across it. Pieces are a stream: a secret split over two neighbouring pieces (two rows of a table, the
last text of a turn and the first of the next, two prints) is caught in both; halves with other text between
them are caught only where each half is recognisable on its own (an environment secret's 16 characters).
Over-redaction is the safe failure: a hash or identifier that looks like a key loses its value in the
record, a key never survives.
"""
from __future__ import annotations

import bisect
import contextlib
import io
import re
import sys
import threading
import traceback
from typing import Iterable, TextIO

from workbench.secret_forms import (MIN_FRAGMENT_CHARS, MIN_SECRET_CHARS, SECRET_NAME, env_index,  # noqa: F401
                                    environment_read_once)
from workbench.secret_shapes import AWS_SECRET, shape_spans

REDACTED = "[REDACTED]"
INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                       "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f]")
CONTEXT_CHARS = 4096            # raw text kept from earlier pieces of a stream, to catch a secret split over them
JOIN_WINDOW = 128               # a secret across a piece boundary is looked for this far on both sides of it
MAX_JOIN_WINDOW = 1 << 20       # ... and further, when one reaches the window's edge (a PEM block), up to this
STOP_CHARS = frozenset("(){}[],;<>`")   # in no key format or credential value: a boundary next to one is skipped
MEMO_ENTRIES, MEMO_MAX_CHARS = 4096, 16384      # redact() remembers texts it has seen (ids, repeated outputs)
MEMO_SCOPED_ENTRIES = 1 << 20                   # ... and this many inside remembering() (a whole import)
_LEADING_SPACE = re.compile(r"\s*")


def replace_surrogates(text: str) -> str:
    """Lone UTF-16 surrogates (from JSON such as "\\ud800") cannot be encoded as UTF-8: make them U+FFFD."""
    if text.isascii():                  # reads a flag: no scan
        return text
    try:
        text.encode("utf-8")            # fails exactly on a surrogate, and costs a fraction of a regex scan
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _merge(spans) -> list[tuple[int, int]]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def _without_invisible(text: str):
    """(text without INVISIBLE characters, function mapping a span of it back to a span of text)."""
    removed = [m.start() for m in INVISIBLE.finditer(text)]
    at_view = [r - k for k, r in enumerate(removed)]     # the view position each removed character stood before

    def original(a: int, b: int) -> tuple[int, int]:
        return a + bisect.bisect_right(at_view, a), (b - 1) + bisect.bisect_right(at_view, b - 1) + 1

    return INVISIBLE.sub("", text), original


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Merged, sorted (start, end) spans of every secret in text."""
    index = env_index()
    spans = index.spans(text) + shape_spans(text) if index else shape_spans(text)
    if not text.isascii() and INVISIBLE.search(text):       # every INVISIBLE character is outside ASCII
        view, original = _without_invisible(text)
        found = index.spans(view) + shape_spans(view) if index else shape_spans(view)
        spans += [original(a, b) for a, b in found if b > a]
    return _merge(spans) if spans else spans


def _apply(text: str, spans) -> str:
    out, pos = [], 0
    for start, end in spans:
        out += [text[pos:start], REDACTED]
        pos = end
    out.append(text[pos:])
    return "".join(out)


class _Memo:
    """What was found in texts already looked at, forgotten whenever the environment's secrets change (a text that
    was clean may not be any more) and whenever it holds `limit` entries."""

    def __init__(self):
        self.entries: dict = {}
        self.index = None

    def get(self, text: str):
        index = env_index()
        if index is not self.index:
            self.entries.clear()
            self.index = index
        return self.entries.get(text)

    def put(self, text: str, found, limit: int):
        if len(self.entries) >= limit:
            self.entries.clear()
        self.entries[text] = found


_memo = _Memo()                 # redact()'s clean texts
_windows = _Memo()              # secret_spans of _crossing_spans' windows, inside remembering() only
_memo_scopes, _memo_scopes_lock = 0, threading.Lock()


@contextlib.contextmanager
def remembering():
    """redact() remembers up to MEMO_SCOPED_ENTRIES texts in the block, and forgets them after it. An import
    writes most strings twice (a tool's input and output in messages and in tool_calls, a call id three times):
    the second time is a lookup. The texts remembered are the caller's own (its rows hold them anyway)."""
    global _memo_scopes
    with _memo_scopes_lock:
        _memo_scopes += 1
    try:
        yield
    finally:
        with _memo_scopes_lock:
            _memo_scopes -= 1
            if not _memo_scopes:
                _memo.entries.clear()   # a long-lived process keeps no import's texts alive
                _windows.entries.clear()


def redact(text):
    """text with every secret replaced by [REDACTED] (None and '' pass through)."""
    if not text or not isinstance(text, str):
        return text
    if len(text) < MIN_SECRET_CHARS:
        return text
    clean = _memo.get(text)
    if clean is None:
        spans = secret_spans(text)
        clean = _apply(text, spans) if spans else text
        if len(text) <= MEMO_MAX_CHARS:
            _memo.put(text, clean, MEMO_SCOPED_ENTRIES if _memo_scopes else MEMO_ENTRIES)
    return clean


def _window_spans(text: str) -> list[tuple[int, int]]:
    """secret_spans(text) of a window across pieces, remembered inside remembering(): an import reads the same
    neighbouring outputs in two streams (messages and tool_calls), so it looks at the same windows twice."""
    if not _memo_scopes or len(text) > MEMO_MAX_CHARS:
        return secret_spans(text)
    found = _windows.get(text)
    if found is None:
        found = secret_spans(text)
        _windows.put(text, found, MEMO_SCOPED_ENTRIES)
    return found


def _crossing_spans(texts: list[str], leads: list[int], sizes: list[int], starts: list[int]) -> list[tuple[int, int]]:
    """Spans of the cores joined that run across a boundary between two of them, looked for in windows of
    JOIN_WINDOW around each boundary (grown while a span reaches a window's edge), never in the whole join. The
    core of texts[i] is texts[i][leads[i]:leads[i] + sizes[i]], at starts[i] in the join (never copied out)."""
    total = starts[-1] + sizes[-1] if texts else 0
    stop = STOP_CHARS - env_index().chars          # no secret holds these on both sides of a boundary
    bounds, last = [], ""                           # last: the last character of the last core that has one
    for i, text in enumerate(texts):
        if not sizes[i]:
            continue
        if last and 0 < starts[i] < total and last not in stop and text[leads[i]] not in stop:
            bounds.append(starts[i])
        last = text[leads[i] + sizes[i] - 1]

    def joined(a: int, b: int) -> str:
        i = max(0, bisect.bisect_right(starts, a) - 1)
        parts = []
        while i < len(texts) and starts[i] < b:
            parts.append(texts[i][leads[i] + max(0, a - starts[i]):leads[i] + min(b - starts[i], sizes[i])])
            i += 1
        return "".join(parts)

    found, k = [], 0
    while k < len(bounds):
        lo, hi = max(0, bounds[k] - JOIN_WINDOW), min(total, bounds[k] + JOIN_WINDOW)
        while k + 1 < len(bounds) and bounds[k + 1] - JOIN_WINDOW <= hi:      # overlapping windows: one segment
            k += 1
            hi = min(total, bounds[k] + JOIN_WINDOW)
        grow = JOIN_WINDOW
        while True:
            inside = bounds[bisect.bisect_left(bounds, lo):bisect.bisect_right(bounds, hi)]
            spans = [(lo + a, lo + b) for a, b in _window_spans(joined(lo, hi))]
            crossing = [(a, b) for a, b in spans if _real_crossing(inside, a, b, joined)]
            at_edge = [(a, b) for a, b in crossing if (a == lo and lo > 0) or (b == hi and hi < total)]
            if not at_edge or grow >= MAX_JOIN_WINDOW:
                break
            grow *= 4
            lo, hi = max(0, lo - grow), min(total, hi + grow)
        found += crossing
        k = bisect.bisect_right(bounds, hi)     # a grown window covered the boundaries up to its end
    return found


def _real_crossing(inside: list[int], a: int, b: int, joined) -> bool:
    """Whether span [a, b) of the joined pieces runs across a boundary as a split secret would. A match by
    shape alone (an AWS secret key: any 40 base64 characters of mixed case) across two or more boundaries is
    not one: short neighbouring values run together make it ("fired" + an id + "suspicious" + "bank" + "q038" +
    "Could" in a campaign's state, 2026-12-03), and redacting them destroyed the record's question id."""
    crossed = bisect.bisect_left(inside, b) - bisect.bisect_right(inside, a)
    if crossed == 0:
        return False
    return crossed == 1 or not AWS_SECRET.fullmatch(joined(a, b))


def redact_pieces(pieces: Iterable[str | None], context: str = "") -> list:
    """Redact each piece, and also what only shows when neighbouring pieces are read together (a key split
    over two tool outputs, two rows, or two writes of a log). Whitespace at the boundaries is ignored for that.
    context: raw text that came just before the first piece (the end of an earlier turn), never returned."""
    with environment_read_once():
        return _redact_pieces(list(pieces), context)


def _redact_pieces(pieces: list, context: str) -> list:
    texts = ([context] if context else []) + [p if isinstance(p, str) else "" for p in pieces]
    # each text's core (without the whitespace at its boundaries with its neighbours) is located, not copied out:
    # `\s` is what str.strip() strips, and rstrip() copies only a text that ends in whitespace
    leads, sizes, starts, pos, last = [], [], [], 0, len(texts) - 1
    for i, text in enumerate(texts):
        n = len(text)
        lead = _LEADING_SPACE.match(text).end() if i > 0 else 0
        trail = n - len(text.rstrip()) if i < last and text and text[-1].isspace() else 0
        leads.append(lead)
        sizes.append(max(0, n - lead - trail))
        starts.append(pos)
        pos += sizes[-1]
    cuts: list[list[tuple[int, int]]] = [[] for _ in texts]
    for a, b in _crossing_spans(texts, leads, sizes, starts) if len(texts) > 1 else []:
        first = max(0, bisect.bisect_right(starts, a) - 1)
        for i in range(first, len(texts)):
            if starts[i] >= b:
                break
            if starts[i] + sizes[i] > a:
                lo = max(a, starts[i]) - starts[i] + leads[i]
                hi = min(b, starts[i] + sizes[i]) - starts[i] + leads[i]
                cuts[i].append((lo, hi))
    if context:
        texts, cuts = texts[1:], cuts[1:]
    out = []
    for piece, text, spans in zip(pieces, texts, cuts):
        if not isinstance(piece, str):
            out.append(piece)
            continue
        out.append(redact(_apply(text, _merge(spans)) if spans else text))
    return out


def context_after(context: str, pieces: Iterable[str | None]) -> str:
    """The raw tail (CONTEXT_CHARS) of a stream after pieces, for the next redact_pieces(..., context=...)."""
    return (context + "".join(p for p in pieces if isinstance(p, str)))[-CONTEXT_CHARS:]


def redact_json(obj, context: str = ""):
    """Every string value of a JSON-like object redacted, split secrets across its strings included (and across
    `context`, raw text that came before it: see redact_pieces)."""
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
    clean = iter(redact_pieces(strings, context=context))

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


def _redacting_excepthook(kind, value, tb) -> None:
    text = "".join(traceback.format_exception(kind, value, tb))
    sys.__stderr__.write(replace_surrogates(redact(text)))
    sys.__stderr__.flush()


def install_redacting_excepthook() -> None:
    """Uncaught errors (of the main thread and of other threads) print their traceback redacted: the message
    of an error can hold a key, and it is printed after every redacting stream is gone."""
    sys.excepthook = _redacting_excepthook
    def thread_hook(args) -> None:
        if args.exc_type is not SystemExit:         # as the default hook: a thread's SystemExit is silent
            _redacting_excepthook(args.exc_type, args.exc_value, args.exc_traceback)

    threading.excepthook = thread_hook
