"""The question bank (question_bank.csv) and `workbench bank list|add|promote`.

A good question names a hypothesis the agent has not considered, holds no answer, and can be settled by a
measurement. Each one is tagged with the trigger it answers (stall | claim | suspicious | any) and the layer of
the stack it points at; the intervention policy picks by trigger and prefers layers not visited recently.
`promote` offers a person's question for the bank once it was asked in two or more sessions.
"""
from __future__ import annotations

import csv
import io
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench.arguments import Parser
from workbench.harness.paths import HOME, QUESTION_BANK

DEFAULT_BANK = QUESTION_BANK                 # the home's (harness/paths.py: a checkout, $WORKBENCH_HOME or the wheel)
DEFAULT_TRACE_ROOTS = (HOME / "data" / "traces", HOME / "campaigns")
COLUMNS = ("id", "text", "trigger", "layer", "source", "notes")
TRIGGERS = ("stall", "claim", "suspicious", "any")
LAYERS = ("measurement", "algorithm", "parallelism", "memory", "tensor-core/instructions", "pipelining",
          "launch/host", "numerics")
SOURCES = ("seed", "promoted")
PROMOTE_MIN_SESSIONS = 2

# Words that point a free-text question at a layer (used to propose a layer for a promoted question).
LAYER_WORDS = {
    "measurement": ("measure", "timing", "timer", "wall", "noise", "cycles", "l2", "flush", "variance"),
    "algorithm": ("algorithm", "rescal", "softmax", "skip", "mask", "split-k", "recurrence"),
    "parallelism": ("occupancy", "warp", "block", "grid", "sm ", "sms", "wave", "cta", "thread"),
    "memory": ("shared", "smem", "bandwidth", "coalesc", "bank conflict", "cache", "load", "hbm", "spill"),
    "tensor-core/instructions": ("tensor", "wgmma", "mma", "hgmma", "instruction", "sass", "ffma", "exp2"),
    "pipelining": ("pipelin", "overlap", "stage", "async", "tma", "prefetch", "double buffer"),
    "launch/host": ("launch", "host", "stream", "graph", "overhead", "persistent"),
    "numerics": ("precision", "fp32", "bf16", "rounding", "nan", "inf", "error", "tolerance", "lse"),
}


@dataclass
class Question:
    id: str
    text: str
    trigger: str
    layer: str
    source: str = "seed"
    notes: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


class BankError(ValueError):
    pass


def load_bank(path: str | Path = DEFAULT_BANK, warn=None) -> list[Question]:
    """The questions of a bank CSV; `warn` is told about columns the bank format does not know (ignored)."""
    from workbench.harness.scenarios import decode_utf8

    path = Path(path)
    if not path.exists():
        raise BankError(f"{path}: question bank not found")
    if path.is_dir():
        raise BankError(f"{path}: is a directory; pass the question bank CSV file")
    try:
        text = decode_utf8(path.read_bytes(), path, "question bank")
    except UnicodeError as err:
        raise BankError(str(err)) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise BankError(f"{path}: missing column(s) {missing}; expected {', '.join(COLUMNS)}")
    unknown = [c for c in reader.fieldnames if c not in COLUMNS]
    if unknown and warn:
        warn(f"{path}:1: unknown column(s) {', '.join(map(repr, unknown))} ignored; the columns are "
             f"{','.join(COLUMNS)}")
    questions = []
    for line, row in enumerate(reader, start=2):
        q = Question(**{c: (row.get(c) or "").strip() for c in COLUMNS})
        problem = validate(q)
        if problem:
            raise BankError(f"{path}:{line}: {problem}; fix or remove that row")
        questions.append(q)
    ids = [q.id for q in questions]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise BankError(f"{path}: duplicate question id(s) {dupes}")
    return questions


def validate(q: Question) -> str:
    if not q.id:
        return "empty id"
    if not q.text:
        return f"{q.id}: empty text"
    if q.trigger not in TRIGGERS:
        return f"{q.id}: trigger {q.trigger!r} is not one of {', '.join(TRIGGERS)}"
    if q.layer not in LAYERS:
        return f"{q.id}: layer {q.layer!r} is not one of {', '.join(LAYERS)}"
    if q.source not in SOURCES:
        return f"{q.id}: source {q.source!r} is not one of {', '.join(SOURCES)}"
    return ""


def save_bank(questions: list[Question], path: str | Path = DEFAULT_BANK) -> None:
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for q in questions:
            writer.writerow(q.to_dict())
    tmp.replace(path)


def next_id(questions: list[Question]) -> str:
    numbers = [int(m.group(1)) for q in questions if (m := re.fullmatch(r"q(\d+)", q.id))]
    return f"q{max(numbers, default=0) + 1:03d}"


def guess_layer(text: str) -> str:
    lowered = text.lower()
    scores = {layer: sum(lowered.count(w) for w in words) for layer, words in LAYER_WORDS.items()}
    layer, score = max(scores.items(), key=lambda kv: kv[1])
    return layer if score else "measurement"


def normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


