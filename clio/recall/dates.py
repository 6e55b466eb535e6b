"""The time a query names: "on 1 May 2022", "in November 2023", "2024-03-05", "yesterday"...

Pure (no disk, no clock: ``now`` is passed in). :func:`named_period` reads a query and returns
the period it names as ``(start, end)`` epoch seconds in local time (the clock archived
messages are stamped and shown with), or ``None``. The recall index's refine stage
(:func:`clio.recall.refine.boost_period`) raises the candidates written in that period, or
shortly after it: what happened on a day is often told days later ("last week I...").

Absolute forms: a day ("1 May 2022", "1st of May, 2022", "May 1, 2022", "2022-05-01"), a month
("November 2023", "Nov 2023", "2023-11") and a year alone ("in 2023"). Relative forms, from
``now``: a day or month without its year ("on 3 May", "May 3rd", "in March": the latest one
begun by today), "today", "yesterday", "this/last week", "this/last month", "this/last year",
"N days/weeks/months ago", "on Monday" (the latest Monday before today). The first form found
wins, in that order: the most precise one.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from clio.lazy_re import lazy

DAY = 86_400.0

_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_M = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_D = r"(?<![\d:.])(\d{1,2})(?:st|nd|rd|th)?"
_Y = r"((?:19|20)\d\d)"
_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "month": 30, "months": 30}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}

_ISO_DAY = lazy(rf"\b{_Y}-(\d\d)-(\d\d)\b")
_DAY_MONTH_YEAR = lazy(rf"\b{_D}\s+(?:of\s+)?{_M},?\s+{_Y}\b", re.IGNORECASE)
_MONTH_DAY_YEAR = lazy(rf"\b{_M}\s+{_D},?\s+{_Y}\b", re.IGNORECASE)
_ISO_MONTH = lazy(rf"\b{_Y}-(\d\d)\b(?!-)")
_MONTH_YEAR = lazy(rf"\b{_M},?\s+(?:of\s+)?{_Y}\b", re.IGNORECASE)
_YEAR = lazy(rf"\b(?:in|of|during|year)\s+{_Y}\b|\b{_Y}\s*\?", re.IGNORECASE)
_AGO = lazy(
    r"\b(\d{1,3}|an?|one|two|three|four|five|six)\s+(days?|weeks?|months?)\s+ago\b", re.IGNORECASE
)
_RELATIVE = lazy(r"\b(today|yesterday|(this|last)\s+(week|month|year))\b", re.IGNORECASE)
_DAY_MONTH = lazy(rf"\b{_D}\s+(?:of\s+)?{_M}(?![\w-])", re.IGNORECASE)
_MONTH_DAY = lazy(rf"\b{_M}\s+{_D}(?![\w:.-])", re.IGNORECASE)
_MONTH_ALONE = lazy(rf"\b(?:in|during|of|last|early|late|mid)[\s-]+{_M}(?![\w-])", re.IGNORECASE)
_WEEKDAY = lazy(r"\b(?:on|last)\s+(" + "|".join(_WEEKDAYS) + r")\b", re.IGNORECASE)


def _day(year: int, month: int, day: int) -> tuple[float, float] | None:
    try:
        start = datetime(year, month, day)
    except ValueError:
        return None
    return start.timestamp(), (start + timedelta(days=1)).timestamp()


def _month(year: int, month: int) -> tuple[float, float] | None:
    if not 1 <= month <= 12:
        return None
    end = datetime(year + 1, 1, 1) if month == 12 else datetime(year, month + 1, 1)
    return datetime(year, month, 1).timestamp(), end.timestamp()


def _absolute(text: str) -> tuple[float, float] | None:
    if m := _ISO_DAY.search(text):
        return _day(int(m[1]), int(m[2]), int(m[3]))
    if m := _DAY_MONTH_YEAR.search(text):
        return _day(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))
    if m := _MONTH_DAY_YEAR.search(text):
        return _day(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))
    if m := _ISO_MONTH.search(text):
        return _month(int(m[1]), int(m[2]))
    if m := _MONTH_YEAR.search(text):
        return _month(int(m[2]), _MONTHS[m[1].lower()])
    if m := _YEAR.search(text):
        year = int(m[1] or m[2])
        return datetime(year, 1, 1).timestamp(), datetime(year + 1, 1, 1).timestamp()
    return None


def _month_named(pattern: re.Pattern[str], text: str, group: int) -> re.Match[str] | None:
    """The first match whose month is a month: without a year, a lower-case "may" is the verb
    ("these 2 may clash")."""
    return next((m for m in pattern.finditer(text) if m[group] != "may"), None)


def _latest(today: datetime, month: int, day: int | None) -> tuple[float, float] | None:
    """The latest such day (or month) that has begun by ``today``: "3 May" in March is last year's."""
    year = today.year if (month, day or 1) <= (today.month, today.day) else today.year - 1
    return _month(year, month) if day is None else _day(year, month, day)


