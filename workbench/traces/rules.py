"""Text rules of the intervention statistics: message classes, layers, claimed limits.

**Message classes** (`classify_message`). Fenced code, inline code and quoted lines ("> ...") are dropped; the
rest is split into sentences at . ! ? followed by a space, and at line breaks. A sentence is
  * a *request* if it starts with "can/could/would/will you" (after an optional "please") followed by an action
    verb (`ACTION_VERBS`) — "Can you run the tests?" asks for an action, not an answer; it counts as directive;
  * a *question* if it ends with "?" or opens with why, how, what, which, who, "is there", "are there",
    "what if", "i wonder";
  * a *directive* if it opens with an action verb, or with please, let's, don't, do not, never, always,
    "make sure", "you should/must/need to/have to", "i want you to", "i'd like you to";
  * *information* if it has at least three words.
A message is a question if any sentence is one; else a directive if any sentence is a directive or request;
else information if any sentence is; else other (empty, "ok", "thanks", slash commands).

**Layers** (`message_layer`). Each layer has keyword patterns (`LAYER_PATTERNS`); the layer with the most
(non-overlapping) matches wins, ties go to the earlier layer in `LAYERS`, no match is no layer. The agent's layer
before a message is the same rule applied to the agent's text blocks since the previous steering message (at most
the last `AGENT_WINDOW` blocks). A message *moved the layer* when both layers are known and differ.

**Claimed limits** (`claims_limit`): the agent's text since the previous steering message matches one of
`LIMIT_PATTERNS` ("hardware limit", "cannot be improved", "optimal", "best we can do", ...). A message *rejected a
claimed limit* when the agent had claimed one and the message is a question or a directive (it did not accept).
"""
from __future__ import annotations

import re

AGENT_WINDOW = 20           # agent text blocks read to decide what layer it was working on
CLASSES = ("question", "information", "directive", "other")
ATTRIBUTIONS = CLASSES + ("nothing",)
LAYERS = ("measurement", "algorithm", "parallelism", "memory", "tensor-core/instructions", "pipelining",
          "launch/host", "numerics")
LAYER_PATTERNS = {
    "measurement": [r"\bmeasur", r"\btim(?:ing|er|ers)\b", r"\bwall[- ]?(?:clock|time)", r"\bcycles?\b",
                    r"\bbenchmark", r"\bprofil", r"\bncu\b", r"\bnsight", r"\bl2 flush", r"\bwarm[- ]?up",
                    r"\bnois[ey]", r"\bvariance", r"\bmedian\b", r"\bcuda events?\b", r"\bclocks?\b"],
    "algorithm": [r"\bsoftmax", r"\balgorithm", r"\brecomput", r"\bmask", r"\bskip(?:ping)? (?:blocks|tiles)",
                  r"\bsplit[- ]?k\b", r"\bflops?\b", r"\bcomplexity", r"\breorder", r"\bearly exit", r"\bfus(?:e|ion)"],
    "parallelism": [r"\boccupancy", r"\bwarps?\b", r"\bsms?\b", r"\bgrid\b", r"\bctas?\b", r"\bthread ?blocks?",
                    r"\bpersistent", r"\bwave quanti", r"\bload[- ]balanc", r"\bwarp[- ]speciali", r"\bparallel"],
    "memory": [r"\bshared memory", r"\bsmem\b", r"\bbank conflict", r"\bcoalesc", r"\bglobal memory", r"\bhbm\b",
               r"\bdram\b", r"\bbandwidth", r"\bl2\b(?! flush)", r"\bcach(?:e|ing)", r"\bregisters?\b",
               r"\bspill", r"\btma\b", r"\bldmatrix", r"\bvectori[sz]ed", r"\bmemory[- ]bound"],
    "tensor-core/instructions": [r"\btensor[- ]cores?", r"\bwgmma", r"\bmma\b", r"\bhmma", r"\bhgmma", r"\bsass\b",
                                 r"\bptx\b", r"\binstructions?\b", r"\bffma", r"\bmufu"],
    "pipelining": [r"\bpipelin", r"\bdouble[- ]buffer", r"\bcp\.async", r"\basync", r"\boverlap", r"\bprefetch",
                   r"\bstages?\b", r"\bproducer", r"\bconsumer", r"\bmbarrier", r"\bbarriers?\b",
                   r"__syncthreads", r"\blatency hiding"],
    "launch/host": [r"\blaunch", r"\bhost\b", r"\bstreams?\b", r"\bcuda ?graphs?", r"\bcudamalloc",
                    r"\bsynchroni[sz]", r"\bcpu\b", r"\boverhead\b"],
    "numerics": [r"\bprecision", r"\bbf16\b", r"\bfp16\b", r"\bfp32\b", r"\brounding", r"\bnan\b", r"\binf\b",
                 r"\btolerance", r"\bexp2?\b", r"\boverflow", r"\blse\b", r"\bnumeric", r"\baccura"],
}
LIMIT_PATTERNS = [r"\b(?:hardware|theoretical|physical|practical|fundamental)\s+(?:limit|ceiling|maximum|peak)",
                  r"\b(?:at|near|reached|hit(?:ting)?)\s+(?:the\s+)?(?:limit|ceiling|roofline|peak)\b",
                  r"\bcan(?:not|'t| not)\s+(?:be\s+)?(?:improved?|optimi[sz]ed?|made faster|go faster|do better)",
                  r"\b(?:already|is|are|now)\s+(?:near[- ]|close to\s+)?optimal\b",
                  r"\bno\s+(?:further|more)\s+(?:room|improvement|gains?|optimi[sz]ation)",
                  r"\bbest\s+(?:we|i|it)\s+can\s+(?:do|achieve|get)", r"\bas fast as (?:it|this) (?:can|will) get",
                  r"\bdiminishing returns", r"\bthis is the limit"]
