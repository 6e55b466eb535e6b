"""End to end, one-shot mode: the installed ``clio -p`` against the fake server.

Each test runs the real console script in a temporary project; the fake server is the only
double and records every request, so assertions are about what went over the wire, what
clio printed and what it left in the project's ``.clio/``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from testkit.clio_run import (
    all_archived,
    archive_messages,
    assistant_calls,
    run_clio,
    run_parallel,
    session_dirs,
    session_meta,
    stderr_lines,
    system_text,
    tool_results,
    typed,
    user_texts,
)
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import is_consolidation

TOOL_NAMES = {
    "file_operations",
    "terminal_operations",
    "version_control",
    "todo_operations",
    "user_collaboration",
    "memory_operations",
    "preferences",
}


def fo(operation: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    """A scripted file_operations call."""
    call: dict[str, Any] = {"name": "file_operations", "arguments": {"operation": operation, **args}}
    if call_id:
        call["id"] = call_id
    return call


def write_config(project: Path, text: str) -> None:
    (project / ".clio").mkdir(exist_ok=True)
    (project / ".clio" / "config.yaml").write_text(text, encoding="utf-8")


# ---------------------------------------------------------------- a plain answer


def test_text_answer_is_stdout_and_request_is_complete(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    answer = "**Bold** claim.\n\n- first point\n- second point"
    fake_server.script(Reply(text=answer, chunk_chars=3))
    r = run_clio(["-p", "Summarize the project"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == answer + "\n"  # the raw answer, not a rendering of it
    assert len(fake_server.chat_requests) == 1
    body = fake_server.chat_requests[0]
    assert "You are clio" in system_text(body)
    assert (
        body["messages"][-1]["role"] == "user"
        and typed(body["messages"][-1]["content"]) == "Summarize the project"
    )
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    names = {t["function"]["name"] for t in body["tools"]}
    assert names == TOOL_NAMES
    for t in body["tools"]:
        assert t["type"] == "function"
        assert "operation" in t["function"]["parameters"]["properties"]
    # the turn is archived: the user message and the answer
    msgs = all_archived(project)
    assert [(m["role"], m["content"]) for m in msgs] == [
        ("user", "Summarize the project"),
        ("assistant", answer),
    ]


def test_input_exit_and_stdin(fake_server: FakeServer, project: Path, home: Path, tmp_path: Path) -> None:
    """``--input TEXT --exit`` behaves as ``-p TEXT``; ``--input -`` reads the request from stdin."""
    other = FakeServer().start()
    stdin_project = tmp_path / "stdin_proj"
    stdin_project.mkdir()
    try:
        fake_server.script(Reply(text="answer one"))
        other.script(Reply(text="answer two"))
        piped = "Explain this:\nline two of the request"
        r1, r2 = run_parallel(
            {
                "args": ["--input", "first request", "--exit"],
                "server": fake_server,
                "project": project,
                "home": home,
            },
            {
                "args": ["--input", "-", "--exit"],
                "server": other,
                "project": stdin_project,
                "home": home,
                "stdin": piped + "\n",
            },
        )
        assert (r1.returncode, r1.stdout) == (0, "answer one\n"), r1.stderr
        assert (r2.returncode, r2.stdout) == (0, "answer two\n"), r2.stderr
        assert user_texts(fake_server.chat_requests[0]) == ["first request"]
        assert len(other.chat_requests) == 1
        assert [t.strip() for t in user_texts(other.chat_requests[0])] == [piped]
    finally:
        other.stop()


# ---------------------------------------------------------------- the tool loop


def test_tool_loop_parallel_calls_and_bad_calls(fake_server: FakeServer, project: Path, home: Path) -> None:
    (project / "notes.txt").write_text("alpha line\nbeta line\n", encoding="utf-8")
    (project / "todo.md").write_text("# Todo\n- ship it\n", encoding="utf-8")
    fake_server.script(
        # two calls in one reply, their argument deltas split 3 characters per chunk
        Reply(
            tool_calls=[
                fo("read_file", "call_notes", path="notes.txt"),
                fo("read_file", "call_todo", path="todo.md"),
            ],
            arg_chunk_chars=3,
        ),
        # an unknown tool and arguments that are not JSON
        Reply(
            tool_calls=[
                {"name": "no_such_tool", "arguments": {"x": 1}, "id": "call_unknown"},
                {
                    "name": "file_operations",
                    "arguments": '{"operation": "read_file", "path": ',
                    "id": "call_badjson",
                },
            ]
        ),
        Reply(text="All read."),
    )
    r = run_clio(["-p", "Read my notes"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "All read.\n"
    reqs = fake_server.turn_requests  # the session's read-back after the run left out
    assert len(reqs) == 3
    # the assembled calls went back in the history exactly as the model sent them
    calls = list(assistant_calls(reqs[1]))
    assert [c["id"] for c in calls] == ["call_notes", "call_todo"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"operation": "read_file", "path": "notes.txt"}
    results = tool_results(reqs[1])
    assert set(results) == {"call_notes", "call_todo"}  # one result per call
    assert "alpha line\nbeta line" in results["call_notes"]
    assert "- ship it" in results["call_todo"]
    assert reqs[1]["messages"][-2]["role"] == "tool" and reqs[1]["messages"][-1]["role"] == "tool"
    # the errors came back as results and the loop went on to a third request
    results = tool_results(reqs[2])
    assert set(results) == {"call_notes", "call_todo", "call_unknown", "call_badjson"}
    assert results["call_unknown"].startswith("Error: unknown tool 'no_such_tool'")
    assert results["call_badjson"].startswith("Error:") and "JSON" in results["call_badjson"]
    # stderr carries one line per tool call, failures marked
    lines = stderr_lines(r)
    assert sum(ln.startswith("clio: ✓ file_operations read_file") for ln in lines) == 2
    assert sum(ln.startswith("clio: ✗ ") for ln in lines) == 2


def test_iteration_cap_stops_with_notice(fake_server: FakeServer, project: Path, home: Path) -> None:
    write_config(project, "max_iterations: 3\n")
    (project / "a.txt").write_text("x\n", encoding="utf-8")
    fake_server.responder = lambda body: Reply(tool_calls=[fo("file_exists", path="a.txt")])
    r = run_clio(["-p", "Loop forever"], server=fake_server, project=project, home=home)
    assert r.returncode == 3, r.stderr  # its own code, not a crash (1) or a usage error (2)
    assert r.stdout == ""
    assert len(fake_server.turn_requests) == 3  # the session's read-back after the run left out
    assert any("Stopped after 3 tool iterations" in ln for ln in stderr_lines(r))
    # every call that was made got its result, also the last one
    msgs = all_archived(project)
    call_ids = [c["id"] for m in msgs for c in m.get("tool_calls") or []]
    result_ids = [m["tool_call_id"] for m in msgs if m["role"] == "tool"]
    assert len(call_ids) == 3 and result_ids == call_ids


def test_messages_are_on_disk_before_each_request(fake_server: FakeServer, project: Path, home: Path) -> None:
    (project / "f.txt").write_text("contents of f\n", encoding="utf-8")
    seen: list[list[tuple[str, str]]] = []

    def responder(body: dict[str, Any]) -> Reply:
        # runs while clio waits for this very request: what does the archive hold now?
        on_disk = [(m["role"], str(m.get("content"))) for m in all_archived(project)]
        seen.append(on_disk)
        if len(seen) == 1:
            return Reply(tool_calls=[fo("read_file", "call_f", path="f.txt")])
        return Reply(text="done")

    fake_server.responder = responder
    r = run_clio(["-p", "the task text 7731"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert seen[0] == [("user", "the task text 7731")]
    roles = [role for role, _ in seen[1]]
    assert roles == ["user", "assistant", "tool"]
    assert "contents of f" in seen[1][2][1]
    # and the answer is archived once the turn is over
    assert [m["role"] for m in all_archived(project)] == ["user", "assistant", "tool", "assistant"]


# ---------------------------------------------------------------- slash commands without the model


def test_slash_commands_run_without_a_chat_request(
    fake_server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    projects = [tmp_path / f"p{i}" for i in range(4)]
    for p in projects:
        p.mkdir()
    ctx, help_, unknown, exit_ = run_parallel(
        {
            "args": ["--input", "/context --json", "--exit"],
            "server": fake_server,
            "project": projects[0],
            "home": home,
        },
        {"args": ["-p", "/help"], "server": fake_server, "project": projects[1], "home": home},
        {"args": ["-p", "/foo"], "server": fake_server, "project": projects[2], "home": home},
        {"args": ["-p", "/exit"], "server": fake_server, "project": projects[3], "home": home},
    )
    assert fake_server.requests == []  # not one request of any kind
    assert ctx.returncode == 0, ctx.stderr
    figures = json.loads(ctx.stdout)
    assert isinstance(figures["context_window"], int) and figures["context_window"] > 0
    assert isinstance(figures["used_tokens"], int) and 0 < figures["used_tokens"] < figures["context_window"]
    assert isinstance(figures["chars_per_token"], (int, float)) and figures["chars_per_token"] > 0
    assert help_.returncode == 0, help_.stderr
    for name in ("/help", "/exit", "/model", "/session", "/memory", "/context", "/stats", "/todo", "/clear"):
        assert re.search(rf"^\s*{re.escape(name)}\b", help_.stdout, re.MULTILINE), name
    assert unknown.returncode != 0
    assert unknown.stdout == ""
    lines = stderr_lines(unknown)
    assert len(lines) == 1 and "/foo" in lines[0], unknown.stderr
    assert (exit_.returncode, exit_.stdout, exit_.stderr) == (0, "", "")


# ---------------------------------------------------------------- tool calls written as text


RECOVERABLE = (
    "I'll create the file now.\n\n"
    "```json\n"
    '{"name": "file_operations", "arguments": {"operation": "write_file", "path": "made.txt", '
    '"content": "from text\\n"}}\n'
    "```\n"
)


def test_tool_call_recovered_from_text(
    fake_server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    """Recovered: the call runs and is stored in standard form. Switched off: the text is the answer."""
    off_project = tmp_path / "off"
    off_project.mkdir()
    write_config(off_project, "tool_call_recovery: false\n")
    off_server = FakeServer().start()
    try:
        fake_server.script(Reply(text=RECOVERABLE), Reply(text="Created made.txt."))
        off_server.script(Reply(text=RECOVERABLE), Reply(text="should not be asked for"))
        on, off = run_parallel(
            {
                "args": ["--yes", "-p", "Create made.txt"],
                "server": fake_server,
                "project": project,
                "home": home,
            },
            {
                "args": ["--yes", "-p", "Create made.txt"],
                "server": off_server,
                "project": off_project,
                "home": home,
            },
        )
        assert on.returncode == 0, on.stderr
        assert on.stdout == "Created made.txt.\n"
        assert (project / "made.txt").read_text(encoding="utf-8") == "from text\n"
        second = fake_server.chat_requests[1]
        assistant = [m for m in second["messages"] if m["role"] == "assistant"]
        assert len(assistant) == 1
        calls = assistant[0]["tool_calls"]
        assert len(calls) == 1 and calls[0]["type"] == "function"
        assert calls[0]["function"]["name"] == "file_operations"
        assert json.loads(calls[0]["function"]["arguments"]) == {
            "operation": "write_file",
            "path": "made.txt",
            "content": "from text\n",
        }
        assert "```" not in (assistant[0].get("content") or "")  # the raw block is not replayed as text
        results = tool_results(second)
        assert list(results) == [calls[0]["id"]]
        assert "made.txt" in results[calls[0]["id"]] and not results[calls[0]["id"]].startswith("Error")

        assert off.returncode == 0, off.stderr
        assert off.stdout == RECOVERABLE
        assert len(off_server.chat_requests) == 1
        assert not (off_project / "made.txt").exists()
        assert [m["role"] for m in all_archived(off_project)] == ["user", "assistant"]
    finally:
        off_server.stop()


# ---------------------------------------------------------------- sessions


def _shortest_unique_prefix(ident: str, others: list[str]) -> str:
    for n in range(1, len(ident) + 1):
        if not any(o.startswith(ident[:n]) for o in others):
            return ident[:n]
    return ident


def test_resume_sessions_by_recency_prefix_and_name(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    def runs(*arg_lists: list[str]) -> list[subprocess.CompletedProcess[str]]:
        return run_parallel(
            *({"args": a, "server": fake_server, "project": project, "home": home} for a in arg_lists)
        )

    def turns() -> list[dict[str, Any]]:  # a resumed session of two questions is read back by a child
        return [b for b in fake_server.chat_requests if not is_consolidation(b)]

    def last_users() -> list[str]:
        return user_texts(turns()[-1])

    fake_server.responder = lambda body: Reply(text="reply to " + user_texts(body)[-1])
    for r in runs(["-p", "apples question"], ["-p", "bananas question"]):
        assert r.returncode == 0, r.stderr
    by_name = {session_meta(d)["name"]: d for d in session_dirs(project)}
    assert set(by_name) == {"apples question", "bananas question"}  # named after their first request
    a_dir, b_dir = by_name["apples question"], by_name["bananas question"]
    a_id, b_id = a_dir.name, b_dir.name
    b_prefix = _shortest_unique_prefix(b_id, [a_id])
    assert len(b_prefix) < len(b_id)

    listing, nomatch, by_prefix = runs(
        ["--sessions"],
        ["--resume", "nomatch-xyz", "-p", "hello"],
        ["--resume", b_prefix, "-p", "elderberries"],
    )
    assert listing.returncode == 0, listing.stderr
    for ident, name in ((a_id, "apples question"), (b_id, "bananas question")):
        line = next(ln for ln in listing.stdout.splitlines() if ident in ln)
        assert name in line
    assert nomatch.returncode == 2 and nomatch.stdout == ""  # a name that names nothing: bad usage
    lines = stderr_lines(nomatch)
    assert len(lines) == 1 and "nomatch-xyz" in lines[0], nomatch.stderr
    # --resume PREFIX continued B (and the other two asked the model nothing)
    assert by_prefix.returncode == 0, by_prefix.stderr
    assert len(turns()) == 3
    assert last_users() == ["bananas question", "elderberries"]
    assert any(m["content"] == "reply to bananas question" for m in turns()[-1]["messages"])

    # --resume NAME continues A
    (r,) = runs(["--resume", "apples question", "-p", "cherries"])
    assert r.returncode == 0, r.stderr
    assert last_users() == ["apples question", "cherries"]
    # --resume alone: the most recently used session, which is A now (B was created and resumed later)
    (r,) = runs(["--resume", "-p", "dates"])
    assert r.returncode == 0, r.stderr
    assert last_users() == ["apples question", "cherries", "dates"]
    assert sorted(session_dirs(project)) == sorted([a_dir, b_dir])  # resuming made no new session
    assert [m["content"] for m in archive_messages(a_dir) if m["role"] == "user"] == [
        "apples question",
        "cherries",
        "dates",
    ]


# ---------------------------------------------------------------- approvals


def test_one_shot_approvals_need_yes(
    fake_server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)  # what `git reset --hard` would hit
    victim = tmp_path / "outside" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep.txt").write_text("precious\n", encoding="utf-8")
    calls = [
        fo("write_file", "call_write", path="new.txt", content="hello\n"),
        {
            "name": "terminal_operations",
            "arguments": {"operation": "execute", "command": f"rm -rf {victim}"},
            "id": "call_rm",
        },
        {
            "name": "terminal_operations",
            "arguments": {"operation": "execute", "command": "git reset --hard"},
            "id": "call_reset",
        },
        {
            "name": "terminal_operations",
            "arguments": {"operation": "execute", "command": "touch by_shell.txt"},
            "id": "call_shell",
        },
        {
            "name": "user_collaboration",
            "arguments": {"operation": "request_input", "question": "May I?"},
            "id": "call_ask",
        },
    ]
    fake_server.script(Reply(tool_calls=calls), Reply(text="I could not do it."))
    yes_server = FakeServer().start()
    yes_project = tmp_path / "yes_proj"
    yes_project.mkdir()
    try:
        yes_server.script(Reply(tool_calls=[calls[0], calls[3]]), Reply(text="Written."))
        no, yes = run_parallel(
            {
                "args": ["-p", "Write new.txt and clean up"],
                "server": fake_server,
                "project": project,
                "home": home,
            },
            {
                "args": ["--yes", "-p", "Write new.txt"],
                "server": yes_server,
                "project": yes_project,
                "home": home,
            },
        )
        assert no.returncode == 4, no.stderr  # refused for lack of approval: its own exit code
        assert "clio: refused for lack of approval: write: create new.txt (1 line) and 3 more." in no.stderr
        assert not (project / "new.txt").exists()
        assert (victim / "keep.txt").read_text(encoding="utf-8") == "precious\n"
        results = tool_results(fake_server.chat_requests[1])
        assert results["call_write"].startswith("Error:") and "new.txt" in results["call_write"]
        # nobody was asked in a non-TTY one-shot run: the model is told so, and how to allow it
        assert "not allowed" in results["call_write"] and "--yes" in results["call_write"]
        assert "--yes" in results["call_shell"]
        for key in ("call_rm", "call_reset"):
            assert results[key].startswith("Error: refused: this command is destructive"), results[key]
            assert "--yes" in results[key]
        assert "hard" in results["call_reset"] or "uncommitted" in results["call_reset"]
        assert results["call_shell"].startswith("Error:") and "touch by_shell.txt" in results["call_shell"]
        assert not (project / "by_shell.txt").exists()
        assert "No user is present" in results["call_ask"]  # nobody to ask in a one-shot run

        assert yes.returncode == 0, yes.stderr
        assert (yes_project / "new.txt").read_text(encoding="utf-8") == "hello\n"
        results = tool_results(yes_server.chat_requests[1])
        assert not results["call_write"].startswith("Error") and "new.txt" in results["call_write"]
        assert results["call_shell"].endswith("exit code: 0")
        assert (yes_project / "by_shell.txt").exists()
    finally:
        yes_server.stop()


# ---------------------------------------------------------------- large tool results


def test_large_tool_result_is_previewed_and_paged(fake_server: FakeServer, project: Path, home: Path) -> None:
    command = "seq 1 10000"  # 48,894 bytes of output
    full = "\n".join(str(i) for i in range(1, 10001))
    pages: list[str] = []

    def responder(body: dict[str, Any]) -> Reply:
        n = len(fake_server.chat_requests)
        if n == 1:
            return Reply(
                tool_calls=[
                    {
                        "name": "terminal_operations",
                        "arguments": {"operation": "execute", "command": command},
                        "id": "call_seq",
                    }
                ]
            )
        if n == 2:
            preview = tool_results(body)["call_seq"]
            pages.append(preview)
            m = re.search(r"handle '([^']+)'", preview)
            assert m, preview
            page = fo("read_tool_result", "call_page", handle=m.group(1), offset=5000, length=3000)
            return Reply(tool_calls=[page])
        pages.append(tool_results(body)["call_page"])
        return Reply(text="Seen it.")

    fake_server.responder = responder
    r = run_clio(["--yes", "-p", "Count to ten thousand"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Seen it.\n"
    preview, page = pages
    assert len(preview) < 8000 < len(full)
    assert preview.startswith("1\n2\n3\n")
    assert "10000" in preview  # the tail is shown too
    assert "\n5000\n" not in preview  # the middle is not
    header, body = page.split("\n", 1)
    assert "5000-8000" in header
    assert body == full[5000:8000]  # characters the preview did not show
    assert "\n1500\n" in body and "\n1500\n" not in preview
    # the result is stored with the session, the preview's head and tail taken from it
    (sdir,) = session_dirs(project)
    (stored,) = (sdir / "results").glob("*.txt")
    text = stored.read_text(encoding="utf-8")
    assert text.startswith(full[:8000]) and text.rstrip().endswith("10000\nexit code: 0")


def test_a_model_repeating_the_same_call_is_told_then_stopped(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    """Stuck detection: a repeated call with an unchanged result gets a note (the first time, with
    the result) then a tool error instead of the result; after three repeats the turn stops with
    exit code 5 and one line why."""
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    fake_server.responder = lambda body: Reply(tool_calls=[fo("read_file", path="calc.py")])
    r = run_clio(["-p", "Fix calc.py"], server=fake_server, project=project, home=home)
    assert r.returncode == 5, r.stderr
    reqs = fake_server.turn_requests  # the session's read-back after the run left out
    assert len(reqs) == 4  # the first call, then three repeats; no fifth request
    results = [m["content"] for m in reqs[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 3
    assert "return a + b" in results[0]
    assert results[1].startswith("[Repeated call: the same file_operations call") and "return a + b" in results[1]
    assert results[2].startswith("Repeated call: file_operations") and "return a + b" not in results[2]
    stops = [ln for ln in stderr_lines(r) if ln.startswith("clio: Stopped: the model repeated the same call")]
    assert len(stops) == 1 and "read_file calc.py" in stops[0]
    # one-shot wording: nobody can "send another message" here (issue 27)
    assert stops[0].endswith("Rerun with a rephrased or narrower request, or go on in the REPL with: clio --resume")
    archived = [m for m in all_archived(project) if m["role"] == "tool"]
    assert len(archived) == 4 and archived[-1]["content"].endswith("The turn stops here.")


def test_an_action_refused_for_lack_of_approval_exits_4_with_whole_words(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    """Without --yes nobody can approve a write in a one-shot run: the model is told, the run
    ends with exit code 4 and one line naming the refused action; hints are never cut mid-word."""
    fake_server.script(
        Reply(tool_calls=[fo("write_file", path="out.txt", content="hello\n")]),
        Reply(text="I could not write out.txt."),
    )
    r = run_clio(["-p", "Write out.txt"], server=fake_server, project=project, home=home)
    assert r.returncode == 4, r.stderr
    assert r.stdout == "I could not write out.txt.\n"
    assert not (project / "out.txt").exists()
    lines = stderr_lines(r)
    refused = [ln for ln in lines if ln.startswith("clio: refused for lack of approval: write:")]
    assert len(refused) == 1 and "out.txt" in refused[0] and "--yes" in refused[0]
    tool_line = next(ln for ln in lines if ln.startswith("clio: ✗ file_operations"))
    assert "No user is present to approve it" in tool_line  # the reason in whole words

    fake_server.script(
        Reply(tool_calls=[fo("write_file", path="out.txt", content="hello\n")]),
        Reply(text="Wrote it."),
    )
    ok = run_clio(["--yes", "-p", "Write out.txt"], server=fake_server, project=project, home=home)
    assert ok.returncode == 0, ok.stderr
    assert (project / "out.txt").read_text(encoding="utf-8") == "hello\n"
    # nobody was asked: the change is shown after the fact, as a diff on stderr (each line with
    # clio's prefix, like every line there)
    assert "clio: --- /dev/null\nclio: +++ b/out.txt\nclio: @@ -0,0 +1 @@\nclio: +hello\n" in ok.stderr
    # and kept with the result, so the export shows it
    export = project / "export.html"
    shown = run_clio(["--resume", "-p", f"/session export {export}"], server=fake_server, project=project, home=home)
    assert shown.returncode == 0, shown.stderr
    page = export.read_text(encoding="utf-8")
    assert '<pre class="diff"><span class="file">--- /dev/null</span>' in page
    assert '<span class="add">+hello</span>' in page
