"""The memory service of a running clio (:class:`MemoryService`): the memory tiers' stores (the
ones tools and commands reach through ``Services``), the prompt's memory text ranked for the task,
the entries it carries (reinforced when a turn uses them), learned behaviours, ranking by meaning,
consolidation of a finished session and the upkeep of faded memory, with the model asked through a
side request (:class:`clio.agent.side.SideRequest`), never through the turn loop.

- ``ltm``: project knowledge in ``.clio/ltm.json``
- ``notes``: key-value notes in ``.clio/memory/<key>.json``
- ``prefs``: the user's preferences in ``$CLIO_HOME/preferences.json`` (they follow the user)
- ``skills``: learned behaviours in ``$CLIO_HOME/skills.json`` (clio.memory.behaviours)

In incognito (``paths`` None) nothing is read from or written to disk: the stores run in memory.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from pathlib import Path  # noqa: TC003
from typing import TYPE_CHECKING, Any

import clio.tools.builtin  # noqa: F401  (registers the tools: their actions judge behaviours)
from clio.app.consolidate import Consolidator, Outcome
from clio.memory import lifecycle, ltm
from clio.memory import skills as S
from clio.memory.behaviours import Behaviours
from clio.memory.json_reply import first_json_object
from clio.memory.ltm import Entry
from clio.memory.ltm_file import imported
from clio.memory.ltm_store import LtmStore
from clio.memory.meaning import Meaning
from clio.memory.notes import NoteStore
from clio.memory.prefs_store import PrefStore
from clio.memory.skills_store import SkillStore
from clio.messages import Message
from clio.prompts import load_prompt
from clio.store.sessions import Session, SessionStore
from clio.store.signing import Signer
from clio.tools.context import Services
from clio.tools.registry import REGISTRY

if TYPE_CHECKING:

    from clio.agent.window import Window
    from clio.config import Settings
    from clio.paths import Paths
    from clio.safety.redact import Redactor

SCENARIO = "coding"
MEMORY_SUMMARY_WORDS, MEMORY_SUMMARY_TOKENS = 80, 400
MAX_UPKEEP_GROUPS = 3  # groups compacted at the end of a session, so leaving stays quick





Ask = Callable[[str, int], str]  # (prompt, max tokens) -> the model's reply (clio.agent.side)


class MemoryService:
    """The memory tiers of one running clio. ``paths`` None: incognito (in memory only). ``ask``:
    the model outside the conversation, set with each session (its usage is the session's)."""

    def __init__(
        self,
        services: Services,
        paths: Paths | None,
        sessions: SessionStore,
        redactor: Redactor,
        settings: Settings,
        window: Window,
        notice: Callable[[str], None],
        keep_tainted: Callable[[], bool],
    ) -> None:
        self.services, self.settings, self.window = services, settings, window
        self.writes = paths is not None
        open_stores(services, paths, redactor, settings)
        services.ltm_compactor = self.summarize_group
        assert services.ltm is not None and services.skills is not None
        self.skills: Behaviours = services.skills
        self.skills.enabled = self.writes and not settings.no_ltm  # learned behaviours (memory/behaviours.py)
        self.meaning = Meaning(notice)  # LTM by meaning: ranking and dedup candidates (memory/meaning.py)
        self.injected = Injected()  # the LTM entries in the system prompt, to reinforce those a turn uses
        self.consolidator = Consolidator(
            services.ltm,
            sessions,
            redactor,
            max_chars=lambda: window.shares.consolidation_chars(),
            semantic=self.meaning.dedup_candidates,
            keep_tainted=keep_tainted,
        )
        self.ask: Ask | None = None
        self.in_prompt = not (settings.no_ltm or settings.incognito)  # memory in the system prompt

    @property
    def ltm(self) -> LtmStore:
        assert self.services.ltm is not None
        return self.services.ltm

    # -- the prompt ------------------------------------------------------------------------------
    def text(self, task: str, files: list[str]) -> str:
        """The prompt's memory blocks (behaviours, preferences, long-term entries ranked for ``task``
        and ``files``), each within its share of the window (clio.context.budget); they follow the
        request's head (clio.agent.prompt)."""
        if not self.in_prompt:
            return ""
        s, shares, count = self.settings, self.window.shares, self.window.estimator.count_text
        chosen = self.ltm.select(
            task, files, shares.ltm_tokens(s.ltm_budget_tokens), count, similar_to=self.meaning.similarities
        )
        self.injected.entries = chosen
        prefs = self.services.prefs
        blocks = [  # the least often changing first (prompt caches): drawn once, stated, ranked
            self.skills.block(shares.skills_tokens(), count),
            prefs.prompt_block(SCENARIO, shares.prefs_tokens(s.prefs_budget_tokens), count) if prefs else "",
            self.ltm.render_block(chosen),
        ]
        return "\n\n".join(b.strip() for b in blocks if b and b.strip())

    def foreign_in_prompt(self) -> bool:
        """Whether the prompt carries memory not written by clio here (it taints every turn)."""
        return any(e.foreign or imported(e) for e in self.injected.entries)

    # -- after a turn, at the end ----------------------------------------------------------------
    def reinforce(self, turn: list[Message]) -> None:
        """Injected memory the turn used decays from now on, not from when it was written."""
        if not self.writes or not self.injected.entries:
            return
        used = self.injected.used_by(turn)
        if used:
            self.ltm.reinforce(used)

    @property
    def consolidates(self) -> bool:
        s = self.settings
        return self.writes and s.consolidate and not s.no_ltm and self.ask is not None

    def consolidate(self, session: Session, *, force: bool = False) -> Outcome | None:
        """Read ``session`` back into long-term memory (None when consolidation is off here)."""
        if not self.consolidates or self.ask is None:
            return None
        return self.consolidator.run(session, self.ask, force=force)

    def summarize_group(self, entries: list[Any]) -> dict[str, Any] | None:
        return summarize_group(self.ask, entries) if self.ask is not None else None

    def upkeep(self) -> int:
        """At the end of a REPL session: past a size, faded topics are compacted by the model."""
        if not self.writes or self.ask is None:
            return 0
        return compact_faded(self.ltm, self.summarize_group)


def open_stores(services: Services, paths: Paths | None, redactor: Redactor, settings: Settings | None = None) -> None:
    """Open the memory stores into ``services`` (in memory only when ``paths`` is None). With a
    ``shared_memory`` URL, project knowledge and notes live in the team's store (clio.team)."""
    services.ltm = open_ltm(paths) if paths else LtmStore(None)
    services.notes = NoteStore(paths.memory_dir if paths else None, redact=redactor.text)
    if paths is not None and settings is not None and settings.shared_memory:
        from clio.team.open import open_shared  # psycopg and the team store only when it is on

        own = services.ltm if isinstance(services.ltm, LtmStore) else None
        shared = open_shared(paths, settings, redactor.text, lambda text: print(text, file=sys.stderr), own)
        if shared is not None:
            services.ltm, services.notes = shared
    services.prefs = PrefStore(paths.home / "preferences.json" if paths else None, redact=redactor.text)
    services.skills = open_behaviours(
        paths.home if paths else None, services.prefs, redactor.text, enabled=paths is not None
    )



def open_ltm(paths: Paths) -> LtmStore:
    """The project's long-term memory, entries checked against this machine's key; entries of a
    clio from before signing adopted once where they cannot have come from the repository."""
    signer = Signer.open(paths.home)
    store = LtmStore(paths.clio_dir / "ltm.json", signer=signer)
    migrate_legacy(store, paths.root, signer)
    return store


def _tracked_by_git(root: Path, path: Path) -> bool:
    """Whether git tracks ``path`` in ``root`` (so it came with the repository). Runs nothing of
    the repository's: ls-files reads the index only, fsmonitor off."""
    import subprocess

    try:
        res = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "ls-files", "--error-unmatch", "--", str(path)],
            cwd=root, stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return True  # cannot tell: the safe answer
    return res.returncode == 0


