"""Export a session as one self-contained, script-free HTML file.

Everything that came from the model, the user, a tool or a file is escaped before
it reaches the page: markdown is rendered by :mod:`clio.export.markdown` (raw HTML disabled,
links limited to http/https/mailto, images as plain links, code highlighted by pygments), and
every other string goes through :func:`clio.export.markdown.esc` (:func:`html.escape`). A Content-Security-Policy meta tag forbids scripts and
remote loads as a second line of defence. Bidi controls, invisible and control characters
(:mod:`clio.safety.visible`) are shown as escapes (``\\u202e``) in a marked span, so
``file_\\u202etxt.exe`` cannot pass for ``file_exe.txt``.
"""

from __future__ import annotations

import json
import math
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from clio import messages as M
from clio.export.css import stylesheet
from clio.export.markdown import esc, render_markdown
from clio.safety.visible import escape_invisible
from clio.store.atomic import atomic_write_text

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:;"
RESULT_LIMIT = 2000  # characters of a tool result shown
ARGS_LIMIT = 4000  # characters of pretty-printed tool arguments shown
DIFF_LINES = 400  # lines of a file change's diff shown
ROLES = ("user", "assistant", "system", "tool")
_SUMMARY_WRAP = re.compile(r"\s*<thread_summary\b[^>]*>(.*?)(?:</thread_summary>)?\s*", re.S)
_TAG = re.compile(r"(<[^>]*>)")
ESCAPE_CSS = (
    ".ctl { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em;"
    " color: var(--danger); border: 1px solid var(--danger); border-radius: 3px; padding: 0 2px; }\n"
)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _marked(escape: str) -> str:
    return f'<span class="ctl" title="invisible or control character">{escape}</span>'


def show_invisible(markup: str) -> str:
    """Escape every invisible or control character of an HTML fragment built by this module.

    In text, the escape goes in a ``ctl`` span; inside a tag (an attribute value) it goes in
    plain. Relies on this module's invariant: every string from the session was escaped, so
    ``<`` and ``>`` only ever delimit the tags written here.
    """
    parts = _TAG.split(markup)
    for i, part in enumerate(parts):
        parts[i] = escape_invisible(part) if i % 2 else escape_invisible(part, _marked)
    return "".join(parts)


# ---------------------------------------------------------------------------- formatting


def _localtime(ts: object) -> time.struct_time | None:
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        return None
    try:
        return time.localtime(ts)
    except (OverflowError, OSError, ValueError):
        return None


def format_date(ts: object, *, seconds: bool = False) -> str:
    """``22 Nov 2026, 14:30`` in local time (locale-independent); ``—`` when unknown."""
    t = _localtime(ts)
    if t is None:
        return "—"
    clock = f"{t.tm_hour:02d}:{t.tm_min:02d}" + (f":{t.tm_sec:02d}" if seconds else "")
    return f"{t.tm_mday} {_MONTHS[t.tm_mon - 1]} {t.tm_year}, {clock}"


def _time_tag(ts: object, shown: str) -> str:
    t = _localtime(ts)
    if t is None:
        return ""
    iso = datetime.fromtimestamp(float(ts)).astimezone().isoformat(timespec="seconds")  # type: ignore[arg-type]
    full = format_date(ts, seconds=True) + (f" {t.tm_zone}" if t.tm_zone else "")
    return f'<time class="when" datetime="{esc(iso)}" title="{esc(full)}">{esc(shown)}</time>'


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return None


def truncate(text: str, limit: int) -> tuple[str, int]:
    """At most the first ``limit`` characters, cut after the last whitespace in their second half
    (never inside a word, unless one word is that long), and how many were left out."""
    if len(text) <= limit:
        return text, 0
    head = text[:limit]
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= limit // 2 and not text[limit].isspace():
        head = head[: space + 1]
    return head, len(text) - len(head)


def _truncated_pre(text: str, limit: int) -> str:
    shown, more = truncate(text, limit)
    tail = f'<span class="more">… {more:,} more characters</span>' if more else ""
    return f"<pre>{esc(shown)}{tail}</pre>"


# ---------------------------------------------------------------------------- header


