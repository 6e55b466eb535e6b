"""Crash safety and concurrency of clio.store.atomic, with real processes and real SIGKILLs.

- kill -9 at random moments during long write loops (CLIO_CRASH_ROUNDS rounds, default 200):
  every file parses and holds the old or the new complete value, never a torn one;
- 8 processes appending under locked_update at the same moment: nothing lost, nothing doubled,
  while readers never see a partial file;
- damaged files (truncated, garbage, empty, zero-filled, wrong type) are moved aside intact and reported;
- a lock held by a process that dies with SIGKILL is released by the kernel.
See docs/safety.md for what was run and what held.
"""

from __future__ import annotations

import json
import os
import random
import re
import selectors
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clio.store import atomic
from clio.store.atomic import (
    FileLock,
    add_damaged_hook,
    atomic_write_json,
    locked_update,
    read_json,
    remove_damaged_hook,
)
from testkit.crash_writer import LOG, LTM, NOTES, SESSION, digest, parse_notes

WRITER = str(Path(__file__).resolve().parents[2] / "testkit" / "crash_writer.py")
ROUNDS = int(os.environ.get("CLIO_CRASH_ROUNDS", "200"))
WRITERS = 8
APPENDS = int(os.environ.get("CLIO_CRASH_APPENDS", "40"))
TMP_NAME = re.compile(r"^\.(session\.json|ltm\.json|notes\.md)\.[A-Za-z0-9_]+\.tmp$")


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WRITER, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def readline(proc: subprocess.Popen[str], timeout: float = 20.0) -> str:
    """One line of a helper's stdout, or fail with its stderr (never hang the suite)."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            proc.kill()
            raise AssertionError(f"helper silent for {timeout}s; stderr: {proc.communicate()[1]}")
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"helper exited {proc.wait()}; stderr: {proc.communicate()[1]}")
    return line.strip()


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    """Every helper started by a test is killed and reaped at the end, whatever happened."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=20)


# --- kill -9 during write loops ---


def disk_state(root: Path) -> dict[str, int]:
    """Counters of the complete values on disk; fails on any torn or unparsable file."""
    state = {"session": 0, "ltm": 0, "notes": 0}
    if (root / SESSION).exists():
        session = json.loads((root / SESSION).read_text())
        assert session["digest"] == digest(session["counter"], session["body"]), "torn session value"
        state["session"] = session["counter"]
    if (root / LTM).exists():
        items = json.loads((root / LTM).read_text())
        assert isinstance(items, list) and items
        numbers = [item["n"] for item in items]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), "ltm items lost or doubled"
        for item in items:
            assert item["digest"] == digest(item["n"], item["text"]), "torn ltm item"
        state["ltm"] = numbers[-1]
    if (root / NOTES).exists():
        n, ok = parse_notes((root / NOTES).read_text())
        assert ok, "torn notes file"
        state["notes"] = n
    return state


