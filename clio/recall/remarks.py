"""Pure: whether a message is a remark, which tells the model something and asks nothing an
earlier session answers, so the automatic recall does not search for it.

A message the archive may answer is a question, or a report of trouble ("the enricher is lagging
again", "prod pod killed by the liveness probe while flyway migrates"); an order of new work is
read apart (:func:`clio.recall.relevance.is_task`). What is left is what developers type between
those: status and acknowledgements ("deploy's out, watching fly logs for a bit", "priya approved
the DHL mapping PR, merging after lunch", "kamal deploy running, grabbing coffee"). Their words
are the project's, so an archive always holds an exchange that shares them, and the encoder finds
it near: before this reader such remarks drew a block from the archive as often as near-miss
questions did (docs/memory.md, "A remark asks nothing").

It holds the words a question is read by (:data:`QUESTION_WORDS`, :data:`AUXILIARIES`) and those
that point at what is in front of the user (:data:`AT_HAND`), which
:func:`clio.recall.relevance.is_question` and :func:`~clio.recall.relevance.only_work_at_hand` read
too.

- :func:`asks`: a question anywhere in it: a question mark, a question word or an auxiliary leading
  any clause ("merged to main, how do i trigger the prod deploy"), a question word anywhere
  ("a clinic manager asks what's the earliest time ..."), "remind me", "any idea".
- :func:`reports_trouble`: a mark of something gone wrong, generous on purpose: a failure, an
  error's name or an HTTP status, a negation ("don't" after someone else's subject: "apple
  handsets don't receive our pings"), "again", "still", "keeps", "should", "instead", a comparison
  ("higher", "late"), someone reporting ("a customer says ..."), something out of reach or used
  up ("unreachable", "ran out", "exhausted"), a count of nothing ("zero"); but not "again" after a
  state come back ("ci is green again").
- :func:`ground_rules`: ground rules for the work, asking nothing ("I'm reworking the PDF layout
  today, so keep your hands off invoices/pdf.py"; "keep the specs green, don't change the audit
  store"; "keep the LiveView changes out of this PR, no dependency bumps"): a remark whatever
  trouble its conditions name, unless its first clause names a failure.
- :func:`news_asks`: whether news asks: a question mark, or a question word or an auxiliary leading
  a clause after its opening ("fyi I'll run it at 22:00 when traffic is lowest" asks nothing; so
  does "just so you know where I'm at: ...", whose question word is the opening's own).
- :func:`is_remark`: ground rules; news that asks nothing; or neither a question nor trouble, in a
  sentence that tells a state (not a bare noun phrase, which may be a terse ask: "staging database
  port for pgbouncer") of :data:`MIN_WORDS` words or more; or, not asked, at most
  :data:`MOMENT_WORDS` own words about what is going on ("it segfaults", "hm still broken on my
  end": it, this, now, today, still ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from clio.lazy_re import lazy
from clio.recall.terms import fts_words

# the words that lead a question (clio.recall.relevance.is_question reads them first in a message)
QUESTION_WORDS = frozenset(["what", "which", "where", "when", "why", "how", "who", "whose", "whom"])
AUXILIARIES = frozenset(["is", "are", "was", "were", "does", "do", "did", "can", "could", "should", "would", "will", "has", "have"])
# what is in front of the user ("does it compile?": clio.recall.relevance.only_work_at_hand)
AT_HAND = frozenset(["it", "its", "this", "that", "these", "those", "you", "your", "here", "there"])
# the question words with their contractions' spellings ("whats", "hows"), as :data:`_ASKS` and
# :data:`_RULES_ASK` read them
_QUESTION_FORMS = sorted(QUESTION_WORDS | {w + "s" for w in ("what", "where", "when", "why", "who", "how")})
_QUESTION_WORD = "|".join(_QUESTION_FORMS)
_AUXILIARY = "|".join(sorted(AUXILIARIES | {"any"}))
# where a clause begins: a start, a stop or a comma, or a word that joins clauses
_CLAUSE_MARK, _CLAUSE_WORDS = r"^|[.,;:!\n(]", "and|but|so|or"
_TELL_ME = r"\b(?:remind me|any idea|any ideas|wondering|tell me|link me|point me)\b"  # asking to be told
_ASKS = lazy(
    r"\?"
    rf"|\b(?:{_QUESTION_WORD})\b"
    rf"|(?:{_CLAUSE_MARK}|\b(?:{_CLAUSE_WORDS})\b)\s*(?:{_AUXILIARY})\b"
    rf"|{_TELL_ME}",
    re.I,
)
# a question in news (:func:`news_asks`): a question word or an auxiliary leading a clause, or
# asking to be told a thing; a question word inside a clause of the news is part of it ("when
# traffic is lowest", "if anyone asks why no reminders went out")
_NEWS_ASKS = lazy(
    rf"(?:{_CLAUSE_MARK}|\b(?:{_CLAUSE_WORDS}|btw|also)\b)\s*(?:{_QUESTION_WORD}|{_AUXILIARY})\b"
    rf"|{_TELL_ME}",
    re.I,
)
# something gone wrong, said outright: a failure, a negation, "again", "still" (:func:`announced`
# reads these alone; :data:`_TROUBLE` these and the milder marks beside them)
# (:data:`_BROKEN_WORDS` alone: a failure named, which :func:`ground_rules` reads in a first clause)
_BROKEN_WORDS = (
    r"fail\w*|errors?|erroring|errored|broke|broken|crash\w*|die|dies|died|dead|down|stuck|hangs?|hung"
    r"|freez\w*|froze\w*|time-?outs?|timed?\s+out|leak\w*|panic\w*|segfault\w*|oom\w*|exception\w*"
    r"|wrong|missing|lost|issues?|problems?|bugs?"
)
_FAILURE_WORDS = (
    _BROKEN_WORDS + r"|never|again|keeps?|still|not|no|cannot|can'?t|won'?t|doesn'?t|didn'?t"
    r"|isn'?t|aren'?t|wasn'?t|weren'?t"
)
_TROUBLE = lazy(
    rf"\b(?:{_FAILURE_WORDS}|break\w*|kill\w*|dying|hanging|times\s+out"
    r"|slow\w*|lag\w*|spik\w*|bad|weird|strange|odd|off|flak\w*"
    r"|traceback|trace|warn\w*|complain\w*|reject\w*|refus\w*|denied|forbidden"
    r"|unauthori[sz]ed|los(?:e|es|ing)|drop\w*|duplicat\w*|twice|skip\w*|empty|blank"
    r"|nothing|anymore|kept|couldn'?t|shouldn'?t|unable|locked|blocked|throttl\w*"
    r"|exceed\w*|overflow\w*|expir\w*|invalid|corrupt\w*|mismatch\w*|resets?|resetting|restart\w*"
    r"|reboot\w*|rollback|rolled\s+back|revert\w*|should|but|though|however|instead|actually"
    r"|glitch\w*|regress\w*|higher|lower|late|later|early|behind|ahead"
    r"|says|said|claims?|claimed|reports?|reported|noticed|seeing|shows|showing"
    # the forms the categories above missed (stop 99): a timeout in -ing, a service out of reach
    # (as "down"), a resource used up (as "exceeded"), a count of nothing (as "empty")
    r"|timing\s+out|unreachable|unavailable|unresponsive|ran\s+out|runs?\s+out|running\s+out|exhaust\w*"
    r"|zero|none)\b"
    # a negation after someone else's subject reports behaviour ("apple handsets don't receive
    # ..."); after "I", "we", "you", "please" it is a rule or a wish ("please don't regenerate ...")
    r"|\b(?!(?:i|we|you|please|pls|just|and|so|but|then|also|why|that|to)\b)[\w'-]+\s+don'?t\b"
    r"|\b[45]\d\d\b|\b\w+(?:Error|Exception|Failure|Fault)\b|\b[A-Z0-9]+_RST\b",
    re.I,
)
# a state come back is no trouble: "jenkins green again, merging", "pipeline green again, thx";
# but "up" after a verb is trouble again ("the queue is backing up again", "piling up", "acting up")
_RECOVERED = lazy(
    r"\b(green|passing|passes|works|working|fine|healthy|stable|ok|okay|happy|clean"
    r"|(?<!ing )(?<!ed )(?<!blew )(?<!blows )(?<!blow )up)\s+again\b",
    re.I,
)
_STATE = lazy(r",|\b\w{3,}ed\b|\b\w+'(?:s|re|ll|m|ve)\b|\b(?:is|are|was|were|am|been|done|out|back|brb)\b", re.I)
MOMENT = AT_HAND | {"now", "today", "still"}  # pointing at what is going on (relevance.asked_outright too)
# a message that opens as news for the reader ("fyi ...", "heads up: ...", "just so you know, ...",
# "fwiw ...", "for context, ...", "context: ..."); after "just so you know" a question word is the
# news's own ("just so you know where I'm at: ...")
_ANNOUNCED = lazy(
    r"\W*(?:fyi|f\.y\.i\.?|fwiw|heads[- ]up|just so you know(?:\s+(?:where|what|how)\b)?|psa"
    r"|for (?:some |a bit of )?(?:context|background)|(?:some |quick )?(?:context|background)(?=\s*[:-]))"
    r"\b[\s,:;.!-]*",
    re.I,
)


def _failure_named(words: str) -> re.Pattern[str]:
    """A pattern for a failure said outright: one of ``words``, an outage, an HTTP error status, an
    error's name (:data:`_FAILING`, :data:`_BROKEN`)."""
    return lazy(rf"\b(?:{words}|outages?)\b|\b[45]\d\d\b|\b\w+(?:Error|Exception)\b", re.I)


