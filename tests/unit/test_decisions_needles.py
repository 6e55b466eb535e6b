"""The needles of clio.context.decisions: a sentence holding none of a pattern's needles is not
tried against it (so a run whose messages state nothing compiles none of the patterns). Skipping
must never change a result: every sentence here is classified with the needles and with every
pattern tried, and the two agree."""

from __future__ import annotations

import ast
import random
import re
from pathlib import Path

import pytest

from clio.context import decisions

HERE = Path(__file__).parent


def _literal_words() -> list[str]:
    """Every word the patterns spell out (their alternatives), for sentences that come near them."""
    sources = [p.pattern for _, p, _ in decisions._PATTERNS] + [decisions._REVOKE.pattern]
    words: set[str] = set()
    for src in sources:
        plain = re.sub(r"\(\?P<\w+>|\(\?[:=!<]+|\\[bsw]|[\^$()?*+|\[\]{}\\]|\d", " ", src)
        words.update(w for w in plain.split() if w.isascii() and len(w) < 20)
    return sorted(words)


def _test_sentences() -> list[str]:
    """The sentences other tests feed the decision reader (string literals of their files)."""
    out: list[str] = []
    for name in ("test_yarn.py", "test_consolidate.py"):
        tree = ast.parse((HERE / name).read_text(encoding="utf-8"))
        out += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out


# one or more sentences each pattern reads (in the order of decisions._PATTERNS), and revocations
EXAMPLES = [
    "We will use postgres for the billing service.", "We decided to go with FastAPI.",
    "Decision: uv over pip.", "Stick with pytest.", "Switch the cache to redis.", "Postgres it is.",
    "From now on, write tests first.", "Never push to main.", "Don't touch the migrations folder.",
    "Keep the public API unchanged.", "Avoid global state.", "No new dependencies.",
    "Only touch files under src.", "Make sure we never log tokens.",
    "Nothing in vendor may be edited.", "The schema is off-limits.", "The API must stay backwards compatible.",
    "The CLI has to stay compatible with python 3.9.", "The client needs to support proxies.",
    "Always run the linter.", "I prefer small commits.", "We use tabs for indentation.",
    "Our convention is snake_case for files.", "Tests go in tests/unit.", "Name branches like issue-NN.",
    "Use ruff instead of flake8.", "We no longer use docker.", "Forget the rule about tabs.",
    "The freeze is no longer needed.",
]


def _corpus() -> list[str]:
    rng = random.Random(35)
    words = _literal_words()
    fillers = ["the", "api", "database", "tests", "it", "this", "we", "i", "you", "go", "we'll", "let's", "db", "config", "staging", "in", "for", "to", "mode"]
    out = EXAMPLES + _test_sentences()
    for _ in range(5_000):
        n = rng.randint(1, 9)
        out.append(" ".join(rng.choice(words if rng.random() < 0.6 else fillers) for _ in range(n)))
    for _, pattern, _ in decisions._PATTERNS:  # each pattern's own opening, with a tail
        for head in re.findall(r"[a-z' ]{3,}", pattern.pattern)[:6]:
            for tail in ("the api", "postgres in transaction mode", "the config unchanged", "in src/"):
                out.append(f"{head.strip()} {tail}")
    return out


ODD = [  # where a plain-text shortcut must not apply: non-ASCII letters re.I matches, whitespace
    "alſo, we will use uv", "ſo we will use uv", "  we will use uv", "we will use uv\t", "ok\u00a0we use tabs",
    "١. never push to main", "• never push to main", "Also never push", "X\nY", "use a; use b", "a. b", "Wow!",
    "keep it simple and never push", "we use tabs but never spaces", "`never` push", "ÄLSO never push",
]


def test_skipping_by_needles_never_changes_a_classification(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ODD + _corpus()
    split = [decisions.sentences(t) for t in texts]
    corpus = ODD + [s for parts in split for s in parts]
    with_needles = [decisions.classify(s) for s in corpus]
    monkeypatch.setattr(decisions, "_PATTERNS", [(k, p, ("",)) for k, p, _ in decisions._PATTERNS])
    monkeypatch.setattr(decisions, "_REVOKE_NEEDLES", ("",))
    monkeypatch.setattr(decisions, "_SPLIT_MARKS", ("",))  # every message split, every sentence cleaned
    monkeypatch.setattr(decisions, "_LEAD_STARTS", ("",))
    assert [decisions.sentences(t) for t in texts] == split
    every_pattern = [decisions.classify(s) for s in corpus]
    differ = [(s, a, b) for s, a, b in zip(corpus, with_needles, every_pattern, strict=True) if a != b]
    assert differ == []
    # the corpus does reach the patterns: many sentences are read as something, of every kind
    found = [r for r in every_pattern if r is not None]
    assert len(found) > 300
    assert {kind for kind, _ in found} == {*decisions.KINDS, "revoke"}


def test_each_pattern_matches_only_sentences_holding_one_of_its_needles() -> None:
    """Wherever a pattern matches (tried on every sentence), a needle of its is in the sentence."""
    hits = dict.fromkeys(range(len(decisions._PATTERNS)), 0)
    for text in _corpus():
        for sentence in decisions.sentences(text):
            s = decisions._clean(sentence)
            for i, (_, pattern, needles) in enumerate(decisions._PATTERNS):
                if pattern.match(s):
                    hits[i] += 1
                    assert any(n in s for n in needles), (i, s)
            if decisions._REVOKE.match(s):
                assert any(n in s for n in decisions._REVOKE_NEEDLES), s
    assert all(hits.values()), hits  # every pattern was matched somewhere in the corpus


def test_a_message_stating_nothing_compiles_no_decision_pattern() -> None:
    lazies = [p for _, p, _ in decisions._PATTERNS] + [decisions._REVOKE, decisions._SPLIT, decisions._LEAD]
    fresh = [p for p in lazies if getattr(p, "_compiled", None) is None]
    assert decisions.from_user("which port does staging listen on") == []
    assert all(getattr(p, "_compiled", None) is None for p in fresh)
