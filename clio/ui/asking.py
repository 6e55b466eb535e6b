"""The REPL's questions: a line, or, on a terminal, one key that answers without Enter.

Approvals (``[y/n/a/d]``) and confirmations (``[y/N]``) read one key where stdin is a terminal:
one of the offered keys answers at once (shown after the question), Enter alone is the default
(no), other keys are ignored, Ctrl-C or Ctrl-D is no answer. An Enter typed right after the key
(the habit of ``y`` Enter) is dropped, so it answers nothing else. Without a terminal (piped stdin)
the answer is a line, as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from prompt_toolkit import PromptSession
from prompt_toolkit.input import Input
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.shortcuts import prompt as pt_prompt

ENTER = (Keys.ControlM, Keys.ControlJ)


class ReplAsk:
    """``ask(question)``: a line; ``ask.one_key(question, keys)``: one key (clio.app.approvals)."""

    def __call__(self, question: str) -> str | None:
        return pt_prompt(question)

    def one_key(self, question: str, keys: str) -> str:
        if not sys.stdin.isatty():
            return pt_prompt(question)
        session: PromptSession[str] = PromptSession(key_bindings=_bindings(keys))
        answer = session.prompt(question)
        _drop_enter(session.input)
        return answer


def _bindings(keys: str) -> KeyBindings:
    kb = KeyBindings()

    def answer(key: str) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            event.current_buffer.text = key  # shown after the question
            event.app.exit(result=key)

        return handler

    for key in keys:
        kb.add(key.lower())(answer(key))
        kb.add(key.upper())(answer(key))
    kb.add("enter")(answer(""))

    @kb.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    @kb.add("c-d")
    def _eof(event: KeyPressEvent) -> None:
        event.app.exit(exception=EOFError())

    @kb.add(Keys.Any)
    def _ignored(event: KeyPressEvent) -> None:
        """Any other key: not an answer, not typed in."""

    return kb


def _drop_enter(pt_input: Input) -> None:
    """An Enter read together with the key (``y`` then Enter) is not kept for the next prompt."""
    keys = get_typeahead(pt_input)
    if keys and keys[0].key in ENTER:
        keys = keys[1:]
    store_typeahead(pt_input, keys)
