"""Long-term memory: similarity, lossless dedup, ranking, lifecycle (decay by type, reinforcement,
pruning, pinning, compaction), stats and the store."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clio.memory import dedup, lifecycle, ltm, ltm_rank, ltm_stats
from clio.memory.ltm import Entry, LtmError
from clio.memory.ltm_store import LtmStore
from clio.memory.provenance import Provenance
from clio.memory.similarity import (
    MinHasher,
    anchors,
    classify,
    jaccard,
    near_duplicates,
    similar_pairs,
    stem,
    terms,
    word_set,
)

DAY = 86400.0
NOW = 1_800_000_000.0


def words(prefix: str, n: int, start: int = 0) -> list[str]:
    return [f"{prefix}{i}" for i in range(start, start + n)]


def letters(prefix: str, n: int) -> list[str]:
    """n plain words without digits (digits would make each word an anchor)."""
    return [prefix + "".join("abcdefghijklmnopqrstuvwxyz"[d] for d in (i // 26, i % 26)) for i in range(n)]


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
    vocab = letters("w", 100)
    base = ltm.make_entry("discovery", {"fact": " ".join(vocab)}, now=NOW)
    entries = [base]
    if minhash:  # many entries, MinHash prefilter on
        monkeypatch.setattr(dedup, "MINHASH_MIN", 50)
        entries += [
            ltm.make_entry("discovery", {"fact": " ".join(vocab[:50] + letters(f"u{chr(97 + k % 26)}{chr(97 + k // 26)}x", 45))}, now=NOW)
            for k in range(80)
        ]  # fmt: skip
    new = ltm.make_entry("discovery", {"fact": " ".join(vocab[:shared])}, now=NOW + 10)
    assert jaccard(word_set(base.text()), word_set(new.text())) == shared / 100
    out, stored, created = dedup.upsert(entries, new)
    assert created is (not merged)
    assert len(out) == len(entries) + (0 if merged else 1)
    if merged:
        assert stored.id == base.id
        assert stored.last_confirmed == NOW + 10
        assert stored.first_seen == NOW


def test_dedup_never_merges_across_types() -> None:
    d = ltm.make_entry("discovery", {"fact": "use uv to install packages"}, now=NOW)
    p = ltm.make_entry("pattern", {"pattern": "use uv to install packages"}, now=NOW)
    out, _, created = dedup.upsert([d], p)
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
    out, stored, created = dedup.upsert([old], new)
    assert not created and len(out) == 1
    assert stored.fields["error"] == "ImportError: No module named yaml"  # the newer wording
    assert stored.history == [
        {"id": old.id, "at": NOW - 10 * DAY, "why": "merged", "error": "ImportError no module named yaml",
         "solution": "pip install pyyaml"}
    ]  # fmt: skip
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
    ranked = ltm_rank.rank([*fresh, old], "why is the caching database slow", NOW)
    assert ranked[0][1] is old
    chosen = ltm_rank.select_for_prompt(
        [*fresh, old], "fix the cache", [], NOW, 10_000, word_count, {"discovery": 3}
    )
    assert chosen[0] is old and len(chosen) == 3


def test_working_files_count_as_relevance() -> None:
    about_store = entry(conf=0.5, age_days=50, fact="atomic writes go through a temp file and rename")
    other = entry(conf=0.9, age_days=0, fact="the logo is an owl")
    chosen = ltm_rank.select_for_prompt(
        [other, about_store], "", ["clio/store/atomic.py"], NOW, 10_000, word_count
    )
    assert chosen[0] is about_store


def test_empty_task_orders_by_confidence_times_recency() -> None:
    rng = random.Random(3)
    entries = [entry(conf=rng.uniform(0.3, 1), age_days=rng.uniform(0, 300)) for _ in range(12)]
    chosen = ltm_rank.select_for_prompt(entries, "", [], NOW, 10_000, word_count)
    keys = [e.confidence * ltm_rank.recency(e, NOW) for e in chosen]
    assert len(chosen) == 12 and keys == sorted(keys, reverse=True)
    shuffled = entries[:]
    rng.shuffle(shuffled)
    assert ltm_rank.select_for_prompt(shuffled, "", [], NOW, 10_000, word_count) == chosen  # not insertion order


def test_rules_are_always_relevant() -> None:
    rule = entry("rule", conf=0.6, age_days=100, rule="Never push to main directly")
    relevant = [entry(conf=1.0, fact=f"parser handles token kind {i}") for i in range(5)]
    irrelevant = [entry(conf=1.0, fact=f"logo colour {i} is green") for i in range(5)]
    order = [e for _, e in ltm_rank.rank([*irrelevant, rule, *relevant], "parser token kinds", NOW)]
    assert order.index(rule) == len(relevant)  # after the matching facts, before every non-matching one
    assert {e.id for e in order[: len(relevant)]} == {e.id for e in relevant}
    assert all(order.index(rule) < order.index(e) for e in irrelevant)


def test_caps_per_type_hold() -> None:
    entries = [entry(fact=f"discovery {i} about parsing") for i in range(30)]
    entries += [entry("pattern", pattern=f"pattern {i} for parsing") for i in range(30)]
    entries += [entry("rule", rule=f"rule {i}") for i in range(30)]
    caps = {"discovery": 4, "pattern": 2, "rule": 3}
    chosen = ltm_rank.select_for_prompt(entries, "parsing", [], NOW, 100_000, word_count, caps)
    counts = {t: sum(1 for e in chosen if e.type == t) for t in ("discovery", "pattern", "rule")}
    assert counts == caps
    default = ltm_rank.select_for_prompt(entries, "parsing", [], NOW, 100_000, word_count)
    assert sum(1 for e in default if e.type == "discovery") == ltm_rank.DEFAULT_CAPS["discovery"]
    assert sum(1 for e in default if e.type == "rule") == ltm_rank.DEFAULT_CAPS["rule"]


@pytest.mark.parametrize("budget", [0, 5, 20, 60, 150, 400])
def test_budget_holds(budget: int) -> None:
    rng = random.Random(budget)
    entries = [entry(fact=" ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(3, 30)))) for _ in range(40)]  # fmt: skip
    chosen = ltm_rank.select_for_prompt(entries, "alpha gamma", [], NOW, budget, word_count)
    text = ltm.render_ltm(chosen)
    assert word_count(text) <= budget
    if budget >= 60:
        assert chosen  # a real budget admits something


def test_budget_holds_when_joined_text_costs_more_than_its_lines() -> None:
    def lumpy(text: str) -> int:  # newlines cost extra, as a real tokenizer's merges may
        return len(text.split()) + 3 * text.count("\n")

    entries = [entry(fact=f"fact {i} with several plain words in it") for i in range(30)]
    for budget in (40, 90, 200):
        chosen = ltm_rank.select_for_prompt(entries, "", [], NOW, budget, lumpy)
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
    hits = ltm_rank.search([c, b, a], "alembic database migration")
    assert [e for _, e in hits] == [a, b]
    assert hits[0][0] == 1.0


# ---------------------------------------------------------------- pruning and stats


def test_prune_by_effective_score_and_unused_time_unless_pinned() -> None:
    fresh = entry(conf=0.5, age_days=10)
    faded = entry(conf=0.5, age_days=250)  # fact: 0.5 * 0.5**(250/90) = 0.07 < 0.1
    unused = entry(conf=0.95, age_days=181)  # score 0.24, but 181 days without use
    doubtful = entry(conf=0.05, age_days=0)
    old_rule = entry("rule", conf=0.9, age_days=400, rule="never force push")  # rules never decay
    doubtful_rule = entry("rule", conf=0.05, age_days=0, rule="tabs")
    old_failure = entry("failure", conf=0.9, age_days=100, what="deleted migrations")  # event: 0.9 * 0.1
    pinned = dataclasses.replace(entry(conf=0.05, age_days=900), pinned=True)
    kept, removed = ltm_stats.prune(
        [fresh, faded, unused, doubtful, old_rule, doubtful_rule, old_failure, pinned], NOW
    )
    assert kept == [fresh, old_rule, pinned]
    assert removed == [faded, unused, doubtful, doubtful_rule, old_failure]
    used = dataclasses.replace(unused, last_used=NOW - 5 * DAY)  # a recent use keeps it
    assert ltm_stats.prune([used], NOW)[0] == [used]
    kept, _ = ltm_stats.prune([fresh, old_rule], NOW, max_unused_days=5, min_score=0.0)
    assert kept == [old_rule]


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
    store.add("discovery", fact="shaky", confidence=0.05)
    removed = store.prune()
    assert [e.fields["fact"] for e in removed] == ["shaky"]
    assert len(store.prune(max_unused_days=0, now=NOW + 1)) == 1
    off = LtmStore(None)
    entry_, created = off.add("discovery", fact="not written")
    assert not created and entry_.fields["fact"] == "not written"
    assert off.all() == [] and off.prune() == [] and off.clear() == 0 and not off.delete("d-1")
    assert (
        off.reinforce(["d-1"]) == []
        and off.pin("d-1") is None
        and off.compact(["d-1"], {"fact": "x"}) is None
    )
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


# ---------------------------------------------------------------- lossless dedup (issue 14)

TEMPLATES: list[tuple[str, list[str]]] = [
    ("the {0} service stores its {0} sessions under /var/lib/{0} on every host of the fleet",
     ["granite", "cobalt", "basalt", "quartz"]),
    ("The billing API server listens on port {0} inside the staging cluster behind the nginx proxy",
     ["8080", "8081", "9090", "7001"]),
    ("Invoice PDFs are rendered by the template engine defined in invoices/{0}.py for every customer account",
     ["render_pdf", "render_html", "layout", "quillmark"]),
    ("The CI pipeline pins the Python interpreter to version {0} for every job in the main workflow file",
     ["3.10", "3.11", "3.12", "3.13"]),
    ("Deployments to the production cluster are approved by {0} before the release train leaves on Friday",
     ["Alice", "Bob", "Carol", "Dave"]),
    ("The retry loop in the payment worker reads its limit from the {0} setting of the config module",
     ["MAX_RETRIES", "MAX_ATTEMPTS", "RETRY_LIMIT", "BACKOFF_CAP"]),
]  # fmt: skip


def test_anchors_are_identifiers_paths_numbers_versions_and_names() -> None:
    found = anchors(
        "Then Alice moved `make dist` to scripts/release.sh; port 8080, python 3.12, MAX_RETRIES, fooBar"
    )
    for a in [("alice",), ("make", "dist"), ("scripts", "release", "sh"), ("8080",), ("3", "12"),
              ("max", "retries"), ("foobar",)]:  # fmt: skip
        assert a in found, a
    assert ("moved",) not in found and ("port",) not in found
    assert anchors("plain words only here") == frozenset()


@pytest.mark.parametrize(("template", "values"), TEMPLATES)
def test_facts_differing_in_one_identifier_all_survive(template: str, values: list[str]) -> None:
    facts = [template.format(v) for v in values]
    old_rule_merges = sum(
        1
        for i in range(len(facts))
        for k in range(i)
        if jaccard(word_set(facts[i]), word_set(facts[k])) >= 0.85
    )
    entries: list[Entry] = []
    for i, f in enumerate(facts):
        entries, stored, created = dedup.upsert(
            entries, ltm.make_entry("discovery", {"fact": f}, now=NOW + i)
        )
        assert created and stored.fields["fact"] == f
    assert sorted(e.text() for e in entries) == sorted(facts)
    assert all(not e.history for e in entries)
    if template.startswith(("the {0} service", "The billing")):
        assert old_rule_merges > 0  # the old rule (Jaccard >= 0.85 merges) lost facts here


def test_the_finding_granite_and_cobalt_stay_apart_through_the_store(tmp_path: Path) -> None:
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: NOW)
    granite = "Concurrent fact 2-0: the granite service stores its granite sessions under /var/lib/granite"
    cobalt = "Concurrent fact 2-0: the cobalt service stores its cobalt sessions under /var/lib/cobalt"
    assert store.add("discovery", fact=granite)[1] and store.add("discovery", fact=cobalt)[1]
    assert {e.text() for e in store.all()} == {granite, cobalt}


def test_a_true_duplicate_merges_keeping_the_newer_wording_and_the_history(tmp_path: Path) -> None:
    clock = [NOW]
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: clock[0])
    first = "The billing API server listens on port 8080 inside the staging cluster behind the nginx proxy"
    second = (
        "the billing api server listens on port 8080, inside the staging cluster, behind the nginx proxy."
    )
    third = "Behind the nginx proxy, the billing API server listens on port 8080 inside the staging cluster"
    a, _ = store.add("discovery", fact=first)
    for text in (second, third):
        clock[0] += DAY
        e, created = store.add("discovery", fact=text)
        assert not created and e.id == a.id
    (e,) = LtmStore(tmp_path / "ltm.json").all()  # read back from ltm.json
    assert e.fields["fact"] == third
    assert [(h["fact"], h["at"], h["why"]) for h in e.history] == [
        (first, NOW, "merged"),
        (second, NOW + DAY, "merged"),
    ]
    store.add("discovery", fact=third)  # the very same words: nothing to keep
    assert len(store.get(a.id).history) == 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("the api server listens on port 8080 in staging", "The API server listens on port 8080 in staging!", "duplicate"),
        ("deploys to the production cluster are approved by the release manager on Friday mornings before noon",
         "deploys to the production cluster are approved by the release manager on Fridays mornings before noon",
         "duplicate"),
        ("the cache service stores its cache sessions in the redis cluster of every region",
         "the cache service keeps its cache sessions in the redis cluster of every region", "ambiguous"),
        ("logs go to the central collector", "logs are shipped to the central collector each night", "ambiguous"),
        ("the api listens on port 8080 in staging", "the api listens on port 9090 in staging", "distinct"),
        ("the api listens on port 8080 in staging", "the api listens in staging", "ambiguous"),
        ("tests use pytest", "the docs are built with mkdocs", "distinct"),
    ],
)  # fmt: skip
def test_classify(old: str, new: str, kind: str) -> None:
    assert classify(old, new)[0] == kind


def test_ambiguous_band_is_kept_and_queued_then_decided(tmp_path: Path) -> None:
    clock = iter(NOW + i for i in range(100))
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: next(clock))
    a, _ = store.add("discovery", fact="logs go to the central collector")
    b, created = store.add("discovery", fact="logs are shipped to the central collector each night")
    c, _ = store.add("discovery", fact="the frontend is written in svelte")
    assert created and len(store.all()) == 3  # kept separate, not merged silently
    pairs = dedup.ambiguous_pairs(store.all())
    assert [(x, y) for x, y, _ in pairs] == [(a.id, b.id)]
    assert 0.5 <= pairs[0][2] < 0.85
    assert [(x.id, y.id) for x, y, _ in store.ambiguous_pairs()] == [(a.id, b.id)]
    store.decide(a.id, b.id, "keep_both")  # persisted: not queued again
    assert dedup.ambiguous_pairs(LtmStore(tmp_path / "ltm.json").all()) == []
    assert len(store.all()) == 3
    with pytest.raises(LtmError, match="unknown decision"):
        store.decide(a.id, b.id, "both")


def test_apply_decision_merge_and_replace_keep_the_other_wording() -> None:
    a = ltm.make_entry("discovery", {"fact": "logs go to the central collector"}, now=NOW)
    b = ltm.make_entry(
        "discovery", {"fact": "logs are shipped to the central collector nightly"}, now=NOW + 5
    )
    other = ltm.make_entry("discovery", {"fact": "unrelated"}, now=NOW)
    merged = dedup.apply_decision([a, other, b], a.id, b.id, "merge")
    assert [e.id for e in merged] == [a.id, other.id]
    assert merged[0].fields["fact"] == b.fields["fact"] and merged[0].history[0]["fact"] == a.fields["fact"]
    replaced = dedup.apply_decision([a, other, b], a.id, b.id, "replace")  # a supersedes b
    assert [e.id for e in replaced] == [a.id, other.id]
    assert replaced[0].fields["fact"] == a.fields["fact"]
    assert replaced[0].history == [{"id": b.id, "at": NOW + 5, "why": "replaced", "fact": b.fields["fact"]}]
    assert dedup.apply_decision([a, other], a.id, b.id, "merge") == [a, other]  # b is gone: unchanged
    with pytest.raises(LtmError):
        dedup.apply_decision([a], a.id, a.id, "merge")


def test_semantic_candidates_are_optional() -> None:
    a = ltm.make_entry("discovery", {"fact": "the build needs a recent node"}, now=NOW)
    b = ltm.make_entry("discovery", {"fact": "compiling requires a recent javascript runtime"}, now=NOW + 1)
    c = ltm.make_entry("discovery", {"fact": "the logo is an owl"}, now=NOW + 2)
    assert dedup.ambiguous_pairs([a, b, c]) == []
    candidates = [(b.id, a.id, 0.95), (a.id, c.id, 0.1)]  # (id, id, cosine) found by the caller
    (pair,) = dedup.ambiguous_pairs([a, b, c], candidates)
    assert pair == (a.id, b.id, 0.95)  # older first; below SEMANTIC_MIN left out


def test_lsh_finds_the_pairs_the_exact_scan_finds() -> None:
    rng = random.Random(11)
    vocab = letters("v", 600)
    sets: list[frozenset[str]] = []
    for _ in range(400):
        if sets and rng.random() < 0.2:
            base = list(rng.choice(sets))
            base[rng.randrange(len(base))] = rng.choice(vocab)
            sets.append(frozenset(base))
        else:
            sets.append(frozenset(rng.sample(vocab, rng.randint(8, 16))))
    exact = similar_pairs(sets, 0.5)
    assert len(exact) >= 30
    assert similar_pairs(sets, 0.5, lsh_min=1) == exact
    assert all(jaccard(sets[i], sets[k]) == j >= 0.5 for i, k, j in exact)


def test_rank_fuses_optional_semantic_scores_by_rrf() -> None:
    lexical = entry(conf=0.7, fact="the cache database lives in build/cache.db")
    hidden = entry(conf=0.7, fact="compiled artefacts are kept under the output folder")
    noise = [entry(conf=0.7, fact=f"colour token {i} is blue") for i in range(5)]
    es = [*noise, hidden, lexical]
    plain = [e for _, e in ltm_rank.rank(es, "where do cached build outputs go", NOW)]
    assert plain[0] is lexical and plain.index(hidden) > 0
    fused = [e for _, e in ltm_rank.rank(es, "where do cached build outputs go", NOW, semantic={hidden.id: 0.9})]
    assert {e.id for e in fused[:2]} == {hidden.id, lexical.id}
    assert ltm_rank.rank(es, "x", NOW, semantic=None) == ltm_rank.rank(es, "x", NOW)


# ---------------------------------------------------------------- lifecycle


@pytest.mark.parametrize(
    ("type_", "fields", "half_life"),
    [
        ("discovery", {"fact": "f"}, 90.0), ("solution", {"error": "e", "solution": "s"}, 90.0),
        ("pattern", {"pattern": "p"}, 90.0), ("workflow", {"name": "w", "steps": ["a"]}, 90.0),
        ("failure", {"what": "w"}, 30.0), ("rule", {"rule": "r"}, None),
    ],
)  # fmt: skip
def test_decay_by_type_with_an_injected_clock(
    tmp_path: Path, type_: str, fields: dict[str, Any], half_life: float | None
) -> None:
    clock = [NOW]
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: clock[0])
    e, _ = store.add(type_, confidence=0.8, **fields)
    for days in (0, 30, 90, 365):
        clock[0] = NOW + days * DAY
        want = 1.0 if half_life is None else 0.5 ** (days / half_life)
        assert ltm_rank.recency(e, clock[0]) == pytest.approx(want)
        assert ltm_rank.effective_score(e, clock[0]) == pytest.approx(0.8 * want)


def test_reinforcement_restarts_and_slows_decay(tmp_path: Path) -> None:
    clock = [NOW]
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: clock[0])
    e, _ = store.add("discovery", fact="the parser lives in src/parse.py", confidence=0.8)
    clock[0] = NOW + 90 * DAY
    assert ltm_rank.effective_score(e, clock[0]) == pytest.approx(0.4)
    assert store.reinforce([e.id, "d-nothere"]) == [e.id]
    r = store.get(e.id)
    assert r is not None and r.last_used == NOW + 90 * DAY and r.uses == 1
    assert ltm_rank.effective_score(r, clock[0]) == pytest.approx(0.8)  # the clock restarted
    assert ltm_rank.half_life(r) == pytest.approx(90 * 1.25)
    for _ in range(6):
        store.reinforce([e.id])
    r = store.get(e.id)
    assert r is not None and r.uses == 7 and ltm_rank.half_life(r) == pytest.approx(180.0)  # at most 2x
    assert ltm_rank.effective_score(r, clock[0] + 180 * DAY) == pytest.approx(0.4)


def test_used_in_turn() -> None:
    e = entry(fact="Migrations run with alembic upgrade head from the db/ folder, config in alembic.ini")
    assert lifecycle.used_in_turn(e, [], [{"command": "cd db && alembic -c alembic.ini upgrade head"}])
    assert lifecycle.used_in_turn(e, ["I ran the alembic migrations with upgrade head."], [])
    assert not lifecycle.used_in_turn(e, ["I fixed the CSS of the header."], [{"path": "web/app.css"}])
    assert not lifecycle.used_in_turn(e, [], [])
    port = entry(fact="The API server listens on port 8080")
    assert lifecycle.used_in_turn(port, [], ['{"command": "curl localhost:8080/health"}'])
    assert not lifecycle.used_in_turn(port, ["done"], [{"command": "curl localhost:9090/health"}])


def test_pinning(tmp_path: Path) -> None:
    clock = [NOW]
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: clock[0])
    keep, _ = store.add("failure", what="dropping the prod database", confidence=0.9)
    gone, _ = store.add("failure", what="the flaky network test", confidence=0.9)
    assert store.pin(keep.id) is not None and store.pin("f-000000") is None
    assert json.loads((tmp_path / "ltm.json").read_text())["entries"][0]["pinned"] is True
    clock[0] = NOW + 400 * DAY
    assert [e.id for e in store.prune()] == [gone.id]
    assert [e.id for e in store.all()] == [keep.id]
    store.pin(keep.id, False)
    assert [e.id for e in store.prune()] == [keep.id]


def faded(fact: str, days: float = 100, conf: float = 0.5) -> Entry:
    return ltm.make_entry("discovery", {"fact": fact}, confidence=conf, now=NOW - days * DAY)


def test_compaction_groups_old_faded_entries_by_topic() -> None:
    topic = [
        faded("the nightly backup job writes to s3://acme-backups/db"),
        faded("restoring needs the key from s3://acme-backups/db/keyring", days=120),
        faded("backup retention for s3://acme-backups/db is 14 days", days=110),
        faded(
            "database snapshots are compressed with zstd before the nightly backup job writes them", days=130
        ),
    ]
    other = [
        faded(f"the frontend theme colour {c} is used for buttons and links") for c in ("red", "teal", "plum")
    ]
    fresh = faded("the backup job also writes to s3://acme-backups/db on sundays", days=1)
    pinned = dataclasses.replace(faded("backup restore drills use s3://acme-backups/db"), pinned=True)
    confident = faded("backup alarms page the on-call via s3://acme-backups/db events", days=40, conf=1.0)
    lone = faded("the logo is an owl")
    rule = ltm.make_entry(
        "rule", {"rule": "backups to s3://acme-backups/db only"}, confidence=0.1, now=NOW - 300 * DAY
    )
    groups = lifecycle.compaction_groups([*topic, *other, fresh, pinned, confident, lone, rule], NOW)
    assert sorted(map(sorted, groups)) == sorted([sorted(e.id for e in topic), sorted(e.id for e in other)])
    assert lifecycle.compaction_groups([*topic[:2], lone], NOW) == []  # fewer than 3 on a topic


def test_store_compacts_a_group_into_one_entry_keeping_the_old_texts(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    clock = [NOW - 100 * DAY]
    store = LtmStore(path, clock=lambda: clock[0])
    dirty = Provenance("s1", NOW, True, ("file_operations.read_file",))
    texts = [
        "the nightly backup job writes to s3://acme-backups/db",
        "restoring needs the key from s3://acme-backups/db/keyring",
        "backup retention is 14 days for s3://acme-backups/db",
    ]
    ids = [store.add("discovery", fact=t, confidence=0.5, provenance=dirty if i == 1 else None)[0].id
           for i, t in enumerate(texts)]  # fmt: skip
    keep, _ = store.add("rule", rule="never delete backups by hand")
    clock[0] = NOW
    groups = store.compaction_groups()
    assert [[e.id for e in g] for g in groups] == [ids]
    summary = store.compact(
        ids, {"fact": "Backups: nightly to s3://acme-backups/db, kept 14 days, key in keyring"}
    )
    assert summary is not None and summary.type == "discovery" and summary.confidence == 0.5
    back = LtmStore(path).all()
    assert sorted(e.id for e in back) == sorted([keep.id, summary.id])
    (s,) = [e for e in back if e.id == summary.id]
    assert [h["fact"] for h in s.history] == texts and all(h["why"] == "compacted" for h in s.history)
    assert s.tainted and s.first_seen == NOW - 100 * DAY  # taint sticks; the oldest first_seen
    assert store.compact(ids, {"fact": "again"}) is None  # already gone
    with pytest.raises(LtmError):
        store.compact([keep.id], {"what": "x"})
    assert len(store.all()) == 2


def test_old_files_without_lifecycle_fields_load_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ltm.json"
    old: dict[str, Any] = {"version": 1, "entries": [
        {"id": "d-aaaaaa", "type": "discovery", "fact": "pre-issue-14 fact", "confidence": 0.7,
         "first_seen": NOW - DAY, "last_confirmed": NOW - DAY},
        {"id": "r-bbbbbb", "type": "rule", "rule": "old rule", "confidence": 0.9, "first_seen": NOW,
         "last_confirmed": NOW, "provenance": {"by": "model", "session": "s", "at": NOW, "tainted": False}},
    ]}  # fmt: skip
    path.write_text(json.dumps(old))
    store = LtmStore(path, clock=lambda: NOW)
    a, b = store.all()
    assert (a.history, a.pinned, a.uses, a.last_used, a.distinct) == ([], False, 0, None, [])
    store.reinforce([b.id])
    data = json.loads(path.read_text())
    assert data["entries"][0] == old["entries"][0]  # untouched entries are written as they were
    assert data["entries"][1]["uses"] == 1 and data["entries"][1]["last_used"] == NOW
    full = dataclasses.replace(
        a, history=[{"id": "d-x", "at": 1.0, "why": "merged", "fact": "older"}], pinned=True, distinct=["d-y"]
    )
    assert Entry.from_dict(json.loads(json.dumps(full.to_dict()))) == full
    with pytest.raises(LtmError, match="bad history"):
        Entry.from_dict({**old["entries"][0], "history": "nope"})


def test_automatic_compaction_threshold(tmp_path: Path) -> None:
    store = LtmStore(tmp_path / "ltm.json", clock=lambda: NOW - 200 * DAY)
    for i in range(lifecycle.AUTO_COMPACT_AT + 3):
        store.add(
            "discovery",
            fact=f"fact about topic {chr(97 + i % 26)}{chr(97 + i // 26)} and the shared backup job",
        )
    store.clock = lambda: NOW
    assert store.needs_compaction()
    small = LtmStore(tmp_path / "small.json", clock=lambda: NOW - 200 * DAY)
    for i in range(5):
        small.add("discovery", fact=f"fact {chr(97 + i)} about the shared backup job")
    small.clock = lambda: NOW
    assert small.compaction_groups() and not small.needs_compaction()
