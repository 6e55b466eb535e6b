"""Tool calls recovered from text.

Small local models (and servers that run them without a tool-call parser) often answer a request
that offered tools with the call written into the content instead of native ``tool_calls``:

- a fenced block (```json, ``` or ```tool_call) holding ``{"name": ..., "arguments": {...}}``
  (or a list of such objects, or the OpenAI shape ``{"type": "function", "function": {...}}``),
- ``<tool_call>{...}</tool_call>`` tags (Qwen / Hermes templates),
- ``<function=NAME>{...arguments...}</function>`` (Llama 3.1 style),
- a bare JSON call that is the whole content or stands on its own lines (also a run of calls on
  one line separated by ``.``, which llama-server's Qwen2.5-Coder produces under
  ``tool_choice="required"``); when the request required a call (``call_required``), also a call
  that opens the content with prose after it on the same line (the same model under ``required``
  writes the call, then ``. The answer is ...`` until max_tokens).

Identical calls (same name and arguments) in one reply are kept once: a model that repeats a call
verbatim is looping, and running an append or a commit twice would do harm.

``recover_tool_calls`` turns those into calls in the standard OpenAI form and returns the text
with the call blocks removed. It is deliberately conservative: only calls to an *offered* tool
count, ``arguments`` (or ``parameters``) must be present and be an object (or a JSON string holding
one), the object may carry no other keys than ``id``/``type``, and a JSON value written inline in
a sentence, a block in another language, a tool *definition* echoed back (``parameters`` that is a
JSON schema), or malformed JSON yields no call.

Trailing commas (``{"a": 1,}``) are tolerated, outside strings only: small models emit them often
enough that refusing would stall a turn the model clearly meant as a call, and the result must
still be a complete call to an offered tool, so the leniency cannot turn prose into a call. Any
other malformation (single quotes, Python literals, missing braces) gives no call.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from typing import Any

from clio.lazy_re import lazy

__all__ = ["recover_tool_calls"]

_FENCE_LANGS = {"", "json", "json5", "jsonc", "tool_call", "tool_code", "tool", "function_call"}
_CALL_KEYS = {"name", "arguments", "parameters", "id", "type"}

_FENCE_RE = lazy(
    r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)"
    r"(?:^[ \t]*(?P=fence)[ \t]*$|\Z)",
    re.MULTILINE | re.DOTALL,
)
_TAG_RE = lazy(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
# A line that starts a JSON object (or a list of them) whose first key a call can have.
_LINE_START_RE = lazy(
    r'^[ \t]*(?=(?:\[\s*)?\{\s*"(?:name|function|type|id|arguments|parameters)"\s*:)', re.MULTILINE
)
# Strings (skipped whole) and brackets: what bracket matching looks at.
_SCAN_RE = lazy(r'"(?:[^"\\\n]|\\.)*"|[\[\]{}]')
_SEP_RE = lazy(r"[ \t]*[.,;]?[ \t]*")
# The body may not run into another <function= tag (keeps unclosed tags from going quadratic).
_FUNC_RE = lazy(
    r"<function=(?P<name>[\w.-]+)>\s*(?P<body>(?:(?!<function=).)*?)\s*</function>", re.DOTALL
)

Span = tuple[int, int, list[tuple[str, dict[str, Any]]]]


def _new_id() -> str:
    return "call_" + secrets.token_hex(12)


def recover_tool_calls(
    content: str,
    tool_names: set[str],
    *,
    make_id: Callable[[], str] | None = None,
    call_required: bool = False,
) -> tuple[str, list[dict[str, Any]]]:
    """Extract calls to offered tools written as text.

    ``call_required``: the request demanded a call (``tool_choice="required"``), so a complete call
    at the very start of the content counts even when prose follows it on its line.

    Returns ``(remaining_text, calls)``: the content with the call blocks removed (stripped) and
    the calls as ``[{"id": "call_...", "type": "function", "function": {"name": ...,
    "arguments": "<compact JSON>"}}]`` in the order they appear. ``([content], [])`` when none.
    """
    if not content or not tool_names or not any(n in content for n in tool_names):
        return content or "", []  # no call: the content comes back unchanged
    spans = _find_spans(content, tool_names, call_required)
    if not spans:
        return content, []
    new_id = make_id or _new_id
    calls: list[dict[str, Any]] = []
    pieces: list[str] = []
    pos = 0
    seen: set[str] = set()
    for start, end, found in spans:
        pieces.append(content[pos:start])
        pos = end
        for name, args in found:
            key = name + "\0" + json.dumps(args, sort_keys=True)
            if key in seen:  # a repeated identical call is a loop, not a request to do it twice
                continue
            seen.add(key)
            calls.append(
                {
                    "id": new_id(),
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": json.dumps(args, ensure_ascii=False, separators=(",", ":")),
                    },
                }
            )
    pieces.append(content[pos:])
    rest = "".join(pieces)
    rest = re.sub(r"[ \t]+\n", "\n", rest)
    rest = re.sub(r"\n{3,}", "\n\n", rest)
    return rest.strip(), calls


def _find_spans(text: str, tools: set[str], lead_ok: bool = False) -> list[Span]:
    spans: list[Span] = []
    fenced: list[tuple[int, int]] = []
    for m in _FENCE_RE.finditer(text):
        fenced.append((m.start(), m.end()))
        if m.group("lang").lower() not in _FENCE_LANGS:
            continue
        body = m.group("body").strip()
        found = _tagged_calls(body, tools) if body.startswith("<tool_call>") else None
        if found is None:
            found = _calls_from_json_text(body, tools)
        if found:
            spans.append((m.start(), m.end(), found))

    def outside(start: int, end: int) -> bool:
        return not any(a < end and start < b for a, b in fenced)

    for m in _TAG_RE.finditer(text):
        if not outside(m.start(), m.end()):
            continue
        found = _calls_from_json_text(m.group("body"), tools)
        if found:
            spans.append((m.start(), m.end(), found))
    for m in _FUNC_RE.finditer(text):
        if not outside(m.start(), m.end()) or m.group("name") not in tools:
            continue
        args = _loads(m.group("body"))
        if isinstance(args, dict) and not _looks_like_schema(args):
            spans.append((m.start(), m.end(), [(m.group("name"), args)]))
    for start, end, values in _line_json_groups(text, fenced, lead_ok):
        group: list[tuple[str, dict[str, Any]]] = []
        for a, b in values:
            found = _calls_from_json_text(text[a:b], tools)
            if not found:
                break
            group.extend(found)
        else:
            spans.append((start, end, group))
    return _non_overlapping(spans)


def _non_overlapping(spans: list[Span]) -> list[Span]:
    spans.sort(key=lambda s: (s[0], -s[1]))
    kept: list[Span] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            continue
        kept.append(span)
    return kept


def _tagged_calls(body: str, tools: set[str]) -> list[tuple[str, dict[str, Any]]] | None:
    """Calls from a text made only of <tool_call> tags (inside a fence); None otherwise."""
    found: list[tuple[str, dict[str, Any]]] = []
    pos = 0
    for m in _TAG_RE.finditer(body):
        if body[pos : m.start()].strip():
            return None
        calls = _calls_from_json_text(m.group("body"), tools)
        if not calls:
            return None
        found.extend(calls)
        pos = m.end()
    return found if found and not body[pos:].strip() else None


def _line_json_groups(
    text: str, skip: list[tuple[int, int]], lead_ok: bool = False
) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """JSON objects/arrays that start a line and fill the rest of it.

    Several values on one line separated only by ``.``/``,``/``;`` and spaces form one group (a
    degenerate run of calls, as llama-server produces with ``tool_choice="required"``); after the
    group the line holds only such punctuation, or an unfinished value cut off at the end of the
    text (max_tokens reached), which stays in the text. Only values whose first key is one a call
    can have are considered (a cheap filter that keeps code full of ``{`` lines fast), and none that
    start inside ``skip`` (the fenced blocks). With ``lead_ok`` a group that opens the text may be
    followed by anything on its line (that text stays).
    """
    out: list[tuple[int, int, list[tuple[int, int]]]] = []
    matches: dict[int, int] | None = None
    for m in _LINE_START_RE.finditer(text):
        start = m.end()
        if (out and start < out[-1][1]) or any(a <= start < b for a, b in skip):
            continue
        values: list[tuple[int, int]] = []
        pos = start
        while pos < len(text) and text[pos] in "[{":
            if matches is None:
                matches = _bracket_matches(text)
            end = matches.get(pos)
            if end is None:
                break
            values.append((pos, end))
            sep = _SEP_RE.match(text, end)
            pos = sep.end() if sep else end
        if not values:
            continue
        nl = text.find("\n", values[-1][1])
        tail = text[values[-1][1] : len(text) if nl < 0 else nl]
        cut = tail.lstrip(" \t.,;")
        unfinished = (
            cut[:1] in ("[", "{") and nl < 0 and matches is not None and len(text) - len(cut) not in matches
        )
        if cut.strip() and not unfinished and not (lead_ok and not text[:start].strip()):
            continue
        out.append((start, values[-1][1] + len(tail) - len(cut), values))
    return out


def _bracket_matches(text: str) -> dict[int, int]:
    """For every ``{``/``[`` that gets closed: its index -> the index just past its closing bracket.

    One pass with one stack (strings skipped whole; they cannot span lines, so the scan is in step
    with any line start), so finding candidates stays linear however much unclosed text there is.
    A closing bracket that does not match abandons every bracket still open.
    """
    closing = {"{": "}", "[": "]"}
    matches: dict[int, int] = {}
    stack: list[tuple[str, int]] = []
    for m in _SCAN_RE.finditer(text):
        tok = m.group()
        if tok in closing:
            stack.append((closing[tok], m.start()))
        elif tok in "}]":
            if stack and stack[-1][0] == tok:
                matches[stack.pop()[1]] = m.end()
            else:
                stack.clear()
    return matches


def _strip_trailing_commas(text: str) -> str:
    out: list[str] = []
    in_str = False
    esc = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == ",":
            j = i + 1
            while j < len(text) and text[j] in " \t\r\n":
                j += 1
            if j < len(text) and text[j] in "}]":
                i += 1
                continue
        out.append(ch)
        i += 1
    return "".join(out)


_FAILED = object()


def _loads(text: str) -> Any:
    """json.loads, retried once without trailing commas; _FAILED when it is not JSON."""
    text = text.strip()
    if not text or text[0] not in "{[":
        return _FAILED
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return json.loads(_strip_trailing_commas(text))
    except ValueError:
        return _FAILED


def _calls_from_json_text(text: str, tools: set[str]) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls a JSON text holds: one call object or a non-empty list of them; else None."""
    value = _loads(text)
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    found: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        call = _as_call(item, tools)
        if call is None:
            return None
        found.append(call)
    return found


def _as_call(obj: Any, tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict) and set(obj) <= {"function", "type", "id"}:
        if obj.get("type", "function") != "function":
            return None
        return _as_call(fn, tools)
    name = obj.get("name")
    if not isinstance(name, str) or name not in tools or not set(obj) <= _CALL_KEYS:
        return None
    if obj.get("type", "function") != "function":
        return None
    keys = [k for k in ("arguments", "parameters") if k in obj]
    if len(keys) != 1:
        return None
    raw = obj[keys[0]]
    if isinstance(raw, str):
        if not raw.strip():
            return name, {}
        raw = _loads(raw)
    if not isinstance(raw, dict) or _looks_like_schema(raw):
        return None
    return name, raw


def _looks_like_schema(args: dict[str, Any]) -> bool:
    """A tool definition's JSON schema echoed back, not arguments."""
    return args.get("type") == "object" and isinstance(args.get("properties"), dict)
