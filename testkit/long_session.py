"""A long scripted session through the INSTALLED clio: the project, the scripted model, the runner.

Used by tests/e2e/test_context.py and benches/bench_session.py. Each user message carries a tag
``[t07]`` naming its plan, a list of steps (tool calls producing large outputs, then an answer).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.clio_run import context_text, run_clio, typed
from testkit.fakeserver import FakeServer, Reply
from testkit.fakeserver_sse import common_prefix, count_prompt_tokens, messages_key

MODEL = "fake-model"  # not a tiktoken model: clio estimates with its learned chars-per-token ratio
SERVER_RATIO = 3.3  # the fake server's chars per token; clio's default is 3.5
COMPACT_MARK = "Summarise the conversation so far"  # the start of clio/prompts/compact.md
TAG = re.compile(r"^\[(\w+)\]")

# ---------------------------------------------------------------------------------------------------------
# the project clio works in


def _module_text(i: int, size: int) -> str:
    rnd = random.Random(i)
    out: list[str] = [f'"""Module {i:02d}: configuration helpers (generated for the tests)."""\n\n']
    j = 0
    while sum(map(len, out)) < size:
        words = " ".join(
            rnd.choice(["key", "value", "default", "section", "loader", "path"]) for _ in range(6)
        )
        out.append(
            f"def helper_{i}_{j}(config, key={rnd.randint(0, 9999)}):\n"
            f"    # {words}\n"
            f"    return config.get('k{rnd.randint(0, 999)}', {rnd.randint(0, 99999)}) + {j}\n\n"
        )
        j += 1
    return "".join(out)[:size]


MODULE_SIZES = [26_000, 21_000, 6_000, 29_000, 12_000, 24_000]  # tool results over 8,000 chars are stored


def big(k: int) -> str:
    """The first module from ``k`` on whose whole text is too long to stay in a tool result."""
    while MODULE_SIZES[k % 30 % len(MODULE_SIZES)] <= 9000:
        k += 1
    return f"src/mod{k % 30:02d}.py"


class Project:
    """A git repository with 30 generated modules of 6-29 KB under src/."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "src").mkdir(parents=True)
        for i in range(30):
            (root / "src" / f"mod{i:02d}.py").write_text(_module_text(i, MODULE_SIZES[i % len(MODULE_SIZES)]))
        (root / "README.md").write_text("# demo\nA config loader.\n")
        (root / ".gitignore").write_text(".clio/\n")
        self.git("init", "-q")
        self.git("config", "user.email", "dev@example.com")
        self.git("config", "user.name", "Dev")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "initial import")

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=self.root, check=True, capture_output=True, text=True
        ).stdout.strip()

    @property
    def clio_dir(self) -> Path:
        return self.root / ".clio"

    def session_dir(self) -> Path:
        dirs = sorted(p for p in (self.clio_dir / "sessions").iterdir() if p.is_dir())
        assert len(dirs) == 1, f"expected one session, found {[d.name for d in dirs]}"
        return dirs[0]

    def archive(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for chunk in sorted((self.session_dir() / "archive").glob("[0-9]*.json")):
            out += json.loads(chunk.read_text())
        return out

    def stm(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.session_dir() / "stm.json").read_text())
        return data

    def ratios(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.clio_dir / "token_ratios.json").read_text())
        return data


# ---------------------------------------------------------------------------------------------------------
# the scripted model

Step = Callable[[dict[str, Any]], Reply]


def call(name: str, **args: Any) -> Step:
    return lambda body: Reply(tool_calls=[{"name": name, "arguments": args}])


def calls(*pairs: tuple[str, dict[str, Any]]) -> Step:
    """Several tool calls in one assistant message."""
    return lambda body: Reply(tool_calls=[{"name": n, "arguments": a} for n, a in pairs])


def read(path: str) -> Step:
    return call("file_operations", operation="read_file", path=path)


def shell(command: str) -> Step:
    return call("terminal_operations", operation="execute", command=command)


_HANDLE = re.compile(r"handle '([A-Za-z0-9_]+-[0-9a-f]{8})'.*?\"offset\": (\d+)", re.S)


