"""``version_control``: git in the project root through gitpython.

Operations: status, diff, log, branch, commit, stash, blame, tag, and the tool's spec.
Anything that changes the repository goes through ``ctx.approve("git", ...)``. The repository is
opened per call by ``clio.tools.git_repo`` (hardened: git run from here never executes programs
the repository controls, ``clio.tools.git_env``; in sandbox mode a repository whose work tree
lies above the project root is refused); paths go through ``resolve_path`` there.

commit stages what it is asked to (``paths``), or with no paths the tracked changes plus the
files clio created this session (``ctx.created_files``); never ``.clio/``; it reports what it
staged and which untracked files it left out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio import actions as A
from clio.tools.context import ToolContext, ToolError, declined, need
from clio.tools.git_env import COMMIT_HOOKS, NO_EXT, git_env
from clio.tools.git_repo import has_commits, repo_relative, with_repo
from clio.tools.registry import register
from clio.tools.spec import CHANGE, READ, Check, Lean, Op, ToolSpec

if TYPE_CHECKING:
    import git  # gitpython costs ~50 ms to import: loaded when a git operation first runs

__all__ = ["SPEC"]

MAX_OUTPUT = 60_000
MAX_BLAME_LINES = 400
MAX_LOG = 200
MAX_LISTED = 30


def _cap(text: str, hint: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    cut = text[:MAX_OUTPUT]
    cut = cut[: cut.rfind("\n") + 1] or cut
    return f"{cut}[... {len(text) - len(cut):,} more chars; {hint}]"


def _approve(ctx: ToolContext, summary: str) -> None:
    if not ctx.approve("git", summary):
        raise declined(ctx, summary)


def _status(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    out = repo.git.status("--short", "--branch", "--untracked-files=all", "--ignore-submodules=dirty")
    lines = out.splitlines()
    if len(lines) <= 1:
        lines.append("(working tree clean)")
    return _cap("\n".join(lines), "pass a path to diff to narrow")


def _diff(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    opts = ["--cached"] if args.get("staged") else []
    paths = [repo_relative(ctx, repo, args["path"])] if args.get("path") else []
    out = repo.git.diff(*NO_EXT, *opts, "--", *paths)
    notes = []
    if not args.get("staged") and not paths:
        untracked = repo.untracked_files
        if untracked:
            names = ", ".join(untracked[:20]) + (" ..." if len(untracked) > 20 else "")
            notes.append(f"untracked (not in the diff): {names}")
    if not out:
        where = "staged" if args.get("staged") else "unstaged"
        out = f"no {where} changes" + (f" in {paths[0]}" if paths else "")
        if not args.get("staged") and repo.git.diff(*NO_EXT, "--cached", "--name-only"):
            out += " (there are staged changes: use staged=true)"
    return _cap("\n".join([out, *notes]), "pass a path to narrow the diff")


def _log(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    if not has_commits(repo):
        return "no commits yet"
    n = args.get("max_count")
    n = 10 if n is None else max(1, min(need(args, "max_count", int), MAX_LOG))
    paths = [repo_relative(ctx, repo, args["path"])] if args.get("path") else []
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


CLIO_DIR = ".clio"
_NO_CLIO = (":(top,exclude,glob)**/.clio", ":(top,exclude,glob)**/.clio/**")  # clio's state, never staged


def _z(out: str) -> list[str]:
    return [x for x in out.split("\0") if x]


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _is_clio(rel: str) -> bool:
    return CLIO_DIR in rel.split("/")


def _created_by_clio(ctx: ToolContext, top: Path, rel: str) -> bool:
    """Whether clio's file tool created ``rel`` (or a folder it lies in) this session."""
    p = top / rel
    return any(str(q) in ctx.created_files for q in (p, *p.parents) if q == top or top in q.parents)


def _hooks_present(repo: git.Repo) -> list[str]:
    """The commit hooks the repository would run (its effective hooks folder, read, not run)."""
    top = Path(str(repo.working_tree_dir))
    with repo.git.custom_environment(**git_env(top, hooks=True)):
        folder = repo.git.rev_parse("--git-path", "hooks")
    hooks_dir = Path(folder) if Path(folder).is_absolute() else top / folder
    return [h for h in COMMIT_HOOKS if os.access(hooks_dir / h, os.X_OK) and (hooks_dir / h).is_file()]


def _nothing(left_out: list[str]) -> ToolError:
    if not left_out:
        return ToolError("nothing to commit; the working tree is clean")
    return ToolError(
        "nothing to commit: no tracked changes and no files created by clio. Untracked files "
        f"clio did not create are not staged: {_listing(left_out)}; name them in 'paths' to commit them"
    )


