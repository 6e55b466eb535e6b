"""What kind of answer a question asks for, and whether a text holds one: a question for a
duration ("how long are the snapshots kept?"), a time of day ("what time does the sitemap run?")
or a count ("how many releases are kept?") is answered only by a text that holds one. The
automatic recall's decision reads it for units it would quote by meaning alone
(:attr:`clio.recall.auto.Hit.relevant`): a unit on the question's topic that holds no duration
is the near miss a sentence encoder cannot tell from the answer (docs/memory.md, "A question for
a quantity"). Generous on purpose: anything that could state the quantity counts (a number by a
unit, a config key's bare value such as ``ttl: 3600``, an ISO duration, "forever", "until"), so
that only a unit with no such thing at all is left out. Pure; patterns compiled on first use.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy

DURATION, CLOCK, COUNT = "duration", "clock", "count"

_NUMBER_WORDS = (
    "one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty sixty ninety hundred"
)
_LONG_UNITS = r"(?:milli)?sec(?:ond)?s?|min(?:ute)?s?|h(?:ou)?rs?|hours?|days?|nights?|weeks?|fortnights?|months?|quarters?|years?"
_KEYS = r"ttl|timeout|expir|retention|retain|max_?age|lifetime|interval|period|delay|seconds|secs|minutes|mins|hours|days|_ms\b"

# the question's kind: a time of day, a duration (or how often), a count
_ASKS_CLOCK = lazy(r"\bwhat time\b|\bat what (?:time|hour)\b", re.I)
_ASKS_DURATION = lazy(
    r"\bhow long\b|\bhow often\b|\bhow old\b|\bhow many (?:milliseconds|seconds|minutes|hours|days|nights|weeks|months|years)\b",
    re.I,
)
_ASKS_COUNT = lazy(r"\bhow (?:many|much)\b", re.I)

_HOLDS = {
    DURATION: lazy(
        rf"\b\d+(?:[.,]\d+)?(?:\s?-?(?:{_LONG_UNITS})|ms|s|m|h|d|w|y)\b"  # 90 days, 15 min, 30d, 5s
        rf"|\b(?:an?|{_NUMBER_WORDS.replace(' ', '|')}|a few|several|few)[\s-]+(?:{_LONG_UNITS})\b"  # a week, two hours
        r"|\b(?:forever|indefinitely|hourly|daily|weekly|monthly|nightly|yearly|until|till)\b"
        r"|\bP(?:T?\d+[DHMSW])+\b"  # ISO 8601: P30D, PT15M
        rf"|[\w.]*(?:{_KEYS})[\w.]*['\"]?\s*[:=]\s*['\"]?\d"  # a config key's bare value: ttl: 3600, retention.ms=6048
        r"|\d+ \d+ [\d*]+ [\d*]+ [\d*]+",  # a cron line
        re.I,
    ),
    CLOCK: lazy(
        r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b|\b(?:midnight|noon)\b|\bcron\b|\d+ \d+ [\d*]+ [\d*]+ [\d*]+", re.I
    ),
    COUNT: lazy(rf"\b(?:\d+(?:[.,]\d+)?|{_NUMBER_WORDS.replace(' ', '|')}|dozens?|several|none|unlimited)\b", re.I),
}


def asked_for(question: str) -> str | None:
    """The kind of answer ``question`` asks for (:data:`CLOCK`, :data:`DURATION`, :data:`COUNT`),
    or None (any other question, or not a question of these words)."""
    head = question[:300]
    if _ASKS_CLOCK.search(head):
        return CLOCK
    if _ASKS_DURATION.search(head):
        return DURATION
    if _ASKS_COUNT.search(head):
        return COUNT
    return None


def holds(kind: str | None, text: str) -> bool:
    """Whether ``text`` could state an answer of ``kind`` (always, for None)."""
    return kind is None or _HOLDS[kind].search(text) is not None
