"""Where credentials of a known shape sit in a text: key formats, credential-named values, Bearer tokens, URL
passwords. `shape_spans(text)` gives their (start, end) spans; workbench/redaction.py is the module to use.

What is caught (redaction.py's docstring is the user-facing list):
  * key formats: Anthropic and OpenAI keys (sk-ant-..., sk-...), AWS access key ids (AKIA..., ASIA...) and secret
    keys (40 base64 characters of mixed case), GitHub, Hugging Face, Slack and Google keys, PEM private key
    blocks; and the Anthropic key's prefix written reversed, in hex or in base64 (any alignment), with what
    follows it;
  * the whole value after a credential-ish name (Authorization, X-Api-Key, api_key, access_token, password, ...),
    after an optional Bearer/Basic/Token scheme, in plain and in JSON-escaped text, and any `Bearer <token>`;
  * the password of a URL (`https://user:password@host`).
A key format cut by a line break (a wrapped line, `print(key[:20]); print(key[20:])` in one output, an escaped
`\\n` in JSON) is matched across the break: the part after it is redacted too.

Speed (an import redacts every string it writes): each pattern is tried only where its literal anchor occurs
(found with str.find), never by a regex scan of the whole text; the result is the same as scanning.
"""
from __future__ import annotations

import re

# an optional quote, possibly JSON-escaped once or twice (" \" \\\")
_Q = r"""(?:\\*["'])?"""
_SEP = rf"""\s*{_Q}\s*[:=]\s*{_Q}\s*"""
_TOKEN_CHAR = r"""(?:[A-Za-z0-9\-._~+/=%!*#$&?^|@]|\\/)"""
_NAMES = (r"(?:proxy-)?authorization|x-api-key|x-auth-token|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|"
          r"refresh[_-]?token|id[_-]?token|client[_-]?secret|secret[_-]?key|password|passwd|aws[_-]?secret"
          r"(?:[_-]?access)?[_-]?key|secret[_-]?access[_-]?key")
NAME_KEYWORDS = ("auth", "key", "token", "secret", "pass")   # every name above holds one, at most 8 characters in
NAME_REACH = 16                                               # so a name starts at most this far before its keyword