def test_kill_9_at_random_moments_leaves_old_or_new(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    seed = int(os.environ.get("CLIO_CRASH_SEED", "0")) or random.randrange(1, 10**9)
    rnd = random.Random(seed)
    server = spawn("server", str(tmp_path))
    procs.append(server)
    assert server.stdin is not None
    stats: Counter[str] = Counter()
    leftovers: set[str] = set()
    for rnd_no in range(ROUNDS):
        before = disk_state(tmp_path)
        server.stdin.write(f"round {rnd.randrange(10**9)}\n")
        server.stdin.flush()
        pid = int(readline(server).split()[1])
        time.sleep(rnd.uniform(0.0, 0.04))
        os.kill(pid, signal.SIGKILL)
        server.stdin.write(f"reap {pid}\n")
        server.stdin.flush()
        assert readline(server) == "reaped 1", f"round {rnd_no}: the writer was not killed by SIGKILL"

        # what the writer certainly finished, by its own log
        last = dict(before)
        log = (tmp_path / LOG).read_text() if (tmp_path / LOG).exists() else ""
        for line in log.splitlines():
            name, n = line.split()
            last[name] = int(n)
            stats["writes"] += 1
        now = disk_state(tmp_path)  # every file parses and its value is complete
        for name in now:
            assert now[name] in (last[name], last[name] + 1), (
                f"seed {seed} round {rnd_no}: {name} holds {now[name]}, expected {last[name]} (old) "
                f"or {last[name] + 1} (new)"
            )
            stats["finished unlogged"] += now[name] == last[name] + 1

        # temp files a kill left behind: at most one per round, never taken for data
        temps = {p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")}
        new = temps - leftovers
        assert len(new) <= 1, f"round {rnd_no}: one writer left {sorted(new)}"
        assert all(TMP_NAME.match(name) for name in new), sorted(new)
        leftovers |= new
        stats["rounds with a temp left"] += bool(new)
        assert {p.name for p in tmp_path.glob("*.json")} <= {LTM, SESSION}  # temp files are not data
        assert {p.name for p in tmp_path.glob("*.md")} <= {NOTES}
        assert not [p for p in tmp_path.iterdir() if ".damaged-" in p.name]

    # the leftovers are harmless: the data reads normally through the real API
    session: dict[str, Any] = read_json(tmp_path / SESSION, dict, validate=lambda d: isinstance(d, dict))
    assert session["counter"] == disk_state(tmp_path)["session"]
    assert read_json(tmp_path / LTM, list)[-1]["n"] == disk_state(tmp_path)["ltm"]
    interrupted = stats["rounds with a temp left"] + stats["finished unlogged"]
    print(f"\nkill -9 rounds={ROUNDS} seed={seed} {dict(stats)} temp files left={len(leftovers)}")
    assert stats["writes"] > 0  # the writers got real work done between kills
    assert interrupted > 0  # and some kills landed in the middle of a write


def test_temp_files_left_by_a_kill_do_not_disturb_later_writes(tmp_path: Path) -> None:
    target = tmp_path / "session.json"
    atomic_write_json(target, {"counter": 1})
    stale = tmp_path / ".session.json.k1ll3d.tmp"
    stale.write_text('{"counter": 99, "tor')  # what a kill between write and rename leaves
    atomic_write_json(target, {"counter": 2})
    assert read_json(target, dict) == {"counter": 2}
    assert stale.read_text() == '{"counter": 99, "tor'  # not read, not touched
    assert [p.name for p in tmp_path.glob("*.json")] == ["session.json"]


# --- concurrent writers ---


def test_concurrent_locked_appends_lose_nothing(tmp_path: Path, procs: list[subprocess.Popen[str]]) -> None:
    target = tmp_path / "ltm.json"
    go = tmp_path / "go"
    stop = tmp_path / "stop"
    writers = [spawn("append", str(target), str(w), str(APPENDS), str(go)) for w in range(WRITERS)]
    readers = [spawn("read", str(target), str(go), str(stop)) for _ in range(2)]
    procs += writers + readers
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < WRITERS + len(readers):  # the barrier
        assert time.monotonic() < deadline, "helpers did not start"
        time.sleep(0.01)
    go.touch()
    for proc in writers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    stop.touch()
    for r in readers:
        out, err = r.communicate(timeout=60)
        assert r.returncode == 0, err
        report = json.loads(out)
        assert report["damaged"] == []  # no reader ever saw a partial file
        assert report["reads"] > 0

    items = json.loads(target.read_text())
    seen = Counter((item["w"], item["i"]) for item in items)
    assert len(items) == WRITERS * APPENDS
    assert set(seen) == {(w, i) for w in range(WRITERS) for i in range(APPENDS)}
    assert max(seen.values()) == 1
    for w in range(WRITERS):  # each writer's own items stay in its order
        assert [item["i"] for item in items if item["w"] == w] == list(range(APPENDS))
    writers_interleaved = len({item["w"] for item in items[: len(items) // 2]})
    print(
        f"\n{WRITERS} writers x {APPENDS} appends: {len(items)} items, {writers_interleaved} writers in first half"
    )
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp") or ".damaged-" in p.name]


# --- damaged files ---

DAMAGED_NAME = r"\.damaged-\d{8}-\d{6}(?:-\d+)?"
GOOD = {"id": "20261122-143005-a1b2", "name": "fix the parser", "messages": 12}


def _damage(kind: str) -> bytes:
    good = json.dumps(GOOD, indent=1).encode()
    return {
        "truncated": good[: len(good) // 2],
        "garbage": bytes(random.Random(5).randrange(256) for _ in range(300)),
        "empty": b"",
        "zero-filled": b"\x00" * len(good),  # what some filesystems leave after a crash
        "invalid utf-8": b'{"name": "caf\xe9"}',
        "wrong type": json.dumps([GOOD]).encode(),  # parses, but not the object expected
        "trailing garbage": good + b"\n}{",
    }[kind]


KINDS = ["truncated", "garbage", "empty", "zero-filled", "invalid utf-8", "wrong type", "trailing garbage"]
FILES = ["session.json", "ltm.json", "notes.json", "config.json", "000001.json"]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_file_is_moved_aside_intact_and_reported(tmp_path: Path, kind: str, name: str) -> None:
    path = tmp_path / name
    bad = _damage(kind)
    path.write_bytes(bad)
    calls: list[tuple[Path, Path]] = []
    result = read_json(
        path,
        lambda: {"fresh": True},
        validate=lambda d: isinstance(d, dict),
        on_damaged=lambda p, moved: calls.append((p, moved)),
    )
    assert result == {"fresh": True}
    assert not path.exists()
    moved = [p for p in tmp_path.iterdir()]
    assert len(moved) == 1
    stem, suffix = name.rsplit(".", 1)
    assert re.fullmatch(re.escape(stem) + DAMAGED_NAME + r"\." + suffix, moved[0].name), moved[0].name
    assert moved[0].read_bytes() == bad  # the damaged bytes are kept for the user
    assert calls == [(path, moved[0])]


def test_global_hook_reports_when_no_hook_is_given(tmp_path: Path) -> None:
    calls: list[tuple[Path, Path]] = []

    def hook(p: Path, moved: Path) -> None:
        calls.append((p, moved))

    add_damaged_hook(hook)
    add_damaged_hook(hook)  # registered once
    try:
        path = tmp_path / "ltm.json"
        path.write_bytes(b"[1, 2,")
        assert read_json(path, list) == []
        assert len(calls) == 1 and calls[0][0] == path and calls[0][1].read_bytes() == b"[1, 2,"
        path.write_bytes(b"[1, 2,")
        own: list[Path] = []
        read_json(path, list, on_damaged=lambda p, moved: own.append(moved))
        assert len(own) == 1 and len(calls) == 1  # a given hook replaces the global ones
    finally:
        remove_damaged_hook(hook)


def test_repeated_damage_in_the_same_second_keeps_every_copy(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    copies = []
    for i in range(3):
        path.write_bytes(b"{broken %d" % i)
        read_json(path, dict, on_damaged=lambda p, moved: copies.append(moved))
    assert len({c.name for c in copies}) == 3
    assert sorted(c.read_bytes() for c in copies) == [b"{broken 0", b"{broken 1", b"{broken 2"]


def test_locked_update_on_a_damaged_file_starts_fresh_and_keeps_the_copy(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    path.write_bytes(b'[{"n": 1}, {"n": 2')
    moved: list[Path] = []
    result = locked_update(
        path, lambda items: [*items, {"n": 3}], list, on_damaged=lambda p, m: moved.append(m)
    )
    assert result == [{"n": 3}]
    assert json.loads(path.read_text()) == [{"n": 3}]
    assert moved[0].read_bytes() == b'[{"n": 1}, {"n": 2'


def test_missing_file_gives_default_without_report(tmp_path: Path) -> None:
    calls: list[Any] = []
    assert read_json(tmp_path / "none.json", list, on_damaged=lambda *a: calls.append(a)) == []
    assert calls == [] and list(tmp_path.iterdir()) == []


def test_failed_update_writes_nothing_and_releases_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    atomic_write_json(path, [1, 2])

    def boom(items: list[int]) -> list[int]:
        raise RuntimeError("update failed")

    with pytest.raises(RuntimeError):
        locked_update(path, boom, list)
    assert json.loads(path.read_text()) == [1, 2]
    assert locked_update(
        path,
        lambda items: [*items, 3],
        list,
    ) == [1, 2, 3]


# A reader that finds a damaged file races with another process that quarantines it first (and maybe
# writes a fresh file): the second quarantine must neither crash nor move the fresh file aside.


def _other_process_acts_between_read_and_quarantine(
    monkeypatch: pytest.MonkeyPatch, path: Path, rewrite: bool
) -> None:
    real_loads = json.loads

    def loads(s: Any, *args: Any, **kwargs: Any) -> Any:
        if path.exists() and not path.read_bytes().startswith(b"["):  # the damaged bytes were just read
            atomic.quarantine(path)  # ...the other process moves them aside first
            if rewrite:
                atomic_write_json(path, ["fresh from the other process"])
        return real_loads(s, *args, **kwargs)

    monkeypatch.setattr(atomic.json, "loads", loads)


def test_quarantine_race_does_not_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ltm.json"
    path.write_bytes(b"{damaged")
    _other_process_acts_between_read_and_quarantine(monkeypatch, path, rewrite=False)
    assert read_json(path, list) == []


def test_quarantine_race_keeps_the_fresh_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ltm.json"
    path.write_bytes(b"{damaged")
    _other_process_acts_between_read_and_quarantine(monkeypatch, path, rewrite=True)
    read_json(path, list)
    assert json.loads(path.read_text()) == ["fresh from the other process"]


# --- locks of dead processes ---


def test_lock_of_a_killed_process_is_released(tmp_path: Path, procs: list[subprocess.Popen[str]]) -> None:
    path = tmp_path / "session.json"
    holder = spawn("hold", str(path))
    procs.append(holder)
    assert readline(holder) == "locked"
    with pytest.raises(TimeoutError):  # really held
        FileLock(path, timeout=0.3).acquire()
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=20)
    assert holder.returncode == -signal.SIGKILL
    assert Path(str(path) + ".lock").exists()  # the lock file stays; the kernel dropped the flock
    lock = FileLock(path, timeout=5)
    lock.acquire()
    lock.release()


def test_kill_inside_locked_update_leaves_the_old_value(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    path = tmp_path / "ltm.json"
    atomic_write_json(path, [1, 2])
    victim = spawn("inside", str(path))
    procs.append(victim)
    assert readline(victim) == "inside"  # it holds the lock and has read the file
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=20)
    assert json.loads(path.read_text()) == [1, 2]
    assert locked_update(path, lambda items: [*items, 3], list) == [1, 2, 3]