def page(body: dict[str, Any]) -> Reply:
    """Read the next page of the stored result the last tool message points to."""
    last = body["messages"][-1]
    m = _HANDLE.search(str(last.get("content") or ""))
    if m is None:
        raise ValueError(f"no result handle in the last message: {str(last.get('content'))[-200:]!r}")
    args = {"operation": "read_tool_result", "handle": m.group(1), "offset": int(m.group(2)), "length": 7000}
    return Reply(tool_calls=[{"name": "file_operations", "arguments": args}])


def answer(text: str) -> Step:
    return lambda body: Reply(text=text)


def last_user(body: dict[str, Any]) -> str:
    """The user's own words in the request's last user message (clio's recall block left out)."""
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return typed(str(msg.get("content") or ""))
    return ""


@dataclass
class ScriptedModel:
    """The fake server's responder: plays the plan named by the tag of the latest user message."""

    plans: dict[str, list[Step]]
    compact_text: str = "Compact summary: the user wants the loader fixed; src/fallback.py was added."
    pos: dict[str, int] = field(default_factory=dict)
    replies: list[tuple[str, Reply]] = field(default_factory=list)  # (tag, reply) per answered request
    problems: list[str] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        user = last_user(body)
        if user.startswith(COMPACT_MARK):
            reply = Reply(text=self.compact_text)
            self.replies.append(("compact", reply))
            return reply
        m = TAG.match(user)
        if m is None or m.group(1) not in self.plans:
            self.problems.append(f"no plan for the latest user message {user[:80]!r}")
            return Reply(text="(no plan)")
        tag = m.group(1)
        plan, i = self.plans[tag], self.pos.get(tag, 0)
        if i and body["messages"][-1].get("role") != "tool":
            self.problems.append(f"{tag} step {i}: the request does not end with a tool result")
        if i >= len(plan):
            self.problems.append(f"{tag}: asked again after the final answer")
            i = len(plan) - 1
        self.pos[tag] = i + 1
        try:
            reply = plan[i](body)
        except ValueError as exc:  # the conversation is not what the plan expects
            self.problems.append(f"{tag} step {i}: {exc}")
            reply = Reply(text="(lost)")
        self.replies.append((tag, reply))
        return reply

    def turn(self, tag: str, steps: list[Step]) -> None:
        self.plans[tag] = steps


def main_session_turns(n: int) -> list[tuple[str, str, list[Step]]]:
    """(tag, user text, plan) of a coding session: large reads, shell output paged, an error and its
    fix, a commit, parallel calls; turn 0 is the original task and reads src/mod00.py first."""
    turns: list[tuple[str, str, list[Step]]] = [
        (
            "t00",
            "Original task: make the config loader in src/mod00.py tolerate missing keys. Start by reading it.",
            [
                call(
                    "todo_operations", operation="write", items=["read the loader", "add fallback", "commit"]
                ),
                read("src/mod00.py"),
                answer("The loader in src/mod00.py reads keys without defaults."),
            ],
        ),
        (
            "t01",
            "Check the plan notes in notes/plan.md before changing anything.",
            [
                read("notes/plan.md"),
                call(
                    "file_operations",
                    operation="create_file",
                    path="notes/plan.md",
                    content="# Plan\n- fallback\n",
                ),
                read("notes/plan.md"),
                answer("notes/plan.md did not exist; I created it with the plan."),
            ],
        ),
        (
            "t02",
            "Show me src/mod01.py through the shell, then the next page of it.",
            [shell("cat src/mod01.py"), page, answer("src/mod01.py defines the helpers.")],
        ),
        (
            "t03",
            "Add the fallback helper in src/fallback.py and commit it.",
            [
                call(
                    "file_operations",
                    operation="create_file",
                    path="src/fallback.py",
                    content="def fallback(config, key, default=None):\n    return config.get(key, default)\n",
                ),
                call(
                    "version_control",
                    operation="commit",
                    message="Add fallback helper for missing config keys",
                ),
                answer("Committed the fallback helper."),
            ],
        ),
    ]
    k = 2
    while len(turns) < n - 1:
        i = len(turns)
        a, b = f"src/mod{k % 30:02d}.py", f"src/mod{(k + 1) % 30:02d}.py"
        kind = i % 4
        if kind == 0:
            turns.append(
                (f"t{i:02d}", f"Review {a} for missing-key handling.", [read(a), answer(f"{a} reviewed.")])
            )
        elif kind == 1:
            c = big(k)
            steps = [shell(f"cat {c}"), page, answer(f"{c} paged through.")]
            turns.append((f"t{i:02d}", f"Print {c} with cat and page through it.", steps))
        elif kind == 2:
            steps = [
                calls(
                    ("file_operations", {"operation": "read_file", "path": a}),
                    ("file_operations", {"operation": "read_file", "path": b}),
                ),
                answer(f"Compared {a} and {b}."),
            ]
            turns.append((f"t{i:02d}", f"Compare {a} with {b}.", steps))
            k += 1
        else:
            steps = [
                call(
                    "file_operations",
                    operation="grep_search",
                    pattern="def helper_",
                    path="src",
                    max_results=40,
                ),
                read(a),
                answer(f"Found the helpers; {a} read."),
            ]
            turns.append((f"t{i:02d}", f"Find every helper definition, then read {a}.", steps))
        k += 1
    turns.append(
        (
            "t99",
            "What was the original task again, and which file did we read first?",
            [answer("See summary.")],
        )
    )
    return turns


