"""The repository as clio's git tool opens it, and the recent-activity summary.

- :func:`open_repo`: the repository of the project root, hardened (``clio.tools.git_env``: git
  run from here never executes programs the repository controls); a bare repository, or in
  sandbox mode one whose work tree lies above the project root, is refused;
- :func:`repo_relative`: a tool's path argument (through ``resolve_path``) relative to the work tree;
- :func:`with_repo`: a ``version_control`` operation as a registry handler: the repository
  opened for the call, closed after it, git's failures turned into ToolErrors;
- :func:`recent_git_activity`: the last commits and a short status, for the context engine's
  recovery message.

gitpython costs ~50 ms to import: it is loaded when a git operation first runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.tools.context import ToolContext, ToolError
from clio.tools.git_env import harden
from clio.tools.paths import resolve_path
from clio.tools.spec import Handler

if TYPE_CHECKING:
    import git

__all__ = ["GitOp", "has_commits", "open_repo", "recent_git_activity", "repo_relative", "with_repo"]


def open_repo(ctx: ToolContext) -> git.Repo:
    import git

    try:
        repo = git.Repo(ctx.root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise ToolError(
            f"{ctx.root} is not a git repository; run `git init` with terminal_operations if one is wanted"
        ) from None
    if repo.working_tree_dir is None:
        repo.close()
        raise ToolError(f"{ctx.root} is inside a bare git repository; there is no work tree")
    top = Path(repo.working_tree_dir).resolve()
    if ctx.sandbox and top != ctx.root.resolve():
        repo.close()
        raise ToolError(
            f"the git repository at {top} is larger than the project root {ctx.root.resolve()}; "
            "git is refused outside the project root (sandbox mode)"
        )
    return harden(repo)


def repo_relative(ctx: ToolContext, repo: git.Repo, path: str) -> str:
    p = resolve_path(ctx, path)
    top = Path(str(repo.working_tree_dir)).resolve()
    try:
        return p.relative_to(top).as_posix() or "."
    except ValueError:
        raise ToolError(f"{path} is outside the git repository at {top}") from None


def has_commits(repo: git.Repo) -> bool:
    try:
        repo.head.commit  # noqa: B018
    except ValueError:
        return False
    return True


GitOp = Callable[[ToolContext, "git.Repo", dict[str, Any]], str]


def with_repo(op: str, fn: GitOp) -> Handler:
    """A registry handler that opens the repository and turns git failures into ToolErrors."""

    def run(ctx: ToolContext, args: dict[str, Any]) -> str:
        import git

        repo = open_repo(ctx)
        try:
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


def recent_git_activity(root: Path, n: int = 5) -> str:
    """The last ``n`` commits and a short working-tree status; "" when ``root`` is not a repository."""
    import git

    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, OSError):
        return ""
    try:
        harden(repo)
        parts = []
        if has_commits(repo):
            log = repo.git.log(f"-n{max(1, n)}", "--date=short", "--format=%h %ad %an %s")
            parts.append("Recent commits:\n" + log)
        status = repo.git.status("--short", "--branch", "--ignore-submodules=dirty").splitlines()
        if len(status) > 21:
            status = status[:21] + [f"... {len(status) - 21} more changed files"]
        parts.append("Working tree:\n" + ("\n".join(status) if len(status) > 1 else status[0] + "\n(clean)"))
        return "\n".join(parts)
    except (git.GitCommandError, ValueError, OSError, IndexError):
        return ""
    finally:
        repo.close()