def _commit(ctx: ToolContext, repo: git.Repo, args: dict[str, Any]) -> str:
    message = need(args, "message").strip()
    if not message:
        raise ToolError("'message' is empty")
    raw_paths = args.get("paths") or []
    if not isinstance(raw_paths, list) or not all(isinstance(p, str) for p in raw_paths):
        raise ToolError("'paths' must be a list of strings")
    top = Path(str(repo.working_tree_dir)).resolve()
    paths = [repo_relative(ctx, repo, p) for p in raw_paths]
    clio_paths = [p for p in paths if _is_clio(p)]
    if clio_paths:
        raise ToolError(
            f"{', '.join(clio_paths)}: .clio/ is clio's own state (history, sessions, memory) and is "
            "never committed; leave it out of 'paths'"
        )
    untracked = [
        u
        for u in _z(repo.git.ls_files("-z", "--others", "--exclude-standard", "--", ":/"))
        if not _is_clio(u)
    ]
    notes: list[str] = []
    if paths:
        what = ", ".join(paths)
        new_files: list[str] = []
        left_out = [
            u
            for u in untracked
            if not any(u == p or p == "." or u.startswith(p.rstrip("/") + "/") for p in paths)
        ]
    else:
        tracked = _z(repo.git.diff("-z", "--name-only", *NO_EXT, "--", ":/", *_NO_CLIO))
        new_files = [u for u in untracked if _created_by_clio(ctx, top, u)]
        left_out = [u for u in untracked if u not in new_files]
        parts = [f"{len(tracked)} tracked change{'s' if len(tracked) != 1 else ''}"]
        if new_files:
            parts.append(f"new files created by clio: {_listing(new_files)}")
        what = "; ".join(parts)
        if (
            not tracked
            and not new_files
            and not repo.git.diff(*NO_EXT, "--cached", "--name-only", "--", ":/", *_NO_CLIO)
        ):
            raise _nothing(left_out)
    _approve(ctx, f"git commit ({what}): {message.splitlines()[0]}")
    if paths:
        repo.git.add("-A", "--", *paths, *_NO_CLIO)
        if not repo.git.diff(*NO_EXT, "--cached", "--name-only", "--", *paths):
            raise ToolError(f"nothing to commit in {what}")
        pathspec = [*paths, *_NO_CLIO]
    else:
        repo.git.add("-u", "--", ":/", *_NO_CLIO)
        if new_files:
            repo.git.add("--", *new_files)
        if not repo.git.diff(*NO_EXT, "--cached", "--name-only", "--", ":/", *_NO_CLIO):
            raise _nothing(left_out)
        pathspec = [":/", *_NO_CLIO]
    hooks = _hooks_present(repo)
    run_hooks = bool(hooks) and ctx.approve(
        "git",
        f"run the repository's commit hooks ({', '.join(hooks)}): programs from the repository",
        destructive=True,
    )
    if hooks and not run_hooks:
        notes.append(f"hooks not run (not approved): {', '.join(hooks)}")
    commit_opts = [] if run_hooks else ["--no-verify"]
    env = git_env(top, hooks=run_hooks)
    with repo.git.custom_environment(**env):
        repo.git.commit(*commit_opts, "-m", message, "--", *pathspec)
    short = repo.git.rev_parse("--short", "HEAD")
    stat = repo.git.show(*NO_EXT, "--stat", "--format=", "HEAD").strip().splitlines()
    summary = stat[-1].strip() if stat else ""
    committed = repo.git.diff_tree(
        "-z", "--no-commit-id", "--name-status", "-r", "--root", "--no-renames", "HEAD"
    )
    fields = _z(committed)
    kinds = {"A": "new", "M": "modified", "D": "deleted", "T": "type changed"}
    staged = [
        f"{name} ({kinds.get(st[:1], st)})" for st, name in zip(fields[0::2], fields[1::2], strict=False)
    ]
    lines = [f"[{short}] {message.splitlines()[0]}", summary, f"staged and committed: {_listing(staged)}"]
    if left_out:
        lines.append(
            f"not staged (untracked, not created by clio): {_listing(left_out)}; name them in 'paths' to commit them"
        )
    if _z(repo.git.ls_files("-z", "--", ":(top,glob)**/.clio/**")):
        notes.append(
            "files under .clio/ are tracked in this repository (clio left them out); "
            "`git rm -r --cached .clio` stops tracking them"
        )
    return "\n".join(ln for ln in [*lines, *notes] if ln)


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
    rel = repo_relative(ctx, repo, need(args, "path"))
    if not has_commits(repo):
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
    out = repo.git.blame("--no-textconv", *opts, "--", rel)
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


def _named(key: str) -> Check:
    """branch and tag list without a name, and make one with it (plan mode)."""

    def check(args: dict[str, Any]) -> str | None:
        return "" if args.get(key) else None

    return check


def _stash_check(args: dict[str, Any]) -> str | None:
    return None if args.get("action") in (None, "list") else ""


# every git output names the repository's files and refs: outside content, whatever the operation
SPEC = register(ToolSpec(
    "version_control",
    "Git in the project root. commit: the given paths, else tracked changes plus files you created "
    "(other untracked files only when named in paths). stash action: push/pop/list. "
    "branch/tag without name: list.",
    {
        "status": Op(with_repo("status", _status), READ, outside=True),
        "diff": Op(with_repo("diff", _diff), READ, outside=True),
        "log": Op(with_repo("log", _log), READ, outside=True),
        "branch": Op(with_repo("branch", _branch), _named("name"), outside=True),
        "commit": Op(with_repo("commit", _commit), CHANGE, outside=True, action=A.COMMIT),
        "stash": Op(with_repo("stash", _stash), _stash_check, outside=True),
        "blame": Op(with_repo("blame", _blame), READ, outside=True),
        "tag": Op(with_repo("tag", _tag), _named("name"), outside=True),
    },
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
    label=("path", "message"),
    aliases=("git",),
    lean=Lean(
        "Git in the project root. commit: tracked changes and files you created.",
        ("status", "diff", "log", "commit"),
        ("path", "message"),
    ),
))  # fmt: skip
