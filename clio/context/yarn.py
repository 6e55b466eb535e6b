"""YaRN thread summaries: what left the window, compressed into one bounded system message.

``summarize`` reads the dropped messages (user requests, tool calls by name/operation
and their results) and merges them into the previous summary, so the summary
accumulates across trims: the original task stays the first one ever, the first file
read stays pinned, lists keep their most recent entries, counts add up.  What the user
established (decisions, constraints, conventions: ``clio.context.decisions``) is merged with
the newer statement replacing an older one on the same subject, and is the last thing
after the original task that the rendering cuts.  The archive
itself (every message, forever) lives in ``clio/store/sessions.py``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from clio import actions as A
from clio.context import decisions as D
from clio.messages import KIND_SUMMARY, Message, tool_call_args, typed_words
from clio.wording import plural

MAX_REQUESTS = 5
MAX_FILES = 30
MAX_COMMITS = 15
MAX_DECISIONS = 8
MAX_ERRORS = 8
MAX_TOOLS = 30
MAX_ESTABLISHED = D.MAX_ITEMS
REQUEST_CHARS = 300
TASK_CHARS = 800
ITEM_CHARS = 200
PATH_CHARS = 160
DEFAULT_MAX_CHARS = 5000  # ~1,400 tokens even at a dense 3.5 chars per token

UNRESOLVED = "unresolved"
_EXIT_RE = re.compile(r"exit code:?\s*(-?\d+)", re.IGNORECASE)
_COMMIT_RE = re.compile(r"\[[^\]\n]*?\b([0-9a-f]{7,40})\]\s*([^\n]+)")


@dataclass
class ThreadSummary:
    original_task: str = ""
    recent_requests: list[str] = field(default_factory=list)
    current_task: str = ""
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    commits: list[list[str]] = field(default_factory=list)  # [hash, message]
    decisions: list[list[str]] = field(default_factory=list)  # [question, answer ("" = not yet)]
    errors: list[list[str]] = field(default_factory=list)  # [error, resolution]
    tool_counts: dict[str, int] = field(default_factory=dict)
    # what the user established, oldest first: [kind, subject key, statement] (clio.context.decisions)
    established: list[list[str]] = field(default_factory=list)
    messages_compressed: int = 0
    trims: int = 0


def cut(text: str, n: int, *, keep_end: bool = False) -> str:
    text = " ".join(text.split())
    if len(text) <= n:
        return text
    return "…" + text[-(n - 1) :] if keep_end else text[: n - 1] + "…"


def _add(items: list[Any], item: Any, cap: int, *, pin_first: bool = False) -> None:
    """Append ``item`` as the most recent entry (moving it if present); keep at most ``cap``."""
    if item in items:
        if pin_first and items[0] == item:
            return
        items.remove(item)
    items.append(item)
    start = 1 if pin_first else 0
    while len(items) > cap:
        del items[start]


def is_error(text: str) -> bool:
    if text.lstrip().startswith("Error:"):
        return True
    m = _EXIT_RE.search(text)
    return bool(m and int(m.group(1)) != 0)


def _error_text(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("Error:"):
        return cut(stripped.splitlines()[0], ITEM_CHARS)
    m = _EXIT_RE.search(stripped)
    code = m.group(1) if m else "?"
    lines = [ln for ln in stripped.splitlines() if ln.strip() and not _EXIT_RE.search(ln)]
    tail = f": {lines[-1]}" if lines else ""
    return cut(f"exit code {code}{tail}", ITEM_CHARS)


def _content(msg: Message) -> str:
    c = msg.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "\n".join(p["text"] for p in c if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _op_key(name: str, args: dict[str, Any], action: str) -> tuple[str, str]:
    """(key that identifies "the same operation" for error resolution, a readable label)."""
    op = str(args.get("operation") or "")
    base = f"{name}.{op}" if op else name
    if action == A.RUN_COMMAND:
        cmd = str(args.get("command") or "")
        prog = cmd.split()[0] if cmd.split() else ""
        return f"{base} {prog}".strip(), f"`{cut(cmd, 80)}`"
    path = args.get("path")
    if isinstance(path, str) and path:
        return f"{base} {cut(path, PATH_CHARS)}", f"{base} {cut(path, PATH_CHARS)}"
    return base, base


def copy_summary(s: ThreadSummary) -> ThreadSummary:
    return from_dict(to_dict(s))


def summarize(
    dropped: list[Message],
    previous: ThreadSummary | None,
    latest_user: str | None,
    actions: A.Actions = A.NONE,
) -> ThreadSummary:
    """Merge what ``dropped`` tells into ``previous`` (not modified) and return the new summary.
    ``actions``: what each tool operation does (clio.actions; the registry's table): the files
    read and changed, commits, questions asked."""
    s = copy_summary(previous) if previous is not None else ThreadSummary()
    results = {m.get("tool_call_id"): _content(m) for m in dropped if m.get("role") == "tool"}
    pending_question = bool(s.decisions) and s.decisions[-1][1] == ""
    proposed = D.proposal(s.decisions[-1][0]) if pending_question else None
    last_user = ""
    for msg in dropped:
        role = msg.get("role")
        if role == "user":
            text = typed_words(msg).strip()
            if not text:
                continue
            last_user = text
            if not s.original_task:
                s.original_task = cut(text, TASK_CHARS)
            _add(s.recent_requests, cut(text, REQUEST_CHARS), MAX_REQUESTS)
            found = D.from_user(text)
            agreed = D.agreed(proposed) if proposed and D.agrees(text) else None
            if agreed is not None:  # an agreed proposal is a decision, not an open question
                found.insert(0, agreed)
                if pending_question:
                    s.decisions.pop()
            elif pending_question:
                s.decisions[-1][1] = cut(text, ITEM_CHARS)
            pending_question, proposed = False, None
            s.established = D.merge(s.established, found, MAX_ESTABLISHED)
        elif role == "assistant":
            calls = [c for c in msg.get("tool_calls") or () if isinstance(c, dict)]
            text = _content(msg).strip()
            if text and not calls:
                proposed = D.proposal(text)
                if text.endswith("?"):
                    _add(s.decisions, [cut(text, ITEM_CHARS, keep_end=True), ""], MAX_DECISIONS)
                    pending_question = True
            for call in calls:
                _absorb_call(s, call, results.get(call.get("id")), actions)
    s.current_task = (
        cut(latest_user or last_user, TASK_CHARS) if (latest_user or last_user) else s.current_task
    )
    s.messages_compressed += len(dropped)
    s.trims += 1
    return s


def _absorb_call(s: ThreadSummary, call: dict[str, Any], result: str | None, actions: A.Actions) -> None:
    name = str((call.get("function") or {}).get("name") or "?")
    args = tool_call_args(call)
    action = A.action_of(actions, name, args)
    s.tool_counts[name] = s.tool_counts.get(name, 0) + 1
    if len(s.tool_counts) > MAX_TOOLS:
        del s.tool_counts[min(s.tool_counts, key=lambda k: s.tool_counts[k])]
    failed = result is not None and is_error(result)
    key, label = _op_key(name, args, action)
    if failed:
        assert result is not None
        _add(s.errors, [cut(f"{key}: {_error_text(result)}", ITEM_CHARS), UNRESOLVED], MAX_ERRORS)
        return
    if result is not None:  # a success resolves earlier errors of the same operation
        for err in s.errors:
            if err[1] == UNRESOLVED and err[0].startswith(key + ": "):
                err[1] = f"resolved: {label} succeeded"
    path = args.get("path")
    path = cut(path, PATH_CHARS) if isinstance(path, str) and path else ""
    if action == A.READ_FILE and path:
        _add(s.files_read, path, MAX_FILES, pin_first=True)
    elif action == A.RENAME_FILE and path and isinstance(args.get("new_path"), str):
        _add(s.files_modified, f"{path} -> {cut(args['new_path'], PATH_CHARS)}", MAX_FILES, pin_first=True)
    elif action == A.DELETE_FILE and path:
        _add(s.files_modified, f"{path} (deleted)", MAX_FILES, pin_first=True)
    elif action in A.CHANGES_FILE and path:
        _add(s.files_modified, path, MAX_FILES, pin_first=True)
    elif action == A.COMMIT and result:
        m = _COMMIT_RE.search(result)
        if m:
            _add(s.commits, [m.group(1), cut(m.group(2), ITEM_CHARS)], MAX_COMMITS)
    elif action == A.ASK_USER:
        question = str(args.get("question") or "").strip()
        if question:
            answer = cut(result, ITEM_CHARS) if result is not None else ""
            _add(s.decisions, [cut(question, ITEM_CHARS, keep_end=True), answer], MAX_DECISIONS)


# -- rendering -------------------------------------------------------------------------
def _render(s: ThreadSummary, caps: dict[str, int]) -> str:
    def tail(items: list[Any], cap: int, pin_first: bool = False) -> list[Any]:
        if len(items) <= cap:
            return items
        if cap <= 0:
            return []
        return ([items[0]] + items[len(items) - cap + 1 :]) if pin_first else items[len(items) - cap :]

    lines = [
        "<thread_summary>",
        f"Earlier messages of this session were compressed ({plural(s.messages_compressed, 'message')}, "
        f"{s.trims} trims); recall_sessions finds them in the archive.",
    ]
    if s.original_task:
        lines.append(f"Original task: {cut(s.original_task, caps['task'])}")
    if s.current_task:
        lines.append(f"Current task: {cut(s.current_task, caps['task'])}")
    established = tail(s.established, caps["established"])
    if established:
        lines.append(
            "Established by the user (still in force; a newer one replaced any older on its subject):"
        )
        lines += [f"- {kind}: {cut(text, caps['established_item'])}" for kind, _, text in established]
    reqs = tail(s.recent_requests, caps["requests"])
    if reqs:
        lines.append("Recent requests (oldest first):")
        lines += [f"- {cut(r, caps['item'])}" for r in reqs]
    files = tail(s.files_read, caps["files"], True)
    if files:
        lines.append("Files read: " + ", ".join(files))
    files = tail(s.files_modified, caps["files"], True)
    if files:
        lines.append("Files modified: " + ", ".join(files))
    commits = tail(s.commits, caps["commits"])
    if commits:
        lines.append("Commits: " + "; ".join(f"{h} {cut(m, caps['item'])}" for h, m in commits))
    decisions = tail(s.decisions, caps["decisions"])
    if decisions:
        lines.append("Decisions:")
        lines += [
            f"- Q: {cut(q, caps['item'])} A: {cut(a, caps['item']) or '(no answer yet)'}"
            for q, a in decisions
        ]
    errors = tail(s.errors, caps["errors"])
    if errors:
        lines.append("Errors:")
        lines += [f"- {cut(e, caps['error_item'])} -> {cut(r, caps['error_item'])}" for e, r in errors]
    if s.tool_counts:
        top = sorted(s.tool_counts.items(), key=lambda kv: (-kv[1], kv[0]))[: caps["tools"]]
        lines.append("Tool use: " + ", ".join(f"{k} x{v}" for k, v in top))
    lines.append("</thread_summary>")
    return "\n".join(lines)


_SHRINK_FIRST = ("task", "item", "requests", "files", "commits", "decisions", "tools")
_SHRINK_LAST = ("error_item", "errors", "established_item", "established")


def render(s: ThreadSummary, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The summary as compact text in ``<thread_summary>`` tags, at most ``max_chars`` long."""
    max_chars = max(400, max_chars)
    caps = {
        "task": TASK_CHARS,
        "item": ITEM_CHARS,
        "requests": MAX_REQUESTS,
        "files": MAX_FILES,
        "commits": MAX_COMMITS,
        "decisions": MAX_DECISIONS,
        "errors": MAX_ERRORS,
        "tools": MAX_TOOLS,
        "established": MAX_ESTABLISHED,
        "established_item": ITEM_CHARS,
        "error_item": ITEM_CHARS,
    }
    text = _render(s, caps)
    floors = {"task": 120, "item": 60, "files": 2, "tools": 5, "established_item": 80, "error_item": 80}
    # errors and what the user established shrink only once everything else is at its floor; the
    # established lines come right after the tasks, so a final cut takes the tail first
    for phase in (_SHRINK_FIRST, _SHRINK_LAST):
        while len(text) > max_chars:
            shrinkable = [k for k in phase if caps[k] > floors.get(k, 1)]
            if not shrinkable:
                break
            for k in shrinkable:
                caps[k] = max(floors.get(k, 1), caps[k] * 2 // 3)
            text = _render(s, caps)
    if len(text) > max_chars:
        closing = "\n</thread_summary>"
        text = text[: max_chars - len(closing) - 1] + "…" + closing
    return text


def summary_message(s: ThreadSummary, max_chars: int = DEFAULT_MAX_CHARS) -> Message:
    return {"role": "system", "content": render(s, max_chars), "meta": {"kind": KIND_SUMMARY}}


# -- persistence -----------------------------------------------------------------------
def to_dict(s: ThreadSummary) -> dict[str, Any]:
    return asdict(s)


def from_dict(d: Any) -> ThreadSummary:
    """Rebuild a summary; malformed fields fall back to empty rather than failing."""
    if not isinstance(d, dict):
        return ThreadSummary()

    def text(key: str) -> str:
        v = d.get(key)
        return v if isinstance(v, str) else ""

    def strs(key: str) -> list[str]:
        v = d.get(key)
        return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []

    def pairs(key: str) -> list[list[str]]:
        v = d.get(key)
        if not isinstance(v, list):
            return []
        return [[str(p[0]), str(p[1])] for p in v if isinstance(p, (list, tuple)) and len(p) == 2]

    def count(key: str) -> int:
        v = d.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    tc = d.get("tool_counts")
    tools = (
        {str(k): v for k, v in tc.items() if isinstance(v, int) and not isinstance(v, bool)}
        if isinstance(tc, dict)
        else {}
    )
    return ThreadSummary(
        original_task=text("original_task"),
        recent_requests=strs("recent_requests"),
        current_task=text("current_task"),
        files_read=strs("files_read"),
        files_modified=strs("files_modified"),
        commits=pairs("commits"),
        decisions=pairs("decisions"),
        errors=pairs("errors"),
        tool_counts=tools,
        established=D.valid(d.get("established")),
        messages_compressed=count("messages_compressed"),
        trims=count("trims"),
    )
