"""app/session_diff.py: the session's net change per file from the snapshots."""

from __future__ import annotations

from pathlib import Path

from clio.app.session_diff import session_diff
from clio.safety.redact import Redactor
from clio.store.snapshots import Snapshots

KEY = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def change(snaps: Snapshots, path: Path, text: str | None) -> None:
    snaps.keep(path)
    if text is None:
        path.unlink()
    else:
        path.write_text(text, encoding="utf-8")
    snaps.after(path)


def test_net_change_over_turns_and_a_change_back(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    a, b = root / "a.txt", root / "b.txt"
    a.write_text("1\n")
    b.write_text("x\n")
    snaps = Snapshots(tmp_path / "snaps")
    snaps.begin(0)
    change(snaps, a, "2\n")
    change(snaps, b, "y\n")
    snaps.begin(4)
    change(snaps, a, "3\n")
    change(snaps, b, "x\n")  # back as it was
    result = session_diff(Snapshots(tmp_path / "snaps"), root)  # read back from disk
    assert result.files == 2
    assert result.diffs == ["--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-1\n+3"]
    assert result.notes == ["b.txt: as it was before clio changed it"]


def test_a_copy_kept_in_memory_only_is_named_after_a_restart(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    env = root / ".env"
    env.write_text(f"TOKEN={KEY}\n")
    snaps = Snapshots(tmp_path / "snaps", Redactor("standard"))
    snaps.begin(0)
    change(snaps, env, "TOKEN=\n")
    assert session_diff(snaps, root).diffs  # the same run still has the copy
    later = session_diff(Snapshots(tmp_path / "snaps", Redactor("standard")), root)
    assert later.diffs == [] and later.notes == [
        ".env: no diff, it held a secret, so its copy was kept in memory only, by the run that changed it"
    ]
