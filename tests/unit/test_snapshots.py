"""Before-images for /undo (clio.store.snapshots and clio.app.undo), with real files on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clio.app.undo import undo_note, undo_turns
from clio.safety.redact import Redactor
from clio.store import snapshots as snap
from clio.store.snapshots import Snapshots


def test_a_turn_is_put_back_new_files_removed_deleted_ones_restored(tmp_path: Path) -> None:
    proj, store = tmp_path / "p", tmp_path / "snaps"
    proj.mkdir()
    (proj / "edit.txt").write_text("v1\n")
    (proj / "gone.txt").write_text("keep me\n")
    s = Snapshots(store, Redactor())
    s.begin(0)
    for name, change in (("edit.txt", "v2\n"), ("new.txt", "fresh\n")):
        s.keep(proj / name)
        (proj / name).write_text(change)
        s.after(proj / name)
    s.keep(proj / "edit.txt")  # a second change in the same turn keeps the first before-image
    (proj / "edit.txt").write_text("v3\n")
    s.after(proj / "edit.txt")
    s.keep(proj / "gone.txt")
    (proj / "gone.txt").unlink()
    s.after(proj / "gone.txt")

    again = Snapshots(store, Redactor())  # another process: everything came from disk
    results = undo_turns(again, 1, lambda q: False, proj)
    assert {Path(r.path).name: r.outcome for r in results} == {
        "edit.txt": "restored", "new.txt": "deleted", "gone.txt": "restored"
    }  # fmt: skip
    assert (proj / "edit.txt").read_text() == "v1\n" and (proj / "gone.txt").read_text() == "keep me\n"
    assert not (proj / "new.txt").exists()
    assert again.last(1) == []  # undone turns are forgotten
    assert "edit.txt (restored)" in undo_note(results, proj) and undo_note(results, proj).startswith("[clio: the user ran /undo")


def test_undo_n_goes_back_turn_by_turn(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("0")
    s = Snapshots(tmp_path / "snaps")
    for turn, text in enumerate(("1", "2", "3")):
        s.begin(turn * 2)
        s.keep(f)
        f.write_text(text)
        s.after(f)
    undo_turns(s, 2, lambda q: False, tmp_path)
    assert f.read_text() == "1"
    undo_turns(s, 5, lambda q: False, tmp_path)
    assert f.read_text() == "0"


def test_a_file_changed_since_is_asked_about(tmp_path: Path) -> None:
    f = tmp_path / "f.txt"
    f.write_text("before")
    s = Snapshots(tmp_path / "snaps")
    s.begin(0)
    s.keep(f)
    f.write_text("clio's")
    s.after(f)
    f.write_text("the user's edit")
    asked: list[str] = []
    results = undo_turns(s, 1, lambda q: asked.append(q) or False, tmp_path)
    assert asked and "f.txt was changed after clio changed it" in asked[0]
    assert results[0].outcome.startswith("skipped: changed since") and f.read_text() == "the user's edit"


def test_a_secret_never_reaches_disk_and_a_huge_file_is_not_kept(tmp_path: Path) -> None:
    env, big = tmp_path / ".env", tmp_path / "big.bin"
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    env.write_text(f"GITHUB_TOKEN={token}\n")
    big.write_bytes(b"x" * (snap.MAX_FILE_BYTES + 1))
    store = tmp_path / "snaps"
    s = Snapshots(store, Redactor())
    s.begin(0)
    for p in (env, big):
        s.keep(p)
        p.write_text("changed")
        s.after(p)
    on_disk = b"".join(p.read_bytes() for p in store.rglob("*") if p.is_file())
    assert token.encode() not in on_disk
    index = json.loads((store / "index.json").read_text())
    assert {Path(k["path"]).name: k["where"] for k in index["turns"][0]["files"]} == {".env": "memory", "big.bin": "none"}
    later = Snapshots(store, Redactor())  # after a restart the secret's copy is gone
    out = {Path(r.path).name: r.outcome for r in undo_turns(later, 1, lambda q: False, tmp_path)}
    assert out[".env"].startswith("skipped: it held a secret") and out["big.bin"].startswith("skipped: it was over 2 MB")
    same_run = Snapshots(store, Redactor())
    same_run.memory = s.memory  # in the run that changed it, the copy is in memory
    same_run.turns = s.turns
    undo_turns(same_run, 1, lambda q: False, tmp_path)
    assert env.read_text() == f"GITHUB_TOKEN={token}\n"


def test_old_turns_are_dropped_past_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snap, "KEPT_TURNS", 3)
    f = tmp_path / "f.txt"
    s = Snapshots(tmp_path / "snaps")
    for turn in range(5):
        f.write_text(str(turn))
        s.begin(turn)
        s.keep(f)
        f.write_text(str(turn + 1))
        s.after(f)
    assert [t.turn for t in s.turns] == [2, 3, 4]
    assert len(list((tmp_path / "snaps" / "blobs").iterdir())) == 3


def test_undone_turns_still_count_so_a_second_undo_goes_no_further(tmp_path: Path) -> None:
    """Issue 35 item 4: /undo N counts the turns that changed files, undone ones included, across runs."""
    from clio.app.undo import nothing_undone

    proj, store = tmp_path / "p", tmp_path / "snaps"
    proj.mkdir()
    s = Snapshots(store, Redactor())
    for turn, name in ((2, "a.txt"), (6, "b.txt")):
        s.begin(turn)
        s.keep(proj / name)
        (proj / name).write_text(name)
        s.after(proj / name)
    assert [r.outcome for r in undo_turns(s, 1, lambda q: True, proj)] == ["deleted"]
    again = Snapshots(store, Redactor())  # the next run
    assert again.last(1) == [] and again.already_undone(1) == (1, True)
    assert nothing_undone(again, 1) == "The last turn's changes were already undone; /undo 2 for the turn before."
    assert [t.turn for t in again.last(2)] == [2]
    undo_turns(again, 2, lambda q: True, proj)
    assert nothing_undone(again, 2) == "The last 2 turns' changes were already undone; no turn before them changed files."
    assert nothing_undone(Snapshots(None), 1).startswith("Nothing to undo: no file was changed")