# ---------------------------------------------------------------------------------------------------------
# running clio


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Dev",
    "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev",
    "GIT_COMMITTER_EMAIL": "dev@example.com",
}


class Clio:
    """Runs the installed clio one-shot in the project against the server (through the one runner,
    ``testkit.clio_run.run_clio``, with a git identity: the scenario commits)."""

    def __init__(self, project: Project, server: FakeServer, home: Path, window: int) -> None:
        self.project = project
        self.server = server
        self.home = home
        self.window = window
        self.runs: list[subprocess.CompletedProcess[str]] = []
        # one session resumed run after run, about the window: no background read-back requests
        # (clio.app.background) among the ones these tests read
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.yaml").write_text("consolidate: false\n", encoding="utf-8")

    def __call__(self, text: str, *, resume: bool = True) -> subprocess.CompletedProcess[str]:
        args = ["--model", MODEL, "--context-window", str(self.window), "--yes"]
        if resume:
            args.append("--resume")
        proc = run_clio(
            [*args, "-p", text],
            server=self.server,
            project=self.project.root,
            home=self.home,
            env_extra=GIT_IDENTITY,
            timeout=120,
        )
        self.runs.append(proc)
        return proc

    def context(self) -> dict[str, Any]:
        proc = self("/context --json")
        assert proc.returncode == 0, proc.stderr
        data: dict[str, Any] = json.loads(proc.stdout)
        return data


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (
        f"exit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-3000:]}"
    )
    return proc.stdout


# ---------------------------------------------------------------------------------------------------------
# reading what the server saw


def rejected(server: FakeServer, body: dict[str, Any]) -> bool:
    """Whether the server's length gate rejected this request (the gate is deterministic)."""
    limit = server.context_limit
    completion = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
    return limit is not None and server.prompt_tokens(body) + completion > limit


def summary_of(body: dict[str, Any]) -> str:
    """The ``<thread_summary>`` block of a request ("" if none)."""
    m = re.search(r"<thread_summary>\n.*?</thread_summary>", context_text(body), re.S)
    return m.group(0) if m else ""


def longest_rejection_run(flags: list[bool]) -> int:
    best = run = 0
    for f in flags:
        run = run + 1 if f else 0
        best = max(best, run)
    return best


def prefix_share(prev: dict[str, Any], cur: dict[str, Any]) -> float:
    """Share of ``cur``'s serialized messages that repeats ``prev``'s from the first byte."""
    a, b = messages_key(prev), messages_key(cur)
    return common_prefix(a, b) / len(b) if b else 0.0


def extends(prev: dict[str, Any], cur: dict[str, Any]) -> bool:
    """``cur``'s serialized messages begin with all of ``prev``'s (minus the closing bracket)."""
    a, b = messages_key(prev), messages_key(cur)
    return b.startswith(a[:-1]) and len(b) > len(a)


def server_tokens(server: FakeServer, messages: list[dict[str, Any]], tools: Any) -> int:
    body: dict[str, Any] = {"messages": messages}
    if tools:
        body["tools"] = tools
    return count_prompt_tokens(body, server.chars_per_token)
