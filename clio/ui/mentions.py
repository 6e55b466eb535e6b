"""``@file`` mentions in the REPL: ``@path`` (or ``@"path with spaces"``) attaches the file's
content to the message, within a budget that scales with the window.

Pure apart from reading the named files. :func:`attach` returns the text to send (the user's
words, then one ``<file path="...">`` block per attached file) and one line per mention saying
what happened. The message's ``meta["attached"]`` lists the files: what the user established
is read from the words before the first block only (:func:`clio.messages.typed_words`), and a
turn with an attachment counts as having read outside content for memory provenance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from clio.wording import plural

if TYPE_CHECKING:
    from clio.safety.hide import Private

MENTION = re.compile(r'(?<![\w@])@(?:"([^"\n]+)"|([^\s"]+))')
SHARE = 0.25  # of the window's characters, for all attachments of one message
MIN_CHARS = 2_000


@dataclass
class Attached:
    text: str  # what is sent: the user's words, then the files
    notes: list[str] = field(default_factory=list)  # one line per mention, for the user
    paths: list[str] = field(default_factory=list)  # attached, as shown


def mentions(text: str) -> list[str]:
    """The paths mentioned, in order, without repeats."""
    out: list[str] = []
    for m in MENTION.finditer(text):
        path = (m.group(1) or m.group(2) or "").rstrip(".,;:!?)")
        if path and path not in out:
            out.append(path)
    return out


def attach(text: str, root: Path, cwd: Path, budget_chars: int, private: Private | None = None) -> Attached:
    """``private``: what is never attached ($CLIO_HOME, the credential stores; clio.safety.hide):
    the message goes to the model, and a pasted ``@~/.clio/memory.key`` would carry the key."""
    result = Attached(text)
    left = max(MIN_CHARS, budget_chars)
    blocks: list[str] = []
    forms = private.forms() if private is not None else []
    for raw in mentions(text):
        p = Path(raw).expanduser()
        p = p if p.is_absolute() else cwd / p
        shown = _shown(p, root)
        refused = private.reason(p, forms) if private is not None else None
        if refused is not None:
            result.notes.append(f"@{raw}: not attached, {refused}")
            continue
        if not p.is_file():
            if p.exists() or "/" in raw or "." in raw:  # a path-like word that is not a file
                result.notes.append(f"@{raw}: {'not a file' if p.exists() else 'no such file'}; not attached")
            continue
        data = p.read_bytes()
        if b"\x00" in data[:8192]:
            result.notes.append(f"@{raw}: a binary file; not attached")
            continue
        body = data.decode("utf-8", errors="replace")
        if left <= 0:
            result.notes.append(f"@{shown}: not attached, the attachment budget ({budget_chars:,} characters) is spent")
            continue
        cut = len(body) > left
        if cut:
            body = body[:left].rsplit("\n", 1)[0] + "\n"
        left -= len(body)
        lines = body.count("\n") + (0 if body.endswith("\n") else 1)
        more = f", cut to fit: {len(body):,} of {len(data):,} bytes" if cut else ""
        flag = ' truncated="true"' if cut else ""
        blocks.append(f'<file path="{shown}"{flag}>\n{body}</file>')
        result.notes.append(f"attached {shown} ({plural(lines, 'line')}{more})")
        result.paths.append(shown)
    if blocks:
        result.text = text + "\n\n" + "\n\n".join(blocks)
    return result


def _shown(p: Path, root: Path) -> str:
    try:
        return str(p.resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return str(p)
