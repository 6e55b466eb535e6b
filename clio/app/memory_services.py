"""Wiring of the memory tiers into the app: the stores tools and commands use, the prompt blocks.

- ``ltm``: project knowledge in ``.clio/ltm.json``
- ``notes``: key-value notes in ``.clio/memory/<key>.json``
- ``prefs``: the user's preferences in ``$CLIO_HOME/preferences.json`` (they follow the user)
- ``skills``: learned behaviours in ``$CLIO_HOME/skills.json`` (clio.memory.behaviours)
- ``recall``: the ranked index over every archived session (``.clio/recall.sqlite``), opened lazily

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
from clio.agent.prompt import MemoryBlock
from clio.memory import lifecycle, ltm
from clio.memory import skills as S
from clio.memory.behaviours import Behaviours
from clio.memory.json_reply import first_json_object
from clio.memory.ltm import Entry
from clio.memory.ltm_store import LtmStore
from clio.memory.meaning import Meaning, say_once
from clio.memory.notes import NoteStore
from clio.memory.prefs_store import PrefStore
from clio.memory.skills_store import SkillStore
from clio.prompts import load_prompt
from clio.recall.query import best_first
from clio.store.sessions import SessionStore
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




class LazyRecall:
    """Opens the recall index on first use, so starting clio never waits for a rebuild.

    One recall over everything archived: past sessions, and the running session's messages that
    are no longer in the window. ``carried(quoted)`` names what the request holds already, by
    session and sequence number: the window's messages (left out of every search) and, with
    ``quoted``, the messages its recall blocks quote (left out of the automatic recall, which would
    only repeat them; the tool still finds them). The app sets it once the window exists."""

    def __init__(self, db_path: Path | None, sessions: SessionStore, services: Services) -> None:
        self.db_path = db_path
        self.sessions = sessions
        self.services = services  # its session is the running one
        self.carried: Callable[[bool], dict[str, set[int]]] = lambda quoted: {}
        self._index: Any = None
        self._archive_seen = False  # some message outside the window exists (sticky)

    def has_archive(self) -> bool:
        """Whether anything archived lies outside what the request carries. Before the index is
        open, told from the session files alone (no index, no embedding model loaded): a project's
        first session has nothing to recall, and its turns stay as light as before."""
        if self._archive_seen or self._index is not None:
            return True
        session = self.services.session
        current = session.id if session is not None else None
        in_window = len(self.carried(False).get(current or "", ()))
        mine = len(session.messages) if session is not None else 0
        self._archive_seen = mine > in_window or any(
            i.message_count for i in self.sessions.list() if i.id != current
        )
        return self._archive_seen

    def index(self) -> Any:
        if self._index is None:
            from clio.recall.index import RecallIndex

            self._index = RecallIndex(self.db_path, self.sessions)
        return self._index

    def search(
        self,
        query: str,
        max_sessions: int = 5,
        max_results: int = 10,
        *,
        with_text: bool = False,
        skip_quoted: bool = False,
    ) -> list[dict[str, Any]]:
        skip = self.carried(skip_quoted)
        hits = best_first(
            self.index().search, query, max_results, max_sessions=max_sessions, skip=skip, with_text=with_text
        )
        note = self._index.take_semantic_note()  # why recall is lexical only: said once
        say_once(note, lambda text: print(text, file=sys.stderr))  # once with the LTM ranking's too
        return hits


def memory_services(
    services: Services,
    paths: Paths | None,
    sessions: SessionStore,
    redactor: Redactor,
    settings: Settings | None = None,
) -> None:
    """Open the memory stores into ``services`` (in memory only when ``paths`` is None). With a
    ``shared_memory`` URL, project knowledge and notes live in the team's store (clio.team)."""
    services.ltm = open_ltm(paths) if paths else LtmStore(None)
    services.notes = NoteStore(paths.memory_dir if paths else None, redact=redactor.text)
    if paths is not None and settings is not None and settings.shared_memory:
        from clio.team.open import open_shared  # psycopg and the team store only when it is on

        shared = open_shared(paths, settings, redactor.text, lambda text: print(text, file=sys.stderr))
        if shared is not None:
            services.ltm, services.notes = shared
    services.prefs = PrefStore(paths.home / "preferences.json" if paths else None, redact=redactor.text)
    services.skills = open_behaviours(
        paths.home if paths else None, services.prefs, redactor.text, enabled=paths is not None
    )
    services.recall = LazyRecall(paths.clio_dir / "recall.sqlite" if paths else None, sessions, services)


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


def memory_blocks(
    services: Services,
    window: Window,
    settings: Settings,
    injected: Injected | None = None,
    meaning: Meaning | None = None,
) -> list[MemoryBlock]:
    """The prompt blocks long-term memory and preferences contribute, ranked per task.

    Their budgets are the settings, capped by their shares of the window (clio.context.budget).
    ``injected`` learns which entries went in, so the app can reinforce those a turn used;
    ``meaning`` fuses the entries' similarity to the task by meaning into the ranking (once armed)."""
    ltm, prefs = services.ltm, services.prefs
    assert ltm is not None and prefs is not None

    def ltm_block(task: str, files: list[str]) -> str:
        budget = window.shares.ltm_tokens(settings.ltm_budget_tokens)
        similar_to = meaning.similarities if meaning is not None else None
        chosen = ltm.select(task, files, budget, window.estimator.count_text, similar_to=similar_to)
        if injected is not None:
            injected.entries = chosen
        return ltm.render_block(chosen)

    def prefs_block(task: str, files: list[str]) -> str:
        budget = window.shares.prefs_tokens(settings.prefs_budget_tokens)
        return prefs.prompt_block(SCENARIO, budget, window.estimator.count_text)

    def skills_block(task: str, files: list[str]) -> str:
        skills = services.skills
        if skills is None:
            return ""
        return skills.block(window.shares.skills_tokens(), window.estimator.count_text)

    return [ltm_block, prefs_block, skills_block]


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
