"""Nothing planted for later (issue 34, item 3), end to end: the installed ``clio --sandbox --yes -p``
runs a scripted command that plants git configuration meant to run in the user's own later git
commands; then the test runs those git commands in the project, as the user would, outside any
sandbox, and checks that the planted command did not run (it would make a marker file outside the
project, which the sandboxed command itself cannot write).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clio.safety.containment import landlock_abi
from testkit.clio_run import run_clio, tool_results
from testkit.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock")

ID = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *ID, "-c", "protocol.file.allow=always", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    (path / "a.txt").write_text("a\n", encoding="utf-8")
    git(path, "add", "a.txt")
    git(path, "commit", "-qm", "one")


def _planting_run(project: Path, home: Path, command: str) -> str:
    server = FakeServer().start()
    try:
        server.script(
            Reply(tool_calls=[{"name": "terminal_operations", "id": "c_plant",
                               "arguments": {"operation": "execute", "command": command}}]),
            Reply(text="Done."),
        )  # fmt: skip
        r = run_clio(["--sandbox", "--yes", "-p", "set up vendor"], server=server, project=project, home=home,
                     env_extra={"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})  # fmt: skip
        assert r.returncode == 0, r.stderr
        return tool_results(server.chat_requests[1])["c_plant"]
    finally:
        server.stop()


def _fsmonitor(marker: Path) -> str:
    return f"printf '[core]\\n\\tfsmonitor = \"touch {marker}; false\"\\n'"


def test_nested_repository_fsmonitor_does_not_run_in_the_users_git_status(tmp_path: Path, home: Path) -> None:
    project, marker = tmp_path / "proj", tmp_path / "MARKER"
    _repo(project)
    plant = (
        "git init -q vendor && cd vendor && git " + " ".join(ID) + " commit -q --allow-empty -m v && "
        f"{_fsmonitor(marker)} >> .git/config && cd .. && git add vendor && echo planted"
    )
    result = _planting_run(project, home, plant)
    assert "planted" in result, result
    assert git(project, "ls-files", "-s", "vendor").stdout.startswith("160000")  # the gitlink stays
    status = git(project, "status", "--short")
    assert status.returncode == 0 and "vendor" in status.stdout, status
    assert not marker.exists(), "the planted fsmonitor ran in the user's git status"
    assert "undone: removed core.fsmonitor from vendor/.git/config" in result, result


def test_submodule_config_in_git_modules_is_undone(tmp_path: Path, home: Path) -> None:
    project, marker = tmp_path / "proj", tmp_path / "MARKER"
    _repo(tmp_path / "upstream")
    _repo(project)
    assert git(project, "submodule", "add", "-q", str(tmp_path / "upstream"), "x").returncode == 0
    git(project, "commit", "-qm", "sub")
    result = _planting_run(project, home, f"{_fsmonitor(marker)} >> .git/modules/x/config; echo planted")
    git(project, "status")
    assert not marker.exists(), "the planted fsmonitor ran in the user's git status"
    git(project / "x", "status")
    assert not marker.exists(), "the planted fsmonitor ran in the user's git status in the submodule"
    assert "removed core.fsmonitor from .git/modules/x/config" in result, result


@pytest.mark.parametrize("where", ["submodule", "top"])
def test_hooks_path_into_the_project_runs_no_planted_hook(tmp_path: Path, home: Path, where: str) -> None:
    project, marker = tmp_path / "proj", tmp_path / "MARKER"
    _repo(tmp_path / "upstream")
    _repo(project)
    assert git(project, "submodule", "add", "-q", str(tmp_path / "upstream"), "x").returncode == 0
    git(project, "commit", "-qm", "sub")
    hook = f"mkdir -p {project}/hooks && printf '#!/bin/sh\\ntouch {marker}\\n' > {project}/hooks/pre-commit && "
    hook += f"chmod +x {project}/hooks/pre-commit && "
    if where == "top":  # the user's own setting (husky does this); the command only writes the hook
        git(project, "config", "core.hooksPath", "hooks")
        plant, committer = hook + "echo planted", project
    else:
        plant = hook + f"printf '[core]\\n\\thooksPath = {project}/hooks\\n' >> .git/modules/x/config; echo planted"
        committer = project / "x"
    result = _planting_run(project, home, plant)
    assert "planted" in result, result
    done = git(committer, "commit", "-q", "--allow-empty", "-m", "the user's commit")
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), "a planted hook ran in the user's commit"
    assert "undone:" in result, result
