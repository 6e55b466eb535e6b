"""End to end, issue 5 (sessions and crash safety): /session commands, the session lock, damaged
files, and nothing typed being lost.

The installed ``clio`` runs against the fake server; slash commands go through one-shot input
(``clio -p "/session list"``), which never makes a chat request.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from testkit.clio_run import (
    CLIO,
    archive_messages,
    clio_env,
    run_clio,
    run_parallel,
    session_dirs,
    session_meta,
    stderr_lines,
    user_texts,
    without_context,
)
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.scripted import is_consolidation


def latest_user(body: dict[str, Any]) -> str:
    msgs = body["messages"]
    return without_context(str(next(m for m in reversed(msgs) if m.get("role") == "user").get("content")))


def turn_requests(server: FakeServer, trigger: str) -> list[dict[str, Any]]:
    return [b for b in server.chat_requests if trigger in latest_user(b)]


def session_with(project: Path, text: str) -> Path:
    """The one session folder whose archive holds a message containing ``text``."""
    hits = [
        d for d in session_dirs(project) if any(text in str(m.get("content")) for m in archive_messages(d))
    ]
    assert len(hits) == 1, f"{len(hits)} sessions hold {text!r}"
    return hits[0]


# ---------------------------------------------------------------- /session commands


def test_session_commands(fake_server: FakeServer, tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    fake_server.responder = lambda body: Reply(text=f"answer to: {latest_user(body)}")

    def clio(*args: str) -> dict[str, Any]:
        wide = {"COLUMNS": "200"}  # table rows on one line
        return {
            "args": list(args),
            "server": fake_server,
            "project": project,
            "home": home,
            "env_extra": wide,
        }

    first, second = "first task: parse the config loader", "second task: write the changelog"
    for r in run_parallel(clio("-p", first), clio("-p", second)):
        assert r.returncode == 0, r.stderr
    s1, s2 = session_with(project, first), session_with(project, second)
    id1, id2 = s1.name, s2.name
    assert session_meta(s1)["name"] == first  # auto-named from the first request
    requests = len(fake_server.chat_requests)
    assert requests == 2

    show, listed, export, delete_no, trim_no = run_parallel(
        clio("--resume", id1, "-p", "/session show"),
        clio("-p", "/session list"),
        clio("--resume", id2, "-p", "/session export"),
        clio("-p", f"/session delete {id1}"),
        clio("-p", "/session trim 0"),
    )
    for r in (show, listed, export):
        assert r.returncode == 0, r.stderr
    # show: id, name, model, message count of the resumed session
    assert id1 in show.stdout and first in show.stdout
    assert session_meta(s1)["model"] in show.stdout
    assert re.search(r"messages\s+2\b", show.stdout), show.stdout
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(session_meta(s1)["created"]))
    assert created in show.stdout
    (req1,) = turn_requests(fake_server, first)
    prompt_tokens = fake_server.prompt_tokens(req1)  # what the server reported as usage
    assert re.search(rf"{prompt_tokens:,} prompt \+ \d+ completion", show.stdout), show.stdout
    # list: both sessions, newest first is not asserted (they were made at the same moment)
    for sid, name in ((id1, first), (id2, second)):
        assert re.search(rf"{sid}\s+{re.escape(name)}\s+2\s", listed.stdout), listed.stdout
    # export without a path: a self-contained HTML file under .clio/exports/
    target = project / ".clio" / "exports" / f"{id2}.html"
    assert str(target) in export.stdout.replace("\n", "")
    html = target.read_text(encoding="utf-8")
    assert second in html and f"answer to: {second}" in html
    assert "<style" in html and "Content-Security-Policy" in html
    assert "<script" not in html.lower()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html, re.I)
    assert "@import" not in html
    # delete and trim without --yes in one-shot: nobody confirmed, both kept, and the run says so
    # and fails (exit 4: nobody was there to approve; issue 35, it was "Kept." and 0)
    assert "Kept" in delete_no.stdout and s1.is_dir()
    assert "Kept" in trim_no.stdout and s2.is_dir()
    for r in (delete_no, trim_no):
        assert r.returncode == 4, r.stderr
        (line,) = stderr_lines(r)
        assert line.startswith("clio: not done: nobody was there to answer 'Delete ") and "rerun with --yes" in line
    assert len(fake_server.chat_requests) == requests  # slash commands make no chat request
    assert session_dirs(project) == [s1, s2] or session_dirs(project) == [s2, s1]

    named, deleted = run_parallel(
        clio("--resume", id1, "-p", "/session name config-work"),
        clio("--yes", "-p", f"/session delete {id2}"),
    )
    assert named.returncode == 0, named.stderr
    assert "config-work" in named.stdout and session_meta(s1)["name"] == "config-work"
    assert deleted.returncode == 0, deleted.stderr
    assert f"Deleted session {id2}" in deleted.stdout and not s2.exists()

    # --resume <name> finds it: the request carries the earlier turn
    r = run_clio(
        ["--resume", "config-work", "-p", "continue the config work"],
        server=fake_server,
        project=project,
        home=home,
    )
    assert r.returncode == 0, r.stderr
    body = turn_requests(fake_server, "continue the config work")[0]
    assert user_texts(body) == [first, "continue the config work"]
    assert len(archive_messages(s1)) == 4

    # trim 0 with --yes deletes every session older than now (all of them)
    r = run_clio(["--yes", "-p", "/session trim 0"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "Deleted 1 session" in r.stdout, r.stdout
    assert session_dirs(project) == []


# ---------------------------------------------------------------- the session lock


def test_session_lock_refuses_a_second_process_and_a_killed_holder_is_taken_over(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    release = threading.Event()

    def responder(body: dict[str, Any]) -> Reply:
        if "hold the session" in latest_user(body):
            release.wait(60)  # the first process sits in its request, holding the session
        return Reply(text="ok")

    fake_server.responder = responder
    r = run_clio(["-p", "lock seed"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    (sdir,) = session_dirs(project)
    sid = sdir.name

    holder = subprocess.Popen(
        [str(CLIO), "--resume", sid, "-p", "hold the session"],
        cwd=project,
        env=clio_env(fake_server, home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not turn_requests(fake_server, "hold the session"):
            assert holder.poll() is None, holder.communicate()
            assert time.monotonic() < deadline, "the first clio never sent its request"
            time.sleep(0.05)
        archived = (sdir / "archive" / "000000.json").read_bytes()

        second = run_clio(
            ["--resume", sid, "-p", "second writer"], server=fake_server, project=project, home=home
        )
        assert second.returncode != 0
        lines = stderr_lines(second)
        assert len(lines) == 1, second.stderr
        assert str(holder.pid) in lines[0] and sid in lines[0]
        assert not turn_requests(fake_server, "second writer")
        assert (sdir / "archive" / "000000.json").read_bytes() == archived

        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    finally:
        release.set()
        if holder.poll() is None:
            holder.kill()
            holder.communicate(timeout=30)

    third = run_clio(
        ["--resume", sid, "-p", "after the kill"], server=fake_server, project=project, home=home
    )
    assert third.returncode == 0, third.stderr
    assert third.stdout == "ok\n"
    body = turn_requests(fake_server, "after the kill")[0]
    # what the killed process was asked is kept (it was on disk before its request went out)
    assert user_texts(body) == ["lock seed", "hold the session", "after the kill"]
    assert (sdir / "lock").read_text().strip() != str(holder.pid)


# ---------------------------------------------------------------- damaged files


def _damage_lines(result: subprocess.CompletedProcess[str], originals: dict[Path, bytes]) -> None:
    """One stderr line per damaged file naming it and its moved-aside copy, which keeps the bytes."""
    lines = stderr_lines(result)
    assert len(lines) == len(originals), result.stderr
    for path, data in originals.items():
        copies = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.stem}.damaged-")]
        assert len(copies) == 1, (path, sorted(p.name for p in path.parent.iterdir()))
        assert copies[0].read_bytes() == data
        naming = [line for line in lines if str(path) in line or f"{path.parent.name}/{path.name}" in line]
        assert len(naming) == 1, (path, lines)
        assert copies[0].name in naming[0]


def test_damaged_files_are_moved_aside_named_and_clio_carries_on(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    r = run_clio(["-p", "before the damage"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    (sdir,) = session_dirs(project)
    chunk = sdir / "archive" / "000000.json"
    whole = chunk.read_bytes()
    originals = {
        sdir / "stm.json": b"\x00\x9f\xfegarbage\xff",
        chunk: whole[: len(whole) // 2],  # a torn write
        project / ".clio" / "ltm.json": b'{"version": 1, "entries": [{"id": "d-1", "ty',
        home / "preferences.json": b"preferences? not json",
        project / ".clio" / "config.yaml": b"model: [unclosed\n  - : {\n",
    }
    for path, data in originals.items():
        path.write_bytes(data)

    r = run_clio(
        ["--resume", sdir.name, "-p", "after the damage"], server=fake_server, project=project, home=home
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "ok\n"
    _damage_lines(r, originals)
    turns = [b for b in fake_server.chat_requests if not is_consolidation(b)]  # a read-back may follow
    assert user_texts(turns[-1])[-1] == "after the damage"
    # the fresh files are sound: the next run reports nothing
    r = run_clio(
        ["--resume", sdir.name, "-p", "/session show"], server=fake_server, project=project, home=home
    )
    assert r.returncode == 0, r.stderr
    assert stderr_lines(r) == []


def test_binary_garbage_config_is_moved_aside(fake_server: FakeServer, tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".clio").mkdir(parents=True)
    config = project / ".clio" / "config.yaml"
    config.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary junk")
    r = run_clio(["-p", "hello"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    _damage_lines(r, {config: b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary junk"})


# ---------------------------------------------------------------- nothing typed is lost


def test_user_message_is_on_disk_before_the_request_even_when_the_endpoint_fails(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    seen: list[bool] = []
    failing = True

    def responder(body: dict[str, Any]) -> Reply | Fail:
        if is_consolidation(body):  # a finished session's read-back (clio.app.background): no turn of this test
            return Reply(text='{"entries": [], "pairs": []}')
        text = latest_user(body)
        on_disk = [m for d in session_dirs(project) for m in archive_messages(d) if m.get("content") == text]
        seen.append(len(on_disk) == 1 and on_disk[0]["role"] == "user")
        if failing:
            return Fail(500, {"error": {"message": "boom", "type": "server_error"}}, {"Retry-After": "0"})
        return Reply(text="recovered")

    fake_server.responder = responder
    typed = "a long request I typed carefully: refactor the parser into three modules"
    r = run_clio(["-p", typed], server=fake_server, project=project, home=home)
    assert r.returncode != 0
    assert r.stdout == ""
    assert "500" in stderr_lines(r)[-1], r.stderr  # the failure is reported
    assert seen and all(seen), seen
    (sdir,) = session_dirs(project)
    assert [(m["role"], m["content"]) for m in archive_messages(sdir)][:1] == [("user", typed)]
    assert json.loads((sdir / "session.json").read_text(encoding="utf-8"))["name"]

    failing = False
    seen.clear()
    r = run_clio(["--resume", sdir.name, "-p", "try again"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "recovered\n"
    assert seen == [True]
    assert user_texts(fake_server.turn_requests[-1]) == [typed, "try again"]  # (its read-back aside)


def test_dash_c_continues_the_most_recent_session(fake_server: FakeServer, tmp_path: Path) -> None:
    """``-c``/``--continue`` (as ``claude -c``) is ``--resume`` without a name: the latest session."""
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    fake_server.responder = lambda body: Reply(text=f"answer to: {latest_user(body)}")
    for text in ("older work on the parser", "newer work on the changelog"):
        assert run_clio(["-p", text], server=fake_server, project=project, home=home).returncode == 0
        time.sleep(0.05)  # distinct update times
    newer = session_with(project, "newer work on the changelog")
    for flag in ("-c", "--continue"):
        done = run_clio([flag, "-p", f"go on ({flag})"], server=fake_server, project=project, home=home)
        assert done.returncode == 0, done.stderr
        body = turn_requests(fake_server, f"go on ({flag})")[0]
        assert "newer work on the changelog" in json.dumps(body["messages"])
        assert "older work on the parser" not in json.dumps(body["messages"])
    assert len(session_dirs(project)) == 2  # no third session: both runs went on with the newer one
    assert "go on (-c)" in json.dumps(archive_messages(newer))