def migrate_legacy(store: LtmStore, root: Path, signer: Signer) -> list[str]:
    """Entries written by a clio from before signing (no signature at all) become clio's own,
    once, when the file cannot have come from the repository or from elsewhere: it was last
    changed on this machine before the key existed (its ctime, which neither git, tar nor touch
    can set back, is older than the key) and git does not track it (a clone brings only tracked
    files). Anything else stays foreign until the user adopts it (``/memory adopt``)."""
    if store.path is None:
        return []
    try:
        changed = store.path.stat().st_ctime
    except OSError:
        return []
    if changed >= signer.created or _tracked_by_git(root, store.path):
        return []
    return store.adopt(legacy_only=True)


class Injected:
    """The long-term memory entries the system prompt carries now (set at every re-rank)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []

    def used_by(self, turn: list[dict[str, Any]]) -> list[str]:
        """Ids of the injected entries a finished turn used: named in what the assistant wrote or
        passed to its tools (:func:`clio.memory.lifecycle.used_in_turn`)."""
        texts = [str(m.get("content") or "") for m in turn if m.get("role") == "assistant"]
        args = [c.get("function", {}).get("arguments") for m in turn for c in m.get("tool_calls") or []]
        return [e.id for e in self.entries if lifecycle.used_in_turn(e, texts, args)]


def summarize_group(ask: Callable[[str, int], str], entries: list[Entry]) -> dict[str, Any] | None:
    """The model's one summary entry for a group of faded entries on one topic (the fields of their
    type), asked through ``ask(prompt, max_tokens)``; None when it gave nothing usable."""
    if not entries:
        return None
    spec = ltm.TYPES[entries[0].type]
    prompt = load_prompt("compact_memory.md").format(
        count=len(entries),
        type=entries[0].type,
        max_words=MEMORY_SUMMARY_WORDS,
        notes="\n".join(f"- {t}" for t in lifecycle.group_texts(entries, [e.id for e in entries])),
        fields=", ".join((*spec.text, *spec.lists)),
    )
    reply = first_json_object(ask(prompt, MEMORY_SUMMARY_TOKENS))
    if reply is None:
        return None
    fields = {k: v for k, v in reply.items() if k in (*spec.text, *spec.lists)}
    return fields if all(fields.get(k) for k in spec.required) else None


def compact_faded(store: LtmStore, summarize: Callable[[list[Entry]], dict[str, Any] | None]) -> int:
    """Past a size, replace a few groups of faded entries by the model's summaries; the count done."""
    if not store.needs_compaction():
        return 0
    done = 0
    for group in store.compaction_groups()[:MAX_UPKEEP_GROUPS]:
        fields = summarize(group)
        if fields and store.compact([e.id for e in group], fields) is not None:
            done += 1
    return done


SEED_ENV = "CLIO_SKILLS_SEED"  # a fixed seed for the draws (tests, benches)


def open_behaviours(
    home: Path | None, prefs: PrefStore | None, redact: Callable[[str], str], *, enabled: bool
) -> Behaviours:
    """The behaviours of this user (in memory only when ``home`` is None)."""
    catalogue = S.parse_catalogue(load_prompt("skills.md"))
    store = SkillStore(home / "skills.json" if home is not None else None, catalogue, redact=redact)
    seed = os.environ.get(SEED_ENV, "").strip()
    rng = random.Random(int(seed)) if seed.lstrip("-").isdigit() else random.Random()
    return Behaviours(store, prefs, rng, enabled=enabled, actions=REGISTRY.actions())