# key formats: (anchor, pattern matched where the anchor is found, length a whole key of the format has at least).
# An anchor starts with a literal character, so the regex engine finds it by a fast scan for that character (a
# whole-text regex scan is 50 times slower). A match shorter than the whole length that a line break cuts goes on
# after the break; a whole key at the end of a line leaves the next line alone (`KEY=...` lines of a .env file).
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA")
KEY_FORMATS = [
    (re.compile(r"sk-"), re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), 100),           # sk-ant-api03-: 108
    (re.compile(r"sk-"), re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"), 51),
    (re.compile(r"A(?:" + "|".join(p[1:] for p in _AWS_PREFIXES) + ")"),
     re.compile(r"(?<![A-Z0-9])(?:" + "|".join(_AWS_PREFIXES) + r")[A-Z0-9]{16}(?![A-Z0-9])"), 20),
    (re.compile(r"AIza"), re.compile(r"AIza[0-9A-Za-z\-_]{35}"), 39),
    (re.compile(r"gh[pousr]_"), re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"), 40),
    (re.compile(r"github_pat_"), re.compile(r"github_pat_[A-Za-z0-9_]{22,}"), 82),
    (re.compile(r"hf_"), re.compile(r"hf_[A-Za-z0-9]{30,}"), 37),
    (re.compile(r"xox[abprs]-"), re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}"), 40),
    # the Anthropic key's "sk-ant-" written reversed, in hex, or in base64 at each of the three byte alignments
    (re.compile(r"-tna-ks"), re.compile(r"[A-Za-z0-9_\-]{8,}-tna-ks"), 100),
    (re.compile(r"736[bB]2[dD]616[eE]742[dD]"), re.compile(r"736[bB]2[dD]616[eE]742[dD][0-9a-fA-F]{16,}"), 200),
] + [(re.compile(p), re.compile(p + r"[A-Za-z0-9+/_\-]{24,}={0,2}"), 130) for p in ("c2stYW50", "ay1hbnQt", "LWFudC")]
ENDS_AT_ANCHOR = ("-tna-ks",)      # a reversed key ends with its anchor: matched from the start of its run


def _literal_head(anchor: re.Pattern) -> str:
    """The characters every match of anchor starts with, as the regex engine's own parser reads the pattern
    (leading plain characters, not one a quantifier or a branch follows); "" when that is not certain."""
    pattern = anchor.pattern
    if anchor.flags & (re.IGNORECASE | re.VERBOSE):
        return ""
    try:
        from re import _parser
        items = list(_parser.parse(pattern, anchor.flags))
    except (ImportError, AttributeError, TypeError, re.error):
        return ""
    head = ""
    for op, value in items:
        if op is not _parser.LITERAL or not isinstance(value, int):
            break
        head += chr(value)
    return head if pattern.startswith(head) else ""         # written plainly too, or not trusted


# a format's anchor can match only where its head occurs: `head in text` (a fast substring search) spares the
# regex scan of nearly every text, which holds no head of any format
_ANCHOR_HEADS = [_literal_head(anchor) for anchor, _, _ in KEY_FORMATS]
PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S)
# an AWS secret access key by shape: 40 base64 characters with upper, lower and a digit, standing alone
AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                        r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_RUN_OF_40 = re.compile(r"[A-Za-z0-9/+]{40}")
# the same test without a regex scan: those characters as "a", every other byte (and the "?" of anything outside
# ASCII) as a space, then 40 "a" in a row looked for
_RUN_BYTES = bytes(ord("a") if re.fullmatch(r"[A-Za-z0-9/+]", chr(b)) else ord(" ") for b in range(256))
_RUN = re.compile(r"[A-Za-z0-9/+=]*")
NAMED = re.compile(rf"(?i)(?:{_NAMES}){_SEP}(?:(?:Bearer|Basic|Token|Digest|Bot|ApiKey)\s+)?({_TOKEN_CHAR}{{4,}})")
SCHEME_TOKEN = re.compile(rf"(?i)\b(?:Bearer|Basic)\s+({_TOKEN_CHAR}{{8,}})")
URL_PASSWORD = re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^/\s:@\"'\\]+:([^/\s@\"'\\]+)@")
URL_REACH = (64, 2048)           # a URL's scheme starts this far before "://" at most, its password ends before
# what a key format can continue with after a line break
LINE_BREAK = re.compile(r"\r\n|\n|\r|\\{1,3}[rn]")
_KEY_RUN = re.compile(r"[A-Za-z0-9_\-+/=]*")
MAX_BREAKS_JOINED = 4


def _finds(text: str, needle: str) -> list[int]:
    found, i = [], text.find(needle)
    while i >= 0:
        found.append(i)
        i = text.find(needle, i + 1)
    return found


def _lower(text: str) -> str:
    """text.lower() with every character at its place (a character whose lower case is longer is kept)."""
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _joined_match(text: str, start: int, pattern: re.Pattern) -> tuple[int, int] | None:
    """The span of `pattern` matched at start once the line breaks that cut its key characters (up to
    MAX_BREAKS_JOINED) are taken out, when the match runs across one of them; None otherwise."""
    pieces, removed, pos, view_len = [], [], start, 0
    for _ in range(MAX_BREAKS_JOINED):
        run_end = _KEY_RUN.match(text, pos).end()
        brk = LINE_BREAK.match(text, run_end)
        if brk is None:
            break
        pieces.append(text[pos:run_end])
        view_len += run_end - pos
        removed.append((view_len, brk.end() - run_end))
        pos = brk.end()
    if not removed:
        return None
    pieces.append(text[pos:pos + 512])
    m = pattern.match("".join(pieces))
    if m is None or m.end() <= removed[0][0]:
        return None                 # no match, or one that stops before the first break (found already)
    return start, start + m.end() + sum(length for at, length in removed if at < m.end())


def _run_start(text: str, i: int) -> int:
    """Where the run of key characters that ends at i begins (at most 1024 characters back)."""
    start = i
    while start > 0 and i - start < 1024 and _KEY_RUN.fullmatch(text[start - 1]):
        start -= 1
    return start


