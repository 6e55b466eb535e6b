"""End to end, issue 5 (privacy and safety): --incognito, --no-ltm, secret redaction, the sandbox.

The installed ``clio`` runs against the fake server, which records every byte clio sends.
Incognito is checked by comparing clio's trees (the project's ``.clio/`` and ``$CLIO_HOME``)
file by file before and after a run with a tool loop; redaction by grepping the raw request
bodies, every file clio wrote and the HTML export for the secrets.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from clio.memory.ltm_store import LtmStore
from clio.memory.prefs_store import PrefStore
from testkit.clio_run import (
    all_archived,
    run_clio,
    run_parallel,
    session_dirs,
    system_text,
    tool_results,
)
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import ScriptedModel, turn_requests

INSTRUCTIONS = "INSTRUCTIONS-MARKER-4417: name every branch after its ticket."
AGENTS = "AGENTS-MARKER-9023: run make check before committing."
FACT = "LTM-MARKER-3301: the frobnicator lives in src/frob/core.py"
PREF = "PREF-MARKER-7710 keep commit messages under 60 characters"
TABOO = "TABOO-MARKER-5512 force-pushing to main"


# ---------------------------------------------------------------- helpers


def fo(operation: str, **args: Any) -> dict[str, Any]:
    return {"name": "file_operations", "arguments": {"operation": operation, **args}}


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root`` (root included): kind, mode, mtime; files also size and hash.

    Directory mtimes are included, so a file created and removed again also shows."""
    if not root.exists():
        return {}
    out: dict[str, tuple[Any, ...]] = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir", st.st_mode, st.st_mtime_ns)
        else:
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[rel] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest)
    return out


def seed_project(project: Path, home: Path) -> None:
    """Project instructions, AGENTS.md, one LTM entry and two preferences (a taboo among them)."""
    (project / ".clio").mkdir(parents=True)
    (project / ".clio" / "instructions.md").write_text(INSTRUCTIONS + "\n", encoding="utf-8")
    (project / "AGENTS.md").write_text(AGENTS + "\n", encoding="utf-8")
    LtmStore(project / ".clio" / "ltm.json").add("discovery", fact=FACT, confidence=0.9)
    home.mkdir(parents=True, exist_ok=True)
    prefs = PrefStore(home / "preferences.json")
    prefs.add(PREF, 9)
    prefs.add(TABOO, 1)


# ---------------------------------------------------------------- incognito and --no-ltm


