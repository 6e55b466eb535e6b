"""What the user established: decisions, constraints and conventions, read from the conversation.

Pure and deterministic (text in, items out; no I/O, no model): the thread summary
(``clio.context.yarn``) calls :func:`extract` on the messages a trim drops and
:func:`merge` to fold the result into what earlier trims kept.

An item is ``[kind, key, statement]``: ``kind`` is ``decision``, ``constraint`` or
``convention``; ``statement`` is the user's sentence as written (cut to ``ITEM_CHARS``);
``key`` names its subject: the subject's first word, then the other topic words (lower
case, plurals folded).  Two items are about the same subject when the anchor of one is
among the topic words of the other; the newer one then replaces the older (within
decisions and conventions, or within constraints; a revocation such as "we no longer
use X" replaces either).

What counts (each sentence of a user message; questions never count):

- decisions: "we will / we'll / let's / we should use | go with | switch to ...",
  "we decided / agreed / settled on ...", "decision: ...", "go with / stick with / opt for ...",
  "switch X to Y", "use X in Y mode | for Z | instead of W | from now on", "X it is";
- constraints: "never ...", "don't / do not touch | change | ... X", "X must (not) ...",
  "X has to / needs to stay | remain | be ...", "keep / leave X unchanged | intact | stable ...",
  "avoid ...", "no new X", "only touch / edit ...", "X is off-limits | read-only";
- conventions: "always ...", "prefer ...", "we / our team / this project use(s) | prefer(s) ...",
  "our convention / rule / style is ...", "X go(es) in | under Y", "name X like Y",
  "from now on / going forward ...";
- agreements: the assistant proposes ("I suggest we ...", "shall we ...?") and the user's
  next message agrees ("yes", "ok", "sounds good", ...): recorded as ``agreed: <proposal>``;
- revocations: "we no longer use X", "forget / drop the rule about X", "X is no longer needed".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clio.lazy_re import lazy

DECISION, CONSTRAINT, CONVENTION = "decision", "constraint", "convention"
KINDS = (DECISION, CONSTRAINT, CONVENTION)
MAX_ITEMS = 16
ITEM_CHARS = 200
MAX_SENTENCE_CHARS = 400  # longer "sentences" are pasted text (logs, code), not a stated decision

Item = list[str]  # [kind, key, statement]

_SPLIT = lazy(
    r"(?<=[.!;])\s+|\n+|;\s*"
    r"|,?\s+(?:and|but|also)\s+(?=(?:never|always|don't|do not|we|let's|let us|keep|avoid|stick|switch|use)\b)",
    re.I,
)
_LEAD = lazy(
    r"^(?:\[[^\]\n]{0,40}\]|[-*•>]+(?=\s)|\d{1,2}[.)](?=\s)|#+(?=\s))[\s,:]*"  # a [label], a list bullet, a heading
    r"|^(?:ok(?:ay)?|alright|actually|also|so|and|but|then|btw|by the way|one more thing|important|note|"
    r"please|fine|good|great|right|well|hey|oh|ah|remember|just so you know|for the record|fyi)\b[\s,:;\-!]*",
    re.I,
)
_CODE = lazy(r"`([^`]*)`")

# (kind, pattern, needles): the first that matches a sentence wins; ``rest`` is the object
# phrase, ``subj`` (when present) a subject phrase that names what the item is about. A pattern
# matches only a sentence holding one of its needles (words every match contains): a sentence
# with none is not tried, so a run whose messages state nothing compiles none of these patterns
# (~10 ms; tests/unit/test_decisions_needles.py checks the needles against the patterns).
_WE = r"(?:we(?:'ll| will| are going to|'re going to| shall| should| want to| need to)|let's|let us|lets|i want us to|i'd like us to|the plan is to)"
_DVERB = (
    r"(?:use|go with|stick with|stick to|switch to|adopt|move to|migrate to|deploy (?:to|on)|target|choose|pick|"
    r"settle on|opt for|standardi[sz]e on|rely on|keep using|drop support for|run (?=.* (?:mode|on|with)\b))"
)
_PATTERNS: list[tuple[str, re.Pattern[str], tuple[str, ...]]] = [
    (DECISION, lazy(rf"^{_WE} {_DVERB}\b (?P<rest>.+)$"), ("we", "let", "us to", "plan is to")),
    (
        DECISION,
        lazy(
            r"^(?:we|i)(?: have|'ve)? (?:decided|agreed|chosen|chose|picked|settled)(?: to| on| that| for)? (?P<rest>.+)$"
        ),
        ("decided", "agreed", "chose", "picked", "settled"),
    ),
    (
        DECISION,
        lazy(r"^(?:decision|decided|the decision is|final answer|verdict)\s*[:\-]\s*(?P<rest>.+)$"),
        ("decision", "decided", "final answer", "verdict"),
    ),
    (
        DECISION,
        lazy(
            r"^(?:go with|stick with|stick to|opt for|settle on|standardi[sz]e on|keep using) (?P<rest>.+)$"
        ),
        ("go with", "stick ", "opt for", "settle on", "standardi", "keep using"),
    ),
    (DECISION, lazy(rf"^(?:{_WE} )?switch (?P<subj>.+?) (?:to|over to) (?P<rest>.+)$"), ("switch ",)),
    (DECISION, lazy(r"^(?P<rest>[\w.\-/ ]{1,40}) it is$"), (" it is",)),
    (
        CONVENTION,
        lazy(
            r"^(?:from now on|going forward|henceforth|in (?:the )?future|from here on)\s*,?\s*(?P<rest>.+)$"
        ),
        ("from now on", "going forward", "henceforth", "future", "from here on"),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^(?:never|don't ever|do not ever|under no circumstances|at no point)\b(?! mind)\s*,?\s*(?P<rest>.+)$"
        ),
        ("never", "don't ever", "do not ever", "under no circumstances", "at no point"),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^(?:don't|do not|dont|please don't|please do not) (?:touch|modify|change|edit|delete|remove|commit|push|"
            r"rename|break|introduce|upgrade|bump|install|add|use|call|rely on|depend on|reformat|rewrite|disable|skip) "
            r"(?P<rest>.+)$"
        ),
        ("don't", "do not", "dont"),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^(?:keep|leave) (?P<subj>.+?) (?:unchanged|untouched|as it is|as is|intact|stable|backwards?[- ]compatible|alone|frozen|the same)\b(?P<rest>.*)$"
        ),
        ("keep ", "leave "),
    ),
    (CONSTRAINT, lazy(r"^(?:avoid|no more|stop(?= \w+ing\b)) (?P<rest>.+)$"), ("avoid ", "no more ", "stop ")),
    (CONSTRAINT, lazy(r"^no (?:new |more |extra |external |third[- ]party |additional )(?P<rest>.+)$"), ("no ",)),
    (CONSTRAINT, lazy(r"^only (?:touch|edit|change|modify|commit|use|work on|write to) (?P<rest>.+)$"), ("only ",)),
    (
        CONSTRAINT,
        lazy(
            r"^make sure (?:that )?(?:we |you )?(?P<rest>(?:never|always|don't|do not|keep|leave) .+)$"
        ),
        ("make sure ",),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^nothing (?:in|under|inside|of) (?P<subj>.+?) (?:may|can|should|must|is to) be "
            r"(?:edited|changed|touched|modified|deleted|removed|rewritten)\b(?P<rest>.*)$"
        ),
        ("nothing ",),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^(?P<subj>.+?) (?:is|are) (?:off[- ]limits|read[- ]only|frozen|not to be touched)\b(?P<rest>.*)$"
        ),
        ("limits", "read", "frozen", "not to be touched"),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^(?P<subj>(?!(?:i|you|it|this|that)\b).+?) (?:must|mustn't|must not|may not|cannot|can't|shall not|should never|"
            r"should always|is not allowed to|are not allowed to|is never to|are never to) "
            r"(?P<rest>(?!have\b|be (?:in|somewhere|because|caused|related|coming|from|wrong|broken|missing|a|the|it)\b).+)$"
        ),
        ("must", "may not", "cannot", "can't", "shall not", "should never", "should always", "not allowed to", "never to"),
    ),
    (
        CONSTRAINT,
        lazy(
            r"^(?P<subj>(?!(?:i|you|we|it|this|that)\b).+?) (?:has to|have to|needs to|need to|should) "
            r"(?P<rest>(?:stay|remain|keep|be backwards|be compatible|work with|support|run on|pass) .+)$"
        ),
        ("has to", "have to", "need", "should"),
    ),
    (CONVENTION, lazy(r"^always (?!(?:nice|good|great|fun|a|the|so|been|happy)\b)(?P<rest>.+)$"), ("always ",)),
    (CONVENTION, lazy(r"^(?:i |we )?prefer (?P<rest>.+)$"), ("prefer ",)),
    (
        CONVENTION,
        lazy(
            r"^(?:we|our team|this project|the project|this repo|the team) (?:use|uses|prefer|prefers|follow|follows|write|writes|format|name|keep|put|indent) (?P<rest>.+)$"
        ),
        ("we ", "our team", "project", "this repo", "the team"),
    ),
    (
        CONVENTION,
        lazy(
            r"^(?:our |the |my )?(?:convention|style|rule|policy|standard|house style)(?: here)?(?: is|:)\s*:?\s*(?P<rest>.+)$"
        ),
        ("convention", "style", "rule", "policy", "standard"),
    ),
    (
        CONVENTION,
        lazy(
            r"^(?P<subj>(?!(?:i|you|we|it|this|that|let's)\b)[\w.\-/ ]{2,40}?) (?:go|goes|belong|belongs|live|lives) (?:in|under|into|inside) (?P<rest>.+)$"
        ),
        (" go ", " goes ", " belong", " live"),
    ),
    (CONVENTION, lazy(r"^name (?P<subj>.+?) (?:like|as|after|using|with) (?P<rest>.+)$"), ("name ",)),
    (
        DECISION,
        lazy(
            r"^use (?P<rest>(?!.*\bto (?:find|see|check|look|read|print|list|show|search|get|open|inspect)\b).+?"
            r"(?:\bin [\w\- ]+ mode\b|\bfor (?:the |all |every |our |this )?\w|\binstead of\b|\brather than\b|"
            r"\bfrom now on\b|\beverywhere\b|\bthroughout\b|\bgoing forward\b|\bas (?:the|our)\b|\bby default\b).*)$"
        ),
        ("use ",),
    ),
]
_REVOKE = lazy(
    r"^(?:(?:we )?(?:no longer|don't|do not) (?:use|need|want|require)|(?:forget|drop|scratch|ignore|disregard|cancel|lift) "
    r"(?:what i said about |the (?:rule|constraint|decision|requirement|restriction) (?:about|on) |about )?)"
    r"(?P<rest>.+?)(?: anymore| any more| after all)?$"
    r"|^(?P<subj>.+?) (?:is|are) no longer (?:needed|required|a (?:rule|constraint|requirement)|off[- ]limits|frozen)"
)
_REVOKE_NEEDLES = ("no longer", "don't", "do not", "forget", "drop", "scratch", "ignore", "disregard", "cancel", "lift")
_PROPOSAL = lazy(
    r"(?:^|[.!?]\s+)(?:i (?:would |'d )?(?:suggest|propose|recommend)|i'd (?:suggest|propose|recommend)|"
    r"my (?:suggestion|recommendation|proposal) is|how about|what about|shall we|should we|we could)"
    r"(?: that)?(?: we)?(?: should)? (?P<rest>[^.!?\n]{3,200})[.!?]?\s*$",
    re.I,
)
_AGREE = lazy(
    r"^(?:yes|yeah|yep|yup|sure|ok|okay|agreed|sounds good|let's do (?:it|that)|do it|do that|go ahead|"
    r"go for it|fine|deal|perfect|makes sense|works for me|that works|good idea|great idea|absolutely|correct)\b"
    r"(?![\s,]*(?:but|no|not|don't|wait))",
    re.I,
)
_WORD = lazy(r"[a-z0-9_][a-z0-9_./\-]*[a-z0-9_]|[a-z0-9]")
_STOP = set(
    """a an the this that these those it its it's we we'll us our you your i i'm me my they them their
    to of in on at for from by with without into onto over under as and or but not no nor than then
    is are was were be been being will shall should would can could may might must do does did done
    have has had use using used go going with stick switch adopt move migrate run keep leave make sure
    never always don't dont only also just please all any every each some more new instead rather
    mode way ever again now anymore after before via per about what when where which who how
    let let's lets want need needs has have to stay remain touch modify change edit delete remove
    commit push rename break introduce upgrade bump install add call rely depend avoid stop prefer
    decided decide agreed chose chosen picked settled settle opt choose pick target deploy support
    code file files thing things stuff everything anything something project repo part bit one ones
    fine okay ok yes sure there here up out off don t ll s re ve d isn aren won
    write writes live lives goes name names put""".split()  # noqa: SIM905 (a word list reads better as text)
)


def _norm(word: str) -> str:
    word = word.strip(".-/_")
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss") and not re.search(r"[./]", word):
        return word[:-1]
    return word


def topics(text: str) -> list[str]:
    """The content words of ``text``, in order, lower case, plurals folded, without repeats."""
    out: list[str] = []
    for w in _WORD.findall(text.lower()):
        n = _norm(w)
        if n and n not in _STOP and w not in _STOP and n not in out:
            out.append(n)
    return out


def _key(rest: str, subj: str | None) -> str:
    """The subject words of an item: its anchor first (what it is about), then the other topics."""
    rest = re.sub(
        r"\b(?:from now on|going forward|for now|please|instead|everywhere|by default)\b", " ", rest
    )
    anchor_src = subj or ""
    if not anchor_src:
        purpose = re.search(r"\bfor (?:the |all |every |our |this |each )?(.+)$", rest)
        replaced = re.search(r"\b(?:instead of|rather than) (.+)$", rest)
        if purpose and not re.match(r"(?:now|good|ever|a while)\b", purpose.group(1)):
            anchor_src = purpose.group(1)
        elif replaced:
            anchor_src = rest[: replaced.start()]
        else:
            anchor_src = rest
    anchor = topics(anchor_src)[:1]
    words = anchor + [w for w in topics(f"{subj or ''} {rest}") if w not in anchor]
    return " ".join(words)


def _replaced_words(statement: str) -> list[str]:
    m = re.search(r"\b(?:instead of|rather than|not) ([^,.;]+)", statement.lower())
    return topics(m.group(1))[:1] if m else []


# What _SPLIT and _LEAD can match, told without them for plain text (ASCII: under re.I a
# non-ASCII letter such as "ſ" may match an ASCII one): a message with none is not split, a
# sentence that starts with none is not cleaned, and the patterns stay uncompiled.
_SPLIT_MARKS = (".", "!", ";", "\n", "and", "but", "also")
_LEAD_STARTS = (
    "[", "-", "*", "•", ">", "#", *"0123456789",
    "ok", "alright", "actually", "also", "so", "and", "but", "then", "btw", "by the way", "one more thing",
    "important", "note", "please", "fine", "good", "great", "right", "well", "hey", "oh", "ah",
    "remember", "just so you know", "for the record", "fyi",
)  # fmt: skip


def _may_split(text: str) -> bool:
    lower = text.lower()
    return not text.isascii() or any(m in lower for m in _SPLIT_MARKS)


def sentences(text: str) -> list[str]:
    out: list[str] = []
    text = _CODE.sub(r"\1", text) if "`" in text else text
    for part in _SPLIT.split(text) if _may_split(text) else [text]:
        part = " ".join(part.split()).strip(" ,")
        if part:
            out.append(part)
    return out


def _clean(sentence: str) -> str:
    s = sentence.lower().rstrip(" .!")
    if s[:20].isascii() and not s.startswith(_LEAD_STARTS) and s.strip() == s:
        return s  # no lead to take off (the longest is 16 characters)
    while True:
        t = _LEAD.sub("", s, count=1).strip()
        if t == s:
            return s
        s = t


def classify(sentence: str) -> tuple[str, str] | None:
    """``(kind, key)`` of one sentence, or None when it states nothing the user established."""
    if not sentence or sentence.rstrip().endswith("?") or len(sentence) > MAX_SENTENCE_CHARS:
        return None
    s = _clean(sentence)
    if not s or s.endswith("?"):
        return None
    m = _REVOKE.match(s) if any(n in s for n in _REVOKE_NEEDLES) else None
    if m:
        key = _key(m.group("rest") or m.group("subj") or "", None)
        return ("revoke", key) if key else None
    for kind, pattern, needles in _PATTERNS:
        m = pattern.match(s) if any(n in s for n in needles) else None
        if m:
            groups = m.groupdict()
            key = _key(groups.get("rest") or "", groups.get("subj"))
            if key:
                return kind, key
    return None


def from_user(text: str) -> list[Item]:
    """Every item one user message states, in order (a revocation is a decision that lifts others)."""
    out: list[Item] = []
    for sentence in sentences(text):
        found = classify(sentence)
        if found is not None:
            kind, key = found
            out.append([kind, key, cut(sentence)])
    return out


def proposal(assistant_text: str) -> str | None:
    """The assistant's proposal at the end of its message ("I suggest we use X."), if any."""
    m = _PROPOSAL.search(assistant_text.strip())
    return m.group("rest").strip() if m else None