def _usage(info: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = info.get("usage")
    src = usage if isinstance(usage, dict) else info
    return _int(src.get("prompt_tokens")), _int(src.get("completion_tokens"))


def _cost(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def render_header(info: dict[str, Any], messages: list[M.Message]) -> str:
    name = str(info.get("name") or "Untitled session")
    count = _int(info.get("message_count"))
    rows: list[tuple[str, str]] = [
        ("Session", f'<span class="mono">{esc(info.get("id") or "—")}</span>'),
        ("Model", esc(info.get("model") or "—")),
        ("Created", _time_tag(info.get("created"), format_date(info.get("created"))) or "—"),
        ("Updated", _time_tag(info.get("updated"), format_date(info.get("updated"))) or "—"),
        ("Messages", f"{(count if count is not None else len(messages)):,}"),
    ]
    prompt, completion = _usage(info)
    if prompt is not None or completion is not None:
        p, c = prompt or 0, completion or 0
        rows.append(("Tokens", f"{p:,} prompt · {c:,} completion · {p + c:,} total"))
    cost = _cost(info.get("cost"))
    if cost is not None:
        rows.append(("Cost", esc(cost)))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    return (
        '<header class="session"><p class="app">clio session export</p>'
        f"<h1>{esc(name)}</h1><dl>{dl}</dl></header>\n"
    )


# ---------------------------------------------------------------------------- messages


def _content_text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict):
                parts.append(f"[{part.get('type') or 'attachment'}]")
        return "\n\n".join(parts)
    return str(content)


def _strip_summary_tags(text: str) -> str:
    """The summary without its ``<thread_summary ...>`` wrapper (shown as a label instead)."""
    match = _SUMMARY_WRAP.fullmatch(text)
    return (match.group(1) if match else text).strip()


def _tool_label(name: str, op: str | None, call_id: str | None, prefix: str = "", note: str = "") -> str:
    op_html = f'<span class="op mono">{esc(op)}</span>' if op else ""
    note_html = f'<span class="note">{esc(note)}</span>' if note else ""
    id_html = f'<span class="callid mono">{esc(call_id)}</span>' if call_id else ""
    return f'<div class="label">{prefix}<span class="name mono">{esc(name)}</span>{op_html}{note_html}{id_html}</div>'


def _call_parts(call: dict[str, Any]) -> tuple[str, str | None, str]:
    """(tool name, operation, pretty arguments) of one tool call."""
    fn_raw = call.get("function")
    fn: dict[str, Any] = fn_raw if isinstance(fn_raw, dict) else {}
    name = str(fn.get("name") or "tool")
    raw = fn.get("arguments")
    args = M.tool_call_args({"function": fn})
    op = args.get("operation") if isinstance(args.get("operation"), str) else None
    if args or raw in (None, "", "{}", {}):
        shown = {k: v for k, v in args.items() if not (k == "operation" and op is not None)}
        one_line = json.dumps(shown, ensure_ascii=False) if shown else ""
        pretty = one_line if len(one_line) <= 100 else json.dumps(shown, indent=2, ensure_ascii=False)
    else:  # not a JSON object: show it as the model wrote it
        pretty = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    return name, op, pretty


def _tool_calls(msg: M.Message, calls: dict[str, tuple[str, str | None]]) -> str:
    out: list[str] = []
    for call in msg.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        name, op, pretty = _call_parts(call)
        call_id = str(call["id"]) if call.get("id") is not None else None
        if call_id:
            calls[call_id] = (name, op)
        body = _truncated_pre(pretty, ARGS_LIMIT) if pretty else ""
        out.append(f'<div class="toolcall">{_tool_label(name, op, call_id, "<span>call</span>")}{body}</div>')
    return "".join(out)


def _badges(meta: dict[str, Any]) -> str:
    out: list[str] = []
    if meta.get("kind") in M.NOT_TYPED:
        out.append('<span class="badge info">clio\'s text, sent as the user</span>')
    if meta.get("kind") == M.KIND_SUMMARY:
        out.append('<span class="badge summary">Thread summary</span>')
        thread = _int(meta.get("thread"))
        if thread is not None:
            out.append(f'<span class="badge info">thread {thread}</span>')
    elif isinstance(meta.get("kind"), str) and meta["kind"]:
        out.append(f'<span class="badge info">{esc(meta["kind"])}</span>')
    if meta.get("interrupted"):
        out.append('<span class="badge warn">interrupted</span>')
    redacted = _int(meta.get("redacted"))
    if redacted:
        out.append(f'<span class="badge info">{redacted} redacted</span>')
    return "".join(out)


class _Renderer:
    def __init__(self) -> None:
        self.calls: dict[str, tuple[str, str | None]] = {}
        self.last_day: tuple[int, int, int] | None = None

    def when(self, ts: object) -> str:
        t = _localtime(ts)
        if t is None:
            return ""
        day = (t.tm_year, t.tm_mon, t.tm_mday)
        shown = (
            format_date(ts, seconds=True)
            if day != self.last_day
            else f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        )
        self.last_day = day
        return _time_tag(ts, shown)

    def message(self, msg: M.Message, index: int) -> str:
        meta = M.meta(msg)
        role = str(msg.get("role") or "unknown")
        is_summary = meta.get("kind") == M.KIND_SUMMARY
        classes = ["msg", role if role in ROLES else "other"] + (["summary"] if is_summary else [])
        seq = _int(meta.get("seq"))
        anchor = f"m{seq if seq is not None else index}"
        shown_role = "clio" if role == "user" and meta.get("kind") in M.NOT_TYPED else role
        head = f'<span class="role">{esc(shown_role)}</span>{_badges(meta)}{self.when(meta.get("ts"))}'
        text = _content_text(msg.get("content"))
        notes = M.notes_of(msg) if role == "user" else []
        if notes:  # clio's notes before the user's words: shown as clio's, apart
            text = M.without_notes(msg, text)
        if role == "tool":
            body = self._tool_result(msg, text)
        else:
            if is_summary:
                text = _strip_summary_tags(text)
            body = f'<div class="content">{render_markdown(text)}</div>' if text.strip() else ""
            body += _tool_calls(msg, self.calls)
            if not body:
                body = '<p class="empty">(empty)</p>'
            if notes:
                said = "".join(f'<p><span class="who">clio:</span>{esc(M.note_text(n))}</p>' for n in notes)
                body = f'<div class="clio-notes">{said}</div>' + body
            if M.interrupted(msg):
                body += '<p class="cut">⏹ interrupted: the user cut this answer off here</p>'
        return f'<article class="{" ".join(classes)}" id="{anchor}"><div class="head">{head}</div>{body}</article>\n'

    def _tool_result(self, msg: M.Message, text: str) -> str:
        call_id = str(msg["tool_call_id"]) if msg.get("tool_call_id") is not None else None
        name, op = self.calls.get(call_id or "", (str(msg.get("name") or "tool"), None))
        note = f"first {RESULT_LIMIT:,} of {len(text):,} characters" if len(text) > RESULT_LIMIT else ""
        label = _tool_label(name, op, call_id, "<span>result</span>", note)
        diffs = "".join(_diff_block(d) for d in (msg.get("meta") or {}).get("diffs") or [] if isinstance(d, dict))
        return f'<div class="result">{label}{_truncated_pre(text, RESULT_LIMIT)}{diffs}</div>'


_DIFF_CLASSES = (("+++", "file"), ("---", "file"), ("@@", "hunk"), ("+", "add"), ("-", "del"))


def _diff_block(d: dict[str, Any]) -> str:
    """A file change the tool made (the diff kept in the result's meta), line by line, escaped."""
    rows = []
    for line in str(d.get("diff") or "").splitlines()[:DIFF_LINES]:
        cls = next((c for head, c in _DIFF_CLASSES if line.startswith(head)), "")
        rows.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    label = _tool_label("diff", str(d.get("path") or ""), None)
    return f'{label}<pre class="diff">{chr(10).join(rows)}</pre>'


# ---------------------------------------------------------------------------- page


def render_html(info: dict[str, Any], messages: list[M.Message], *, exported: float | None = None) -> str:
    """The whole export page as a string (every message; nothing from the session is live markup)."""
    renderer = _Renderer()
    body = "".join(renderer.message(m, i) for i, m in enumerate(messages) if isinstance(m, dict))
    if not body:
        body = '<p class="empty">This session has no messages.</p>'
    body = show_invisible(body)
    title = escape_invisible(f"{info.get('name') or 'Untitled session'} · clio session")
    footer = (
        f"Exported by clio on {esc(format_date(exported))}" if exported is not None else "Exported by clio"
    )
    page = (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>\n{stylesheet()}{ESCAPE_CSS}</style>\n</head>\n<body>\n<main>\n"
        f"{show_invisible(render_header(info, messages))}"
        f'<section class="messages">\n{body}</section>\n<footer>{footer}</footer>\n'
        "</main>\n</body>\n</html>\n"
    )
    # Lone surrogates (possible in JSON-loaded text) cannot be written as UTF-8.
    return page.encode("utf-8", "replace").decode("utf-8")


def export_html(info: dict[str, Any], messages: list[M.Message], path: Path) -> Path:
    """Write the export atomically to ``path`` (a folder gets ``<session id>.html``); returns the file."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / f"{_file_stem(info)}.html"
    atomic_write_text(path, render_html(info, messages, exported=time.time()))
    return path


def _file_stem(info: dict[str, Any]) -> str:
    raw = str(info.get("id") or "session")
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in raw).strip("._")
    return stem or "session"