def test_incognito_writes_nothing_and_sends_no_project_memory(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    model = ScriptedModel()
    fake_server.responder = model
    # besides the file write, every tool that keeps something: notes, LTM, preferences, todos,
    # recall, and a shell output big enough to be stored as a result
    keepers = [
        {"name": "memory_operations", "arguments": {"operation": "store", "key": "k", "value": "v"}},
        {"name": "memory_operations", "arguments": {"operation": "add_discovery", "fact": "NEW-FACT-1"}},
        {"name": "memory_operations", "arguments": {"operation": "recall_sessions", "query": "frobnicator"}},
        {
            "name": "preferences",
            "arguments": {"operation": "add", "text": "NEW-PREF-1 short answers", "score": 8},
        },
        {"name": "todo_operations", "arguments": {"operation": "add", "content": "NEW-TODO-1"}},
        {"name": "terminal_operations", "arguments": {"operation": "execute", "command": "seq 1 20000"}},
    ]
    for tag in ("seeded", "bare"):
        write = fo("write_file", path=f"made_{tag}.txt", content=f"written by the {tag} run\n")
        model.on(f"incognito {tag} task", Reply(tool_calls=[write, *keepers]), Reply(text="wrote it"))
    # seeded: a project with .clio/ (instructions, ltm.json) and preferences in $CLIO_HOME
    seeded, seeded_home = tmp_path / "seeded", tmp_path / "seeded_home"
    seed_project(seeded, seeded_home)
    # bare: no .clio/ at all, an empty $CLIO_HOME
    bare, bare_home = tmp_path / "bare", tmp_path / "bare_home"
    bare.mkdir()
    bare_home.mkdir()
    (bare / "AGENTS.md").write_text(AGENTS + "\n", encoding="utf-8")
    # the controls: the same seeding, without --incognito (normal) and with --no-ltm
    control, control_home = tmp_path / "control", tmp_path / "control_home"
    seed_project(control, control_home)
    noltm, noltm_home = tmp_path / "noltm", tmp_path / "noltm_home"
    seed_project(noltm, noltm_home)

    trees = [seeded / ".clio", seeded_home, bare / ".clio", bare_home]
    before = [snapshot(t) for t in trees]
    control_before = snapshot(control / ".clio")
    assert before[0] and before[1] and not before[2] and len(before[3]) == 1

    def run(project: Path, home: Path, args: list[str]) -> dict[str, Any]:
        return {"args": args, "server": fake_server, "project": project, "home": home}

    r_seeded, r_bare, r_control, r_noltm = run_parallel(
        run(seeded, seeded_home, ["--incognito", "--yes", "-p", "incognito seeded task"]),
        run(bare, bare_home, ["--incognito", "--yes", "-p", "incognito bare task"]),
        run(control, control_home, ["-p", "control task"]),
        run(noltm, noltm_home, ["--no-ltm", "-p", "noltm task"]),
    )
    for r in (r_seeded, r_bare, r_control, r_noltm):
        assert r.returncode == 0, r.stderr

    # the tools still act on the project
    for tag, project, r in (("seeded", seeded, r_seeded), ("bare", bare, r_bare)):
        assert r.stdout == "wrote it\n"
        assert (project / f"made_{tag}.txt").read_text(encoding="utf-8") == f"written by the {tag} run\n"
        reqs = turn_requests(fake_server, f"incognito {tag} task")
        assert len(reqs) == 2
        system = system_text(reqs[0])
        for marker in (INSTRUCTIONS, AGENTS, FACT, PREF, TABOO):
            assert marker not in system, f"{marker!r} was sent in incognito"
        assert "You are clio" in system
        results = list(tool_results(reqs[1]).values())
        assert len(results) == 1 + len(keepers)
        assert "19999" in "".join(results)  # the shell ran (its output previewed or paged)
    # ... and clio's own trees are byte for byte what they were: nothing created, changed or removed
    after = [snapshot(t) for t in trees]
    for tree, b, a in zip(trees, before, after, strict=True):
        assert a == b, f"incognito changed {tree}: {sorted(set(a.items()) ^ set(b.items()))}"
    assert not (bare / ".clio").exists()

    assert snapshot(control / ".clio") != control_before  # a normal run does write there

    # control: the seeding does reach the prompt of a normal run
    system = system_text(turn_requests(fake_server, "control task")[0])
    for marker in (INSTRUCTIONS, AGENTS, FACT, PREF, TABOO):
        assert marker in system, f"{marker!r} missing from a normal run's prompt"

    # --no-ltm: project instructions yes, memory and preferences no, and the session is kept
    system = system_text(turn_requests(fake_server, "noltm task")[0])
    assert INSTRUCTIONS in system and AGENTS in system
    for marker in (FACT, PREF, TABOO, "LTM-MARKER", "PREF-MARKER", "TABOO-MARKER"):
        assert marker not in system, f"{marker!r} was sent with --no-ltm"
    assert len(session_dirs(noltm)) == 1
    assert [(m["role"], m["content"]) for m in all_archived(noltm)] == [
        ("user", "noltm task"),
        ("assistant", "ok"),
    ]


# ---------------------------------------------------------------- secret redaction

AWS_KEY = "AKIAZ7QW3ERT5YUI9OPL"
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
PASSWORD = "hunter2secret"
KEY_BODY = "MIIEowIBAAKCAQEA7x9Qk2cZr4mPqLwN8vT3yH6bJ1sD5fG0hK2lM4nO7pR9tUv"
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\nc3VwZXJzZWNyZXRrZXltYXRlcmlhbGZvcnRlc3Rpbmc=\n-----END RSA PRIVATE KEY-----"
DB_URL = "postgres://user:pass@host/db"
SECRETS = [AWS_KEY, GITHUB_TOKEN, PASSWORD, KEY_BODY, "PRIVATE KEY-----", "user:pass@"]
# ordinary values next to them that must come through unchanged
SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
UUID = "123e4567-e89b-12d3-a456-426614174000"
STAMP = "2024-03-15T10:22:33Z"
ORDINARY = [SHA, UUID, STAMP]


def test_secrets_never_leave_the_machine_nor_land_on_disk(fake_server: FakeServer, tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (project / "deploy.env").write_text(
        f"# deploy settings, commit {SHA}\n{PRIVATE_KEY}\nDATABASE_URL={DB_URL}\nRUN_ID={UUID}\n",
        encoding="utf-8",
    )
    request = (
        f"Deploy with AWS key {AWS_KEY} and token {GITHUB_TOKEN}\nPASSWORD={PASSWORD}\n"
        f"build {SHA}, run {UUID}, started {STAMP}"
    )
    fake_server.script(
        Reply(tool_calls=[fo("read_file", path="deploy.env")]),
        Reply(text=f"Connecting to {DB_URL} for run {UUID}."),  # the model repeats a secret
    )
    r = run_clio(["--yes", "-p", request], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "redact" in r.stderr.lower()
    assert len(fake_server.chat_requests) == 2

    # over the wire: none of the secrets, the placeholders instead, the ordinary values intact
    sent = b"".join(rec.raw for rec in fake_server.requests)
    for secret in SECRETS:
        assert secret.encode() not in sent, f"{secret!r} was sent to the endpoint"
    last = fake_server.chat_requests[-1]
    user = next(m["content"] for m in last["messages"] if m["role"] == "user")
    assert user.count("[REDACTED:") == 3, user
    for value in (SHA, UUID, STAMP, "Deploy with AWS key", "PASSWORD="):
        assert value in user
    (result,) = tool_results(last).values()
    assert result.count("[REDACTED:") == 2, result
    for value in (f"commit {SHA}", f"RUN_ID={UUID}", "DATABASE_URL=postgres://", "@host/db"):
        assert value in result

    # on disk: no file under .clio/ holds a secret; the archive holds placeholders
    files = [p for root in (project / ".clio", home) for p in root.rglob("*") if p.is_file()]
    assert files
    for p in files:
        data = p.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret!r} is in {p}"
    archived = all_archived(project)
    assert [m["role"] for m in archived] == ["user", "assistant", "tool", "assistant"]
    assert str(archived[0]["content"]).count("[REDACTED:") == 3
    assert "[REDACTED:" in str(archived[3]["content"]) and UUID in str(archived[3]["content"])
    assert STAMP in str(archived[0]["content"]) and SHA in str(archived[2]["content"])

    # the HTML export
    r = run_clio(
        ["--resume", "-p", "/session export out.html"], server=fake_server, project=project, home=home
    )
    assert r.returncode == 0, r.stderr
    html = (project / "out.html").read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in html, f"{secret!r} is in the export"
    assert html.count("[REDACTED:") >= 6
    for value in ORDINARY:
        assert value in html
    assert len(fake_server.chat_requests) == 2  # the export made no request


# secrets the model itself writes into tool arguments
STRIPE_KEY = "sk_live_" + "51HqLyjWDarjtT1zdp7dcXyZ9"
MODEL_AWS_KEY = "AKIA" + "QX4RT7YU2IO9PL3K"
SLACK_TOKEN = "xoxb-" + "2417385960-7361059284-Hq3LzP9xWmK2vR8tYc4N"


def test_secrets_in_memory_tool_arguments_do_not_land_on_disk(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    mem = "memory_operations"
    fake_server.script(
        Reply(
            tool_calls=[
                {
                    "name": mem,
                    "arguments": {"operation": "store", "key": "billing", "value": f"key {STRIPE_KEY}"},
                },
                {
                    "name": mem,
                    "arguments": {"operation": "add_discovery", "fact": f"deploy key {MODEL_AWS_KEY}"},
                },
                {
                    "name": "preferences",
                    "arguments": {
                        "operation": "add",
                        "text": f"post CI results with {SLACK_TOKEN}",
                        "score": 8,
                    },
                },
            ]
        ),
        Reply(text="stored"),
    )
    r = run_clio(
        ["--yes", "-p", "remember the deploy settings"], server=fake_server, project=project, home=home
    )
    assert r.returncode == 0, r.stderr
    results = tool_results(fake_server.turn_requests[-1])  # the run's turn (a read-back it left aside)
    assert len(results) == 3 and not any(t.lower().startswith("error") for t in results.values()), results
    sent = b"".join(rec.raw for rec in fake_server.requests)
    files = [p for root in (project / ".clio", home) for p in root.rglob("*") if p.is_file()]
    leaks = [
        f"{secret} in {where}"
        for secret in (STRIPE_KEY, MODEL_AWS_KEY, SLACK_TOKEN)
        for where, data in [("the requests", sent), *((str(p), p.read_bytes()) for p in files)]
        if secret.encode() in data
    ]
    assert leaks == []
    # what was stored is there, with the placeholder in place of the secret
    assert "key [REDACTED:" in (project / ".clio" / "memory" / "billing.json").read_text(encoding="utf-8")
    assert "deploy key [REDACTED:" in (project / ".clio" / "ltm.json").read_text(encoding="utf-8")
    assert "CI results with [REDACTED:" in (home / "preferences.json").read_text(encoding="utf-8")


# ---------------------------------------------------------------- sandbox


def test_sandbox_confines_file_tools_and_asks_before_shell(fake_server: FakeServer, tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    (tmp_path / "outside.txt").write_text("OUTSIDE-MARKER-relative\n", encoding="utf-8")
    abs_target = tmp_path / "elsewhere" / "secret.txt"
    abs_target.parent.mkdir()
    abs_target.write_text("OUTSIDE-MARKER-absolute\n", encoding="utf-8")
    (project / "link.txt").symlink_to(abs_target)
    (project / "inside.txt").write_text("INSIDE-MARKER ok\n", encoding="utf-8")
    # shell commands allowed by config: --sandbox must still ask (and one-shot without --yes refuses)
    other, allowed = tmp_path / "proj2", tmp_path / "proj3"
    for p in (other, allowed):
        (p / ".clio").mkdir(parents=True)
        (p / ".clio" / "config.yaml").write_text("approvals:\n  shell: allow\n", encoding="utf-8")

    model = ScriptedModel()
    fake_server.responder = model
    shell = {
        "name": "terminal_operations",
        "arguments": {"operation": "execute", "command": "echo hi > by_shell.txt"},
    }
    model.on(
        "sandboxed reads",
        Reply(
            tool_calls=[
                {**fo("read_file", path="../outside.txt"), "id": "c_rel"},
                {**fo("read_file", path=str(abs_target)), "id": "c_abs"},
                {**fo("read_file", path="link.txt"), "id": "c_link"},
                {**fo("read_file", path="inside.txt"), "id": "c_in"},
                {**shell, "id": "c_shell"},
            ]
        ),
        Reply(text="done"),
    )
    for trigger in ("sandboxed shell", "configured shell"):
        model.on(trigger, Reply(tool_calls=[{**shell, "id": "c_shell"}]), Reply(text="done"))
    r_yes, r_no, r_allowed = run_parallel(
        {
            "args": ["--sandbox", "--yes", "-p", "sandboxed reads"],
            "server": fake_server,
            "project": project,
            "home": home,
        },
        {
            "args": ["--sandbox", "-p", "sandboxed shell"],
            "server": fake_server,
            "project": other,
            "home": home,
        },
        {"args": ["--trust", "-p", "configured shell"], "server": fake_server, "project": allowed, "home": home},
    )
    assert r_yes.returncode == 0, r_yes.stderr
    assert r_no.returncode == 4, r_no.stderr  # the shell command was refused: nobody to approve it
    assert r_allowed.returncode == 0, r_allowed.stderr

    reqs = turn_requests(fake_server, "sandboxed reads")
    assert len(reqs) == 2
    results = tool_results(reqs[1])
    for call_id in ("c_rel", "c_abs", "c_link"):
        assert "outside the project root" in results[call_id], results[call_id]
        assert results[call_id].lower().startswith("error"), results[call_id]
    assert "INSIDE-MARKER ok" in results["c_in"]
    sent = b"".join(rec.raw for rec in fake_server.requests)
    assert b"OUTSIDE-MARKER" not in sent
    # with --yes the shell runs in the project directory
    assert (project / "by_shell.txt").read_text(encoding="utf-8") == "hi\n"

    # without --yes, one-shot: the shell command is refused and the model is told so
    reqs = turn_requests(fake_server, "sandboxed shell")
    assert len(reqs) == 2
    refusal = tool_results(reqs[1])["c_shell"]
    assert re.search(r"not allowed|refused|denied|not approved", refusal, re.I), refusal
    assert refusal.lower().startswith("error") and "--yes" in refusal
    assert not (other / "by_shell.txt").exists()
    # control: the same config without --sandbox runs it
    reqs = turn_requests(fake_server, "configured shell")
    assert len(reqs) == 2
    assert not tool_results(reqs[1])["c_shell"].lower().startswith("error")
    assert (allowed / "by_shell.txt").read_text(encoding="utf-8") == "hi\n"
