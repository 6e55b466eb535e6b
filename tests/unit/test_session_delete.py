"""Deleting sessions while another process lists them (a real second process, no GIL between).

Removed file by file under its own name, a half-deleted session (session.json gone, its archive
still there) looked damaged to the lister, which rebuilt its session.json from the archive, and
the removal then failed with "Directory not empty" (seen once in a CI dry run of
tests/e2e/test_sessions.py). A session now leaves its name in one rename before it is removed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from clio.store.changes import JOURNAL
from clio.store.sessions import SessionStore
from testkit.clio_run import write_archive

LISTER = """
import sys, time
from pathlib import Path
from clio.store.sessions import SessionStore
root, stop = Path(sys.argv[1]), Path(sys.argv[2])
store = SessionStore(root)
Path(sys.argv[3]).touch()
while not stop.exists():
    store.list()
"""


def test_sessions_deleted_while_another_process_lists_them_go_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    ids = [f"20260101-0000{n:02d}-ab{n:02d}" for n in range(40)]
    for n, sid in enumerate(ids):
        msgs = [{"role": "user", "content": f"message {i}", "meta": {"seq": i}} for i in range(400)]
        write_archive(root, sid, msgs, ts=1_700_000_000 + n)
    stop, ready = tmp_path / "stop", tmp_path / "ready"
    lister = subprocess.Popen([sys.executable, "-c", LISTER, str(root), str(stop), str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline and lister.poll() is None, "the lister did not start"
            time.sleep(0.01)
        store = SessionStore(root)
        for sid in ids:
            store.delete(sid)  # raised OSError (Directory not empty) when the lister rebuilt one
    finally:
        stop.touch()
        lister.wait(timeout=30)
    assert lister.returncode == 0
    # nothing left, not even a rebuilt session.json; the change journal names the deleted ones
    assert sorted(p.name for p in root.iterdir() if p.name != JOURNAL) == []
    assert set((root / JOURNAL).read_text().split()) == set(ids)
    assert SessionStore(root).list() == []
