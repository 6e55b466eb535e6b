"""clio's own tools keep clio's secrets: ``$CLIO_HOME`` and the credential stores are refused by
every built-in tool that takes a path, with or without ``--sandbox`` (clio.safety.hide.Private,
clio.tools.paths), and a listing or a search over a folder holding them skips them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.safety.hide import CREDENTIAL_STORES, Private, credential_stores, hidden_paths
from clio.tools.context import ToolContext
from clio.tools.registry import REGISTRY
from clio.ui.mentions import attach

KEY = "k3y-" + "9f" * 20  # what memory.key holds in these tests
CRED = "https://me:ghp_" + "A1" * 18 + "@github.com"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME with clio's folder and a credential store, and a project beside them."""
    h = tmp_path / "home"
    (h / ".clio").mkdir(parents=True)
    (h / ".clio" / "memory.key").write_text(KEY)
    (h / ".clio" / "mcp_token").write_text("tok-" + "x" * 30)
    (h / ".git-credentials").write_text(CRED + "\n")
    (h / ".ssh").mkdir()
    (h / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    (h / "notes.txt").write_text("plain notes\n")
    (h / "proj").mkdir()
    (h / "proj" / "a.txt").write_text("hello\n")
    monkeypatch.setenv("HOME", str(h))
    return h


def ctx_for(home: Path, *, sandbox: bool = False, root: Path | None = None) -> ToolContext:
    return ToolContext(root=root or home / "proj", sandbox=sandbox, private=Private(home / ".clio"))


def run(ctx: ToolContext, tool: str = "file_operations", **args: Any) -> tuple[str, bool]:
    return REGISTRY.run(ctx, tool, json.dumps(args))


def refused(ctx: ToolContext, tool: str = "file_operations", **args: Any) -> str:
    out, good = run(ctx, tool, **args)
    assert not good, out
    assert "refused: " in out and "\n" not in out.strip(), out  # one line saying why
    return out


def test_the_list_holds_the_stores_of_issue_34_and_the_earlier_ones() -> None:
    for rel in (
        ".ssh", ".netrc", ".pgpass", ".aws", ".kube", ".docker/config.json", ".config/gh", ".git-credentials",
        ".config/gcloud", ".azure", ".gnupg", ".password-store",  # before issue 34
        ".config/git/credentials", ".npmrc", ".pypirc", ".cargo/credentials.toml", ".cargo/credentials",
        ".vault-token", ".terraform.d", ".config/hub", ".bash_history", ".zsh_history",
        ".local/share/fish/fish_history", ".python_history", ".psql_history", ".mysql_history",
        ".local/share/keyrings", ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ):  # fmt: skip
        assert rel in CREDENTIAL_STORES, rel
    assert len(set(CREDENTIAL_STORES)) == len(CREDENTIAL_STORES)


def test_the_sandbox_and_the_tools_use_one_list(home: Path) -> None:
    private = Private(home / ".clio", ["~/work/secrets"])
    boxed = hidden_paths(home / ".clio", True, ["~/work/secrets"])
    assert set(boxed) == {str(home / ".clio"), *private.stores}
    assert list(private.stores) == credential_stores(extra=["~/work/secrets"])
    assert str(home / "work" / "secrets") in private.stores


@pytest.mark.parametrize("sandbox", [False, True])
@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("~/.clio/memory.key", "~/.clio is clio's own folder (its keys); no tool reads it"),
        ("~/.clio/mcp_token", "~/.clio is clio's own folder"),
        ("~/.clio", "~/.clio is clio's own folder"),
        ("../.clio/./memory.key", "~/.clio is clio's own folder"),
        ("~/.git-credentials", "~/.git-credentials is one of your credential stores"),
        ("~/.ssh/id_ed25519", "~/.ssh is one of your credential stores"),
    ],
)
def test_read_file_refuses_clio_home_and_credential_stores(home: Path, sandbox: bool, path: str, why: str) -> None:
    out = refused(ctx_for(home, sandbox=sandbox), operation="read_file", path=path)
    assert why in out
    assert KEY not in out and "ghp_" not in out


