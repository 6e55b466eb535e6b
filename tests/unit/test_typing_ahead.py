"""The prompt's line handed on to the recall once the user pauses typing (clio/ui/typing_ahead.py):
after the pause, only the latest line; at once, nearly, when it ends as a sentence ends."""

from __future__ import annotations

import threading
import time

from clio.ui.typing_ahead import ENDED_PAUSE_S, PAUSE_S, TypingAhead, pause_for


class Sent:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.arrived = threading.Event()

    def __call__(self, text: str) -> None:
        self.lines.append(text)
        self.arrived.set()


def test_typing_ahead_hands_on_the_line_once_the_user_pauses() -> None:
    sent = Sent()
    ahead = TypingAhead(sent, pause_s=0.2)
    for text in ("w", "wh", "whe", "where do"):  # typed faster than the pause: only the last is handed on
        ahead.changed(text)
    assert sent.arrived.wait(10)
    time.sleep(0.3)
    assert sent.lines == ["where do"]
    sent.arrived.clear()
    ahead.changed("where do rejected messages go")
    assert sent.arrived.wait(10) and sent.lines == ["where do", "where do rejected messages go"]


def test_a_line_that_ends_as_a_sentence_ends_waits_a_shorter_pause() -> None:
    assert ENDED_PAUSE_S < PAUSE_S
    for text in ("what port does staging use?", "restart the worker.  ", "that fixed it!", "ステージングのポートは？"):
        assert pause_for(text) == ENDED_PAUSE_S, text
    for text in ("what port does staging use", "look at config.py", "why?)", ""):
        assert pause_for(text) == PAUSE_S, text
    assert pause_for("why?", pause_s=0.01, ended_pause_s=0.5) == 0.01  # never longer than the pause


def test_a_finished_question_is_handed_on_before_the_long_pause() -> None:
    sent = Sent()
    ahead = TypingAhead(sent, pause_s=30.0, ended_pause_s=0.05)
    ahead.changed("what port does staging")
    time.sleep(0.5)
    assert sent.lines == []  # mid-sentence: the long pause holds
    ahead.changed("what port does staging use?")
    assert sent.arrived.wait(10)  # well before the 30 s pause
    assert sent.lines == ["what port does staging use?"]
