"""Run the installed clio as an ordinary (non-root) user, with its own HOME and CLIO_HOME.

Root bypasses most of what protects a real user (ptrace and /proc checks, file modes), so the
security tests run clio as ``$CLIO_TEST_USER`` (default ``cliotest``; made by
``scripts/test-user.sh``, which ``.ci/run`` calls). When the tests already run as an ordinary
user they run clio as themselves. ``ordinary_user()`` returns the reason to skip otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from testkit.clio_run import CLIO, clio_env
from testkit.fakeserver import FakeServer

USER = os.environ.get("CLIO_TEST_USER", "cliotest")
_SETUP = Path(__file__).resolve().parent.parent / "scripts" / "test-user.sh"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int

    def prefix(self) -> list[str]:
        """What to put before a command to run it as this user ([] when we are that user)."""
        if os.geteuid() == self.uid:
            return []
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--"]


def ordinary_user() -> User | str:
    """The user to run clio as, or why there is none (a reason to skip)."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return User(entry.pw_name, entry.pw_uid, entry.pw_gid)
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing: cannot switch to an ordinary user"
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["bash", str(_SETUP), sys.executable], capture_output=True, timeout=300)
        try:
            entry = pwd.getpwnam(USER)
        except KeyError:
            return f"no user {USER!r} and it could not be made (scripts/test-user.sh)"
    user = User(entry.pw_name, entry.pw_uid, entry.pw_gid)
    probe = subprocess.run([*user.prefix(), sys.executable, "-c", "import clio"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        subprocess.run(["bash", str(_SETUP), sys.executable], capture_output=True, timeout=300)
        probe = subprocess.run([*user.prefix(), sys.executable, "-c", "import clio"], capture_output=True, timeout=60)
        if probe.returncode != 0:
            return f"{USER} cannot run {sys.executable} (scripts/test-user.sh could not give it access)"
    return user


@dataclass
class UserTree:
    """A folder owned by the user: ``home`` (HOME), ``clio_home`` (CLIO_HOME), ``project``."""

    base: Path
    user: User

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def clio_home(self) -> Path:
        return self.home / ".clio"

    @property
    def project(self) -> Path:
        return self.home / "proj"

    def chown(self) -> None:
        """Give everything under ``base`` to the user (after the test wrote its files)."""
        if os.geteuid() != 0:
            return
        for folder, dirs, files in os.walk(self.base):
            for name in [*dirs, *files]:
                os.lchown(os.path.join(folder, name), self.user.uid, self.user.gid)
        os.chown(self.base, self.user.uid, self.user.gid)

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def user_tree(user: User) -> UserTree:
    base = Path(tempfile.mkdtemp(prefix="clio-user-"))
    os.chmod(base, 0o755)
    tree = UserTree(base, user)
    tree.project.mkdir(parents=True)
    tree.clio_home.mkdir(parents=True)
    return tree


def run_clio_as(
    user: User,
    tree: UserTree,
    args: Sequence[str],
    *,
    server: FakeServer | None,
    env_extra: Mapping[str, str | None] | None = None,
    timeout: float = 90,
) -> subprocess.CompletedProcess[str]:
    """Run the installed clio as ``user`` in ``tree.project`` (HOME and CLIO_HOME in the tree)."""
    tree.chown()
    env = clio_env(server, tree.clio_home, {"HOME": str(tree.home), "USER": user.name, **(env_extra or {})})
    result = subprocess.run(
        [*user.prefix(), str(CLIO), *args],
        cwd=tree.project,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert "Traceback (most recent call last)" not in result.stderr, result.stderr
    return result
