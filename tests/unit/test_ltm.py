"""Long-term memory: similarity, dedup thresholds, ranking, pruning, stats, the store and notes."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from clio.memory import ltm, ltm_stats
from clio.memory.ltm import Entry, LtmError
from clio.memory.similarity import MinHasher, jaccard, near_duplicates, stem, terms, word_set
from clio.store.ltm_store import LtmStore

DAY = 86400.0
NOW = 1_800_000_000.0


def words(prefix: str, n: int, start: int = 0) -> list[str]:
    return [f"{prefix}{i}" for i in range(start, start + n)]


def entry(type_: str = "discovery", conf: float = 0.8, age_days: float = 0.0, **fields: object) -> Entry:
    if not fields:
        fields = {"fact": f"fact number {random.random()}"}
    e = ltm.make_entry(type_, dict(fields), confidence=conf, now=NOW - age_days * DAY)
    return e


def word_count(text: str) -> int:
    return len(text.split())


# ---------------------------------------------------------------- similarity


def test_word_set_lowercases_and_splits_identifiers() -> None:
    assert word_set("Run `ruff check` on snake_case.py, then RUN it") == {
        "run", "ruff", "check", "on", "snake", "case", "py", "then", "it",
    }  # fmt: skip
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)


def test_stemmer_maps_inflections_together() -> None:
    assert stem("caching") == stem("cache") == stem("cached")
    assert stem("files") == stem("file")
    assert stem("tests") == stem("testing") == stem("tested")
    assert stem("configuration") == stem("configured")
    assert stem("fixes") == stem("fix")
    assert terms("The tests are failing") == [stem("tests"), stem("failing")]


def test_minhash_estimates_jaccard_and_is_deterministic_across_processes() -> None:
    h = MinHasher()
    base = words("w", 100)
    for shared in (20, 50, 85, 100):
        other = base[:shared] + words("x", 100 - shared)
        true = jaccard(frozenset(base), frozenset(other))
        est = h.estimate(h.signature(base), h.signature(other))
        assert abs(est - true) < 0.2, (shared, true, est)
    sig = h.signature(base)
    code = (
        "from clio.memory.similarity import MinHasher;"
        "print(list(MinHasher().signature([f'w{i}' for i in range(100)])))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == list(sig)


def test_minhash_prefilter_finds_the_same_duplicates_as_exact_jaccard() -> None:
    rng = random.Random(7)
    vocab = words("v", 300)
    target = frozenset(rng.sample(vocab, 40))
    cands: list[frozenset[str]] = []
    for _ in range(300):
        keep = rng.randint(25, 40)
        extra = rng.randint(0, 8)
        kept = rng.sample(sorted(target), keep)
        cands.append(frozenset(kept + rng.sample(vocab, extra)))
    exact = sorted(i for i, c in enumerate(cands) if jaccard(target, c) >= 0.85)
    assert len(exact) >= 5  # the constructed data has real near-duplicates
    with_filter = sorted(i for i, _ in near_duplicates(target, cands, 0.85, prefilter_min=1))
    without = sorted(i for i, _ in near_duplicates(target, cands, 0.85))
    assert with_filter == exact == without


@pytest.mark.parametrize("minhash", [False, True])
@pytest.mark.parametrize(("shared", "merged"), [(84, False), (85, True), (86, True)])
def test_dedup_threshold(shared: int, merged: bool, minhash: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    base = ltm.make_entry("discovery", {"fact": " ".join(words("w", 100))}, now=NOW)
    entries = [base]
    if minhash:  # many entries, MinHash prefilter on
        monkeypatch.setattr(ltm, "DEDUP_MINHASH_MIN", 50)
        entries += [
            ltm.make_entry("discovery", {"fact": " ".join(words("w", 50) + words(f"u{k}x", 45))}, now=NOW)
            for k in range(80)
        ]
    new = ltm.make_entry("discovery", {"fact": " ".join(words("w", shared))}, now=NOW + 10)
    assert jaccard(word_set(base.text()), word_set(new.text())) == shared / 100
    out, stored, created = ltm.upsert(entries, new)
    assert created is (not merged)
    assert len(out) == len(entries) + (0 if merged else 1)
    if merged:
        assert stored.id == base.id
        assert stored.last_confirmed == NOW + 10
        assert stored.first_seen == NOW


def test_dedup_never_merges_across_types() -> None:
    d = ltm.make_entry("discovery", {"fact": "use uv to install packages"}, now=NOW)
    p = ltm.make_entry("pattern", {"pattern": "use uv to install packages"}, now=NOW)
    out, _, created = ltm.upsert([d], p)
    assert created and len(out) == 2


def test_merge_confirms_and_combines() -> None:
    old = ltm.make_entry(
        "solution",
        {
            "error": "ImportError no module named yaml",
            "solution": "pip install pyyaml",
            "examples": ["ci.log"],
        },
        confidence=0.6,
        now=NOW - 10 * DAY,
    )
    new = ltm.make_entry(
        "solution",
        {
            "error": "ImportError: No module named yaml",
            "solution": "pip install pyyaml",
            "examples": ["x.py"],
        },
        confidence=0.5,
        now=NOW,
    )
    out, stored, created = ltm.upsert([old], new)
    assert not created and len(out) == 1
    assert stored.fields["applied"] == 2
    assert stored.fields["examples"] == ["ci.log", "x.py"]
    assert stored.confidence == pytest.approx(0.6 + ltm.CONFIRM_BUMP)
    assert stored.last_confirmed == NOW and stored.first_seen == NOW - 10 * DAY
    high = ltm.make_entry("discovery", {"fact": "a b c"}, confidence=0.99, now=NOW)
    assert ltm.merge(high, high).confidence == 1.0


def test_make_entry_rejects_bad_input_with_clear_messages() -> None:
    with pytest.raises(LtmError, match="unknown entry type 'idea'"):
        ltm.make_entry("idea", {"fact": "x"})
    with pytest.raises(LtmError, match="a discovery needs 'fact'"):
        ltm.make_entry("discovery", {"fact": "  "})
    with pytest.raises(LtmError, match="between 0 and 1"):
        ltm.make_entry("discovery", {"fact": "x"}, confidence=1.5)
    with pytest.raises(LtmError, match="must be a number"):
        ltm.make_entry("discovery", {"fact": "x"}, confidence="high")
    with pytest.raises(LtmError, match="unknown field 'solution' for a discovery"):
        ltm.make_entry("discovery", {"fact": "x", "solution": "y"})
    with pytest.raises(LtmError, match="list of strings"):
        ltm.make_entry("pattern", {"pattern": "x", "examples": [1, 2]})
    with pytest.raises(LtmError, match="a workflow needs 'steps'"):
        ltm.make_entry("workflow", {"name": "release"})


def test_ids_are_short_stable_and_unique() -> None:
    a = ltm.make_entry("discovery", {"fact": "Tests use pytest"}, now=1.0)
    b = ltm.make_entry("discovery", {"fact": "tests use PYTEST"}, now=2.0)
    c = ltm.make_entry("rule", {"rule": "Tests use pytest"}, now=1.0)
    assert a.id == b.id and len(a.id) == 8 and a.id.startswith("d-")
    assert c.id.startswith("r-")
    salted = ltm.entry_id("discovery", "Tests use pytest", taken=[a.id])
    assert salted != a.id and salted.startswith("d-")


def test_entry_round_trips_through_dict() -> None:
    e = ltm.make_entry(
        "workflow", {"name": "release", "steps": ["bump", "tag", "push"]}, confidence=0.9, now=NOW
    )
    back = Entry.from_dict(json.loads(json.dumps(e.to_dict())))
    assert back == e
    with pytest.raises(LtmError):
        Entry.from_dict({"id": "d-1", "type": "discovery", "fact": "x"})  # no times


# ---------------------------------------------------------------- ranking


def test_old_relevant_entry_beats_newer_irrelevant_ones() -> None:
    old = entry(conf=0.7, age_days=200, fact="The sqlite cache database lives in build/cache.db")
    fresh = [entry(conf=1.0, age_days=0, fact=f"Frontend colour token {i} is blue") for i in range(20)]
    ranked = ltm.rank([*fresh, old], "why is the caching database slow", NOW)
    assert ranked[0][1] is old
    chosen = ltm.select_for_prompt(
        [*fresh, old], "fix the cache", [], NOW, 10_000, word_count, {"discovery": 3}
    )
    assert chosen[0] is old and len(chosen) == 3


def test_working_files_count_as_relevance() -> None:
    about_store = entry(conf=0.5, age_days=50, fact="atomic writes go through a temp file and rename")
    other = entry(conf=0.9, age_days=0, fact="the logo is an owl")
    chosen = ltm.select_for_prompt(
        [other, about_store], "", ["clio/store/atomic.py"], NOW, 10_000, word_count
    )
    assert chosen[0] is about_store


def test_empty_task_orders_by_confidence_times_recency() -> None:
    rng = random.Random(3)
    entries = [entry(conf=rng.uniform(0.3, 1), age_days=rng.uniform(0, 300)) for _ in range(12)]
    chosen = ltm.select_for_prompt(entries, "", [], NOW, 10_000, word_count)
    keys = [e.confidence * ltm.recency(e, NOW) for e in chosen]
    assert len(chosen) == 12 and keys == sorted(keys, reverse=True)
    shuffled = entries[:]
    rng.shuffle(shuffled)
    assert ltm.select_for_prompt(shuffled, "", [], NOW, 10_000, word_count) == chosen  # not insertion order


def test_rules_are_always_relevant() -> None:
    rule = entry("rule", conf=0.6, age_days=100, rule="Never push to main directly")
    relevant = [entry(conf=1.0, fact=f"parser handles token kind {i}") for i in range(5)]
    irrelevant = [entry(conf=1.0, fact=f"logo colour {i} is green") for i in range(5)]
    order = [e for _, e in ltm.rank([*irrelevant, rule, *relevant], "parser token kinds", NOW)]
    assert order.index(rule) == len(relevant)  # after the matching facts, before every non-matching one
    assert {e.id for e in order[: len(relevant)]} == {e.id for e in relevant}
    assert all(order.index(rule) < order.index(e) for e in irrelevant)


def test_caps_per_type_hold() -> None:
    entries = [entry(fact=f"discovery {i} about parsing") for i in range(30)]
    entries += [entry("pattern", pattern=f"pattern {i} for parsing") for i in range(30)]
    entries += [entry("rule", rule=f"rule {i}") for i in range(30)]
    caps = {"discovery": 4, "pattern": 2, "rule": 3}
    chosen = ltm.select_for_prompt(entries, "parsing", [], NOW, 100_000, word_count, caps)
    counts = {t: sum(1 for e in chosen if e.type == t) for t in ("discovery", "pattern", "rule")}
    assert counts == caps
    default = ltm.select_for_prompt(entries, "parsing", [], NOW, 100_000, word_count)
    assert sum(1 for e in default if e.type == "discovery") == ltm.DEFAULT_CAPS["discovery"]
    assert sum(1 for e in default if e.type == "rule") == ltm.DEFAULT_CAPS["rule"]


@pytest.mark.parametrize("budget", [0, 5, 20, 60, 150, 400])
def test_budget_holds(budget: int) -> None:
    rng = random.Random(budget)
    entries = [entry(fact=" ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(3, 30)))) for _ in range(40)]  # fmt: skip
    chosen = ltm.select_for_prompt(entries, "alpha gamma", [], NOW, budget, word_count)
    text = ltm.render_ltm(chosen)
    assert word_count(text) <= budget
    if budget >= 60:
        assert chosen  # a real budget admits something


def test_budget_holds_when_joined_text_costs_more_than_its_lines() -> None:
    def lumpy(text: str) -> int:  # newlines cost extra, as a real tokenizer's merges may
        return len(text.split()) + 3 * text.count("\n")

    entries = [entry(fact=f"fact {i} with several plain words in it") for i in range(30)]
    for budget in (40, 90, 200):
        chosen = ltm.select_for_prompt(entries, "", [], NOW, budget, lumpy)
        assert chosen and lumpy(ltm.render_ltm(chosen)) <= budget


def test_render_groups_by_type_with_rules_first() -> None:
    es = [
        entry(fact="pytest lives in tests/"),
        entry("solution", error="E1", solution="do S1", applied=3),
        entry("rule", rule="run ruff first"),
        entry("workflow", name="release", steps=["bump", "tag"]),
        entry("failure", what="rm -rf build", impact="lost cache", prevention="use clean target"),
        entry("pattern", conf=0.4, pattern="dataclasses for models", examples=["a.py", "b.py", "c.py"]),
    ]
    text = ltm.render_ltm(es)
    lines = text.splitlines()
    assert lines[0] == ltm.HEADER and lines[1] == "Rules:" and lines[2] == "- run ruff first"
    assert "- E1 → do S1 (worked 3×)" in lines
    assert "- release: 1) bump 2) tag" in lines
    assert "- rm -rf build; impact: lost cache; prevent: use clean target" in lines
    assert "- dataclasses for models (e.g. a.py; b.py) (unconfirmed)" in lines
    assert ltm.render_ltm([]) == ""


def test_search_ranks_by_relevance() -> None:
    a = entry(fact="database migrations run with alembic upgrade head")
    b = entry(fact="the database is postgres")
    c = entry(fact="ui uses tailwind")
    hits = ltm.search([c, b, a], "alembic database migration")
    assert [e for _, e in hits] == [a, b]
    assert hits[0][0] == 1.0


# ---------------------------------------------------------------- pruning and stats


def test_prune_rules() -> None:
    keep_recent = entry(conf=0.5, age_days=10)
    old = entry(conf=0.9, age_days=91)
    doubtful = entry(conf=0.2, age_days=1)
    old_rule = entry("rule", conf=0.9, age_days=400, rule="never force push")
    weak_old_rule = entry("rule", conf=0.5, age_days=400, rule="maybe squash")
    old_failure = entry("failure", conf=0.85, age_days=200, what="deleted migrations")
    doubtful_rule = entry("rule", conf=0.1, age_days=0, rule="tabs")
    kept, removed = ltm_stats.prune(
        [keep_recent, old, doubtful, old_rule, weak_old_rule, old_failure, doubtful_rule], NOW
    )
    assert kept == [keep_recent, old_rule, old_failure]
    assert removed == [old, doubtful, weak_old_rule, doubtful_rule]
    kept, _ = ltm_stats.prune([keep_recent, old], NOW, max_age_days=5, min_confidence=0.0)
    assert kept == []


def test_stats() -> None:
    es = [entry(conf=0.5, age_days=3), entry("rule", conf=1.0, age_days=1, rule="x")]
    s = ltm_stats.stats(es)
    assert s.total == 2 and s.by_type["discovery"] == 1 and s.by_type["rule"] == 1
    assert s.oldest == NOW - 3 * DAY and s.newest == NOW - DAY
    assert s.mean_confidence == pytest.approx(0.75)
    assert "2 entries" in ltm_stats.format_stats(s)
    assert ltm_stats.stats([]).mean_confidence is None


# ---------------------------------------------------------------- the store


def test_store_round_trip(tmp_path: Path) -> None:
    path = tmp_path / ".clio" / "ltm.json"
    clock = iter(float(t) for t in range(1000, 2000))
    store = LtmStore(path, clock=lambda: next(clock))
    e, created = store.add("discovery", fact="Tests run with pytest -q", confidence=0.8)
    assert created and e.id.startswith("d-")
    again, created = store.add("discovery", fact="tests run with PYTEST -q", confidence=0.6)
    assert not created and again.id == e.id and again.confidence == pytest.approx(0.85)
    store.add("solution", error="E", solution="S", examples=["a"])
    data = json.loads(path.read_text())
    assert data["version"] == 1 and len(data["entries"]) == 2
    assert {d["id"] for d in data["entries"]} == {x.id for x in store.all()}
    assert LtmStore(path).get(e.id) == again  # a second process sees the same
    assert store.delete(e.id) and not store.delete(e.id)
    assert store.stats().total == 1
    assert store.clear() == 1 and store.all() == []


def test_store_merges_with_disk_not_memory(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    a, b = LtmStore(path), LtmStore(path)
    a.add("discovery", fact="first fact about alpha")
    b.add("discovery", fact="second fact about beta")
    # a third writer edits the file directly; the next add keeps its change
    data = json.loads(path.read_text())
    data["entries"].append(ltm.make_entry("rule", {"rule": "external rule"}, now=NOW).to_dict())
    path.write_text(json.dumps(data))
    a.add("discovery", fact="third fact about gamma")
    assert len(b.all()) == 4


def test_store_prune_and_disabled(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    store = LtmStore(path, clock=lambda: NOW)
    store.add("discovery", fact="fresh", confidence=0.9)
    store.add("discovery", fact="shaky", confidence=0.1)
    removed = store.prune()
    assert [e.fields["fact"] for e in removed] == ["shaky"]
    assert len(store.prune(max_age_days=0, now=NOW + 1)) == 1
    off = LtmStore(None)
    entry_, created = off.add("discovery", fact="not written")
    assert not created and entry_.fields["fact"] == "not written"
    assert off.all() == [] and off.prune() == [] and off.clear() == 0 and not off.delete("d-1")
    assert off.prompt_block("x", [], 1000, word_count) == ""
    with pytest.raises(LtmError):
        off.add("discovery")


def test_damaged_file_is_quarantined_and_bad_entries_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    path.write_text("{not json")
    store = LtmStore(path)
    assert store.all() == []
    assert len(list(tmp_path.glob("ltm.damaged-*.json"))) == 1
    store.add("discovery", fact="survives")
    data = json.loads(path.read_text())
    data["entries"].append({"id": "x-1", "type": "mystery"})
    path.write_text(json.dumps(data))
    store.add("discovery", fact="another one")
    raw = json.loads(path.read_text())["entries"]
    assert {"id": "x-1", "type": "mystery"} in raw and len(raw) == 3
    assert len(store.all()) == 2


def test_prompt_block_uses_ranking_and_budget(tmp_path: Path) -> None:
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: NOW)
    store.add("discovery", fact="the cache lives in build/cache.db")
    store.add("rule", rule="always run ruff")
    block = store.prompt_block("cache problem", [], 200, word_count)
    assert block.startswith(ltm.HEADER) and "ruff" in block and "cache.db" in block
    assert store.prompt_block("cache", [], 3, word_count) == ""
