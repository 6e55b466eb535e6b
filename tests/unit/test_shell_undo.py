"""tools/shell_undo.py: the scan before a shell command and what it keeps after, with and without
git; the snapshots' keep_all."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clio.store.snapshots import Snapshots
from clio.tools import shell_undo
from tests.unit.test_session_diff import change


def sh(root: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=root, check=True)


def test_without_git_small_files_are_copied_and_put_back(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "node_modules").mkdir(parents=True)
    (root / "a.txt").write_text("a\n")
    (root / "same.txt").write_text("s\n")
    (root / "node_modules" / "dep.js").write_text("x\n")
    snaps = Snapshots(tmp_path / "snaps")
    snaps.begin(0)
    scan = shell_undo.before(root)
    assert scan.copies == {"a.txt": b"a\n", "same.txt": b"s\n"} and not scan.blobs
    sh(root, "echo b > a.txt; echo s > same.txt; echo n > new.txt; echo y > node_modules/dep.js")
    assert shell_undo.record(scan, root, snaps) == ["a.txt", "new.txt"]  # same content, skipped folder: not kept
    (turn,) = snaps.last(1)
    for kept in reversed(turn.files):
        snaps.restore(turn, kept)
    assert (root / "a.txt").read_text() == "a\n" and not (root / "new.txt").exists()


def test_tracked_clean_files_come_from_git_not_a_copy(tmp_path: Path) -> None:
    root = tmp_path / "g"
    root.mkdir()
    (root / "t.txt").write_text("tracked\n")
    for args in (["init", "-q"], ["add", "t.txt"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    scan = shell_undo.before(root)
    assert "t.txt" in scan.blobs and "t.txt" not in scan.copies
    snaps = Snapshots(None)
    snaps.begin(0)
    sh(root, "echo changed > t.txt")
    assert shell_undo.record(scan, root, snaps) == ["t.txt"]
    (turn,) = snaps.last(1)
    assert snaps.restore(turn, turn.files[0]).outcome == "restored"
    assert (root / "t.txt").read_text() == "tracked\n"


def test_the_scan_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(5):
        (root / f"{i}.txt").write_text(str(i))
    monkeypatch.setattr(shell_undo, "MAX_FILES", 3)
    scan = shell_undo.before(root)
    assert len(scan.stats) == 3 and not scan.complete


def test_a_file_changed_by_the_file_tool_then_a_command_keeps_the_first_before_image(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    f = root / "f.txt"
    f.write_text("1\n")
    snaps = Snapshots(tmp_path / "snaps")
    snaps.begin(0)
    change(snaps, f, "2\n")  # the file tool's way
    scan = shell_undo.before(root)
    sh(root, "echo 3 > f.txt")
    shell_undo.record(scan, root, snaps)
    (turn,) = snaps.last(1)
    assert len(turn.files) == 1 and not snaps.changed_since(turn.files[0])  # after: what the command left
    snaps.restore(turn, turn.files[0])
    assert f.read_text() == "1\n"


def test_past_the_stored_bound_a_change_is_named_without_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    monkeypatch.setattr(shell_undo, "MAX_STORED", 1)
    snaps = Snapshots(tmp_path / "snaps")
    snaps.begin(0)
    scan = shell_undo.before(root)
    sh(root, "echo x > a.txt; echo y > b.txt; echo z > c.txt")
    shell_undo.record(scan, root, snaps)
    (turn,) = snaps.last(1)
    outcomes = {Path(k.path).name: snaps.restore(turn, k).outcome for k in turn.files}
    assert outcomes["a.txt"] == "restored" and outcomes["c.txt"] == "deleted"
    assert outcomes["b.txt"].startswith("skipped: a shell command changed it and clio had no copy")
