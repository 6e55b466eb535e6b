"""Pure: whether a message's words order new work by their form, whatever the verb.

:func:`clio.recall.relevance.is_task` knows the common verbs of new work ("add", "write",
"rename" ...); a developer uses far more ("center the map", "debounce the search input", "widen
the sidebar", "backfill the region column") and states wishes as plain sentences ("the export
should also carry the cost center", "i'd love a cmd+k shortcut"). The automatic recall lets the
encoder's cosine quote nothing for an order of new work (the archive seldom answers one, and its
near misses resemble it), so a question or a problem report misread as an order can cost a fact:
these readers are narrow on purpose.

- :func:`imperative`: the first word, not a word of any other part of speech this module knows
  (pronouns, question words, auxiliaries, prepositions, adverbs, interjections ...) nor a plural
  or a past or -ing form, followed by a determiner ("the", "all", "our" ...) or "it" / "them":
  "center the ...", "memoize the ...", "cut it down". Not the verbs that ask for information
  ("explain the", "find every", "check what"), repair a fault ("fix the", "debug the": a problem
  report the archive may explain) or run an operation the archive may describe ("restart the",
  "deploy the", "rotate the"); not in a message with the marks of a report (below).
- :func:`asks_for_work`: a message that begins with a known verb of new work but asks (a question
  mark, no "please" / "can you" before it) is an order only when the verb goes on to its object or
  to where a thing goes ("install the rig's deps?", "bump react to 19?"); otherwise the verb is a
  noun heading a question ("update on the flaky test?", "merge strategy for release branches?").
- :func:`wishes`: a statement that something should do something ("the cli should also accept
  --config", "each invoice should carry the po number"), "i'd love / i'd like / it would be nice
  if / we want / new rule:", in a message without the marks of a report ("but", "though",
  "still", "anymore", "isn't", "doesn't" ...): "dark mode should persist but it resets" is a bug.
- :func:`plans`: the writer's own next work, stated (stop 87): "heads up: I'm splitting the pdf
  rendering out of billing/pdf.py ...", "next I'll add the locale file ...", "for the follow-up
  let's keep the hold expiry in a scheduled command", in a message without the marks of a report;
  its verb one of new work, never one that reports, asks, repairs or runs an operation ("I'm
  hitting a timeout", "I'm seeing ...", "I'm fixing the crash", "I'm going to rerun the sweep":
  what the archive may explain).

What only opens a sentence is no verb (stop 98): a clause that sets the scene
(:data:`SUBORDINATORS`: "once the migration lands, add ..." is read by its main clause, after the
comma) or a name of code (:func:`opens_with_a_code_name`: "build.gradle.kts pins ..."). And an order
that also asks to be told what was settled (:func:`asks_the_past`: "... and remind me what
max-tasks-per-child we set") is searched for that, as a question is. An order followed by a clause
that asks (stop 99; :func:`asked_after`: "...; what's the dead-letter topic called again?") is
searched by that clause, not by the order's words; a listed verb first that does not go on to its
object, in a first clause that says something fails (:func:`fails`: "make e2e just hangs ..."),
names the thing that fails.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy
from clio.recall.remarks import AUXILIARIES, QUESTION_WORDS
from clio.recall.terms import fts_words

# what follows an order's verb: a determiner, or the thing at hand ("cut it down", "move them")
_OBJECT = "the a an all every each our this that these those its my their some any both it them"
_OBJECTS = frozenset(_OBJECT.split())

# words that start a sentence without being an order: pronouns, question words, auxiliaries and
# modals, prepositions and conjunctions, adverbs and interjections of chat, negations
_NOT_VERB = """
i we you he she it they me us them there here what which who whom whose why how where when
whats wheres whos hows whens whys thats theres heres its im ive id ill youre were weve
is are was were be been being am do does did done has have had having can could would should will
shall may might must need ought dont doesnt didnt isnt arent wasnt werent cant wont
in on at for with from to by of about into onto over under after before since during until like
unlike via per re as than and or but so if because though although while also then now again still
just only even maybe perhaps probably apparently seems seemingly basically honestly actually
suddenly somehow meanwhile yesterday today tonight tomorrow lately recently always sometimes never
often usually already yet not no yes ok okay hey hi hmm ugh oh ah btw fyi ps imo tbh lol welp
whatever whichever whoever
all every each both some any many most few several none nothing everything something half whole
new old same other another such own first last next previous
"""
_NOT_VERBS = frozenset(_NOT_VERB.split())
# words that open a clause setting the scene for the sentence's main clause, after its comma
_SUBORDINATOR = "once whenever when if after before while since until till unless wherever"
SUBORDINATORS = frozenset(_SUBORDINATOR.split())
# what follows a sentence's first word when that word is its subject, not an order's verb, or a
# noun heading a phrase ("port of the staging database?", "list of the cron jobs")
_AFTER_SUBJECT = """
is are was were isnt arent wasnt has have hasnt keeps keep kept fails failed failing broke broken
still never always takes took seems looks times doesnt dont didnt wont cant of
"""
_AFTER_A_SUBJECT = frozenset(_AFTER_SUBJECT.split())
# verbs that ask for information, repair a fault, or run an operation: what the archive answers
_NOT_NEW = """
explain tell remind show find check look list describe summarize summarise compare walk recall
investigate figure trace dig see verify confirm debug diagnose help give get fetch count measure
profile review read open search grep query inspect audit estimate calculate time track locate
identify determine discover explore analyze analyse examine understand learn outline enumerate
clarify evaluate assess pinpoint spot double sanity
fix repair resolve solve troubleshoot unblock unbreak handle
run rerun restart start stop kill deploy redeploy release ship rollback roll reboot flash rotate reset
restore recover revert retry reproduce repro
"""
_NOT_NEW_WORK = frozenset(_NOT_NEW.split())
_ADVERB_LY = ("apply", "reply", "supply", "multiply", "comply")  # verbs that end in -ly

_WISH = lazy(
    r"^(?:(?:the|our|this|that|these|those|each|every|all|any|new)\b[^.?!\n]{0,60}?\bshould"
    r"(?:\s+(?:also|now|just|always|only|by default))?\s+(?!be\b|have\b|already\b|not\b|never\b)[a-z]+"
    r"|i'?d (?:love|like)\b|i would (?:love|like)\b|it(?:'d| would) be (?:nice|great|good|cool) (?:if|to)\b"
    r"|we (?:want|need) (?!to (?:know|understand|find|figure|see|check|remember|decide|talk))"
    r"|new rule\b)",
    re.I,
)
_REPORT = lazy(
    r"\b(?:but|though|although|however|yet|anymore|still|again|isn'?t|aren'?t|doesn'?t|don'?t"
    r"|didn'?t|won'?t|wasn'?t|weren'?t|can'?t|cannot|never|broke|broken|fails?|failed|failing|wrong"
    r"|errors?|erroring|crash(?:es|ed|ing)?|throws|hangs|stuck)\b",
    re.I,
)
# a label before the message: "android: migrate ...", "ios - add ...", a ticket "TH-211 add ..."
_PREFIX = re.compile(r"^\s*(?:[\w./+#-]{1,24}\s*(?::|\s-)|[A-Z][A-Z0-9]{1,9}-\d{1,6}\b:?)\s+")


def imperative(words: list[str], text: str) -> bool:
    """Whether lower-cased ``words`` (a sentence's, its polite lead taken off) begin with a verb
    ordering new work by the sentence's form: an unknown first word (not a plural, not a past or
    -ing form), then a determiner or "it" / "them", in a message (``text``, the whole of it)
    without the marks of a problem report ("mark all as delivered on the truck screen errors
    again": a button's name, then the report)."""
    if len(words) < 3 or not takes_an_object(words) or _REPORT.search(text[:300]):
        return False
    first = words[0]
    if not first.isalpha() or len(first) < 3 or first in _NOT_VERBS or first in _NOT_NEW_WORK:
        return False
    if first.endswith("ly") and first not in _ADVERB_LY:
        return False  # an adverb ("apparently the ...")
    if first.endswith("s") and not first.endswith(("ss", "us")):
        return False  # a plural or a verb's third person ("posts a ...", "keeps the ...")
    return not first.endswith(("ed", "ing"))  # "added the ...", "running the ...": no order


# something failing, said outright in a message's first clause (:func:`fails`)
_FAILS = lazy(
    r"\b(?:fail(?:s|ed|ing)?|crash(?:es|ed|ing)?|hangs|hung|stuck|dies|died|broke|broken|errors"
    r"|segfaults?|panics|panicked|times\s+out|timed\s+out|timing\s+out)\b",
    re.I,
)
_FIRST_CLAUSE = lazy(r"[.;!?,](?:\s|$)|\n")


def fails(text: str) -> bool:
    """Whether the first clause of ``text`` (up to a sentence's end or a comma) says that something
    fails ("make e2e just hangs on my laptop, ...", "clean workstation setup: our core backend
    crashes at startup"): a verb first that does not go on to its object names the thing that
    fails, not work to do ("bump num_workers to 12, and remind me ... when the workers died" is
    an order)."""
    return _FAILS.search(_FIRST_CLAUSE.split(text[:300], maxsplit=1)[0]) is not None


def takes_an_object(words: list[str]) -> bool:
    """Whether lower-cased ``words`` go on from their first (a verb) to its object: a determiner or
    "it" / "them" ("cut it down")."""
    return len(words) > 1 and words[1] in _OBJECTS


def asks_for_work(words: list[str]) -> bool:
    """Whether lower-cased ``words``, asked (a question mark) and beginning with a verb of new work,
    ask for that work: the verb then its object ("install the rig's deps?"), or a thing and where it
    goes ("bump react to 19?", "merge main into this branch?"); not a noun's phrase ("update on the
    migration?", "merge strategy for release branches?", "port for the local grafana?")."""
    if takes_an_object(words):
        return True
    return len(words) > 2 and words[1] not in _NOT_VERBS and any(w in ("to", "into") for w in words[2:6])


def wishes(sentences: list[str]) -> bool:
    """Whether a message's ``sentences`` (not a question: the caller knows) state a wish for new
    behaviour, one of them beginning with it, without the marks of a problem report or a question
    mark anywhere ("the spawn timer should reset when the player dies, right? ...")."""
    return not _asks_or_reports(sentences) and any(_WISH.match(s.strip()) for s in sentences)


def _asks_or_reports(sentences: list[str]) -> bool:
    """Whether any of a message's ``sentences`` holds a question mark or a mark of a problem report."""
    return any("?" in s or _REPORT.search(s) for s in sentences)


# the writer's own next work: "I'm / we're" and a verb's -ing form, "I'll / we'll / I'm going to"
# and its base form (a few adverbs between), or "let's" and a verb anywhere in the sentence
_LEAD = r"^(?:(?:ok|okay|so|now|next|then|today|tonight|tomorrow|first|heads up|fyi)\b,?\s+){0,3}"
_PROGRESSIVE = lazy(
    _LEAD + r"(?:i'?m|i am|we'?re|we are)\s+(?:(?:now|just|also|then|first|still)\s+)?([a-z]+ing)\b", re.I
)
_FUTURE = lazy(
    _LEAD + r"(?:i'?ll|we'?ll|i will|we will|(?:i'?m|i am|we'?re|we are) (?:going|about) to|gonna)"
    r"\s+(?:(?:now|just|also|then|first)\s+)?([a-z]+)\b",
    re.I,
)
_LETS = lazy(r"\blet'?s\s+(?:(?:just|also|now|then)\s+)?([a-z]+)\b", re.I)
# verbs of one's own next work beside the verbs of new work the caller knows ("keep it in the
# module", "finishing the markers", "starting on the templates", "working on the export")
_PLAN_VERB = "keep finish start work switch tidy"
_PLAN_VERBS = frozenset(_PLAN_VERB.split())


def _base(verb: str) -> set[str]:
    """The base forms an -ing form may have ("splitting": split, "moving": move, "adding": add)."""
    if not verb.endswith("ing"):
        return {verb}
    stem = verb[:-3]
    return {stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else stem}


def plans(sentences: list[str], work: frozenset[str]) -> bool:
    """Whether a message's ``sentences`` (not a question: the caller knows) state the writer's own
    next work, one of them beginning with it ("I'm wiring the back in stock label into the basket
    page next", "next I'll add config/locales/sms.cy.yml") or holding "let's" and a verb, without
    the marks of a problem report or a question mark anywhere: the verb one of new work (``work``,
    the caller's list, or :data:`_PLAN_VERBS`), never one that reports, asks, repairs or runs an
    operation ("I'm hitting a timeout", "I'm seeing ...", "let's check", "I'll rerun")."""
    if _asks_or_reports(sentences):
        return False
    for sentence in sentences:
        s = sentence.strip()
        for m in (_PROGRESSIVE.match(s), _FUTURE.match(s), _LETS.search(s)):
            if m and _base(m.group(1).lower()) & (work | _PLAN_VERBS):
                return True
    return False


def names_a_subject(words: list[str]) -> bool:
    """Whether lower-cased ``words`` begin with a noun and its verb ("build is failing", "deploys
    keep timing out") or a noun's phrase ("port of the staging database?"), not an order ("build
    the image")."""
    return len(words) > 1 and words[1] in _AFTER_A_SUBJECT


# a name of code: a file or a path ("build.gradle.kts", "api/uploads.py"), a snake_case or dotted
# identifier ("test_invoice_pdf", "settings.DEBUG"); fts_words splits it, and its first part may
# read as a verb ("build", "test")
_CODE_NAME = re.compile(r"[A-Za-z][\w-]*(?:[._/][\w-]+)+")


def opens_with_a_code_name(text: str) -> bool:
    """Whether ``text`` begins with a name of code (a file, a path, a snake_case or dotted
    identifier), which is what the sentence is about, not an order's verb: "build.gradle.kts pins
    ojdbc11 to 19.23.0.0", "test_invoice_pdf is red on CI again"."""
    first = text.split(None, 1)[0].rstrip(",;") if text.strip() else ""
    return bool(_CODE_NAME.fullmatch(first))


# an order that also asks to be told what was settled before: "remind me what max-tasks-per-child we
# set", "I need the mixed precision setting we standardized on"
_ASKS_THE_PAST = lazy(
    r"\bremind (?:me|us)\b"
    r"|\b(?:need|want|what|which|what's|whats)\b(?:\s+[\w'-]+){0,6}?\s+we(?:'ve| have)?\s+"
    r"(?:set|picked|chose|agreed|decided|settled|standardi[sz]ed|landed)\b",
    re.I,
)


def asks_the_past(text: str) -> bool:
    """Whether an order also asks to be told what was settled before ("bump celery concurrency to 10
    and remind me what max-tasks-per-child we set", "I'm writing up our conventions and need the
    mixed precision setting we standardized on"): the archive holds that, so it is searched."""
    return bool(_ASKS_THE_PAST.search(text[:400]))


# where a clause after an order's may begin (:func:`asked_after`): a sentence's end or a semicolon,
# a dash between spaces, a comma before "and" / "but" / "also" / "plus" / "btw", or "and" before
# "remind me" / "tell me"; never a bare "and" ("write down who fixes it and which address to email"
# is one order)
_LATER_CLAUSE = lazy(
    r"(?<=[.!?;:])\s+|\n+|\s+[-\u2013\u2014]+\s+|,\s+(?=(?:and|but|also|plus|btw|oh)\b)"
    r"|\s+(?=and\s+(?:remind|tell)\s+(?:me|us)\b)",
    re.I,
)
_CLAUSE_OPENING = lazy(r"^\W*(?:(?:and|but|also|plus|btw|oh|ps|then)\b[\s,:]*)+", re.I)
# a clause that asks for something known: a question word first ("what's the dead-letter topic
# called again?", "who maintains the CLI?"; "when" only with a question mark: "when you next touch
# it, split ..." is a condition), or asking to be reminded or told ("tell me how many calls ...")
_ASKS_FIRST = lazy(
    rf"(?:{'|'.join(sorted(QUESTION_WORDS - {'when', 'whom'}))})(?:'?s|'re)?\b"
    r"|(?:(?:can|could)\s+you\s+)?(?:remind\s+(?:me|us)|tell\s+me)\s+"
    rf"(?:{'|'.join(sorted(QUESTION_WORDS - {'whom'}))}|the|if|whether)\b",
    re.I,
)
# a question led by an auxiliary that asks what is known ("is there already a spatial index on
# shapes?", "did we ever pin the driver?"), with its question mark; not one about the work at hand,
# which asks for advice, leave or a check: a modal ("should it retry?", "can you also add a
# test?"), or an auxiliary before what is at hand ("is that ok?", "do you need the schema?")
_ADVICE_OR_LEAVE = frozenset(["can", "could", "should", "would", "will"])
_ASKS_AUXILIARY = lazy(
    rf"(?:{'|'.join(sorted((AUXILIARIES - _ADVICE_OR_LEAVE) | {'had', 'any'}))})\b"
    r"(?!\s+(?:that|this|it|you|i)\b)",
    re.I,
)


def asked_after(text: str) -> str:
    """What an order asks after it, from the first clause that asks on ("" when none): "write a
    small consumer that replays events that fail validation; what's the dead-letter topic called
    again?" asks "what's the dead-letter topic called again?"; "add the slog handler to the
    enricher, and remind me why go.mod is still on 1.21.9" asks "remind me why ...". A clause
    asks when it opens with a question word, with "remind me" / "tell me" and what is asked, or
    with an auxiliary and ends with a question mark ("...; is there already an index on shapes?"),
    unless it asks for advice, leave or a check ("...; should it retry?", "...; can you also add a
    test?", "...; is that ok?"). The first clause is the order's own (read in the first 400
    characters)."""
    clauses = _LATER_CLAUSE.split(text[:400])
    for i in range(1, len(clauses)):
        clause = _CLAUSE_OPENING.sub("", clauses[i])
        if _ASKS_FIRST.match(clause) or (_ASKS_AUXILIARY.match(clause) and clause.rstrip().endswith("?")):
            return " ".join(_CLAUSE_OPENING.sub("", c) for c in clauses[i:]).strip()
    return ""


def without_prefix(text: str) -> str:
    """``text`` without a leading label such as "android: ", "ios - " (a platform, a module) or a
    ticket's id ("TH-211 add ...")."""
    m = _PREFIX.match(text)
    return text[m.end() :] if m and fts_words(text[: m.end()]) else text