def test_a_symlink_in_the_project_into_clio_home_is_refused(home: Path) -> None:
    proj = home / "proj"
    (proj / "innocent.txt").symlink_to(home / ".clio" / "memory.key")
    (proj / "cfg").symlink_to(home / ".clio")
    (proj / "creds").symlink_to(home / ".git-credentials")
    ctx = ctx_for(home)
    assert "clio's own folder" in refused(ctx, operation="read_file", path="innocent.txt")
    assert "clio's own folder" in refused(ctx, operation="read_file", path="cfg/mcp_token")
    assert "credential stores" in refused(ctx, operation="read_file", path="creds")
    assert "clio's own folder" in refused(ctx, operation="get_file_info", path="innocent.txt")


def test_a_clio_home_reached_through_a_symlink_is_refused(home: Path, tmp_path: Path) -> None:
    """$CLIO_HOME named through a link, and reached by its real path (and the other way round)."""
    real = tmp_path / "real-clio"
    real.mkdir()
    (real / "memory.key").write_text(KEY)
    link = tmp_path / "link-clio"
    link.symlink_to(real)
    for named, asked in ((link, real / "memory.key"), (real, link / "memory.key")):
        ctx = ToolContext(root=home / "proj", private=Private(named))
        assert "its keys" in refused(ctx, operation="read_file", path=str(asked))


@pytest.mark.parametrize(
    "args",
    [
        {"operation": "write_file", "path": "~/.clio/memory.key", "content": "forged"},
        {"operation": "create_file", "path": "~/.clio/new", "content": "x"},
        {"operation": "append_file", "path": "~/.git-credentials", "content": "x"},
        {"operation": "replace_string", "path": "~/.clio/memory.key", "old_string": KEY, "new_string": "y"},
        {"operation": "insert_at_line", "path": "~/.clio/memory.key", "line": 1, "content": "y"},
        {"operation": "delete_file", "path": "~/.clio/memory.key"},
        {"operation": "rename_file", "path": "~/.clio/memory.key", "new_path": "stolen.key"},
        {"operation": "rename_file", "path": "a.txt", "new_path": "~/.clio/memory.key"},
        {"operation": "create_directory", "path": "~/.ssh/more"},
        {"operation": "file_exists", "path": "~/.clio/memory.key"},
        {"operation": "get_file_info", "path": "~/.clio/memory.key"},
        {"operation": "list_dir", "path": "~/.clio"},
        {"operation": "file_search", "path": "~/.ssh", "pattern": "*"},
        {"operation": "grep_search", "path": "~/.clio", "pattern": "k3y"},
    ],
)
def test_every_file_operation_refuses_them(home: Path, args: dict[str, Any]) -> None:
    refused(ctx_for(home), **args)
    assert (home / ".clio" / "memory.key").read_text() == KEY
    assert (home / "proj" / "a.txt").exists() and not (home / "proj" / "stolen.key").exists()
    assert not (home / ".clio" / "new").exists() and not (home / ".ssh" / "more").exists()


def test_listing_and_searching_a_folder_that_holds_them_skips_them(home: Path) -> None:
    ctx = ctx_for(home, root=home)  # the project is the home folder itself
    (home / "proj" / "link.key").symlink_to(home / ".clio" / "memory.key")
    listed, good = run(ctx, operation="list_dir", path=".")
    assert good, listed
    assert ".clio" not in listed and ".ssh" not in listed and ".git-credentials" not in listed
    assert "notes.txt" in listed and "proj/" in listed
    assert "[not listed: 3 private paths (clio's own folder, credential stores: never read)]" in listed
    inner, good = run(ctx, operation="list_dir", path="proj")
    assert good and "a.txt" in inner and "link.key" not in inner and "1 private path" in inner, inner
    found, good = run(ctx, operation="file_search", pattern="*")
    assert good, found
    assert "notes.txt" in found and "proj/a.txt" in found
    assert "memory.key" not in found and "mcp_token" not in found and "id_ed25519" not in found
    assert "credentials" not in found and "link.key" not in found
    assert "skipped: 3 private paths" in found, found
    grep, good = run(ctx, operation="grep_search", pattern="k3y|ghp_|OPENSSH|plain")
    assert good, grep
    assert "notes.txt:1: plain notes" in grep
    assert KEY not in grep and "ghp_" not in grep and "OPENSSH" not in grep
    assert "private path" in grep  # said, not named
    none, good = run(ctx, operation="grep_search", pattern="k3y")
    assert good and none.startswith("no matches") and "private path" in none, none


