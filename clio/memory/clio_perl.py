"""Long-term memory written by CLIO, the Perl agent clio grew from, read as clio's own entries.

CLIO keeps its memory in the same place, ``.clio/ltm.json``, in its own shape
(``lib/CLIO/Memory/LongTerm.pm``)::

    {"metadata": {"created", "last_updated", "version"},
     "patterns": {"discoveries":       [{"fact", "confidence", "verified", "timestamp"}],
                  "problem_solutions": [{"error", "solution", "examples", "solved_count", "timestamp"}],
                  "code_patterns":     [{"pattern", "examples", "confidence", "timestamp"}],
                  "workflows":         [{"sequence": [...], "count", "success_rate", "timestamp"}],
                  "failures":          [{"what", "impact", "prevention", "occurrences", "timestamp"}],
                  "context_rules":     {context: [rule, ...]}}}

(``updated`` where CLIO confirmed an item again.) Each item becomes the entry of clio's type that
fits (:data:`KINDS`; a context rule becomes a ``rule`` "In CONTEXT: RULE"), with CLIO's confidence,
times and examples, and the provenance of an import
(:func:`clio.memory.provenance.from_clio_perl`): another agent's notes, shown and sent as notes to
verify, never as something the user said, until the user adopts them (``/memory adopt-clio``).
Fields clio has no place for are left out (the original file is kept beside, as
``ltm.clio-perl.json``, by :mod:`clio.memory.ltm_store`); an item that has not the text its type
needs is skipped. Other names CLIO's releases or hand edits use are read too (a workflow's
``name``/``steps``, a failure's ``why``/``lesson``).

Pure: the parsed JSON in, entries out.
"""

from __future__ import annotations

from typing import Any

from clio.memory import ltm
from clio.memory.ltm import Entry, LtmError
from clio.memory.provenance import from_clio_perl

# CLIO's list -> clio's entry type
KINDS = {
    "discoveries": "discovery",
    "problem_solutions": "solution",
    "code_patterns": "pattern",
    "workflows": "workflow",
    "failures": "failure",
}
GLOBAL_CONTEXTS = ("", "*", "global", "all", "project", ".")  # a rule for everything: no "In ...:"


def is_clio_perl(data: Any) -> bool:
    """``data`` (a parsed ``ltm.json``) is in CLIO's shape, not clio's."""
    return isinstance(data, dict) and isinstance(data.get("patterns"), dict) and "entries" not in data


def _text(item: dict[str, Any], *names: str) -> str:
    for name in names:
        value = item.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[: ltm.MAX_TEXT]
    return ""


def _texts(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    out = [" ".join(str(v).split())[: ltm.MAX_TEXT] for v in items if isinstance(v, (str, int, float))]
    return [v for v in out if v][: ltm.MAX_EXAMPLES]


def _time(item: dict[str, Any], name: str, default: float, now: float) -> float:
    value = item.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return default
    return min(float(value), now)  # a clock ahead of this one: not in the future here


def _confidence(item: dict[str, Any]) -> float:
    value = item.get("confidence")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return ltm.DEFAULT_CONFIDENCE
    return min(1.0, max(0.0, float(value)))


def _fields(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    """The fields of clio's ``kind`` from one CLIO item (empty text where CLIO had none)."""
    if kind == "discovery":
        return {"fact": _text(item, "fact", "description", "text")}
    if kind == "solution":
        count = item.get("solved_count")
        applied = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
        return {
            "error": _text(item, "error", "problem"),
            "solution": _text(item, "solution", "fix"),
            "examples": _texts(item.get("examples")),
            "applied": applied,
        }
    if kind == "pattern":
        return {"pattern": _text(item, "pattern", "description"), "examples": _texts(item.get("examples"))}
    if kind == "workflow":
        steps = _texts(item.get("steps") or item.get("sequence"))
        name = _text(item, "name", "description", "title")
        if not name and steps:
            runs = item.get("count")
            rate = item.get("success_rate")
            seen = f"{runs} runs" if isinstance(runs, int) and not isinstance(runs, bool) and runs > 0 else ""
            if isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 <= rate <= 1:
                seen += f"{', ' if seen else ''}{rate:.0%} successful"
            name = "a sequence CLIO recorded" + (f" ({seen})" if seen else "")
        return {"name": name, "steps": steps}
    return {  # failure
        "what": _text(item, "what", "failure", "error"),
        "impact": _text(item, "impact", "why"),
        "prevention": _text(item, "prevention", "lesson", "fix"),
    }


def _rules(rules: Any) -> list[tuple[str, str]]:
    """(context, rule) pairs of CLIO's ``context_rules`` (a list, or one string, per context)."""
    if not isinstance(rules, dict):
        return []
    out = []
    for context, listed in rules.items():
        for rule in _texts(listed if isinstance(listed, list) else [listed]):
            out.append((str(context).strip(), rule))
    return out


def entries(data: Any, now: float) -> list[Entry]:
    """clio's entries for CLIO's memory ``data``, each marked as imported from CLIO. Entries CLIO
    kept twice (the same text) become one, the way clio's ids name an entry by its words."""
    if not is_clio_perl(data):
        return []
    patterns: dict[str, Any] = data["patterns"]
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    created = _time(meta, "created", now, now)
    out: dict[str, Entry] = {}

    def add(kind: str, fields: dict[str, Any], item: dict[str, Any]) -> None:
        first = _time(item, "timestamp", created, now)
        try:
            e = ltm.make_entry(kind, fields, confidence=_confidence(item), now=first, provenance=from_clio_perl(first))
        except LtmError:  # without the text its type needs: left in the kept original
            return
        e.last_confirmed = max(first, _time(item, "updated", first, now))
        out.setdefault(e.id, e)

    for name, kind in KINDS.items():
        items = patterns.get(name)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict):
                add(kind, _fields(kind, item), item)
    for context, rule in _rules(patterns.get("context_rules")):
        text = rule if context.lower() in GLOBAL_CONTEXTS else f"In {context}: {rule}"
        add("rule", {"rule": text[: ltm.MAX_TEXT]}, {})
    return list(out.values())
