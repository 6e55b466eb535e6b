"""Asking the user to trust a project's config and instructions, before the App is built (the
prompt on stderr, the answer from stdin; ``--trust`` records trust without a question). What needs
trust and how a config is read: :mod:`clio.project_config`; where trust is kept:
:mod:`clio.store.trust`."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

from clio.config import Settings, load_settings
from clio.paths import Paths
from clio.project_config import describe_risky, risky_names
from clio.safety.visible import escape_invisible
from clio.store.trust import TrustStore


def _ask_line(question: str) -> str | None:
    """Ask on the terminal before the REPL starts (prompt on stderr, answer from stdin)."""
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line.rstrip("\n") if line else None


class ProjectTrust:
    """Settles the project config's risky settings before the App is built (see clio.project_config)."""

    def __init__(self, paths: Paths, flags: dict[str, Any], err: Console) -> None:
        self.paths = paths
        self.flags = flags
        self.err = err
        self.store = TrustStore(paths.home)
        self.writes = not flags.get("incognito")

    def load(self) -> tuple[Settings, list[str]]:
        return load_settings(
            self.paths.home,
            self.paths.clio_dir,
            self.flags,
            trusted_digest=self.store.digest_for(self.paths.root),
        )

    def _say(self, message: str) -> None:
        self.err.print(f"clio: {message}", markup=False, highlight=False)

    def _grant(self, settings: Settings) -> Settings:
        """Record trust in the config as read, and load again with its risky settings applied."""
        proj = settings.project
        assert proj is not None
        if self.writes:
            self.store.grant(self.paths.root, proj.digest, self._instructions_digest())
        names = risky_names(proj.risky)
        again, _ = load_settings(self.paths.home, self.paths.clio_dir, self.flags, trusted_digest=proj.digest)
        if again.project is None or not again.project.trusted:
            self._say(
                f"{escape_invisible(str(proj.path))} changed while you were asked; its settings that need trust ({names}) "
                "are ignored this run"
            )
            return again
        where = "recorded" if self.writes else "for this run only (incognito writes nothing)"
        self._say(f"trusted this project's config and instructions, {where}: using {names}. Undo with /trust revoke.")
        again.project.instructions_trusted = True
        return again

    def _instructions_digest(self) -> str:
        from clio.agent.prompt import instructions_digest, project_instructions

        return instructions_digest(project_instructions(self.paths.root, self.paths.cwd))

    def instructions(self, settings: Settings, *, trust_flag: bool, can_ask: bool) -> None:
        """Trust in the instruction files (AGENTS.md, .clio/instructions.md) comes with a trusted
        config, for the files as they were then: a change asks again (REPL; ``--trust`` records
        it) or is one line, and until then the model gets them as the project's data."""
        proj = settings.project
        if proj is None or not proj.trusted or proj.instructions_trusted:
            return
        digest = self._instructions_digest()
        if self.store.instructions_for(self.paths.root) == digest:
            proj.instructions_trusted = True
            return
        question = "This trusted project's instructions (AGENTS.md, .clio/instructions.md) changed since you trusted it."
        answer = None
        if can_ask and not trust_flag:
            try:
                answer = _ask_line(f"{question}\nTrust them as they are now? [y/N] ")
            except (EOFError, OSError):
                answer = None
        if trust_flag or _yes(answer):
            if self.writes:
                self.store.grant(self.paths.root, proj.digest, digest)
            proj.instructions_trusted = True
            self._say("trusted this project's instructions as they are now")
            return
        self._say(f"{question[:-1]}: the model gets them as the project's data this run (trust them with: clio --trust)")

    def settle(self, settings: Settings, *, trust_flag: bool, can_ask: bool) -> Settings:
        proj = settings.project
        where = escape_invisible(str(proj.path)) if proj is not None else ""
        if trust_flag:
            if proj is None or not proj.risky:
                self._say("--trust: this project's config asks for nothing that needs trust")
                return settings
            if proj.trusted:
                self._say("--trust: this project's config is trusted already")
                return settings
            return self._grant(settings)
        if proj is None or not proj.ignored:
            return settings
        names = risky_names(proj.ignored)
        if not can_ask:
            self._say(
                f"ignored settings of this untrusted project's {where}: {names} "
                "(check the file, then trust it with: clio --trust)"
            )
            return settings
        changed = self.store.digest_for(self.paths.root) is not None
        lines = [
            "This project's config changed since you trusted it." if changed else "",
            f"This project's config ({where}) asks for settings that only you may make:",
            *(f"  {line}" for line in describe_risky(proj.ignored)),
            "Trust this project's config and use them? Otherwise they are ignored this run. [y/N] ",
        ]
        try:
            answer = _ask_line("\n".join(ln for ln in lines if ln))
        except (EOFError, OSError):  # Ctrl-C stops clio (main)
            answer = None
        if answer is not None and answer.strip().lower() in ("y", "yes"):
            return self._grant(settings)
        self._say(f"ignored for this run ({names}); asked again next time")
        return settings


def _yes(answer: str | None) -> bool:
    return answer is not None and answer.strip().lower() in ("y", "yes")