# ---- promotion: a person's question asked in >= 2 sessions ---------------------------------------------
def promotion_candidates(bank: list[Question], trace_roots=DEFAULT_TRACE_ROOTS) -> list[dict]:
    """Human questions from the interventions tables under `trace_roots`, asked in >= 2 sessions, not in the bank."""
    from workbench.traces.writer import read_table

    frames = []
    for root in trace_roots:
        root = Path(root)
        if not root.exists():
            continue
        # a trace root holds interventions/ directly; a campaigns folder holds one per campaign
        for base in [root] + sorted(p for p in root.glob("*/traces") if p.is_dir()):
            if (base / "interventions").exists():
                frames.append(read_table(base, "interventions"))
    known = {normalise(q.text) for q in bank}
    sessions, triggers, texts = defaultdict(set), defaultdict(list), {}
    for frame in frames:
        for row in frame[frame["source"] == "human"].itertuples():
            key = normalise(row.question_text or "")
            if not key or key in known:
                continue
            sessions[key].add(row.session_id)
            triggers[key].append(row.trigger)
            texts.setdefault(key, row.question_text.strip())
    out = []
    for key, sids in sessions.items():
        if len(sids) >= PROMOTE_MIN_SESSIONS:
            trig = max(set(triggers[key]), key=triggers[key].count)
            out.append({"text": texts[key], "sessions": len(sids),
                        "trigger": trig if trig in TRIGGERS else "any", "layer": guess_layer(texts[key])})
    return sorted(out, key=lambda c: -c["sessions"])


# ---- CLI ----------------------------------------------------------------------------------------------
def bank_main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="workbench bank", description=__doc__.splitlines()[0])
    parser.add_argument("--bank", default=str(DEFAULT_BANK), help="question bank CSV (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_list = sub.add_parser("list", help="print the questions")
    p_list.add_argument("--trigger", choices=TRIGGERS)
    p_list.add_argument("--layer", choices=LAYERS)
    p_add = sub.add_parser("add", help="add a question")
    p_add.add_argument("text")
    p_add.add_argument("--trigger", choices=TRIGGERS, default="any")
    p_add.add_argument("--layer", choices=LAYERS, required=True)
    p_add.add_argument("--notes", default="")
    p_promote = sub.add_parser("promote", help="offer persons' questions asked in >= 2 sessions for the bank")
    p_promote.add_argument("--traces", action="append", help="trace root or campaigns folder (repeatable)")
    p_promote.add_argument("--apply", action="store_true", help="add the offered questions (source=promoted)")
    args = parser.parse_args(argv)

    try:
        bank = load_bank(args.bank, warn=lambda line: print(f"workbench bank: warning: {line}", file=sys.stderr))
    except BankError as err:
        print(f"workbench bank: {err}", file=sys.stderr)
        return 2
    if args.command == "list":
        shown = [q for q in bank if (not args.trigger or q.trigger in (args.trigger, "any"))
                 and (not args.layer or q.layer == args.layer)]
        for q in shown:
            print(f"{q.id:<6} {q.trigger:<10} {q.layer:<24} {q.text}")
        print(f"{len(shown)} of {len(bank)} questions")
        return 0
    if args.command == "add":
        q = Question(id=next_id(bank), text=" ".join(args.text.split()), trigger=args.trigger, layer=args.layer,
                     source="seed", notes=args.notes.strip())
        if not normalise(q.text):        # nothing a person could read: the bank would refuse it on every load
            print('workbench bank: add: the question is empty; give its text, e.g. workbench bank add "Is the '
                  'softmax rescale on the critical path?" --layer algorithm', file=sys.stderr)
            return 2
        if normalise(q.text) in {normalise(b.text) for b in bank}:
            print("workbench bank: add: that question is already in the bank (`workbench bank list` shows it); "
                  "nothing was added", file=sys.stderr)
            return 2
        save_bank(bank + [q], args.bank)
        print(f"added {q.id} ({q.trigger}, {q.layer})")
        return 0
    if args.traces:
        from workbench import validate
        try:
            validate.input_dirs(args.traces, "--traces", "trace root or campaigns folder")
        except ValueError as err:
            print(f"workbench bank: promote: {err}", file=sys.stderr)
            return 2
    candidates = promotion_candidates(bank, args.traces or DEFAULT_TRACE_ROOTS)
    if not candidates:
        print(f"no person's question was asked in {PROMOTE_MIN_SESSIONS} or more sessions (and is not in the bank)")
        return 0
    for c in candidates:
        print(f"[{c['sessions']} sessions] {c['trigger']:<10} {c['layer']:<24} {c['text']}")
    if args.apply:
        for c in candidates:
            bank.append(Question(id=next_id(bank), text=c["text"], trigger=c["trigger"], layer=c["layer"],
                                 source="promoted", notes=f"asked by a person in {c['sessions']} sessions"))
        save_bank(bank, args.bank)
        print(f"added {len(candidates)} promoted question(s) to {args.bank}")
    else:
        print("run again with --apply to add them (source=promoted; check the proposed layer first)")
    return 0


if __name__ == "__main__":
    sys.exit(bank_main())
