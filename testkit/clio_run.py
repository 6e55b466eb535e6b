"""Drive the INSTALLED ``clio`` console script as a subprocess, and read what it left on disk.

Shared by the end-to-end tests: the fake server (testkit/fakeserver.py) is the only test double;
clio runs as a user would run it, with its environment isolated to the test's directories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from testkit.fakeserver import FakeServer

CLIO = Path(sys.executable).parent / "clio"

# Everything that could leak the developer's own setup into a run.
_SCRUBBED = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "CLIO_MODEL",
    "CLIO_HOME",
    "CLIO_CONTEXT_WINDOW",
    "NO_COLOR",
)


def clio_env(
    server: FakeServer | None, home: Path, env_extra: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """The environment of one run: the server's URL and a test key, CLIO_HOME, NO_COLOR.

    ``server=None`` sets no endpoint and no key. In ``env_extra`` a value of None removes the variable.
    """
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["CLIO_HOME"] = str(home)
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "80"
    if server is not None:
        env["OPENAI_BASE_URL"] = server.base_url
        env["OPENAI_API_KEY"] = "test-key"
    for key, value in (env_extra or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_clio(
    args: Sequence[str],
    *,
    server: FakeServer | None,
    project: Path,
    home: Path,
    stdin: str | None = None,
    env_extra: Mapping[str, str | None] | None = None,
    timeout: float = 60,
    background: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``clio ARGS`` in ``project`` (the working directory) and return what it did.

    stdin is closed (empty) unless given. Fails the test if clio printed a traceback.
    The consolidation child the run may leave (clio.app.background) is waited for before this
    returns, so the next run, and what the test reads, never race it; ``background=True`` returns
    as soon as clio exits (the tests of that child itself, which wait with :func:`wait_background`).
    """
    home.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [str(CLIO), *args],
        cwd=project,
        env=clio_env(server, home, env_extra),
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert "Traceback" not in result.stderr, f"clio printed a traceback:\n{result.stderr}"
    if not background:
        wait_background(project, timeout=max(60.0, timeout))  # a real model's read-back takes minutes
    return result


def run_scripted(
    args: Sequence[str], *replies: Any, project: Path, home: Path, **kwargs: Any
) -> tuple[subprocess.CompletedProcess[str], FakeServer]:
    """``run_clio`` against a fresh fake server scripted with ``replies`` (default: one "Hi.");
    returns the result and the (stopped) server, whose requests the test then reads."""
    from testkit.fakeserver import Reply

    server = FakeServer().start()
    server.script(*(replies or (Reply(text="Hi."),)))
    try:
        return run_clio(args, server=server, project=project, home=home, **kwargs), server
    finally:
        server.stop()


def run_parallel(*runs: dict[str, Any]) -> list[subprocess.CompletedProcess[str]]:
    """Several independent :func:`run_clio` calls at once (each dict holds its arguments)."""
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        futures = [pool.submit(run_clio, **kw) for kw in runs]
        return [f.result() for f in futures]


USAGE_LINE = "clio: usage: "  # the line a one-shot run that sent requests ends with (tests/e2e/test_cost.py)
SAVING_LINE = "clio: saving what this session established in the background"  # clio.app.background.NOTICE


def stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr's non-empty lines, without the closing usage line and the line saying the session is
    read back in the background (what the run said about its task, not what it cost or left)."""
    return [
        ln for ln in result.stderr.splitlines() if ln.strip() and not ln.startswith((USAGE_LINE, SAVING_LINE))
    ]


# ---------------------------------------------------------------- the session archive on disk


def sessions_dir(project: Path) -> Path:
    return project / ".clio" / "sessions"


def session_dirs(project: Path) -> list[Path]:
    """The project's session folders, oldest first: by the time each was created (an id sorts by
    its second only: two sessions made within one second differ by a random suffix)."""
    d = sessions_dir(project)
    if not d.is_dir():
        return []
    found = [p for p in d.iterdir() if p.is_dir() and (p / "session.json").exists()]

    def created(p: Path) -> tuple[float, str]:
        try:
            return float(session_meta(p).get("created") or 0.0), p.name
        except (ValueError, OSError, AssertionError):
            return 0.0, p.name

    return sorted(found, key=created)


def session_meta(session_dir: Path) -> dict[str, Any]:
    data = json.loads((session_dir / "session.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def archive_messages(session_dir: Path) -> list[dict[str, Any]]:
    """Every archived message of one session, in order (chunk files read as they are on disk now)."""
    out: list[dict[str, Any]] = []
    adir = session_dir / "archive"
    if not adir.is_dir():
        return out
    for chunk in sorted(p for p in adir.glob("[0-9]*.json") if ".damaged-" not in p.name):
        data = json.loads(chunk.read_text(encoding="utf-8"))
        assert isinstance(data, list), f"{chunk} is not a JSON list"
        out.extend(data)
    return out


def write_archive(
    root: Path, sid: str, msgs: list[dict[str, Any]], ts: float, name: str = "", digests: list[str] | None = None
) -> None:
    """Put a finished session on disk in clio's layout, as clio would have left it (a fast way to
    make large archives for recall tests and benches; ``msgs`` carry their own ``meta``).
    ``digests``: what read-backs of it said it settled (clio.store.session_info.Digest)."""
    from clio.store.changes import note
    from clio.store.session_info import Digest
    from clio.store.sessions import CHUNK, SessionInfo

    d = root / sid
    (d / "archive").mkdir(parents=True, exist_ok=True)
    for i in range(0, len(msgs), CHUNK):
        (d / "archive" / f"{i // CHUNK:06d}.json").write_text(json.dumps(msgs[i : i + CHUNK]))
    info = SessionInfo(
        sid,
        name=name or f"session {sid}",
        created=ts,
        updated=ts + len(msgs),
        message_count=len(msgs),
        consolidated=len(msgs) if digests else 0,
        digests=[Digest(len(msgs), text, ts + len(msgs)) for text in digests or []],
    )
    (d / "session.json").write_text(json.dumps(info.to_dict()))
    note(root, sid)  # as clio's store does after every write (the sessions folder's change journal)


def all_archived(project: Path) -> list[dict[str, Any]]:
    """The messages of every session of the project, session by session."""
    return [m for d in session_dirs(project) for m in archive_messages(d)]


# ---------------------------------------------------------------- recorded requests


RECALL_MARK = "\n\n<recalled_context>"  # where clio's automatic recall block joins a user message


CONTEXT_OPEN, CONTEXT_CLOSE = "<clio_context>", "</clio_context>"  # clio's notes after the head


def without_context(text: str) -> str:
    """A user message without the ``<clio_context>`` block clio put in front of it (the first
    user message of a request carries clio's notes: clio.agent.prompt.to_api)."""
    if text.startswith(CONTEXT_OPEN) and CONTEXT_CLOSE in text:
        return text.split(CONTEXT_CLOSE, 1)[1].removeprefix("\n\n")
    return text


def typed(text: str) -> str:
    """A user message of a request as the user typed it: without clio's notes in front and the
    recall block clio appended to it."""
    return without_context(text).split(RECALL_MARK, 1)[0]


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user messages of a request without clio's notes in front of the first (a message that
    was only the notes left out); a recall block stays."""
    out = []
    for m in body["messages"]:
        if m.get("role") == "user":
            text = str(m.get("content"))
            if text.startswith(CONTEXT_OPEN) and text.rstrip().endswith(CONTEXT_CLOSE):
                continue
            out.append(without_context(text))
    return out


def context_text(body: dict[str, Any]) -> str:
    """clio's ``<clio_context>`` block of a request ('' when it has none): memory, thread summary."""
    for m in body["messages"]:
        if m.get("role") == "user":
            text = str(m.get("content"))
            if text.startswith(CONTEXT_OPEN) and CONTEXT_CLOSE in text:
                return text.split(CONTEXT_CLOSE, 1)[0] + CONTEXT_CLOSE
            return ""
    return ""


def tool_results(body: dict[str, Any]) -> dict[str, str]:
    """tool_call_id -> content of every tool message in a request (asserting each id is unique)."""
    out: dict[str, str] = {}
    for m in body["messages"]:
        if m.get("role") == "tool":
            call_id = str(m.get("tool_call_id"))
            assert call_id not in out, f"two results for tool call {call_id}"
            out[call_id] = str(m.get("content"))
    return out


def assistant_calls(body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every tool call of every assistant message in a request, in order."""
    for m in body["messages"]:
        if m.get("role") == "assistant":
            yield from m.get("tool_calls") or []


def head_text(body: dict[str, Any]) -> str:
    """The request's system message (its head: the same in every request of a session)."""
    first = body["messages"][0]
    assert first["role"] == "system", f"the first message is {first['role']!r}, not the system prompt"
    return str(first["content"])


def system_text(body: dict[str, Any]) -> str:
    """What clio tells the model before the conversation: the system message, then its notes
    (the ``<clio_context>`` block: memory, thread summary)."""
    context = context_text(body)
    return head_text(body) + ("\n\n" + context if context else "")


def running(module: str) -> Iterator[tuple[Path, list[bytes]]]:
    """Each live process whose command line holds ``module`` as an argument (``python -m
    MODULE ...``): its ``/proc`` entry and its arguments. A process that has exited, reaped or
    not, has none (a zombie's command line is empty), nor one still in its exec."""
    name = module.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if name in args:
            yield entry, args


def background_children(project: Path) -> list[int]:
    """Pids of clio's detached consolidation children working in ``project`` (clio.app.background)."""
    found = []
    for entry, _ in running("clio.app.background"):
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if Path(cwd).resolve() == project.resolve():
            found.append(int(entry.name))
    return found


def wait_background(project: Path, timeout: float = 60) -> None:
    """Wait for the project's consolidation children to finish; kill them and fail past ``timeout``
    (a test leaves nothing running)."""
    import signal
    import time

    deadline = time.monotonic() + timeout
    while (left := background_children(project)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"consolidation children still running after {timeout}s: {left}"
