"""Concurrent adds to a shared store serialize exactly when they could be duplicates: any two
word sets the dedup rule could merge (Jaccard >= DUPLICATE_MIN) take a common advisory lock
(clio/team/sql.py, lock_keys); most unrelated ones do not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from clio.memory.similarity import DUPLICATE_MIN, jaccard
from clio.team.sql import first_words, lock_keys

WORDS = st.text(alphabet="abcdefghij", min_size=1, max_size=4)


@settings(max_examples=400, deadline=None)
@given(st.sets(WORDS, min_size=0, max_size=40), st.data())
def test_any_two_possible_duplicates_share_a_lock(base: set[str], data: st.DataObject) -> None:
    drop = data.draw(st.sets(st.sampled_from(sorted(base)), max_size=len(base) // 6) if base else st.just(set()))
    extra = data.draw(st.sets(WORDS, max_size=len(base) // 6))
    other = (base - drop) | extra
    if jaccard(frozenset(base), frozenset(other)) < DUPLICATE_MIN:
        return
    assert set(lock_keys("p", "discovery", base)) & set(lock_keys("p", "discovery", other))


def test_unrelated_entries_rarely_wait_for_each_other() -> None:
    sets = [{f"w{i}x{k}" for k in range(12)} | {"the", "is", "in"} for i in range(200)]
    keys = [set(lock_keys("p", "discovery", s)) for s in sets]
    clashes = sum(bool(keys[i] & keys[j]) for i in range(200) for j in range(i + 1, 200))
    assert clashes < 0.5 * 200 * 199 / 2  # common words alone do not serialize everything
    assert lock_keys("p", "rule", {"a"}) != lock_keys("q", "rule", {"a"}) != lock_keys("p", "discovery", {"a"})


@settings(max_examples=300, deadline=None)
@given(st.sets(WORDS, min_size=1, max_size=40), st.data())
def test_every_possible_duplicate_holds_one_of_the_first_words(base: set[str], data: st.DataObject) -> None:
    """What lets the server fetch only the rows holding an entry's first words as dedup candidates."""
    drop = data.draw(st.sets(st.sampled_from(sorted(base)), max_size=len(base) // 6))
    other = (base - drop) | data.draw(st.sets(WORDS, max_size=len(base) // 6))
    if other and jaccard(frozenset(base), frozenset(other)) >= DUPLICATE_MIN:
        assert set(first_words("p", "rule", base)) & other
        assert set(first_words("p", "rule", other)) & base
