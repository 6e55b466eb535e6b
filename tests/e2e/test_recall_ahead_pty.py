"""End to end, issue 32: the REPL has the helper recall the line while the user types.

Through a real pseudo-terminal, the installed clio and the fake server, in a project whose
archive the encoder helper has embedded: a question typed and left for a moment before Enter is
recalled by the helper during that pause (the search, the cosines and the judge: a one-shot
run's recall ahead), and Enter takes that block (the helper counts it served) quoting the earlier
answer; a line changed after its pause is recalled on Enter as typed.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from clio.recall.encoder_cache import filled
from clio.recall.encoder_client import EncoderClient
from clio.recall.encoder_readiness import installed
from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import latest_user
from tests.e2e.test_recall_encoder import ASKED, FACT, OTHER, REWORDED, sent, stop_helper
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)

pytestmark = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")


def with_history(fake_server: FakeServer, proj: Path) -> Path:
    """A project with history (the earlier session that settles the fact, and others), through
    one-shot runs that start the helper, once it has embedded the archive; the user's home. The
    user's recall_judge is off: the REPL's recall ahead with the decision by the cosines (the
    judge's, on by default, quotes the same fact in test_recall_encoder.py)."""
    home = proj.parent / "home"
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text("recall_judge: false\n")

    def reply(body: dict[str, Any]) -> Reply:
        text, _ = latest_user(body)
        return Reply(text=FACT if text.startswith(ASKED) else "Done.")

    fake_server.responder = reply
    try:
        for text in [ASKED, *OTHER]:
            on = {"CLIO_RECALL_ENCODER": None}
            r = run_clio(["--model", "fake-model", "-p", text], server=fake_server, project=proj, home=home, env_extra=on)
            assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not filled(proj / ".clio"):
            time.sleep(0.2)
    except BaseException:
        stop_helper(home)
        raise
    return home


def test_a_line_left_a_moment_before_enter_is_recalled_while_typed(fake_server: FakeServer, project: Path, spawn: Spawn) -> None:  # noqa: F811
    home = with_history(fake_server, project)
    try:
        client = EncoderClient(home, project / ".clio")
        before = client.status()
        term = spawn(env={"CLIO_RECALL_ENCODER": ""})
        term.prompt()
        time.sleep(1.0)  # the REPL's warm-up is done
        term.child.send(REWORDED)  # typed, not sent yet
        deadline = time.monotonic() + 30
        while client.status()["ahead_kept"] == before["ahead_kept"] and time.monotonic() < deadline:
            time.sleep(0.05)  # the pause: the REPL hands the line on, the helper recalls for it
        assert client.status()["ahead_kept"] == before["ahead_kept"] + 1  # its query embedded there
        time.sleep(1.0)  # a longer pause: the same line is not sent again
        assert client.status()["ahead_kept"] == before["ahead_kept"] + 1
        term.child.send("\r")
        term.expect("Done.")
        message = sent(fake_server, REWORDED)
        assert "<recalled_context>" in message and "allkeys-lru" in message, message
        assert client.status()["recalls_ahead"] == before["recalls_ahead"] + 1  # Enter took the helper's block
        term.prompt()
        term.type("/context")
        term.expect(r"searched by the helper ahead \(")
        term.prompt()
        # a line changed after its pause is recalled on Enter, here, as typed
        term.child.send("why do users keep getting logged out")
        time.sleep(1.0)
        term.child.send(" of the admin pages\r")
        term.expect("Done.")
        sent(fake_server, "why do users keep getting logged out of the admin pages")
        assert client.status()["recalls_ahead"] == before["recalls_ahead"] + 1  # not the helper's stale one
        term.prompt()
        term.type("/context")
        m = term.expect(r"sentence encoder: minilm: ([^\n]*)")
        assert "ahead" not in m.group(1), m.group(0)
        term.prompt()
        term.child.sendeof()
        assert term.wait_exit() == 0
    finally:
        stop_helper(home)


def test_a_question_sent_a_moment_after_its_question_mark_is_recalled_while_typed(fake_server: FakeServer, project: Path, spawn: Spawn) -> None:  # noqa: F811
    """Enter 0.15 s after the last key, a question mark: shorter than the pause after which a
    line is handed on (0.25 s), longer than the pause after a line that ends as a sentence ends
    (typing_ahead.ENDED_PAUSE_S). The helper has recalled the question by Enter, which takes its
    block (before: recalled on Enter, as typed straight through). A machine too busy to read the
    line before Enter is given two more tries, each after /clear."""
    home = with_history(fake_server, project)
    question = REWORDED + "?"
    try:
        client = EncoderClient(home, project / ".clio")
        term = spawn(env={"CLIO_RECALL_ENCODER": ""})
        term.prompt()
        time.sleep(1.0)  # the REPL's warm-up is done
        tries = 0
        while True:
            tries += 1
            before = client.status()["recalls_ahead"]
            term.child.send(question)
            time.sleep(0.15)
            term.child.send("\r")
            term.expect("Done.")
            term.prompt()
            if client.status()["recalls_ahead"] == before + 1 or tries == 3:
                break
            term.type("/clear")  # the window no longer carries what the block quoted
            term.prompt()
        assert client.status()["recalls_ahead"] == before + 1, f"Enter took no block recalled ahead in {tries} tries"
        message = sent(fake_server, question)
        assert "<recalled_context>" in message and "allkeys-lru" in message, message
        term.child.sendeof()
        assert term.wait_exit() == 0
    finally:
        stop_helper(home)


def test_a_line_typed_after_the_helper_left_starts_it_again(fake_server: FakeServer, project: Path, spawn: Spawn) -> None:  # noqa: F811
    """A REPL outlives the helper (it leaves after its idle time): the next line the user types
    starts it again, so the reworded question sent a moment later is decided with the encoder
    (before: that message, and in a REPL that had started the helper itself every later one,
    by words alone, which quote nothing here)."""
    home = with_history(fake_server, project)
    try:
        client = EncoderClient(home, project / ".clio")
        term = spawn(env={"CLIO_RECALL_ENCODER": ""})
        term.prompt()
        time.sleep(2.0)  # the REPL's warm-up (the index, a ping of the helper) is done
        first = client.ping()
        os.kill(first, signal.SIGTERM)  # its idle time is up while the REPL stays open
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                client.ping()
            except (OSError, ValueError):
                break
            time.sleep(0.05)
        time.sleep(1.0)
        with pytest.raises((OSError, ValueError)):
            client.ping()  # an idle REPL does not bring it back
        term.child.send(REWORDED)  # typed, and a pause: the line finds no helper and starts it
        second = 0
        deadline = time.monotonic() + 60
        while not second and time.monotonic() < deadline:
            try:
                second = client.ping()
            except (OSError, ValueError):
                time.sleep(0.1)
        assert second and second != first, "typing did not start the helper again"
        term.child.send("\r")
        term.expect("Done.")
        message = sent(fake_server, REWORDED)
        assert "<recalled_context>" in message and "allkeys-lru" in message, message
        term.prompt()
        term.child.sendeof()
        assert term.wait_exit() == 0
    finally:
        stop_helper(home)
