"""Plan mode in the kernel (issue 34, item 2): the installed ``clio --plan --yes -p`` runs the
model's shell commands in a read-only Landlock sandbox, with or without ``--sandbox``.

Each scripted command passes plan mode's word check (clio/safety/readonly.py) yet writes, or
runs something that writes: bash expanding ``\\x24(`` inside an array subscript, abbreviated long
options, an output operand after ``--``... What is checked is the disk afterwards (nothing
made, nothing changed, in the project or under ``/tmp``) and the one line the model gets. Run as
the test's own user and as an ordinary (non-root) one: Landlock binds root too.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from clio.safety.containment import landlock_abi
from clio.safety.readonly import readonly_reason
from clio.tools.terminal import PLAN_READ_ONLY
from testkit.clio_run import run_clio, tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.unprivileged import User, UserTree, run_clio_as

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock")



def _in_subscript(command: str) -> str:
    """``command`` run by bash while it expands an array subscript of ``[ -v``: no ``$(`` in sight."""
    inner = command.replace("\\", "\\\\").replace("'", "\\x27")
    return f"[ -v $'a[\\x24({inner})]' ]; echo done"


TRICKS = {
    "c_test_v": _in_subscript("touch T1"),
    "c_test_v2": "test -v $'a[\\x24(touch T2)]'; echo done",
    "c_printf_v": "printf -v $'a[\\x24(touch T3)]' x; echo done",
    "c_sort": "sort --outp=T4 a.txt",
    "c_uniq": "uniq -- - -T5 < a.txt",
    "c_file": "file --comp -m magic",
    "c_find": _in_subscript("find . -name a.txt -exec touch T7 {} +"),
    "c_redirect": _in_subscript("echo x >T8"),
    "c_tee": _in_subscript("echo x | tee T9"),
    "c_dd": _in_subscript("dd if=/dev/zero of=T10 count=1"),
    "c_python": _in_subscript("python3 -c 'import sys; sys.tracebacklimit = 0; open(\"T11\", \"w\")'"),
    "c_sed": _in_subscript("sed -i s/keep/gone/ a.txt"),
    "c_commit": _in_subscript("git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m planted"),
    "c_tmp": _in_subscript("echo x > {tmp}"),
    "c_read": "cat a.txt && git status --short && echo scratch > /dev/null && ls $TMPDIR",
}
MADE = [f"T{i}" for i in range(1, 12) if i != 6] + ["magic.mgc"]


def _script(server: FakeServer, tmp_target: Path) -> None:
    calls: list[dict[str, Any]] = [
        {"name": "terminal_operations", "id": cid, "arguments": {"operation": "execute",
                                                                  "command": cmd.replace("{tmp}", str(tmp_target))}}
        for cid, cmd in TRICKS.items()
    ]  # fmt: skip
    server.script(Reply(tool_calls=calls), Reply(text="Plan: nothing."))


def _make_repo(proj: Path) -> str:
    (proj / "a.txt").write_text("keep\n", encoding="utf-8")
    (proj / "magic").write_text("0 string keep kept-text\n", encoding="utf-8")
    git = ["git", "-C", str(proj)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "one"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout


def _check(proj: Path, server: FakeServer, head: str, tmp_target: Path) -> None:
    results = tool_results(server.chat_requests[1])
    for name in MADE:
        assert not (proj / name).exists(), (name, results)
    assert not tmp_target.exists(), results["c_tmp"]
    assert (proj / "a.txt").read_text(encoding="utf-8") == "keep\n"
    now = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(proj), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert now == head
    for cid in ("c_test_v", "c_printf_v", "c_sort", "c_redirect", "c_python", "c_commit", "c_tmp", "c_find"):
        assert PLAN_READ_ONLY in results[cid], (cid, results[cid])
    assert results["c_read"].startswith("keep\n") and results["c_read"].endswith("exit code: 0"), results["c_read"]
    assert PLAN_READ_ONLY not in results["c_read"]


def test_tricks_pass_the_word_check() -> None:
    """The kernel is what stops them: the word check lets every one through."""
    for cmd in TRICKS.values():
        assert readonly_reason(cmd.replace("{tmp}", "/tmp/x")) is None, cmd


@pytest.mark.parametrize("sandbox", [[], ["--sandbox"]], ids=["plan", "plan+sandbox"])
def test_plan_mode_writes_nothing(tmp_path: Path, home: Path, project: Path, sandbox: list[str]) -> None:
    head = _make_repo(project)
    tmp_target = Path("/tmp") / f"clio-plan-{uuid.uuid4().hex}"
    server = FakeServer().start()
    try:
        _script(server, tmp_target)
        r = run_clio([*sandbox, "--plan", "--yes", "-p", "look"], server=server, project=project, home=home)
        assert r.returncode == 0, r.stderr
        _check(project, server, head, tmp_target)
    finally:
        server.stop()
        tmp_target.unlink(missing_ok=True)


def test_plan_mode_writes_nothing_as_an_ordinary_user(user: User, tree: UserTree) -> None:
    head = _make_repo(tree.project)
    tmp_target = Path("/tmp") / f"clio-plan-{uuid.uuid4().hex}"
    server = FakeServer().start()
    try:
        _script(server, tmp_target)
        res = run_clio_as(user, tree, ["--plan", "--yes", "-p", "look"], server=server)
        assert res.returncode == 0, res.stderr
        _check(tree.project, server, head, tmp_target)
    finally:
        server.stop()
        tmp_target.unlink(missing_ok=True)
