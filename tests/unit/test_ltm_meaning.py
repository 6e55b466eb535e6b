"""Long-term memory by meaning (clio.memory.meaning): the task's similarity to each entry fused into the
ranking once armed, dedup candidates by cosine queued for the model (never merged), the lexical
fallback said once. The shipped embedding table is used for real."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clio.app.consolidate import Consolidator
from clio.memory import dedup, ltm
from clio.memory import meaning as meaning_mod
from clio.memory.ltm import Entry
from clio.memory.ltm_store import LtmStore
from clio.memory.meaning import Meaning
from clio.messages import make
from clio.recall import embedder as semantic
from clio.safety.redact import Redactor
from clio.store.sessions import SessionStore
from testkit.clio_run import system_text
from testkit.fakeserver import FakeServer, Reply
from testkit.scripted import AppFactory

POOL = "the database pool times out under load"
TASK = "why is the DB connection slow?"
FILLER = [f"the frontend widget number {i} is styled with tailwind classes" for i in range(20)]
T0 = 1_800_000_000.0


@pytest.fixture(autouse=True)
def fresh_model_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("CLIO_SEMANTIC", raising=False)
    semantic.reset_embedder()
    meaning_mod.forget_said()
    yield
    semantic.reset_embedder()
    meaning_mod.forget_said()


def entry(text: str, at: float, type_: str = "discovery") -> Entry:
    field = "rule" if type_ == "rule" else "fact"
    return ltm.make_entry(type_, {field: text}, now=at)


def seeded(folder: Path) -> tuple[LtmStore, Entry]:
    clock = [T0]
    store = LtmStore(folder / "ltm.json", clock=lambda: clock[0])
    pool = store.add("discovery", fact=POOL)[0]
    clock[0] += 30 * 86400  # newer, unrelated: what recency alone would inject
    for fact in FILLER:
        store.add("discovery", fact=fact)
        clock[0] += 1
    return store, pool


def count(text: str) -> int:
    return len(text) // 4 + 1


# -- ranking ---------------------------------------------------------------------------------------


def test_not_armed_stays_lexical_and_never_loads_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    real = semantic.load_embedder
    monkeypatch.setattr(semantic, "load_embedder", lambda *a, **k: loads.append(1) or real(*a, **k))
    meaning = Meaning()
    es = [entry(POOL, T0)]
    assert meaning.similarities(es, TASK) is None  # attached, nothing typed yet: no load
    assert loads == []
    meaning.arm()
    assert meaning.similarities(es, "   ") is None  # no task: nothing to compare
    assert meaning.similarities([], TASK) is None
    assert loads == []
    sims = meaning.similarities(es, TASK)
    assert loads == [1] and sims is not None and sims[es[0].id] >= meaning_mod.MIN_SIMILARITY


def test_similarities_rank_the_reworded_entry_first_and_drop_weak_ones() -> None:
    meaning = Meaning()
    meaning.arm()
    es = [entry(POOL, T0), *(entry(f, T0 + i) for i, f in enumerate(FILLER[:3]))]
    sims = meaning.similarities(es, TASK)
    assert sims is not None
    assert max(sims, key=lambda k: sims[k]) == es[0].id
    assert all(v >= meaning_mod.MIN_SIMILARITY for v in sims.values())
    assert len(sims) < len(es)  # the unrelated widgets fall under the floor


def test_only_the_nearest_entries_count() -> None:
    meaning = Meaning()
    meaning.arm()
    es = [entry(f"{POOL} on replica {i}", T0 + i) for i in range(meaning_mod.TOP + 4)]
    sims = meaning.similarities(es, TASK)
    assert sims is not None and len(sims) == meaning_mod.TOP  # all alike, only TOP of them fused


def test_entry_vectors_are_cached_by_text_and_an_edit_is_embedded_again() -> None:
    meaning = Meaning()
    meaning.arm()
    embedder = meaning.embedder()
    assert embedder is not None
    first = meaning.vectors(embedder, [POOL, FILLER[0]])
    calls: list[list[str]] = []
    real = embedder.embed
    embedder.embed = lambda texts: calls.append(list(texts)) or real(texts)  # type: ignore[method-assign]
    try:
        again = meaning.vectors(embedder, [FILLER[0], POOL])
        assert calls == []  # both cached
        assert (again[1] == first[0]).all()
        meaning.vectors(embedder, [POOL + " at night"])
        assert calls == [[POOL + " at night"]]
    finally:
        embedder.embed = real  # type: ignore[method-assign]


def test_the_store_injects_the_reworded_entry_only_with_meaning(tmp_path: Path) -> None:
    store, pool = seeded(tmp_path)
    lexical = store.select(TASK, [], 400, count)
    assert pool.id not in [e.id for e in lexical]  # no shared word: the newest widgets win
    meaning = Meaning()
    meaning.arm()
    hybrid = store.select(TASK, [], 400, count, similar_to=meaning.similarities)
    assert pool.id in [e.id for e in hybrid]
    assert store.select(TASK, [], 400, count, similar_to=Meaning().similarities) == lexical  # unarmed


def test_switched_off_by_the_user_is_lexical_and_silent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIO_SEMANTIC", "0")
    store, pool = seeded(tmp_path)
    said: list[str] = []
    meaning = Meaning(said.append)
    meaning.arm()
    assert meaning.similarities(store.all(), TASK) is None
    assert pool.id not in [e.id for e in store.select(TASK, [], 400, count, similar_to=meaning.similarities)]
    assert meaning.dedup_candidates(store.all()) == []
    assert said == []


def test_a_corrupt_table_is_said_once_for_ranking_and_recall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "static_minilm.npz"
    bad.write_bytes(b"not a table")
    monkeypatch.setattr(semantic, "TABLE_FILE", bad)
    said: list[str] = []
    one, two = Meaning(said.append), Meaning(said.append)
    one.arm()
    two.arm()
    es = [entry(POOL, T0), entry(FILLER[0], T0)]
    assert one.similarities(es, TASK) is None
    assert two.similarities(es, TASK) is None
    assert one.dedup_candidates(es) == []
    meaning_mod.say_once(semantic.unavailable_reason(), said.append)  # what recall would say
    assert len(said) == 1 and "sha256" in said[0], said


# -- dedup candidates ------------------------------------------------------------------------------

REWORDED = ("deploys go through the staging cluster first", "we always ship to staging before production")
ONE_ID = (
    "the granite service stores its sessions under /var/lib/granite",
    "the cobalt service stores its sessions under /var/lib/cobalt",
)


def test_pure_filter_queues_reworded_pairs_and_keeps_anchored_facts_apart() -> None:
    a, b = entry(REWORDED[0], T0), entry(REWORDED[1], T0 + 1)
    g, c = entry(ONE_ID[0], T0 + 2), entry(ONE_ID[1], T0 + 3)
    r = entry("always ship to staging first", T0 + 4, "rule")
    es = [a, b, g, c, r]
    cands = [(b.id, a.id, 0.64), (g.id, c.id, 0.99), (a.id, r.id, 0.9), (a.id, "gone", 0.9)]
    assert dedup.ambiguous_pairs(es, cands) == [(a.id, b.id, 0.64)]  # older first; ids, types, anchors
    assert dedup.ambiguous_pairs(es, [(a.id, b.id, dedup.SEMANTIC_MIN - 0.01)]) == []
    assert dedup.ambiguous_pairs(es) == []  # the words alone miss it
    kept = dedup.apply_decision(es, a.id, b.id, "keep_both")
    assert dedup.ambiguous_pairs(kept, cands) == []  # decided once, not asked again


def test_vectors_alone_never_merge_on_add(tmp_path: Path) -> None:
    store = LtmStore(tmp_path / "ltm.json")
    store.add("discovery", fact=REWORDED[0])
    store.add("discovery", fact=REWORDED[1])
    assert len(store.all()) == 2


def test_dedup_candidates_find_the_reworded_pair_not_the_unrelated_ones(tmp_path: Path) -> None:
    store = LtmStore(tmp_path / "ltm.json")
    for text in (*REWORDED, *ONE_ID, *FILLER[:3]):
        store.add("discovery", fact=text)
    store.add("rule", rule="ship to staging before production, always")
    meaning = Meaning()  # not armed: dedup runs only where a request is about to go, so it may load
    by_text = {e.text(): e.id for e in store.all()}
    pairs = store.ambiguous_pairs(meaning.dedup_candidates)
    ids = {(a.id, b.id) for a, b, _ in pairs}
    assert (by_text[REWORDED[0]], by_text[REWORDED[1]]) in ids
    assert not any({a.id, b.id} == {by_text[ONE_ID[0]], by_text[ONE_ID[1]]} for a, b, _ in pairs)
    assert all(a.type == b.type for a, b, _ in pairs)
    assert store.ambiguous_pairs() == []  # lexical only: nothing


def test_consolidation_asks_the_model_about_the_pair_the_vectors_found(tmp_path: Path) -> None:
    store, sessions = LtmStore(tmp_path / "ltm.json"), SessionStore(tmp_path / "sessions")
    a = store.add("discovery", fact=REWORDED[0])[0]
    b = store.add("discovery", fact=REWORDED[1])[0]
    s = sessions.create("m")
    for m in (make("user", "we decided to deploy on fridays"), make("assistant", "Noted.")):
        s.append(m)
    prompts: list[str] = []

    def ask(prompt: str, max_tokens: int) -> str:
        prompts.append(prompt)
        return json.dumps({"entries": [], "pairs": [{"a": a.id, "b": b.id, "decision": "merge"}]})

    cons = Consolidator(
        store, sessions, Redactor("standard"), max_chars=lambda: 8_000, semantic=Meaning().dedup_candidates
    )
    out = cons.run(s, ask)
    s.close()
    assert a.id in prompts[0] and b.id in prompts[0] and REWORDED[1] in prompts[0]
    assert out.decided == 1
    merged: list[Any] = [e for e in store.all() if e.type == "discovery"]
    assert len(merged) == 1 and merged[0].text() == REWORDED[1]  # the newer wording, by the model's word


# -- in the app ------------------------------------------------------------------------------------


def test_a_resumed_session_is_ranked_lexically_at_attach_and_by_meaning_at_its_first_message(
    app_factory: AppFactory, fake_server: FakeServer, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded(project / ".clio")
    fake_server.script(Reply(text="ok"), Reply(text="ok"))
    first = app_factory()
    first.run_turn(TASK)  # a session whose task is the reworded question
    session_id = first.session.id  # type: ignore[union-attr]
    first.close()
    semantic.reset_embedder()  # a new run: nothing loaded
    loads: list[int] = []
    real = semantic.load_embedder
    monkeypatch.setattr(semantic, "load_embedder", lambda *a, **k: loads.append(1) or real(*a, **k))
    again = app_factory(resume=session_id)
    assert again.agent.latest_task() == TASK  # attach ranked against a real task...
    assert loads == []  # ...without loading the model on the way to the prompt
    assert POOL not in again.prompt.system()[0]["content"]  # type: ignore[union-attr]
    again.run_turn("and what about it under load?")
    assert loads == [1]
    assert POOL in system_text(fake_server.chat_requests[-1])  # the first request of this run


def test_preload_loads_the_table_in_the_background_unless_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[int] = []
    real = semantic.load_embedder
    monkeypatch.setattr(semantic, "load_embedder", lambda *a, **k: loads.append(1) or real(*a, **k))
    meaning = Meaning()
    thread = meaning.start_preload()
    assert thread is not None
    thread.join(30)
    assert loads == [1]  # loaded by the thread, before any ranking asked
    meaning.arm()
    assert meaning.similarities([entry(POOL, T0)], TASK)
    assert loads == [1]  # the ranking found it loaded
    semantic.reset_embedder()
    monkeypatch.setenv("CLIO_SEMANTIC", "0")
    assert Meaning().start_preload() is None
    assert loads == [1]
