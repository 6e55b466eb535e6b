"""Entries that stand alone (issue 33 item 2): precision and recall on
``benches/standalone_corpus.json``, per layer:

- the user-words layer (:func:`clio.memory.consolidate.established`, no model);
- the whole consolidation (``clio.app.consolidate.Consolidator.run`` into a fresh long-term store:
  the user's words, then the model's entries, dedup) with a fake model that parrots: it returns
  every sentence the user wrote that is not a question as a rule, word for word, the way a small
  model copies its input ("We decided to raise it to 120.").

Each case is one user message and the entries it should give, each as the terms it must carry to
read correctly with nothing around it. A stored entry is right when it carries every term of one
wanted entry; precision = right stored / stored, recall = wanted entries given / wanted.
``python benches/bench_standalone.py [--show]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from clio.context import decisions
from clio.memory.consolidate import established

CORPUS = Path(__file__).with_name("standalone_corpus.json")
Layer = Callable[[str], list[str]]


def user_words(text: str) -> list[str]:
    part = [{"role": "user", "content": text}, {"role": "assistant", "content": "OK."}]
    return [statement for _kind, _key, statement in established(part)]


def parrot(prompt: str, max_tokens: int) -> str:
    """The fake model: each non-question sentence of the session's user lines, as a rule."""
    said = [ln[len("[user] ") :] for ln in prompt.splitlines() if ln.startswith("[user] ")]
    rules = [s for line in said for s in decisions.sentences(line) if not s.rstrip().endswith("?")]
    return json.dumps({"entries": [{"type": "rule", "rule": r, "confidence": 0.7} for r in rules[:6]], "pairs": []})


def whole(text: str) -> list[str]:
    from clio.app.consolidate import Consolidator
    from clio.memory.ltm_store import LtmStore
    from clio.messages import make
    from clio.safety.redact import Redactor
    from clio.store.sessions import SessionStore

    with tempfile.TemporaryDirectory() as tmp:
        store, sessions = LtmStore(Path(tmp) / "ltm.json"), SessionStore(Path(tmp) / "sessions")
        session = sessions.create("fake-model")
        for m in (make("user", text), make("assistant", "OK."), make("user", "anything else?"), make("assistant", "OK.")):
            session.append(m)  # two user messages: worth a read-back even with no decision read
        Consolidator(store, sessions, Redactor("standard"), max_chars=lambda: 8_000).run(session, parrot)
        session.close()
        return [str(e.fields.get("rule") or e.fields.get("fact") or "") for e in store.all()]


def score(cases: list[dict[str, Any]], layer: Layer, show: bool = False) -> dict[str, float]:
    stored = right = wanted = given = 0
    for case in cases:
        got = [g.lower() for g in layer(case["text"])]
        want: list[list[str]] = case["want"]
        ok = [any(all(t in g for t in w) for w in want) for g in got]
        hit = [any(all(t in g for t in w) for g in got) for w in want]
        stored, right = stored + len(got), right + sum(ok)
        wanted, given = wanted + len(want), given + sum(hit)
        if show and (not all(ok) or not all(hit)):
            print(f"- {case['text']}\n    stored {got}\n    wanted {want}")
    return {
        "stored": stored, "right": right, "wanted": wanted, "given": given,
        "precision": right / stored if stored else 1.0, "recall": given / wanted if wanted else 1.0,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print the cases not fully right")
    args = parser.parse_args()
    cases = json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]
    for name, layer in (("user-words layer", user_words), ("whole consolidation, parroting fake model", whole)):
        r = score(cases, layer, args.show)
        print(
            f"{name}: {len(cases)} messages: stored {r['stored']}, right {r['right']} (precision {r['precision']:.0%}); "
            f"wanted {r['wanted']}, given {r['given']} (recall {r['recall']:.0%})"
        )


if __name__ == "__main__":
    main()
