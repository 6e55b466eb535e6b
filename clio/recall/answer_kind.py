"""What kind of answer a question asks for, and whether a text holds one: a question for a
duration ("how long are the snapshots kept?", "what's the retention on the seq logs?"), a
frequency ("how often does the import run?"), a time of day ("what time does the sitemap run?"), a
count ("how many releases are kept?"), a port ("which port is the staging redis on?"), a version
("node version?"), or a value with a shape of its own (a URL, a host, an IP address, a phone
number, an email address: "whats rob's phone number at the vendor?") is answered only by a text
that holds one. The automatic recall's decision reads it for every unit it would quote
(:attr:`clio.recall.auto.Hit.relevant`): a unit on the question's topic that holds no such value
is the near miss that neither a sentence encoder nor the question's own words tell from the answer
(docs/memory.md, "A question for a quantity"). Generous on purpose:
anything that could state the value counts (a number by a unit, a config key's value such as
``ttl: 3600``, an ISO duration, "forever", "until", a cron line, "half past ten", ``hour=7``; for a
port any number of two to five digits, for a version any number, for a host any dotted or
hyphenated name), so that only a unit with no such thing at all is left out. A question about how a library or a standard behaves in general
(:func:`about_a_tool`) is answered by its documentation: a unit is quoted for it by the
question's own words only (:attr:`clio.recall.auto.Hit.general`). Pure; patterns compiled on
first use.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy

DURATION, FREQUENCY, CLOCK, COUNT, PORT, VERSION = "duration", "frequency", "clock", "count", "port", "version"
# a value with a shape of its own: where a thing is reached, and how someone is
URL, HOST, IP, PHONE, EMAIL = "url", "host", "ip", "phone", "email"

_SMALL = "one two three four five six seven eight nine ten eleven twelve"
_NUMBER_WORDS = f"{_SMALL} fifteen twenty thirty forty fifty sixty ninety hundred"
_WORD = rf"(?:{_SMALL.replace(' ', '|')})"
_LONG_UNITS = r"(?:milli)?sec(?:ond)?s?|min(?:ute)?s?|h(?:ou)?rs?|hours?|days?|nights?|weeks?|fortnights?|months?|quarters?|years?"
_KEYS = r"ttl|timeout|expir|retention|retain|max[-_]?age|lifetime|interval|period|delay|seconds|secs|minutes|mins|hours|days|_ms\b"
_DAYS = r"mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"

# a duration: 90 days, 15 min, 30d, 5s; a week, two hours, every day; forever, until; P30D; a
# config key's bare value (ttl: 3600, retention.ms=604800000)
_DURATION = (
    rf"\b\d+(?:[.,]\d+)?(?:\s?-?(?:{_LONG_UNITS})|ms|s|m|h|d|w|y)\b"
    rf"|\b(?:an?|every|each|per|{_NUMBER_WORDS.replace(' ', '|')}|a few|several|few)[\s-]+(?:{_LONG_UNITS})\b"
    r"|\b(?:forever|indefinitely|hourly|daily|weekly|monthly|nightly|yearly|until|till)\b"
    r"|\bP(?:T?\d+[DHMSW])+\b"
    rf"|(?:{_KEYS})[\w.]{{0,40}}?['\"]?(?:[ \t]*[:=(][ \t]*|[ \t]+)['\"]?\d"
    r"|(?-i:\b\d+[ \t]+IN[ \t]+(?:A|AAAA|CNAME|MX|TXT|NS|SRV|CAA|PTR)\b)"
)
# a schedule: a cron line (five to seven fields: 30 2 * * *, */15 * * * *, 0 18 ? * MON-FRI *)
_CRON = rf"(?<![\w.-])[\d*?H][\d*?/,LW#H-]*(?:[ \t]+(?:[\d*?/,LW#H-]+|(?:{_DAYS})(?:-(?:{_DAYS}))?)){{4,6}}(?![\w-])"
# a time of day: 02:30, 3am, 8 in the morning, half past ten, noon; a key's value (hour=7,
# ORDER_CUTOFF_HOUR=14, schedule: "0 6 * * 1-5")
_CLOCK = (
    rf"\b\d{{1,2}}:\d{{2}}\b|\b(?:\d{{1,2}}|{_WORD})\s?(?:[ap]\.?m\b|o'?clock\b|in the (?:morning|afternoon|evening)\b|at night\b)"
    rf"|\b(?:quarter|half)\s+(?:past|to)\s+(?:\d{{1,2}}|{_WORD}|midnight|noon)\b|\b(?:midnight|noon)\b"
    r"|(?:hour|minute|cutoff|schedule|cron|recurrence|oncalendar)\w{0,40}?['\"]?[ \t]*[:=(][ \t]*['\"(]{0,2}[\d*]"
    rf"|{_CRON}"
)

# the question's kind: a time of day, a duration, how often, a count
_ASKS_CLOCK = lazy(r"(?<!after )\bwhat time\b|\bat what (?:time|hour)\b", re.I)
_ASKS_FREQUENCY = lazy(r"\bhow (?:often|frequently)\b|\bafter what time\b", re.I)
_ASKS_DURATION = lazy(
    r"\bhow long\b|\bhow old\b|\bhow many (?:milliseconds|seconds|minutes|hours|days|nights|weeks|months|years)\b",
    re.I,
)
_ASKS_COUNT = lazy(r"\bhow (?:many|much)\b", re.I)
# a question for a value that names it ("what's the ttl on the session cookie?", "which port is
# grafana on", "node version?"): "what" or "which" before the noun in its clause, or a clause that
# is the noun phrase and a question mark ("local debug port for the api?"); not a question of why,
# how, who, where or whether ("why did we raise the timeout?", "is the redis port exposed?")
_DURATION_NOUNS = r"retention|ttl|time-?outs?|expiry|expiration|lifetime|max[- _]?age|grace period"
_NOUN_KIND = {"port": PORT, "ports": PORT, "version": VERSION, "versions": VERSION}
# the nouns of a value with a shape of its own, each by its kind; one counts only as the head of
# its phrase ("which email does the alert go to?"), not as a word that qualifies another ("what
# email template", "which host port": the port is asked)
_SHAPED_NOUNS = {  # the longer spelling first: "ip address" is one noun, not "ip" before "address"
    URL: r"urls?|uris?|dsn|connection strings?",
    HOST: r"host ?names?|domain names?|hosts?|domains?|fqdns?",
    IP: r"ip address(?:es)?|ipv4|ipv6|ips?",
    PHONE: r"(?:phone|mobile|cell) (?:numbers?|no)|phone",
    EMAIL: r"e-?mail address(?:es)?|mail address(?:es)?|e-?mails?",
}
_SHAPED = lazy("|".join(rf"(?P<{kind}>\b(?:{nouns})\b)" for kind, nouns in _SHAPED_NOUNS.items()), re.I)
_HEAD_ENDS = lazy(
    r"\s*(?:[?,.;:!)/]|$|(?:is|are|was|were|'s|does|do|did|should|would|will|can|could|has|have|had|for|of|on|in|at|to|"
    r"from|with|that|we|our|they|it|i|you|he|she|again|now|these|those|the|this|there|here|exactly|used)\b)",
    re.I,
)
_CLAUSE = lazy(r"[^.?!;\n]*(?:[.?!;]|\n|$)")
_NOUN = lazy(
    rf"\b(?:ports?|versions?|{_DURATION_NOUNS}|{'|'.join(_SHAPED_NOUNS.values())})\b", re.I
)
_WHAT = lazy(r"\b(?:what|which|whats)\b", re.I)
# "how do I find out what version ...", "where do i find which version ...": a procedure, a place
_HOW_WHY = lazy(r"^\W*(?:how|why|where|who)\b", re.I)
MAX_BETWEEN = 4  # words between "what"/"which" and the value it asks for ("what's the lambda timeout")
# words by which "what" asks about the value rather than for it
_ABOUT = frozenset(["with", "about", "happened", "changed", "wrong", "broke", "reason", "problem", "issue"])
MAX_BARE_WORDS = 10  # a noun phrase asked as a question ("local debug port for the api?") is short
_OTHER_ASK = lazy(
    r"^\W*(?:and |so |ok,? |also,? )?(?:why|how|who|whom|whose|where|is|are|was|were|do|does|did|can|could|should|will|would|have|has|had|if|any)\b",
    re.I,
)

_HOLDS = {
    DURATION: lazy(_DURATION, re.I),
    FREQUENCY: lazy(rf"{_DURATION}|{_CLOCK}|\b(?:once|twice)\b", re.I),
    CLOCK: lazy(_CLOCK, re.I),
    COUNT: lazy(rf"\b(?:\d+(?:[.,]\d+)?|{_NUMBER_WORDS.replace(' ', '|')}|dozens?|several|none|unlimited)\b", re.I),
    # a port: any number of two to five digits (":8080", "-p 5433", "port 22")
    PORT: lazy(r"(?<![\d.])\d{2,5}(?![\d.]\d)"),
    # a version: any number (3.2.1, node 20, v14, ^4.17), or a channel (latest, lts, stable ...)
    VERSION: lazy(r"\d|\b(?:latest|lts|stable|nightly|canary|edge|beta|rc)\b", re.I),
    # a URL: a scheme (https://..., jdbc:oracle:thin:@..., redis:/...), a host and port, or a
    # dotted host with a path
    URL: lazy(r"\b[a-z][\w+.-]*://|\b[a-z][\w+.-]*:(?:[\w+.-]+:)*[@/]|\b[\w.-]+:\d{2,5}\b|\b[\w-]+(?:\.[\w-]+)+/", re.I),
    # a host: a dotted name or address, localhost, a hyphenated machine name (ash-worker-01), a
    # key's value (host: db)
    HOST: lazy(r"\b[\w-]+(?:\.[\w-]+)+\b|\blocalhost\b|\b\w+(?:-\w+)+\b|\bhost\w*['\"]?\s*[:=]", re.I),
    # an IP address: dotted four (a CIDR too), or IPv6 (with "::" or a hex letter: not a clock's 0:04:12)
    IP: lazy(
        r"\b\d{1,3}(?:\.\d{1,3}){3}\b|(?<![\w:])(?=[0-9a-f:]*(?:::|[a-f]))[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?![\w:])",
        re.I,
    ),
    # a phone number: seven digits or more, spaced or not (+47 22 33 44 55, (555) 010-4477)
    PHONE: lazy(r"\+?\d[\d \t().-]{5,}\d"),
    # an email address, or a mailbox's handle
    EMAIL: lazy(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|@\w"),
}


def asked_for(question: str) -> str | None:
    """The kind of answer ``question`` asks for (:data:`CLOCK`, :data:`FREQUENCY`, :data:`DURATION`,
    :data:`COUNT`, :data:`PORT`, :data:`VERSION`, :data:`URL`, :data:`HOST`, :data:`IP`,
    :data:`PHONE`, :data:`EMAIL`), or None (any other question, or not a question
    of these words). "After what time" is a frequency's: a duration or a time of day answers it."""
    head = question[:300]
    if _ASKS_CLOCK.search(head):
        return CLOCK
    if _ASKS_FREQUENCY.search(head):
        return FREQUENCY
    if _ASKS_DURATION.search(head):
        return DURATION
    if _ASKS_COUNT.search(head):
        return COUNT
    return _named(head)


