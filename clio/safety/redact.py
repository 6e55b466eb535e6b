"""Secret redaction: known secret shapes become ``[REDACTED:<label>]``.

Applied before text leaves the machine (requests) or lands on disk (sessions, notes, exports).
Every rule is a precompiled regex run once over the text; rules are ordered so that the most
specific shape wins and each secret yields exactly one label. Output is idempotent: a
placeholder is never matched again. Replacements never split a JSON escape sequence and never
remove a quote, so JSON and code around a secret stay valid.

Levels: ``off`` (nothing), ``standard`` (known shapes and secret-named assignments),
``strict`` (adds high-entropy tokens and e-mail addresses).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from clio.lazy_re import lazy
from clio.safety.redact_base64 import redact_base64
from clio.safety.redact_rules import (
    ESCAPE_LETTERS,
    MARK,
    SECRET_KEY,
    STANDARD_RULES,
    Rule,
    classes,
    escaped,
    label_for,
    placeholder,
    quoted_ok,
    redact_assignments,
    starts_token,
)
from clio.safety.redact_rules_more import MORE_RULES
from clio.safety.redact_rules_services import SERVICE_RULES
from clio.safety.redact_split import redact_split

__all__ = ["LEVELS", "PLACEHOLDER_RE", "Redactor", "entropy", "placeholder"]

LEVELS = ("off", "standard", "strict")
PLACEHOLDER_RE = lazy(r"\[REDACTED:[a-z0-9_]+\]")

_EMAIL_DOMAIN = lazy(
    r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])(?!\.[A-Za-z0-9])(?!:[\w~/])"
)
_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")


def _redact_emails(text: str, low: str | None, labels: list[str]) -> str:
    """Strict only: user@example.org (not git@github.com:org/repo, not the user of a URL)."""
    out: list[str] = []
    pos = 0
    for m in _EMAIL_DOMAIN.finditer(text) if "@" in text else ():
        a = m.start()
        while a > pos and text[a - 1] in _EMAIL_LOCAL:
            a -= 1
        if a < m.start() and escaped(text, a) and text[a] in ESCAPE_LETTERS:
            a += 5 if text[a] == "u" else 1  # raw JSON: an escape (\n, \u00e9) is not part of the address
        elif a > 0 and text[a - 1] == "/":
            continue  # the user of a URL
        if a >= m.start():
            continue
        out += [text[pos:a], placeholder("email")]
        pos = m.end()
        labels.append("email")
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


# --- strict: generic high-entropy tokens ---

_RUN = lazy(r"[A-Za-z0-9+/_=\\-]{32,}")  # cheap scan; _TOKEN then runs inside each run only
_TOKEN = lazy(
    r"(?:(?<![A-Za-z0-9+/_.\\-])|(?<=\\[nrt])|(?<=\\\\))[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/=_-])"
)
_HEX = lazy(r"[0-9a-fA-F-]+")
_PROTECTED_BEFORE = lazy(
    r"(?:sha(?:1|224|256|384|512)[-:]|md5[-:]|h1:|;base64,|(?:ssh-[a-z0-9]+|ecdsa-sha2-nistp\d+|[a-z-]+@openssh\.com) )$"
)
_DIGEST_PREFIX = lazy(r"(?:sha(?:1|224|256|384|512)|md5)-")  # sha512-<base64>: an npm integrity field
ENTROPY_BITS = 4.0  # per character; random base62 of 32 chars scores 4.2-4.9 (99%), 64 chars 4.9+
WORDY = 0.75  # share of a token made of words: identifiers 0.78+, random 32-char tokens above it 0.3%
_WORDS = lazy(r"[A-Z]?[a-z]{3,}|[A-Z]{2,}(?![a-z])")
MAX_TOKEN = 1024  # longer runs are data blobs (images, archives), not credentials


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _high_entropy(token: str) -> bool:
    """A random-looking credential, not a hash, identifier, path, alphabet or base64 of a sentence."""
    if len(token) > MAX_TOKEN or _HEX.fullmatch(token) or classes(token) < 3 or token.count("/") >= 2:
        return False
    if max(len(p) for p in re.split(r"[-_/+]", token)) < 16:
        return False  # kebab-case and snake_case names: short segments
    if sum(len(w) for w in _WORDS.findall(token)) >= WORDY * len(token):
        return False  # InputUnionMember1DecisionInputFunctionCall
    if sum(ord(b) - ord(a) == 1 for a, b in zip(token, token[1:], strict=False)) * 2 > len(token):
        return False  # ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789
    if entropy(token) < ENTROPY_BITS:
        return False
    try:  # base64 of a sentence ("These aren't the droids...") is data, not a key
        std = token.replace("-", "+").replace("_", "/")
        plain = base64.b64decode(std + "=" * (-len(std) % 4), validate=True).decode()
    except ValueError:
        return True
    return not (" " in plain and plain.isprintable())


def _redact_tokens(text: str, low: str | None, labels: list[str]) -> str:
    out: list[str] = []
    pos = 0
    for run in _RUN.finditer(text):
        for m in _TOKEN.finditer(text, run.start(), run.end()):
            s, e = m.span()
            if text[e : e + 1] == "." and text[e + 1 : e + 2].isalnum():
                continue  # a file or host name
            if _DIGEST_PREFIX.match(m[0]) or _PROTECTED_BEFORE.search(text, max(0, s - 48), s):
                continue
            if not _high_entropy(m[0]):
                continue
            head = text.rfind("-----BEGIN ", 0, s)
            if head >= 0 and text.find("-----END ", head, s) < 0:
                continue  # inside a certificate or public key block
            out += [text[pos:s], placeholder("high_entropy")]
            pos = e
            labels.append("high_entropy")
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _lower(text: str) -> str | None:
    """text.lower() when it keeps every index (almost always), else None."""
    low = text.lower()
    return low if len(low) == len(text) else None


def _touches_placeholder(text: str, a: int, b: int) -> bool:
    """Does text[a:b] contain or start inside a placeholder? (redacting twice changes nothing)"""
    if MARK in text[a:b]:
        return True
    j = text.rfind(MARK, max(0, a - 64), a)
    return j >= 0 and text.find("]", j) >= a


def _after_escape(text: str, i: int) -> bool:
    """Is text[i] the letter of a one-letter JSON escape (the n of \\n)?"""
    return i > 0 and text[i] in ESCAPE_LETTERS and text[i] not in 'u"\\/' and escaped(text, i)


def _spans(rule: Rule, text: str, low: str | None) -> Iterator[tuple[int, int]]:
    """Where one rule finds secrets in text (left to right, not overlapping): the spans to replace."""
    if rule.regex_i is None:
        regex, src = rule.regex, text
    elif low is None:
        regex, src = rule.regex_i, text
    else:
        regex, src = rule.regex, low
    grp = "s" if "s" in regex.groupindex else 0
    marked = MARK in text
    i = 0
    while (m := regex.search(src, i)) is not None:
        i = max(m.end(), m.start() + 1)
        a, b = m.span(grp)
        if rule.bounded is not None and not starts_token(text, m.start(), rule.bounded):
            if not _after_escape(text, m.start()):
                i = m.start() + 1  # maybe a token starts a little later (after a JSON escape)
                continue
            # "\npm_…": raw JSON reads an escape (\n) then "pm_…"; plain text reads a backslash then an
            # npm token. Keep the escape's letter and redact the rest: neither reading keeps the secret.
            a = max(a, m.start() + 1)
        if b - a >= 2 and text[a] in "\"'" and text[b - 1] == text[a]:
            a, b = a + 1, b - 1  # a quoted value (mysql -p'pw'): the quotes stay
        if classes(text[a:b]) < rule.min_classes or (
            marked and _touches_placeholder(text, m.start(), m.end())
        ):
            continue
        if rule.check is not None and not rule.check(text[a:b]):
            continue
        yield a, b


def _apply(rule: Rule, text: str, low: str | None, labels: list[str]) -> tuple[str, str | None]:
    """Run one rule; returns the new text and its lowercase twin (None if lower() changes indexes)."""
    out: list[str] = []
    out_low: list[str] = []
    pos = 0
    for a, b in _spans(rule, text, low):
        out += [text[pos:a], placeholder(rule.label)]
        if low is not None:
            out_low += [low[pos:a], placeholder(rule.label).lower()]
        pos = b
        labels.append(rule.label)
    if not out:
        return text, low
    out.append(text[pos:])
    out_low.append(low[pos:] if low is not None else "")
    return "".join(out), "".join(out_low) if low is not None else None


def _redact_split(text: str, low: str | None, labels: list[str]) -> str:
    """Keys split across string literals (clio/safety/redact_split.py)."""
    return redact_split(text, labels, _crossing_hits)


def _crossing_hits(joined: str, cuts: set[int]) -> list[tuple[int, int, str]]:
    """Secrets in the joined literals that span a cut; rules in order, the first to claim a character wins."""
    low = _lower(joined)
    present = _present_needles(joined, low if low is not None else joined.lower())
    kept: list[tuple[int, int, str]] = []
    for rule in _RULES:
        if rule.needles and not present.intersection(rule.needles):
            continue
        for a, b in _spans(rule, joined, low):
            if any(a < c < b for c in cuts) and not any(a < y and x < b for x, y, _ in kept):
                kept.append((a, b, rule.label))
    return sorted(kept)


_RULES: tuple[Rule, ...] = STANDARD_RULES + SERVICE_RULES + MORE_RULES
_ALL_NEEDLES = sorted({n for rule in _RULES for n in rule.needles})


def _present_needles(text: str, lowered: str) -> set[str]:
    """Which rule needles occur (lowercase needles: in any case)."""
    return {n for n in _ALL_NEEDLES if n in (lowered if n.islower() else text)}


class Redactor:
    """Replaces secrets with ``[REDACTED:<label>]``; see the module docstring for the levels."""

    def __init__(self, level: str = "standard") -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown redaction level {level!r}: choose one of {', '.join(LEVELS)}")
        self.level = level
        self._rules: tuple[Rule, ...] = _RULES
        self._steps: list[Callable[[str, str | None, list[str]], str]] = [
            self._redact_base64, _redact_split, redact_assignments,
        ]  # fmt: skip
        if level == "strict":
            self._steps += [_redact_emails, _redact_tokens]

    def _redact_base64(self, text: str, low: str | None, labels: list[str]) -> str:
        """Base64 values whose decoded text holds a secret (clio/safety/redact_base64.py)."""
        return redact_base64(text, labels, lambda plain: self.redact(plain)[1])

    @property
    def enabled(self) -> bool:
        return self.level != "off"

    def text(self, text: str) -> str:
        """The text with every secret replaced (what the stores take as their ``redact``)."""
        return self.redact(text)[0]

    def redact(self, text: str) -> tuple[str, list[str]]:
        """The text with every secret replaced, and one label per replacement."""
        labels: list[str] = []
        if self.level == "off" or not text:
            return text, labels
        low = _lower(text)
        present = _present_needles(text, low if low is not None else text.lower())
        for rule in self._rules:
            if rule.needles and not present.intersection(rule.needles):
                continue  # replacing secrets never adds a needle, so one scan up front is enough
            text, low = _apply(rule, text, low, labels)
        for step in self._steps:
            hits = len(labels)
            text = step(text, low, labels)
            if len(labels) != hits:
                low = _lower(text)
        return text, labels

    def redact_obj(self, obj: Any) -> tuple[Any, int]:
        """A deep copy of a JSON-like value with every string redacted (dict keys kept) and the hit count."""
        if self.level == "off":
            return copy.deepcopy(obj), 0
        return self._obj(obj, None)

    def _obj(self, obj: Any, key: str | None) -> tuple[Any, int]:
        if isinstance(obj, str):
            text, labels = self.redact(obj)
            m = SECRET_KEY.match(key) if not labels and key is not None else None
            if m and quoted_ok(obj, label_for(m["kw"]) == "password"):
                return placeholder(label_for(m["kw"])), 1  # {"password": "hunter2"}: the key says it
            return text, len(labels)
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            total = 0
            for k, v in obj.items():
                out[k], n = self._obj(v, k if isinstance(k, str) else None)
                total += n
            return out, total
        if isinstance(obj, (list, tuple)):
            items = [self._obj(v, None) for v in obj]
            return type(obj)(v for v, _ in items), sum(n for _, n in items)
        return copy.deepcopy(obj), 0

    def redact_message(self, msg: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """A redacted copy of a chat message: content, tool-call arguments, other text fields; meta kept."""
        out: dict[str, Any] = {}
        total = 0
        for key, val in msg.items():
            if key in ("meta", "role", "tool_call_id", "name") or self.level == "off":
                out[key] = copy.deepcopy(val)
            elif key == "tool_calls" and isinstance(val, list):
                out[key] = []
                for call in val:
                    new_call, n = self._tool_call(call)
                    out[key].append(new_call)
                    total += n
            elif key == "content" and isinstance(val, list):
                parts = []
                for part in val:
                    part = copy.deepcopy(part)
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        part["text"], labels = self.redact(part["text"])
                        total += len(labels)
                    parts.append(part)
                out[key] = parts
            else:
                out[key], n = self._obj(val, None)
                total += n
        return out, total

    def _tool_call(self, call: Any) -> tuple[Any, int]:
        call = copy.deepcopy(call)
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or "arguments" not in fn:
            return call, 0
        raw = fn["arguments"]
        if not isinstance(raw, str):
            fn["arguments"], n = self._obj(raw, None)
            return call, n
        try:
            decoded = json.loads(raw)
        except ValueError:
            fn["arguments"], labels = self.redact(raw)
            return call, len(labels)
        new, n = self._obj(decoded, None)
        if n:
            fn["arguments"] = json.dumps(new, ensure_ascii=False)
        return call, n