# something gone wrong, in the news itself (narrower than _TROUBLE: "later today", "should" are news)
_FAILING = _failure_named(_FAILURE_WORDS)
_NEWS_END = lazy(r"[.;!?\n]|,?\s+(?:so|but)\s+", re.I)  # where the news ends and what follows begins
# ground rules for the work (:func:`ground_rules`): what not to touch, what to keep as it is, when
# to ask first; a constraint on the work, not a question the archive answers
_WORK_VERBS = (
    r"touch|change|modify|edit|refactor|rename|add|remove|delete|drop|merge|push|deploy|release|start"
    r"|move|commit|bump|upgrade|reformat|chase|trust|rewrite|split"
)
_GROUND_RULE = lazy(
    rf"\b(?:do(?:n'?t|\s+not)|dont|never)\s+(?:\w+\s+)?(?:{_WORK_VERBS})\b"
    r"|\bhands\s+off\b|\bhold\s+off\b|\bleave\s+(?:[\w./:'-]+\s+){1,4}alone\b"
    r"|\bstay\s+(?:out\s+of|away\s+from)\b"
    r"|\bkeep\s+(?:[\w./:'-]+\s+){0,4}(?:small|minimal|focused|tight|short|simple|untouched|unchanged"
    r"|as\s+it\s+is|as\s+is|green|compiling)\b"
    r"|\bno\s+(?:[\w-]+\s+){0,2}"  # "no risky changes", "no infra changes", "no dependency bumps"
    r"(?:changes|refactors?|refactoring|deploys?|dependencies|deps|migrations|bumps|upgrades|sweeps|rewrites|renames)\b"
    # "keep the LiveView changes out of this PR"; not "users keep getting kicked out of" (trouble)
    r"|\bkeep\s+(?!\w+ing\b)(?:[\w./:'-]+\s+){0,5}(?:out\s+of|separate\s+from|apart\s+from)\b"
    # "please focus only on ...", "Focus on the depot screens": not "the input loses focus on mobile"
    r"|(?:^|[.,;:!\n]|\b(?:please|pls|just|let'?s|to|and|then|rather)\b)\s*(?:focus|stick)\s+(?:only\s+)?on\b"
    rf"|\b(?:do(?:n'?t|\s+not)|dont)\s+want\s+(?:anything|anyone|any\s+\w+)\s+(?:{_WORK_VERBS})(?:ing|ed|s)?\b"
    r"|\b(?:tell|ask|ping|check\s+with)\s+me\s+(?:first|before)\b",
    re.I,
)
# a question in a message of ground rules: a question word anywhere ("when" only leading it: "when
# he pushes, rerun the tests" is a condition), an auxiliary leading it, or asking to be told a thing
_RULES_ASK = lazy(
    rf"\b(?:{'|'.join(w for w in _QUESTION_FORMS if w not in ('when', 'whens'))})\b"
    rf"|^\W*(?:when|any|{'|'.join(sorted(AUXILIARIES))})\b"
    r"|\b(?:remind me|any idea|any ideas|wondering|link me|point me"
    r"|tell me\s+(?:what|which|where|how|who|why|the|if|whether))\b",
    re.I,
)
_BROKEN = _failure_named(_BROKEN_WORDS)
_FIRST_CLAUSE_END = lazy(r"[.;:!](?:\s|$)|[\n,]|\s+(?:so|but)\s+", re.I)  # "2.1" ends nothing
MOMENT_WORDS = 2  # a statement with no more own words than this, pointing at the moment, is a remark
# shorter, a message without a question mark may still be a terse ask ("staging db port", "the
# dunning job"): the rules of one everyday word and of the work at hand read it; longer, a noun
# phrase without a verb is one too (:func:`tells_a_state`)
MIN_WORDS = 4