def _bare(clause: str, at: int) -> bool:
    """Whether the comma-separated piece of ``clause`` at ``at`` is a short noun phrase asked as a
    question ("ttl on the session cookie?", "staging redis, port?"), not a statement with a question
    after it ("the port forward keeps dropping, any idea?") nor a question of another kind."""
    start = clause.rfind(",", 0, at) + 1
    end = clause.find(",", at)
    piece = clause[start:] if end < 0 else clause[start:end]
    return (
        piece.rstrip().endswith("?")
        and len(piece.split()) <= MAX_BARE_WORDS
        and not _OTHER_ASK.search(piece)
        and not _WHAT.search(piece)  # "what" or "which" asks as _asked_by_what reads it
    )


def _asked_by_what(clause: str, at: int) -> bool:
    """Whether "what" or "which" asks for the noun at ``at`` ("which port does ...", "what's the
    lambda timeout ..."): at most :data:`MAX_BETWEEN` words between them, none that asks about it
    instead ("what's wrong with the port mapping?"), in a clause not led by how, why, where or who."""
    asks = list(_WHAT.finditer(clause, 0, at))
    if not asks or _HOW_WHY.search(clause):
        return False
    between = clause[asks[-1].end() : at].split()
    return len(between) <= MAX_BETWEEN and not any(w.lower().strip(",'") in _ABOUT for w in between)