ACTION_VERBS = set("""add adjust apply avoid benchmark build change check clean commit compare compile consider
continue convert copy create debug delete disable do document drop enable ensure explore fix focus follow go
implement improve increase decrease inline keep launch look lower make measure merge move optimize optimise print
profile push raise read rebuild reduce refactor remember remove rename replace rerun reset restart restore
retry revert review rewrite run save set show simplify skip split start stop switch take test time try tune
undo unroll update use verify write""".split())
DIRECTIVE_OPENERS = ("please ", "let's ", "let us ", "don't ", "dont ", "do not ", "never ", "always ",
                     "make sure", "you should", "you must", "you need to", "you have to", "i want you to",
                     "i'd like you to", "i would like you to", "go ahead")
QUESTION_OPENERS = ("why ", "how ", "what ", "which ", "who ", "is there ", "are there ", "i wonder", "what if ")
ACK_WORDS = {"ok", "okay", "k", "thanks", "thank", "you", "yes", "no", "sure", "great", "good", "nice", "cool",
             "yep", "nope", "fine", "alright"}

_COMPILED_LAYERS = {layer: re.compile("|".join(f"(?:{p})" for p in pats), re.I)
                    for layer, pats in LAYER_PATTERNS.items()}
_LIMITS = [re.compile(p, re.I) for p in LIMIT_PATTERNS]
_REQUEST = re.compile(r"^(?:please\s+)?(?:can|could|would|will)\s+you\s+(?:please\s+)?([a-z']+)")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def _sentences(text: str) -> list[str]:
    text = _CODE.sub(" ", text or "")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))
    out = []
    for piece in _SENTENCE_SPLIT.split(text):
        piece = re.sub(r"^[\s\-*•\d.)]+", "", piece).strip().strip("\"'")
        if piece:
            out.append(piece)
    return out


def sentence_class(sentence: str) -> str | None:
    low = sentence.lower().strip()
    words = re.findall(r"[a-z0-9_']+", low)
    request = _REQUEST.match(low)
    if request and request.group(1) in ACTION_VERBS:
        return "directive"
    if low.rstrip(")\"' ").endswith("?") or (low + " ").startswith(QUESTION_OPENERS):
        return "question"
    if words and (words[0] in ACTION_VERBS or low.startswith(DIRECTIVE_OPENERS)):
        return "directive"
    if len(words) >= 3 and not set(words) <= ACK_WORDS:
        return "information"
    return None


def classify_message(text: str | None) -> str:
    """question | information | directive | other (rules in the module docstring)."""
    if not text or text.lstrip().startswith("/"):
        return "other"
    kinds = {sentence_class(s) for s in _sentences(text)}
    for cls in ("question", "directive", "information"):
        if cls in kinds:
            return cls
    return "other"


def message_layer(text: str | None) -> str | None:
    """The layer whose keywords match text most often; None when none does."""
    if not text:
        return None
    scores = {layer: len(pattern.findall(text)) for layer, pattern in _COMPILED_LAYERS.items()}
    best = max(scores.values())
    return next(layer for layer in LAYERS if scores[layer] == best) if best else None


def claims_limit(text: str | None) -> bool:
    return bool(text) and any(p.search(text) for p in _LIMITS)