def asks(text: str) -> bool:
    """Whether ``text`` asks something anywhere in it (read in its first 300 characters)."""
    return _ASKS.search(text[:300]) is not None


def tells_a_state(text: str) -> bool:
    """Whether ``text`` reads as a sentence that tells something, not a bare noun phrase (which may
    be a terse ask: "staging database port for pgbouncer"): two clauses (a comma), a verb's past
    form ("approved", "merged"), a contraction ("deploy's out"), a form of "to be", or a word of
    status ("done", "out", "back", "brb")."""
    return _STATE.search(text[:300]) is not None


def reports_trouble(text: str) -> bool:
    """Whether ``text`` bears a mark of something gone wrong (read in its first 300 characters);
    "again" after a state come back ("green again") is not one."""
    return _TROUBLE.search(_RECOVERED.sub(r"\1", text[:300])) is not None


def announced(text: str) -> bool:
    """Whether ``text`` opens by saying it is news for the reader ("fyi", "fwiw", "heads up", "just
    so you know", "psa", "for context", "context:", "background:") and its news, up to the first
    sentence's end or a "so" / "but" that leads to what follows from it, reports no trouble:
    "heads up, prod is down again" is a report the archive may answer; "fyi tom is resizing the
    worker tonight, so horizon will be down" is news."""
    opened = _ANNOUNCED.match(text[:300])
    if opened is None:
        return False
    news = _NEWS_END.split(text[opened.end() : 300], maxsplit=1)[0]
    return _FAILING.search(news) is None