def test_version_control_paths_are_refused(home: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=home / "proj", check=True)
    ctx = ctx_for(home)
    (home / "proj" / "k").symlink_to(home / ".clio" / "memory.key")
    assert "clio's own folder" in refused(ctx, "version_control", operation="diff", path="k")
    assert "clio's own folder" in refused(ctx, "version_control", operation="blame", path="~/.clio/memory.key")


def test_ordinary_paths_outside_the_project_still_work_without_the_sandbox(home: Path) -> None:
    out, good = run(ctx_for(home), operation="read_file", path="~/notes.txt")
    assert good and "plain notes" in out, out


def test_added_stores_are_refused_and_a_root_entry_is_ignored(home: Path) -> None:
    (home / "work").mkdir()
    (home / "work" / "token").write_text("t")
    ctx = ToolContext(root=home / "proj", private=Private(home / ".clio", ["~/work", "/"]))
    assert "~/work is one of your credential stores" in refused(ctx, operation="read_file", path="~/work/token")
    out, good = run(ctx, operation="read_file", path="a.txt")  # "/" would refuse everything: not taken
    assert good, out


def test_a_context_nobody_configured_still_keeps_clio_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIO_HOME", str(home / ".clio"))
    ctx = ToolContext(root=home / "proj")
    assert "its keys" in refused(ctx, operation="read_file", path="~/.clio/memory.key")
    monkeypatch.delenv("CLIO_HOME")
    assert "credential stores" in refused(ToolContext(root=home / "proj"), operation="read_file", path="~/.git-credentials")


def test_at_file_mentions_never_attach_them(home: Path) -> None:
    proj = home / "proj"
    (proj / "innocent.txt").symlink_to(home / ".clio" / "memory.key")
    private = Private(home / ".clio")
    done = attach("look at @~/.clio/memory.key @innocent.txt @~/.git-credentials and @a.txt", proj, proj, 10_000, private)
    assert KEY not in done.text and "ghp_" not in done.text
    assert done.paths == ["a.txt"]
    assert any(n.startswith("@~/.clio/memory.key: not attached, refused: ~/.clio is clio's own folder") for n in done.notes)
    assert any(n.startswith("@innocent.txt: not attached, refused:") for n in done.notes)
    assert any("~/.git-credentials is one of your credential stores" in n for n in done.notes)


def test_a_store_made_after_start_is_still_caught(home: Path) -> None:
    ctx = ctx_for(home)
    target = home / "dotfiles" / "npmrc"
    target.parent.mkdir()
    target.write_text("//registry.npmjs.org/:_authToken=npm_" + "a" * 36)
    os.symlink(target, home / ".npmrc")  # ~/.npmrc made a link after the context was built
    assert "~/.npmrc is one of your credential stores" in refused(ctx, operation="read_file", path="../dotfiles/npmrc")


def test_the_default_clio_home_stays_private_when_config_names_another(home: Path, tmp_path: Path) -> None:
    """--config DIR: the user's usual ~/.clio still holds a memory key and maybe an API key."""
    other = tmp_path / "isolated"
    other.mkdir()
    ctx = ToolContext(root=home / "proj", private=Private(other))
    assert "~/.clio is clio's own folder" in refused(ctx, operation="read_file", path="~/.clio/memory.key")
    assert "its keys" in refused(ctx, operation="list_dir", path=str(other))
