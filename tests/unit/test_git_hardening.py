"""Git run by clio never executes programs the repository controls; the commit tool stages only
what it should; ``.clio/`` gets its own ``.gitignore``.

Each planted program (fsmonitor, hooks, external diff, textconv, filter and merge drivers, pager,
gpg) is a script that creates a marker file. A control run of plain git shows the plants work, so
the assertions that no marker appears under clio can fail.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import git
import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.paths import GITIGNORE_TEXT, Paths, ensure_clio_gitignore, ensure_dir
from clio.store.atomic import FileLock, atomic_write_json, atomic_write_text
from clio.tools.context import ToolContext
from clio.tools.git_env import _program_overrides, _with_config, git_env
from clio.tools.git_repo import recent_git_activity
from clio.tools.registry import REGISTRY

HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "post-checkout",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "post-rewrite",
    "post-merge",
)


class Approver:
    """Says ``answer`` to ordinary approvals and ``hooks`` to destructive ones (running hooks)."""

    def __init__(self, answer: bool = True, hooks: bool = False) -> None:
        self.answer = answer
        self.hooks = hooks
        self.calls: list[tuple[str, str, bool]] = []

    def __call__(self, kind: str, summary: str, *, destructive: bool = False) -> bool:
        self.calls.append((kind, summary, destructive))
        return self.hooks if destructive else self.answer


def vc(ctx: ToolContext, **args: Any) -> str:
    out, good = REGISTRY.run(ctx, "version_control", json.dumps(args))
    assert good, out
    return out


def vc_err(ctx: ToolContext, **args: Any) -> str:
    out, good = REGISTRY.run(ctx, "version_control", json.dumps(args))
    assert not good, out
    return out


def fo(ctx: ToolContext, **args: Any) -> str:
    out, good = REGISTRY.run(ctx, "file_operations", json.dumps(args))
    assert good, out
    return out


def _spy(bin_dir: Path, markers: Path, name: str, tail: str = "") -> str:
    """A script that leaves ``markers/<name>`` behind (then runs ``tail``); returns its path."""
    script = bin_dir / f"spy-{name}"
    script.write_text(f'#!/bin/sh\ntouch "{markers}/{name}"\n{tail}\n')
    script.chmod(0o755)
    return str(script)


def _plain_git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=False)


def _markers(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


@pytest.fixture
def trap(tmp_path: Path) -> tuple[git.Repo, Path]:
    """A repository with one commit, then every repository-controlled program planted."""
    markers = tmp_path / "markers"
    markers.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    root = Path(str(repo.working_tree_dir))
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Test User")
        cw.set_value("user", "email", "test@example.com")
        cw.set_value("commit", "gpgsign", "false")
    (root / "a.txt").write_text("l1\nl2\nl3\n")
    (root / "b.txt").write_text("b\n")
    (root / "c.md").write_text("c\n")  # no attributes: diff.external applies to it
    repo.git.add("-A")
    repo.git.commit("-m", "base")
    # the plants
    (root / ".gitattributes").write_text("*.txt filter=evil diff=evil merge=evil\n")
    repo.git.add(".gitattributes")
    repo.git.commit("-m", "attributes")
    with repo.config_writer() as cw:
        cw.set_value("core", "fsmonitor", _spy(bin_dir, markers, "fsmonitor"))
        cw.set_value("core", "pager", _spy(bin_dir, markers, "pager", "cat"))
        cw.set_value("core", "sshCommand", _spy(bin_dir, markers, "ssh"))
        cw.set_value("core", "askPass", _spy(bin_dir, markers, "askpass"))
        cw.set_value("diff", "external", _spy(bin_dir, markers, "diff-external"))
        cw.set_value('diff "evil"', "command", _spy(bin_dir, markers, "diff-command"))
        cw.set_value('diff "evil"', "textconv", _spy(bin_dir, markers, "textconv", 'cat "$1"'))
        cw.set_value('filter "evil"', "clean", _spy(bin_dir, markers, "clean", "cat"))
        cw.set_value('filter "evil"', "smudge", _spy(bin_dir, markers, "smudge", "cat"))
        cw.set_value('filter "evil"', "required", "true")
        cw.set_value('merge "evil"', "driver", _spy(bin_dir, markers, "merge", "exit 1"))
        cw.set_value("gpg", "program", _spy(bin_dir, markers, "gpg", "exit 1"))
        cw.set_value("tag", "gpgSign", "true")
        cw.set_value("log", "showSignature", "true")
        cw.set_value("credential", "helper", _spy(bin_dir, markers, "credential"))
    hooks_dir = Path(repo.git_dir) / "hooks"
    for hook in HOOKS:
        (hooks_dir / hook).write_text(f'#!/bin/sh\ntouch "{markers}/hook-{hook}"\n')
        (hooks_dir / hook).chmod(0o755)
    return repo, markers


def test_plants_fire_under_plain_git(trap: tuple[git.Repo, Path]) -> None:
    """The control: the same repository runs the planted programs when git is run plainly."""
    repo, markers = trap
    root = Path(str(repo.working_tree_dir))
    (root / "a.txt").write_text("l1\nchanged\nl3\n")
    (root / "c.md").write_text("c2\n")
    _plain_git(root, "status")
    _plain_git(root, "diff", "--", "a.txt")
    _plain_git(root, "diff", "--", "c.md")
    _plain_git(root, "diff", "--no-ext-diff", "--", "a.txt")
    _plain_git(root, "commit", "-am", "plain")
    got = set(_markers(markers))
    planted = {"fsmonitor", "diff-command", "diff-external", "textconv", "clean"}
    assert planted | {"hook-pre-commit", "hook-post-commit"} <= got


def test_no_operation_runs_repository_programs(trap: tuple[git.Repo, Path]) -> None:
    repo, markers = trap
    root = Path(str(repo.working_tree_dir))
    ap = Approver(answer=True, hooks=False)
    ctx = ToolContext(root=root, approve=ap)

    (root / "a.txt").write_text("l1\nchanged\nl3\n")
    (root / "c.md").write_text("c2\n")
    assert " M a.txt" in vc(ctx, operation="status")
    diff = vc(ctx, operation="diff")
    assert "-l2\n+changed" in diff and "-c\n+c2" in diff  # git's own diff, not the planted ones
    assert vc(ctx, operation="diff", path="a.txt").count("+changed") == 1
    assert "base" in vc(ctx, operation="log")
    assert "attributes" in vc(ctx, operation="log", path=".gitattributes")
    assert "main" in vc(ctx, operation="branch")
    vc(ctx, operation="branch", name="side")
    vc(ctx, operation="stash", action="push", message="wip")
    assert (root / "a.txt").read_text() == "l1\nl2\nl3\n"
    assert "wip" in vc(ctx, operation="stash", action="list")
    vc(ctx, operation="branch", name="side", checkout=True)
    vc(ctx, operation="branch", name="main", checkout=True)
    vc(ctx, operation="stash", action="pop")
    assert (root / "a.txt").read_text() == "l1\nchanged\nl3\n"
    assert "changed" in vc(ctx, operation="blame", path="a.txt")
    vc(ctx, operation="diff", staged=True)
    out = vc(ctx, operation="commit", message="change a", paths=["a.txt"])
    assert "hooks not run (not approved)" in out and "pre-commit" in out
    (root / "b.txt").write_text("b2\n")
    fo(ctx, operation="create_file", path="new.txt", content="n\n")
    out = vc(ctx, operation="commit", message="tracked and created")
    assert "b.txt (modified)" in out and "c.md (modified)" in out and "new.txt (new)" in out
    vc(ctx, operation="tag", name="v1", message="release")
    vc(ctx, operation="tag", name="v1-light")
    assert "v1" in vc(ctx, operation="tag")
    assert "Recent commits" in recent_git_activity(root)
    # the hooks were offered to the user as a destructive question, and declined
    assert any(kind == "git" and "commit hooks" in s and d for kind, s, d in ap.calls)
    assert _markers(markers) == []


def test_approved_hooks_run_only_on_commit(trap: tuple[git.Repo, Path]) -> None:
    repo, markers = trap
    root = Path(str(repo.working_tree_dir))
    ctx = ToolContext(root=root, approve=Approver(answer=True, hooks=True))
    (root / "a.txt").write_text("x\n")
    vc(ctx, operation="status")
    assert _markers(markers) == []
    out = vc(ctx, operation="commit", message="with hooks", paths=["a.txt"])
    assert "hooks not run" not in out
    got = _markers(markers)
    assert "hook-pre-commit" in got and "hook-commit-msg" in got and "hook-post-commit" in got
    # the other plants stay off even with hooks approved
    assert not {"fsmonitor", "clean", "diff-external", "textconv", "pager"} & set(got)


def test_hooks_path_in_work_tree_needs_approval(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    root = Path(str(repo.working_tree_dir))
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "T")
        cw.set_value("user", "email", "t@example.com")
        cw.set_value("core", "hooksPath", ".githooks")
    (root / ".githooks").mkdir()
    hook = root / ".githooks" / "pre-commit"
    hook.write_text(f'#!/bin/sh\ntouch "{markers}/pre-commit"\n')
    hook.chmod(0o755)
    (root / "f").write_text("f\n")
    ap = Approver(answer=True, hooks=False)
    out = vc(ToolContext(root=root, approve=ap), operation="commit", message="m", paths=["f"])
    assert "hooks not run (not approved): pre-commit" in out
    assert _markers(markers) == []
    (root / "f").write_text("g\n")
    vc(ToolContext(root=root, approve=Approver(hooks=True)), operation="commit", message="m2", paths=["f"])
    assert _markers(markers) == ["pre-commit"]


def test_no_hooks_no_question(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    root = Path(str(repo.working_tree_dir))
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "T")
        cw.set_value("user", "email", "t@example.com")
    for sample in (Path(repo.git_dir) / "hooks").glob("*"):
        sample.unlink()
    (root / "f").write_text("f\n")
    ap = Approver()
    vc(ToolContext(root=root, approve=ap), operation="commit", message="m", paths=["f"])
    assert [c for c in ap.calls if c[2]] == []


# -- the environment -------------------------------------------------------------------------


def test_repository_program_keys_fall_back_to_the_users_values() -> None:
    entries = [
        ("global", "filter.lfs.clean", "git-lfs clean -- %f"),
        ("global", "filter.lfs.smudge", "git-lfs smudge -- %f"),
        ("local", "filter.lfs.clean", "evil-clean"),
        ("local", "filter.evil.process", "evil-process"),
        ("local", "diff.evil.textconv", "evil-textconv"),
        ("local", "core.sshcommand", "evil-ssh"),
        ("global", "gpg.program", "gpg2"),
        ("local", "gpg.program", "evil-gpg"),
        ("local", "core.editor", "vim"),  # not a key this table handles (GIT_EDITOR covers it)
        ("local", "merge.evil.driver", "evil-merge"),
    ]
    got = dict(_program_overrides(entries))
    assert got == {
        "filter.lfs.clean": "git-lfs clean -- %f",
        "filter.evil.process": "",
        "diff.evil.textconv": "cat",
        "core.sshcommand": "ssh",
        "gpg.program": "gpg2",
        "merge.evil.driver": "false",
    }
    # a repository naming the signing program with no user choice turns signing off
    assert ("commit.gpgSign", "false") in _program_overrides([("local", "gpg.program", "evil")])
    # the user's own setting is left alone
    assert _program_overrides([("global", "core.sshcommand", "my-ssh")]) == []


def test_config_overrides_come_after_the_users() -> None:
    env = _with_config(
        {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "a.b", "GIT_CONFIG_VALUE_0": "1"}, [("c.d", "2")]
    )
    assert env["GIT_CONFIG_COUNT"] == "2"
    assert (env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_KEY_1"], env["GIT_CONFIG_VALUE_1"]) == (
        "a.b",
        "c.d",
        "2",
    )


def test_git_env_overrides_outrank_the_repository(trap: tuple[git.Repo, Path]) -> None:
    repo, _markers_dir = trap
    root = Path(str(repo.working_tree_dir))

    def effective(key: str, env: dict[str, str]) -> str:
        return subprocess.run(
            ["git", "config", "--get", key], cwd=root, env=env, capture_output=True, text=True, check=False
        ).stdout.strip()

    env = git_env(root)
    assert effective("core.fsmonitor", env) == "false"
    assert effective("core.hooksPath", env) == "/dev/null"
    assert effective("filter.evil.clean", env) == ""
    assert effective("filter.evil.required", env) == "false"
    assert effective("core.sshCommand", env) == "ssh"
    assert env["GIT_ALLOW_PROTOCOL"] == "none" and env["GIT_PAGER"] == "cat"
    assert effective("core.hooksPath", git_env(root, hooks=True)) == ""  # approved hooks: the repo's own


# -- commit staging --------------------------------------------------------------------------


@pytest.fixture
def plain(tmp_path: Path) -> git.Repo:
    repo = git.Repo.init(tmp_path / "repo", initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "T")
        cw.set_value("user", "email", "t@example.com")
        cw.set_value("commit", "gpgsign", "false")
    root = Path(str(repo.working_tree_dir))
    (root / "tracked.py").write_text("1\n")
    (root / "gone.py").write_text("g\n")
    repo.git.add("-A")
    repo.git.commit("-m", "base")
    return repo


def _committed(repo: git.Repo) -> set[str]:
    return set(repo.git.diff_tree("--no-commit-id", "--name-only", "-r", "HEAD").split())


def test_commit_stages_tracked_and_clio_created_files_only(plain: git.Repo) -> None:
    root = Path(str(plain.working_tree_dir))
    ap = Approver()
    ctx = ToolContext(root=root, approve=ap)
    (root / "tracked.py").write_text("2\n")
    (root / "gone.py").unlink()
    (root / "secret.env").write_text("TOKEN=x\n")  # the user's, not clio's
    (root / ".clio").mkdir()  # clio's state without its .gitignore (an older project)
    (root / ".clio" / "history").write_text("token typed here\n")
    fo(ctx, operation="create_file", path="pkg/new.py", content="n\n")
    fo(ctx, operation="write_file", path="made.py", content="m\n")
    fo(ctx, operation="create_file", path="old_name.py", content="o\n")
    fo(ctx, operation="rename_file", path="old_name.py", new_path="renamed.py")
    out = vc(ctx, operation="commit", message="work")
    assert _committed(plain) == {"tracked.py", "gone.py", "pkg/new.py", "made.py", "renamed.py"}
    assert "not staged (untracked, not created by clio): secret.env" in out
    assert "gone.py (deleted)" in out and "pkg/new.py (new)" in out
    summary = ap.calls[-1][1]
    assert summary.startswith("git commit (2 tracked changes; new files created by clio: ")
    assert "secret.env" not in summary
    assert sorted(plain.untracked_files) == [".clio/history", "secret.env"]


def test_commit_never_takes_clio_state(plain: git.Repo) -> None:
    root = Path(str(plain.working_tree_dir))
    ctx = ToolContext(root=root)
    (root / ".clio").mkdir()
    (root / ".clio" / "history").write_text("secret\n")
    (root / "tracked.py").write_text("3\n")
    out = vc_err(ctx, operation="commit", message="m", paths=[".clio/history"])
    assert ".clio/ is clio's own state" in out
    vc(ctx, operation="commit", message="everything", paths=["."])
    assert _committed(plain) == {"tracked.py"}
    # a .clio file already tracked (committed by an older clio) is left out and reported
    plain.git.add("-f", ".clio/history")
    plain.git.commit("-m", "old mistake")
    (root / ".clio" / "history").write_text("more secret\n")
    (root / "tracked.py").write_text("4\n")
    out = vc(ctx, operation="commit", message="next")
    assert _committed(plain) == {"tracked.py"}
    assert "git rm -r --cached .clio" in out
    assert "nothing to commit" in vc_err(ctx, operation="commit", message="again")


def test_commit_with_only_foreign_untracked_files_asks_nothing(plain: git.Repo) -> None:
    root = Path(str(plain.working_tree_dir))
    ap = Approver()
    (root / "stray.txt").write_text("s\n")
    out = vc_err(ToolContext(root=root, approve=ap), operation="commit", message="m")
    assert "not staged: stray.txt" in out and ap.calls == []


# -- .clio/.gitignore --------------------------------------------------------------------------


def test_clio_dir_gets_a_gitignore_on_first_write(plain: git.Repo) -> None:
    root = Path(str(plain.working_tree_dir))
    atomic_write_json(root / ".clio" / "sessions" / "s1" / "session.json", {"id": "s1"})
    with FileLock(root / ".clio" / "ltm.json"):
        pass
    assert (root / ".clio" / ".gitignore").read_text() == GITIGNORE_TEXT
    assert _plain_git(root, "status", "--porcelain", "--untracked-files=all").stdout == ""


def test_existing_clio_dir_gets_it_on_next_write_and_user_edits_are_kept(tmp_path: Path) -> None:
    clio_dir = tmp_path / ".clio"
    clio_dir.mkdir()
    with FileLock(clio_dir / "x.json"):
        pass
    assert (clio_dir / ".gitignore").read_text() == GITIGNORE_TEXT
    (clio_dir / ".gitignore").write_text("*\n!config.yaml\n")
    atomic_write_text(clio_dir / "memory" / "n.json", "{}")
    assert (clio_dir / ".gitignore").read_text() == "*\n!config.yaml\n"
    (clio_dir / ".gitignore").unlink()
    (clio_dir / ".gitignore").symlink_to(tmp_path / "elsewhere")
    assert not ensure_clio_gitignore(clio_dir)  # never written through a link
    assert not (tmp_path / "elsewhere").exists()


def test_paths_ensure_clio_dir_and_unrelated_dirs(tmp_path: Path) -> None:
    paths = Paths(root=tmp_path, cwd=tmp_path, home=tmp_path / "home")
    assert paths.ensure_clio_dir() == tmp_path / ".clio"
    assert (tmp_path / ".clio" / ".gitignore").exists()
    ensure_dir(tmp_path / "other" / "deep")
    assert not (tmp_path / "other" / ".gitignore").exists()


def test_file_tool_writes_make_no_gitignore(tmp_path: Path) -> None:
    """The file tool writes on the user's behalf (incognito too): no clio state appears."""
    ctx = ToolContext(root=tmp_path, approve=Approver(answer=True, hooks=True))
    fo(ctx, operation="create_file", path=".clio/instructions.md", content="be brief\n")
    assert (tmp_path / ".clio" / "instructions.md").exists()
    assert not (tmp_path / ".clio" / ".gitignore").exists()