def news_asks(text: str) -> bool:
    """Whether a message opened as news (:data:`_ANNOUNCED`) asks something: a question mark, or,
    after its opening, a question word or an auxiliary leading a clause ("fyi the deploy went out,
    btw what was the flag for the canary"), or "remind me", "tell me" and the like. A question word
    inside a clause of the news asks nothing: "fyi I'll run the migration at 22:00 when traffic is
    lowest", "heads up, I'm pausing the dunning task, so if anyone asks why no reminders went out,
    that's on purpose" (read in its first 300 characters; docs/memory.md, "A question word inside
    news")."""
    if not asks(text):
        return False
    opened = _ANNOUNCED.match(text[:300])
    if opened is None:
        return True
    return "?" in text or _NEWS_ASKS.search(text[opened.end() : 300]) is not None


def ground_rules(text: str) -> bool:
    """Whether ``text`` lays down ground rules for the work and asks nothing: what not to touch,
    what to keep as it is, when to ask first ("I'm reworking the invoice PDF layout today, so
    please keep your hands off invoices/pdf.py"; "keep the existing specs green, don't change the
    audit store layout"). Their conditions may name trouble ("if the reminder specs fail, just
    move on"), but a first clause that names a failure is a report ("the invoice sync keeps timing
    out, dont touch the cron"), and a question mark, a question word ("when" only leading) or
    "tell me what ..." anywhere is a question (the rules and the first clause are read in the first
    300 characters)."""
    head = text[:300]
    # the rule in 300 characters first: most messages hold none, and a long paste is not scanned
    if "?" in text or _GROUND_RULE.search(head) is None or _RULES_ASK.search(text) is not None:
        return False
    return _BROKEN.search(_FIRST_CLAUSE_END.split(head, maxsplit=1)[0]) is None


def is_remark(text: str, own: Sequence[str]) -> bool:
    """Whether a message with own words ``own`` (:func:`clio.recall.relevance.own_words`) is a
    remark: it lays down ground rules for the work (:func:`ground_rules`), or it opens as news
    (:func:`announced`: "fyi I'm reworking the scheduler today, so don't touch it": a word of
    trouble after its news is no report) and asks nothing as news is read (:func:`news_asks`), or
    it asks nothing and tells where things stand
    (:func:`tells_a_state`) without a word of trouble in :data:`MIN_WORDS` words or more, or says
    no more than :data:`MOMENT_WORDS` own words about what is going on."""
    if ground_rules(text):
        return True
    if announced(text):  # news: its own reading of what asks
        return not news_asks(text)
    if asks(text):
        return False
    if len(text.split()) >= MIN_WORDS and tells_a_state(text) and not reports_trouble(text):
        return True
    return len(own) <= MOMENT_WORDS and any(w.lower() in MOMENT for w in fts_words(text[:200]))
