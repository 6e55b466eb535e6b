"""``version_control``: git in the project root through gitpython.

Operations: status, diff, log, branch, commit, stash, blame, tag. Anything that changes the
repository goes through ``ctx.approve("git", ...)``. Paths go through ``resolve_path``; in
sandbox mode a repository whose work tree lies above the project root is refused.
Also ``recent_git_activity`` for the context engine's recovery message.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import git

from clio.tools.paths import resolve_path
from clio.tools.registry import (
    Handler,
    Lean,
    ToolContext,
    ToolError,
    declined,
    dispatch,
    need,
    operation_schema,
    tool,
)

__all__ = ["recent_git_activity", "version_control"]

MAX_OUTPUT = 60_000
MAX_BLAME_LINES = 400
MAX_LOG = 200


def _repo(ctx: ToolContext) -> git.Repo:
    try:
        repo = git.Repo(ctx.root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ToolError(
            f"{ctx.root} is not a git repository; run `git init` with terminal_operations if one is wanted"
        ) from None
    if repo.working_tree_dir is None:
        raise ToolError(f"{ctx.root} is inside a bare git repository; there is no work tree")
    top = Path(repo.working_tree_dir).resolve()
    if ctx.sandbox and top != ctx.root.resolve():
        raise ToolError(
            f"the git repository at {top} is larger than the project root {ctx.root.resolve()}; "
            "git is refused outside the project root (sandbox mode)"
        )
    return repo


def _rel(ctx: ToolContext, repo: git.Repo, path: str) -> str:
    p = resolve_path(ctx, path)
    top = Path(str(repo.working_tree_dir)).resolve()
    try:
        return p.relative_to(top).as_posix() or "."
    except ValueError:
        raise ToolError(f"{path} is outside the git repository at {top}") from None


def _cap(text: str, hint: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    cut = text[:MAX_OUTPUT]
    cut = cut[: cut.rfind("\n") + 1] or cut
    return f"{cut}[... {len(text) - len(cut):,} more chars; {hint}]"


def _approve(ctx: ToolContext, summary: str) -> None:
    if not ctx.approve("git", summary):
        raise declined(ctx, summary)


def _has_commits(repo: git.Repo) -> bool:
    try:
        repo.head.commit  # noqa: B018
    except ValueError:
        return False
    return True


def _status(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    out = repo.git.status("--short", "--branch", "--untracked-files=all")
    lines = out.splitlines()
    if len(lines) <= 1:
        lines.append("(working tree clean)")
    return _cap("\n".join(lines), "pass a path to diff to narrow")


def _diff(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    opts = ["--cached"] if args.get("staged") else []
    paths = [_rel(ctx, repo, args["path"])] if args.get("path") else []
    out = repo.git.diff(*opts, "--", *paths)
    notes = []
    if not args.get("staged") and not paths:
        untracked = repo.untracked_files
        if untracked:
            names = ", ".join(untracked[:20]) + (" ..." if len(untracked) > 20 else "")
            notes.append(f"untracked (not in the diff): {names}")
    if not out:
        where = "staged" if args.get("staged") else "unstaged"
        out = f"no {where} changes" + (f" in {paths[0]}" if paths else "")
        if not args.get("staged") and repo.git.diff("--cached", "--name-only"):
            out += " (there are staged changes: use staged=true)"
    return _cap("\n".join([out, *notes]), "pass a path to narrow the diff")


def _log(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    if not _has_commits(repo):
        return "no commits yet"
    n = args.get("max_count")
    n = 10 if n is None else max(1, min(need(args, "max_count", int), MAX_LOG))
    paths = [_rel(ctx, repo, args["path"])] if args.get("path") else []
    out = repo.git.log(f"-n{n}", "--date=short", "--format=%h %ad %an %s", "--", *paths)
    return out or "no commits touch that path"


def _branch(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    name = args.get("name")
    if not name:
        out = repo.git.branch("--list", "-vv")
        return out or "no branches yet (no commits)"
    if not isinstance(name, str):
        raise ToolError("'name' must be a string")
    exists = name in [h.name for h in repo.heads]
    if args.get("checkout"):
        _approve(ctx, f"git checkout {'' if exists else '-b '}{name}")
        if exists:
            repo.git.checkout(name)
            return f"switched to branch {name}"
        repo.git.checkout("-b", name)
        return f"created branch {name} and switched to it"
    if exists:
        raise ToolError(f"branch {name} already exists; pass checkout=true to switch to it")
    _approve(ctx, f"git branch {name}")
    repo.git.branch(name)
    return f"created branch {name} (still on {_current(repo)})"


def _current(repo: git.Repo) -> str:
    try:
        return repo.active_branch.name
    except TypeError:
        return f"detached HEAD at {repo.head.commit.hexsha[:7]}"


def _commit(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    message = need(args, "message").strip()
    if not message:
        raise ToolError("'message' is empty")
    raw_paths = args.get("paths") or []
    if not isinstance(raw_paths, list) or not all(isinstance(p, str) for p in raw_paths):
        raise ToolError("'paths' must be a list of strings")
    paths = [_rel(ctx, repo, p) for p in raw_paths]
    what = ", ".join(paths) if paths else "all changes"
    _approve(ctx, f"git commit ({what}): {message.splitlines()[0]}")
    if paths:
        repo.git.add("-A", "--", *paths)
        if not repo.git.diff("--cached", "--name-only", "--", *paths) and _has_commits(repo):
            raise ToolError(f"nothing to commit in {what}")
        repo.git.commit("-m", message, "--", *paths)
    else:
        repo.git.add("-A")
        if _has_commits(repo) and not repo.git.diff("--cached", "--name-only"):
            raise ToolError("nothing to commit; the working tree is clean")
        repo.git.commit("-m", message)
    short = repo.git.rev_parse("--short", "HEAD")
    stat = repo.git.show("--stat", "--format=", "HEAD").strip().splitlines()
    summary = stat[-1].strip() if stat else ""
    return f"[{short}] {message.splitlines()[0]}\n{summary}".rstrip()


def _stash(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    action = args.get("action") or "list"
    if action == "list":
        return repo.git.stash("list") or "no stashes"
    if action == "push":
        msg = args.get("message")
        _approve(ctx, "git stash push" + (f": {msg}" if msg else ""))
        out = repo.git.stash("push", *(["-m", str(msg)] if msg else []))
        return out or "stashed"
    if action == "pop":
        _approve(ctx, "git stash pop")
        return repo.git.stash("pop") or "popped the latest stash"
    raise ToolError(f"unknown stash action {action!r}; use push, pop or list")


def _blame(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    rel = _rel(ctx, repo, need(args, "path"))
    if not _has_commits(repo):
        return "no commits yet"
    opts = ["--date=short"]
    start = args.get("start_line")
    end = args.get("end_line")
    if start is not None or end is not None:
        a = need(args, "start_line", int) if start is not None else 1
        b = need(args, "end_line", int) if end is not None else a + MAX_BLAME_LINES - 1
        if a < 1 or b < a:
            raise ToolError("start_line must be >= 1 and end_line >= start_line")
        opts += ["-L", f"{a},{b}"]
    out = repo.git.blame(*opts, "--", rel)
    lines = out.splitlines()
    if len(lines) > MAX_BLAME_LINES:
        more = len(lines) - MAX_BLAME_LINES
        return "\n".join(lines[:MAX_BLAME_LINES]) + f"\n[... {more} more lines; use start_line/end_line]"
    return out


def _tag(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    name = args.get("name")
    if not name:
        return repo.git.tag("--list", "-n1") or "no tags"
    if not isinstance(name, str):
        raise ToolError("'name' must be a string")
    msg = args.get("message")
    _approve(ctx, f"git tag {name}")
    if msg:
        repo.git.tag("-a", name, "-m", str(msg))
    else:
        repo.git.tag(name)
    return f"created tag {name} at {repo.git.rev_parse('--short', 'HEAD')}"


_OPS = {
    "status": _status,
    "diff": _diff,
    "log": _log,
    "branch": _branch,
    "commit": _commit,
    "stash": _stash,
    "blame": _blame,
    "tag": _tag,
}


GitOp = Callable[[ToolContext, git.Repo, dict[str, Any]], str]


def _with_repo(op: str, fn: GitOp) -> Handler:
    """A registry handler that opens the repository and turns git failures into ToolErrors."""

    def run(ctx: ToolContext, args: dict[str, Any]) -> str:
        repo = _repo(ctx)
        try:
            with repo.git.custom_environment(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat"):
                return fn(ctx, repo, args)
        except git.GitCommandError as exc:
            err = (
                str(exc.stderr or exc.stdout or exc)
                .strip()
                .removeprefix("stderr:")
                .strip()
                .strip("'")
                .strip()
            )
            raise ToolError(f"git {op} failed: {err}") from None
        finally:
            repo.close()

    return run


_HANDLERS = {name: _with_repo(name, fn) for name, fn in _OPS.items()}


@tool(
    "version_control",
    "Git in the project root. commit: all changes unless paths given. stash action: push/pop/list. "
    "branch/tag without name: list.",
    operation_schema(
        list(_OPS),
        {
            "path": {"type": "string"},
            "paths": {"type": "array", "items": {"type": "string"}},
            "staged": {"type": "boolean"},
            "max_count": {"type": "integer"},
            "name": {"type": "string"},
            "checkout": {"type": "boolean"},
            "message": {"type": "string"},
            "action": {"type": "string", "enum": ["push", "pop", "list"]},
            "start_line": {"type": "integer"},
            "end_line": {"type": "integer"},
        },
    ),
    lean=Lean(
        "Git in the project root. commit: all changes.",
        ("status", "diff", "log", "commit"),
        ("path", "message"),
    ),
)
def version_control(ctx: ToolContext, args: dict[str, Any]) -> str:
    return dispatch(_HANDLERS, ctx, args)


def recent_git_activity(root: Path, n: int = 5) -> str:
    """The last ``n`` commits and a short working-tree status; "" when ``root`` is not a repository."""
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, OSError):
        return ""
    try:
        parts = []
        if _has_commits(repo):
            log = repo.git.log(f"-n{max(1, n)}", "--date=short", "--format=%h %ad %an %s")
            parts.append("Recent commits:\n" + log)
        status = repo.git.status("--short", "--branch").splitlines()
        if len(status) > 21:
            status = status[:21] + [f"... {len(status) - 21} more changed files"]
        parts.append("Working tree:\n" + ("\n".join(status) if len(status) > 1 else status[0] + "\n(clean)"))
        return "\n".join(parts)
    except (git.GitCommandError, ValueError, OSError, IndexError):
        return ""
    finally:
        repo.close()