def key_format_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for (anchor, pattern, whole), head in zip(KEY_FORMATS, _ANCHOR_HEADS):
        if head not in text:
            continue
        for found in anchor.finditer(text):
            i = found.start()
            if anchor.pattern in ENDS_AT_ANCHOR:
                start = _run_start(text, i)
                m = pattern.search(text, start, found.end())
            else:
                start, m = i, pattern.match(text, i)
            if m is not None:
                spans.append((m.start(), m.end()))
            if m is None or (m.end() - m.start() < whole and LINE_BREAK.match(text, m.end())):
                joined = _joined_match(text, start, pattern)
                if joined:
                    spans.append(joined)
    if "PRIVATE KEY" in text:
        spans += [(m.start(), m.end()) for m in PEM.finditer(text)]
    pos = 0 if b"a" * 40 in text.encode("ascii", "replace").translate(_RUN_BYTES) else len(text)   # a run of 40
    while len(text) - pos >= 40 and (run := _RUN_OF_40.search(text, pos)) is not None:
        start = run.start()
        while start > 0 and _RUN.fullmatch(text[start - 1]):        # the whole run the 40 characters are in
            start -= 1
        end = _RUN.match(text, run.end()).end()
        m = AWS_SECRET.search(text, start, end)
        if m is not None:
            spans.append((m.start(), m.end()))
        pos = end + 1
    return spans


def named_spans(text: str) -> list[tuple[int, int]]:
    """Values after a credential-ish name: NAMED tried only at the places a name holding one of NAME_KEYWORDS
    can start, in order, so the matches are those a scan of the whole text finds."""
    lower = _lower(text)
    hits = sorted({i for keyword in NAME_KEYWORDS for i in _finds(lower, keyword)})
    spans, pos, tried = [], 0, 0
    for h in hits:
        start = max(pos, tried, h - NAME_REACH)
        while start <= h:
            m = NAMED.match(text, start)
            if m is None:
                start += 1
                continue
            if m.end(1) > m.start(1):
                spans.append((m.start(1), m.end(1)))
            # go on from the secret: it may be the name of the next credential ("Authorization: x-api-key: K")
            pos = m.start(1) if m.start(1) > pos else max(m.end(), pos + 1)
            start = tried = pos
            if start > h:
                break
        tried = max(tried, h + 1)
    return spans


def scheme_and_url_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    if "earer" in text or "EARER" in text or "asic" in text or "ASIC" in text:
        lower = _lower(text)
        for word in ("bearer", "basic"):
            for i in _finds(lower, word):
                m = SCHEME_TOKEN.match(text, i)
                if m is not None:
                    spans.append((m.start(1), m.end(1)))
    pos = 0
    for i in _finds(text, "://"):
        if i < pos:
            continue
        m = URL_PASSWORD.search(text, max(pos, i - URL_REACH[0]), i + URL_REACH[1])
        if m is not None and m.start() <= i:
            spans.append((m.start(1), m.end(1)))
            pos = m.end()
    return spans


# a short text (an id, a name) is looked at only when it holds one of the anchors or keywords above
SHORT_TEXT = 64
_SUSPECT = re.compile(r"sk-|A(?:" + "|".join(p[1:] for p in _AWS_PREFIXES) + r"|Iza)|gh[pousr]_|github_pat_|hf_|xox|"
                      r"-tna-ks|736[bB]2|c2stYW50|ay1hbnQt|LWFudC|PRIVATE KEY|://|[A-Za-z0-9/+]{40}")
_SUSPECT_WORDS = ("auth", "key", "token", "secret", "pass", "bearer", "basic")
_SUSPECT_WORD = re.compile("(?i)" + "|".join(_SUSPECT_WORDS))


def _suspect_word(text: str) -> bool:
    """_SUSPECT_WORD.search(text), for ASCII text as substrings of its lower case: there `(?i)` matches ASCII case
    variants only (its other matches, such as KELVIN SIGN for k, are outside ASCII), and `in` costs less."""
    if not text.isascii():
        return _SUSPECT_WORD.search(text) is not None
    lower = text.lower()
    return any(word in lower for word in _SUSPECT_WORDS)


def shape_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every credential of a known shape in text (unsorted, may overlap)."""
    if len(text) < SHORT_TEXT and not _SUSPECT.search(text) and not _suspect_word(text):
        return []
    return key_format_spans(text) + named_spans(text) + scheme_and_url_spans(text)
