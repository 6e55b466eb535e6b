"""A shared memory's project identity: every URL of one repository names it, other repositories
never do (clio/team/identity.py), with real git repositories for the remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clio.team.identity import IdentityError, normalize_remote, project_id

SAME = [
    "git@github.com:acme/shop.git",
    "https://github.com/acme/shop",
    "https://github.com/acme/shop.git/",
    "ssh://git@github.com/acme/shop",
    "ssh://git@github.com:22/acme/shop.git",
    "https://ci-bot:s3cret-token@GitHub.com/acme/shop.git",
    "git://github.com/acme/shop.git",
]
OTHERS = [
    "git@github.com:acme/shop-api.git",
    "https://gitlab.com/acme/shop",
    "git@github.com:other/shop.git",
    "https://github.com/acme/shop/sub",
]


@pytest.mark.parametrize("url", SAME)
def test_ssh_https_and_git_urls_of_one_repository_name_one_project(url: str) -> None:
    assert normalize_remote(url) == "github.com/acme/shop"


def test_credentials_never_reach_the_identity() -> None:
    assert "s3cret" not in normalize_remote(SAME[5]) and "ci-bot" not in normalize_remote(SAME[5])


@pytest.mark.parametrize("url", OTHERS)
def test_other_repositories_never_share_the_name(url: str) -> None:
    assert normalize_remote(url) != "github.com/acme/shop"


def test_local_path_remotes_are_named_by_their_absolute_path(tmp_path: Path) -> None:
    assert normalize_remote(f"file://{tmp_path}/r.git") == normalize_remote(str(tmp_path / "r.git")) == f"file:{tmp_path}/r"


def _repo(path: Path, *remotes: tuple[str, str]) -> Path:
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for name, url in remotes:
        subprocess.run(["git", "-C", str(path), "remote", "add", name, url], check=True)
    return path


def test_a_checkout_is_named_by_origin_and_two_clones_agree(tmp_path: Path) -> None:
    one = _repo(tmp_path / "one", ("upstream", "git@github.com:fork/shop.git"), ("origin", SAME[0]))
    two = _repo(tmp_path / "two", ("origin", SAME[1]))
    assert project_id(one) == project_id(two) == "github.com/acme/shop"
    only = _repo(tmp_path / "only", ("upstream", "git@github.com:fork/shop.git"))
    assert project_id(only) == "github.com/fork/shop"


def test_no_remote_is_a_clear_error_unless_an_id_is_given(tmp_path: Path) -> None:
    bare = _repo(tmp_path / "bare")
    with pytest.raises(IdentityError, match="no git remote"):
        project_id(bare)
    assert project_id(bare, " shop ") == "id:shop"
    with pytest.raises(IdentityError):
        normalize_remote("  ")