def _named(head: str) -> str | None:
    """The kind of a value a question names (a port, a version, a retention or ttl, a URL, a host ...)."""
    for clause in _CLAUSE.finditer(head):
        text = clause.group()
        for noun in _NOUN.finditer(text):
            kind = _kind_of(noun.group())
            if kind in _SHAPED_NOUNS and not _HEAD_ENDS.match(text, noun.end()):
                continue  # it qualifies the noun after it ("what email template")
            if _asked_by_what(text, noun.start()) or _bare(text, noun.start()):
                return kind
            break  # the first value the clause names is the one it asks about, or none is
    return None


def _kind_of(noun: str) -> str:
    shaped = _SHAPED.fullmatch(noun)
    if shaped is not None and shaped.lastgroup is not None:
        return shaped.lastgroup
    return _NOUN_KIND.get(noun.lower(), DURATION)


# A question about how a library, a standard or a tool behaves in general ("does GTFS-realtime
# have a standard field for ...", "is there a built-in way in liveview to ...", "in oban, if i
# insert ..., does ...", "what's the difference between X and Y", "does X ... by default?"): its documentation answers it;
# a project's archive only by chance, and a session that used the tool is its near miss. Read by
# its frame, in a question that says nothing of the project's own ("we", "our", "us").

# not a library's name: an article, a pronoun, or one of the project's own places ("in prod, is
# the cache shared?", "does staging have the new index?")
_NOT_A_NAME = (
    r"(?!(?:the|our|your|my|this|that|these|those|it|its|we|they|he|she|you|i|anyone|anybody|someone|there|"
    r"any|all|each|every|some|prod|production|staging|stage|dev|ci|local|localhost|qa|uat|test|tests|preprod|"
    r"main|master|here)\b)"
)
_NAME = rf"{_NOT_A_NAME}[\w.'+#/-]+(?: [\w.'+#/-]+){{0,2}}"  # "postgres", "go's net/http client", "rust std"
_TOOL_FRAME = lazy(
    r"\bis there (?:a|an|any) (?:built-?in|standard|native|official|idiomatic|canonical|recommended)\b"
    rf"|(?:^\W*|[,:;—]\s*)(?:does|do|can) {_NAME} (?:have|support|allow|provide|offer|expose|guarantee|preserve|handle|"
    r"enforce|cancel|pass|follow|work|treat|respect|retry|cache|batch|block|accept|require|include|keep|honou?r|run|"
    r"auto-\w+|ignore)\b"
    rf"|^\W*in {_NAME},? (?:if|when|how|what|does|do|can|is|are|which)\b"
    rf"|^\W*{_NOT_A_NAME}[\w.'+#/-]+ ?(?::|—|--?) ?(?:does|do|can|is|are|what|how|which)\b"  # "django: does ..."
    rf"|\bdifference between {_NOT_A_NAME}"
    rf"|\bwhat(?:'s| is|s)? the default [\w.-]+(?: [\w.-]+){{0,3}} (?:in|on|for|of) (?:an? )?{_NOT_A_NAME}\w"
    rf"|\bwhat does .{{1,40}}? do (?:in|with|for) {_NOT_A_NAME}\w"
    rf"|\bis {_NAME} thread-?safe\b"
    # "does oban's unique option consider completed jobs by default?": what a tool does unless told
    rf"|(?:^\W*|[,:;—]\s*)(?:does|do|will|would) {_NAME} .{{0,80}}?\bby default\b",
    re.I,
)
_OURS = lazy(r"\b(?:we|we're|we've|our|ours|us)\b", re.I)


def about_a_tool(question: str) -> bool:
    """Whether ``question`` asks how a library, a standard or a tool behaves in general (not about
    the project's own use of it): the automatic recall does not quote by meaning for it."""
    head = question[:300]
    return _TOOL_FRAME.search(head) is not None and _OURS.search(head) is None


SCANNED = 8_000  # characters of a text read (a unit's tool result can be far longer; a block quotes ~480)


def holds(kind: str | None, text: str) -> bool:
    """Whether ``text`` could state an answer of ``kind`` (always, for None). Linear in the text:
    no pattern has two unbounded runs in a row."""
    return kind is None or _HOLDS[kind].search(text[:SCANNED]) is not None
