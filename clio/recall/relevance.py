"""Whether an archived unit bears on a new message: the automatic recall's quote-or-not decision.
Pure (no disk, no model): the caller gives the unit's text, the documents frequencies of the
message's words in the index, and a cosine when it has one.

A message's *own words* are its content words minus the words of everyday conversation and of
generic work ("ok", "thanks", "looks good", "continue", "run the tests again", "commit it"): a
message without own words asks nothing the archive could answer, so it never pulls a block by
itself, and an archived message without own words never carries a unit by itself.

The decision weighs how much of what the message asks the unit holds, each word by how rare it is
in the archive (its idf: a word found everywhere tells nothing; a word found nowhere weighs most,
since a message about something the archive never mentions is a new subject), and quotes a unit
that holds at least :data:`THRESHOLD` of it (:func:`score`). The thresholds are chosen on the dev
half of the labelled coding sessions (``benches/recall_dev``, sets A and E) and reported on the
others (B, C, D, F): docs/memory.md. A message whose one own word is an everyday English word
("wait", "same error again") asks nothing either, nor one made only of the words of working on any
code base ("run the linter", "CI is failing": :func:`only_work_at_hand`), nor a remark that asks
nothing and reports no trouble ("dana approved it btw": :func:`clio.recall.remarks.is_remark`)
(:func:`asks_something`). A static-embedding
cosine was measured as a further signal and did not separate reworded facts from near misses; a full sentence encoder does better
(docs/memory.md), and where its cosine is at hand (:mod:`clio.recall.encoder_client`) a unit that
the words miss is quoted when the cosine clears :data:`COSINE_ASK`. A message that orders new work
(:func:`is_task`: "add a healthcheck endpoint") pulls no block, by meaning or by its words: the
archive seldom answers one, and what holds its words is more often earlier work on the same part (a
near miss) than a convention it needs, which long-term memory carries; a question or a problem
report is often answered by the archive.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from clio.recall import orders, remarks
from clio.recall.encoder_models import MINILM
from clio.recall.query import CALL_MARK, content_words, iter_content_words
from clio.recall.terms import SENTENCE_END, excerpt_stem, fts_words

_EVERYDAY = """
ok okay okey k kk thanks thank thx ty cheers great good nice cool perfect fine sure yes yeah yep yup
no nope nah please pls plz continue go ahead proceed next looks look seems seem sounds sound work
worked works working done lgtm awesome alright right exactly agreed agree correct wrong hmm hm oh
ah well wow lol haha let lets keep carry again now also still just really thing things stuff one bit
lot much more something anything everything whatever way try tried do make made want need think
know see got get go going gone happy glad sorry hi hello hey morning bye later maybe probably
actually first last instead anyway already yet though good job thanks
run rerun runs running test tests testing commit commits push merge revert undo retry redo fix fixed
change changes changed update updated check checked start stop finish finished show tell explain
same back ready time moment minute second use using used
remind remember recall forgot forget number value name
wait hold hang cancel skip nevermind mind meant mean typo brb huh diff summarize summarise pause
ugh argh meh welp oops whoops dang damn geez yikes phew uh um
btw fyi nvm tbh imo idk iirc afaik lmk sec secs pretty hell heck
yesterday today tonight tomorrow ago earlier lately recently week weeks month months year years
monday tuesday wednesday thursday friday saturday sunday afternoon evening night
thats whats wheres whos hows theres heres its im ive youre youve weve theyre dont doesnt didnt isnt
arent wasnt werent cant wont wouldnt shouldnt couldnt hasnt havent hadnt aint gonna wanna gotta
"""
EVERYDAY: frozenset[str] = frozenset(excerpt_stem(w) for w in _EVERYDAY.split())


def own_words(text: str) -> list[str]:
    """The content words of ``text`` (stemmed) that are not everyday conversation or generic work."""
    return [w for w in content_words(text) if w not in EVERYDAY]


def spellings(text: str) -> dict[str, list[str]]:
    """Each word stem of ``text`` (as :func:`own_words` stems) -> the words typed for it, in order:
    the index and the vocabulary know words as typed, not stems."""
    out: dict[str, list[str]] = {}
    for w in fts_words(text):
        out.setdefault(excerpt_stem(w), []).append(w)
    return out


# The words of working on any code base: its universal objects (files, functions, tests, the build,
# the linter, git, the server, the logs) and what one does to them (the verbs of new work, below,
# and a few more). A message made of these alone ("run the linter", "CI is failing", "open the
# config", "rename that variable") is about the work at hand: every project's archive holds some
# message with the same words, and none answers it better than the task in front of the user.
_WORK = """
file files folder folders directory directories dir path paths line lines code codebase repo repository
project structure tree snippet example examples sample placeholder
function functions method methods class classes variable variables constant constants module modules
helper helpers comment comments docstring docstrings type types hint hints import imports argument
arguments arg args parameter parameters param params field fields attribute attributes property
properties object objects instance interface enum struct string strings array dict loop condition
block scope signature default defaults null none boolean literal indentation indent whitespace spaces
tabs newline bracket brackets syntax naming
edit tweak adjust rework tidy shorten copy paste duplicate duplication dedupe hardcode hardcoded
uncomment unwrap reformat reorder consolidate minimal smaller bigger small big long short readable
readability clearer cleaner nicer consistent consistency pattern idiomatic
lint linter linters linting formatter formatting style typos suite unit integration case cases edge
coverage assert asserts assertion assertions fixture fixtures mocks skipped flaky flake flakes spec specs
pass passes passing
fail fails failing failed failure failures green red locally local verbose output
git status branch branches main master rebase squash amend cherry pick stash pull fetch checkout reset
conflict conflicts pr prs review reviewer feedback description changelog tag gitignore history
builds rebuild compile compiles compiling compiled compiler install reinstall uninstall dependency
dependencies deps package packages lockfile version versions pin pinned upgrade downgrade release
ci pipeline clean cleanup artifact artifacts binary warning warnings warn
server process restart kill dev debug debugger breakpoint print prints statement statements log logs
logging tail trace stack traceback exception exceptions error errors bug bugs issue issues problem
problems crash crashes crashed hang hangs hanging stuck slow slower faster quiet silence ignore
suppress handle handling catch raise throw early guard async thread safe race undefined permission
denied command commands found terminal shell script scripts config configuration settings readme
docs doc documentation section summary todo task tasks list item items step steps plan approach
solution option options idea ideas alternative broken break breaks breaking
old new different other previous whole entire left latest unused simple simpler backwards compatible
compatibility behaviour behavior open read touch mark find search grep walk put started starting
defined used side effect effects better message messages clear full resolve shorter longer
"""
_QUESTION_LEADS = remarks.QUESTION_WORDS | remarks.AUXILIARIES
_AT_HAND = remarks.AT_HAND  # what is in front of the user


def is_question(text: str) -> bool:
    """A question mark at the end, or a question word first. Pure."""
    words = fts_words(text[:200])
    return text.rstrip().endswith("?") or (bool(words) and words[0].lower() in _QUESTION_LEADS)


ASKS_CHARS = 2000  # of a message read for whether it asks anywhere (a pasted log after it asks nothing more)


def asks_in_any_sentence(text: str) -> bool:
    """Whether a message asks in any of its sentences: a question mark, or a sentence led by a
    question word or an auxiliary ("... what did we settle on back then?", "can you look at ..."),
    where :func:`is_question` reads only its end and its first word. A report or an order ("the
    docker image is 1.4 gigs. switch to a multi-stage build") asks nothing. Narrower than
    :func:`clio.recall.remarks.asks` (which also counts a question word anywhere, "any idea",
    "remind me", in a short message's first 300 characters, to tell a remark): this one reads a
    long message whole, for the judged score (:attr:`clio.recall.auto.Hit.asks`). Pure."""
    head = text[:ASKS_CHARS]
    return "?" in head or any(is_question(sentence) for sentence in SENTENCE_END.split(head))


def only_work_at_hand(text: str, own: Sequence[str] | None = None) -> bool:
    """Whether a message's own words (:func:`own_words`; ``own`` when the caller has them) are all
    words of working on any code base (:data:`_WORK`, the verbs of new work) and it is not a
    question, or a question about what is in front of the user ("does it compile?", "what files
    did you touch?"). "which port does the staging database use?", "how do we run the linter?"
    and "the invoice pdf test fails on CI" still ask. Pure."""
    words = own_words(text) if own is None else own
    if not words or not all(w in WORK_WORDS for w in words):
        return False
    return not is_question(text) or any(w.lower() in _AT_HAND for w in fts_words(text[:200]))


def answers_nothing(parts: Sequence[tuple[str, str]], said_elsewhere: Callable[[str, list[str]], bool] | None = None) -> bool:
    """Whether a unit (its messages as (role, text)) is a question nobody answered: every message
    of the user's in it a question (:func:`is_question`), and nothing else in it but replies
    without a word of their own ("OK.", "Done.", "Sure!"), no tool step nor result. Quoting it
    would only tell the model that the question was once asked: an earlier one-shot question
    whose answer was a greeting, a question the session ended on. A statement of the user's
    ("the staging database is on 5433 now") is a fact, whatever the reply.
    ``said_elsewhere(reply, questions)``: whether that very reply answered other questions than
    these elsewhere (the index knows): a reply given word for word to different questions (a
    canned reply, a refusal) says nothing of its own either, whatever its words. Pure but for it."""
    asks = [text for role, text in parts if role == "user"]
    if not asks or not all(is_question(text) for text in asks):
        return False
    replies = [(role, text) for role, text in parts if role != "user"]
    if not all(role == "assistant" and CALL_MARK.strip() not in text for role, text in replies):
        return False
    return all(not own_words(text) or (said_elsewhere is not None and said_elsewhere(text, asks)) for _, text in replies)


def asks_something(text: str, is_common: Callable[[str], bool], own: Sequence[str] | None = None) -> bool:
    """Whether a message asks something the archive could answer: two own words or more
    (:func:`own_words`; ``own`` when the caller has them), or one that is not an everyday English
    word (``is_common``, as typed: :func:`clio.recall.common_words.is_common`), and not only words
    of the work at hand (:func:`only_work_at_hand`), nor a remark
    (:func:`clio.recall.remarks.is_remark`). "pgbouncer?" and "the dunning job?" ask; "wait",
    "same error again", "that broke something" only talk, and an archive always holds some
    message with the same one common word; "run the linter" and "CI is failing" are about the task
    in front of the user, "deploying it now, brb" tells where it stands."""
    words = own_words(text) if own is None else own
    if only_work_at_hand(text, words) or remarks.is_remark(text, words):
        return False
    if len(words) != 1:
        return bool(words)
    return asked_outright(text) or not all(is_common(w) for w in spellings(text).get(words[0], ()))


ASKED_WORDS = 6  # words of a question asked outright (:func:`asked_outright`)


def asked_outright(text: str) -> bool:
    """Whether ``text`` is a question asked outright: a question word first ("what", "which",
    "where", "when", "why", "how", "who"), a question mark at the end, :data:`ASKED_WORDS` words or
    more, and none that points at the moment or what is in front of the user ("now", "today",
    "still", "it", "this" ...: :data:`clio.recall.remarks.MOMENT`). One own word of it is enough to
    search, an everyday one too: "when do the late-payment reminders go out?", "who needs to okay a
    go-live?" ask what the archive holds in everyday words; "what about the staging one?" is too
    short to ask alone, "what's the error now?" asks about the work at hand. Pure."""
    words = [w.lower() for w in fts_words(text[:200])]
    return (
        text.rstrip().endswith("?")
        and len(words) >= ASKED_WORDS
        and words[0] in remarks.QUESTION_WORDS
        and not any(w in remarks.MOMENT for w in words)
    )


def says_something(text: str, limit: int = 4000) -> bool:
    """Whether ``text`` holds a word of its own (:func:`own_words`), reading no more than needed."""
    return any(w not in EVERYDAY for w in iter_content_words(text, limit))


UNKNOWN_DF = 0.5  # the document frequency a word found nowhere is weighed at


def idf(df: int, total: int) -> float:
    """How telling a word found in ``df`` of ``total`` indexed messages is; a word found nowhere
    weighs most (a message about something the archive never mentions is a new subject)."""
    if total <= 0:
        return 0.0
    return math.log(1.0 + total / max(df, UNKNOWN_DF))


@dataclass(frozen=True)
class Features:
    """What the decision reads for one (message, unit) pair."""

    asked: int  # own words of the message
    matched: int  # of those, found in the unit
    weighted: float  # the idf-weighted share of the message's own words found in the unit
    rarest: float  # the highest idf among the matched words, scaled to 0..1 by the archive's size
    cosine: float | None


def features(
    query_words: Sequence[str], unit_text: str, dfs: Mapping[str, int], total: int, cosine: float | None
) -> Features:
    """``query_words``: the message's own words (:func:`own_words`); ``dfs``: their document
    frequencies in the index (stemmed the same way)."""
    have = {excerpt_stem(w) for w in fts_words(unit_text)}
    known = {w: idf(dfs.get(w, 0), total) for w in query_words}
    found = [w for w in known if w in have]
    whole = sum(known.values())
    top = math.log(1.0 + max(total, 1))
    return Features(
        asked=len(known),
        matched=len(found),
        weighted=sum(known[w] for w in found) / whole if whole else 0.0,
        rarest=max((known[w] for w in found), default=0.0) / top if top else 0.0,
        cosine=cosine,
    )


# The share of the message's own words (idf-weighted) a unit must hold. Chosen on set A of
# benches/recall_dev by ``bench_auto_recall.py --sweep``: the value that quotes the most facts
# while giving at most 1 of the 12 unrelated messages a block; reported on set B: docs/memory.md.
THRESHOLD = 0.65
# The encoder's cosine, as a share of its model's threshold for a question, under which a unit's
# words do not quote it: they match, its meaning is elsewhere ("thanks, thats all for today" held
# "thats" and "all" of a question about a queue, at 0.12; "go fmt everything", one word, at 0.36).
# With no encoder the words decide alone. Chosen in stop 62 on the tune sets (docs/memory.md,
# "Words whose meaning is elsewhere"); a share, so a model of another scale keeps it.
WORDS_FLOOR_SHARE = 0.7


def quoted_at(words: bool, task: bool, cosine: float, cosine_ask: float) -> bool:
    """The decision on a candidate unit replayed at another encoder's threshold ``cosine_ask``
    (its calibration, :mod:`clio.recall.encoder_calibration`, and the benches' replays), for a
    unit not left out otherwise: its words quote it (``words``) unless ``cosine`` is under
    :data:`WORDS_FLOOR_SHARE` of the threshold, or, not an order of new work, ``cosine`` reaches
    it. The product's decision is :attr:`clio.recall.auto.Hit.relevant`."""
    return (words and cosine >= WORDS_FLOOR_SHARE * cosine_ask) or (not task and cosine >= cosine_ask)
# The same for an order of new work (:func:`is_task`): none. Its words never quote a unit, as its
# cosine never does (COSINE_TASK below): an archived exchange holding an order's words is, far more
# often, earlier work on the same part (a near miss, "write the changelog entry for 0.8.3" for 0.9.0's)
# than a convention the order needs, which long-term memory carries. Measured in stop 61 on 56 orders
# that need something settled in an earlier session and 56 that need nothing, written blind for seven
# of the sets (benches/recall_dev/orders.json): words at 0.75 quoted 13 of the 56 and gave 4 of the 56
# a block, never 12 and 2; on the ten sets' unrelated messages 2 false blocks fewer, no fact lost, and
# on the work-at-hand lists 41 -> 29 of 800 reported. Stop 44 had 0.75 and never equal on A and E.
THRESHOLD_TASK = math.inf
# The rarest word the unit shares must be at least this rare (idf over the idf of a word found in
# one message): a word most of the archive holds ("database" in a database project) is no match.
MIN_RAREST = 0.3


def score(f: Features) -> float:
    """How much of what the message asks the unit holds: the idf-weighted share of the message's
    own words found in it (0 without own words, or when it shares only common ones)."""
    return f.weighted if f.asked and f.rarest >= MIN_RAREST else 0.0


# The encoder's cosine (the message against the unit's best chunk: clio.recall.encoder) at which a
# unit bears on a message the words alone miss. Chosen on set A by ``bench_auto_recall.py --encoder
# --sweep`` (the most facts with at most 1 of 12 unrelated messages given a block), reported on set
# B: docs/memory.md. For a question or a problem report, COSINE_ASK; for an order of new work no
# threshold quoted one more fact on set A and those under 0.60 added false blocks, so none (nor do
# its words since stop 61: THRESHOLD_TASK): an order pulls no block.
COSINE_ASK = MINILM.cosine_ask  # 0.42; another model's is in its declaration (clio.recall.encoder_models)
COSINE_TASK = math.inf

_TASK = """
add write make set create implement translate refactor rename remove delete update move generate bump
convert replace wire split merge port extract drop introduce enable disable configure install build
send export support plot print allow expose document return cache retry rewrite clean sort filter
validate notify emit store save limit paginate schedule mock stub benchmark display render format
wrap inline optimize localize deprecate simplify polish highlight group seed test
"""
_TASK_VERBS: frozenset[str] = frozenset(_TASK.split())
# (not "port": far more often the noun a question is about than the verb)
WORK_WORDS: frozenset[str] = frozenset(excerpt_stem(w) for w in (*_WORK.split(), *(_TASK_VERBS - {"port"})))
_LEAD = "please pls now also then and ok okay so next fwiw imho afaik afaict iirc tldr"
_LEADS: frozenset[str] = frozenset(_LEAD.split())
# what may stand between "can / could / would you" and the verb of an order
_SOFTENERS = frozenset(("please", "pls", "kindly", "just", "maybe", "quickly"))


def is_task(text: str) -> bool:
    """Whether a message orders new work ("add …", "please write …", "can you make …", "could you
    please add …", "would you mind adding …") rather than asking something or reporting a
    problem: its first words, or, when it is not a question, a later sentence's ("the mapper
    should also take the prefix. add it with a spec"). Pure."""
    text = orders.without_prefix(text)
    if _orders(text):
        return True
    if is_question(text):
        return False
    sentences = SENTENCE_END.split(text[:400])
    return any(_orders(sentence, text) for sentence in sentences[1:]) or orders.wishes(sentences) or orders.plans(sentences, _TASK_VERBS)


def _unended(stem: str) -> str:
    """The verb of a form in -ing with its -ing taken off: "add" (adding), "set" (setting, its
    consonant doubled), "write" (writing, its e dropped)."""
    if stem in _TASK_VERBS:
        return stem
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in _TASK_VERBS:
        return stem[:-1]
    return stem + "e"


def _orders(text: str, message: str | None = None) -> bool:
    """Whether ``text`` (``message`` or one of its sentences) begins with an order of new work."""
    if orders.opens_with_a_code_name(text):
        return False  # "build.gradle.kts pins ...": the file is what it speaks of
    words = [w.lower() for w in fts_words(text[:200])]
    polite = False  # asked for: "please", "can you", "let's"
    while words and words[0] in _LEADS:
        polite = polite or words[0] in ("please", "pls")
        words = words[1:]
    if words[:2] in (["can", "you"], ["could", "you"], ["would", "you"]):
        words, polite = words[2:], True
        while words[:1] and words[0] in _SOFTENERS:  # "could you please add ...", "can you just bump ..."
            words = words[1:]
        if words[:1] == ["mind"] and len(words) > 1 and words[1].endswith("ing"):  # "would you mind adding ..."
            words = [_unended(words[1][:-3]), *words[2:]]
    # "help me write a reply to …" asks for the writing ("help me understand why …" still asks)
    if words[:2] in (["help", "me"], ["help", "us"]):
        rest = words[3:] if words[2:3] == ["to"] else words[2:]
        if rest[:1] and rest[0] in _TASK_VERBS:
            words, polite = rest, True
    if words[:1] in (["let"], ["lets"]):
        words, polite = (words[2:] if words[1:2] == ["s"] else words[1:]), True
    if words[:1] == ["show"]:  # "show the humidity with one decimal", not "show me how we deploy"
        return len(words) > 1 and words[1] not in ("me", "us")
    if words[:1] and words[0] in orders.SUBORDINATORS:
        # a clause that sets the scene comes first; the order, if any, is the clause after it
        # ("once the migration lands, add an index on ..."; "once the rates come out, where do ... go?")
        _, comma, main_clause = text.partition(",")
        return bool(comma) and _orders(main_clause, message or text)
    if not words or orders.names_a_subject(words):
        return False  # "build is failing ...": a report about the build
    if words[0] in _TASK_VERBS:
        # asked without a polite lead, a listed verb not followed by its object heads a noun's
        # phrase: "update on the staging migration?", "merge strategy for release branches?"; one
        # that opens a message whose first clause says something fails names a thing: "make e2e
        # just hangs on my laptop", "clean workstation setup: our core backend crashes" (stop 99)
        if message is None and not polite and not orders.takes_an_object(words) and orders.fails(text):
            return False
        return polite or "?" not in (message or text) or orders.asks_for_work(words)
    # another verb, read by the sentence's form: not an everyday word ("thanks, that looks good")
    return excerpt_stem(words[0]) not in EVERYDAY and orders.imperative(words, message or text)