def _relative(text: str, now: float) -> tuple[float, float] | None:
    today = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    if m := _month_named(_DAY_MONTH, text, 2):
        return _latest(today, _MONTHS[m[2].lower()], int(m[1]))
    if m := _month_named(_MONTH_DAY, text, 1):
        return _latest(today, _MONTHS[m[1].lower()], int(m[2]))
    if m := _month_named(_MONTH_ALONE, text, 1):
        return _latest(today, _MONTHS[m[1].lower()], None)
    if m := _AGO.search(text):
        count = int(m[1]) if m[1].isdigit() else _NUMBERS[m[1].lower()]
        days = count * _UNITS[m[2].lower()]
        start = today - timedelta(days=days)
        slack = max(1, days // 7)  # "3 weeks ago" is not to the day
        return (start - timedelta(days=slack)).timestamp(), (start + timedelta(days=slack + 1)).timestamp()
    if m := _RELATIVE.search(text):
        word = m[1].lower()
        if word == "today":
            return today.timestamp(), now + 1
        if word == "yesterday":
            return (today - timedelta(days=1)).timestamp(), today.timestamp()
        which, unit = m[2].lower(), m[3].lower()
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            if which == "this":
                return monday.timestamp(), now + 1
            return (monday - timedelta(days=7)).timestamp(), monday.timestamp()
        if unit == "month":
            first = today.replace(day=1)
            if which == "this":
                return first.timestamp(), now + 1
            prev = first - timedelta(days=1)
            return _month(prev.year, prev.month)
        year = today.year if which == "this" else today.year - 1
        return datetime(year, 1, 1).timestamp(), min(now + 1, datetime(year + 1, 1, 1).timestamp())
    if m := _WEEKDAY.search(text):
        back = (today.weekday() - _WEEKDAYS.index(m[1].lower())) % 7 or 7
        start = today - timedelta(days=back)
        return start.timestamp(), (start + timedelta(days=1)).timestamp()
    return None


# Every form above needs a digit or one of these words: a text with neither names no period, and
# the patterns (compiled on first use) are not even looked at: most messages name none.
_CUES = frozenset((*_MONTHS, *_WEEKDAYS, "today", "yesterday", "week", "month", "year", "ago"))
_WORD = lazy(r"[a-z]+")


def may_name_a_period(text: str) -> bool:
    """Whether ``text`` holds a digit or a word some date form needs (a cheap gate, exact in
    the direction that matters: ``False`` means :func:`named_period` finds nothing)."""
    if any(c.isdigit() for c in text):
        return True
    return any(w in _CUES for w in _WORD.findall(text.lower()))


def named_period(text: str, now: float | None) -> tuple[float, float] | None:
    """The period ``text`` names, as local-time epoch seconds ``(start, end)``, or ``None``
    (relative forms only with ``now``)."""
    if not may_name_a_period(text):
        return None
    return _absolute(text) or (_relative(text, now) if now is not None else None)