def agrees(user_text: str) -> bool:
    return bool(_AGREE.match(user_text.strip()))


def agreed(proposal_text: str) -> Item | None:
    """The decision the user agreed to: the proposal, keyed as if the user had said "use ..."."""
    key = _key(proposal_text.lower(), None)
    return [DECISION, key, cut(f"agreed: {proposal_text}")] if key else None


def cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ITEM_CHARS else text[: ITEM_CHARS - 1] + "…"


def same_subject(old: Item, new: Item) -> bool:
    """Whether ``new`` replaces ``old``: see the module docstring."""
    ka, kb = old[1].split(), new[1].split()
    if not ka or not kb:
        return False
    related = ka[0] in kb or kb[0] in ka
    if new[0] == "revoke":
        return related
    if old[0] != new[0] or not related:
        return False
    if new[0] == DECISION and ka[0] == kb[0]:
        return True  # the same subject decided again: "use pgbouncer in transaction mode" -> "switch pgbouncer to ..."
    a, b = set(ka), set(kb)
    return len(a & b) * 2 >= len(a | b)  # constraints and conventions: (nearly) the same statement


def merge(items: list[Item], new: Iterable[Item], cap: int = MAX_ITEMS) -> list[Item]:
    """``items`` with ``new`` folded in, in order: a repeat moves to the end, an item about the same
    subject (same family) is replaced by the newer one, a revocation removes what it names; at most
    ``cap`` items, the oldest going first.  ``items`` is not modified."""
    out = [list(i) for i in items]
    for item in new:
        kind, _, statement = item
        revoke = kind == "revoke"
        gone = set(_replaced_words(statement))
        out = [
            old
            for old in out
            if not (
                old[2].lower() == statement.lower()
                or same_subject(old, item)
                or (old[0] == DECISION and kind == DECISION and gone & set(old[1].split()))
            )
        ]
        out.append([DECISION if revoke else kind, item[1], statement])
    return out[-cap:]


def valid(items: object) -> list[Item]:
    """Items read back from a saved summary: well-formed triples of strings only."""
    if not isinstance(items, list):
        return []
    return [
        [str(i[0]), str(i[1]), str(i[2])]
        for i in items
        if isinstance(i, (list, tuple))
        and len(i) == 3
        and all(isinstance(x, str) for x in i)
        and i[0] in KINDS
    ]
