"""Entries that stand alone (issue 33 item 2): precision and recall on
``benches/standalone_corpus.json``, per layer:

- the user-words layer (:func:`clio.memory.consolidate.established`, no model);
- the whole consolidation (``clio.app.consolidate.Consolidator.run`` into a fresh long-term store:
  the user's words, then the model's entries, dedup) with a fake model that parrots: it returns
  every sentence the user wrote that is not a question as a rule, word for word, the way a small
  model copies its input ("We decided to raise it to 120.");
- with ``--real``, the whole consolidation with the real model: Qwen2.5-Coder-0.5B-Instruct Q4_K_M on
  llama-server (``scripts/real-model.sh``), started through ``testkit/realmodel_harness.py``
  (``real_backend``: the server on a free loopback port, a recording proxy in front) with
  bench_realmodel.py's defaults (``-c 4096``, ``-t 1`` or ``$CLIO_REALMODEL_THREADS``). Each prompt
  goes the way the background read-back sends it (``clio.app.background``: an App on a scratch
  session, its client, window and redaction, through ``SideRequest`` under the child's turn lock),
  with ``temperature: 0`` as bench_realmodel.py sets it; the proxy times each request. One request
  per case (median 10 s, up to 72 s on 2 shared cores; 28 in 10 minutes): ``--cases N`` runs the first N.

Each case is one user message and the entries it should give, each as the terms it must carry to
read correctly with nothing around it. A stored entry, of any type, read as a later prompt shows it
(``ltm.render_entry``), is right when it carries every term of one wanted entry; precision = right stored / stored, recall = wanted entries given / wanted.
``python benches/bench_standalone.py [--show] [--real [--cases N] [--ctx 4096] [--threads N]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.context import decisions  # noqa: E402
from clio.memory.consolidate import established  # noqa: E402

if TYPE_CHECKING:
    from testkit.realmodel_harness import RecordingProxy

CORPUS = Path(__file__).with_name("standalone_corpus.json")
Layer = Callable[[str], list[str]]
Ask = Callable[[str, int], str]


def user_words(text: str) -> list[str]:
    part = [{"role": "user", "content": text}, {"role": "assistant", "content": "OK."}]
    return [statement for _kind, _key, statement in established(part)]


def parrot(prompt: str, max_tokens: int) -> str:
    """The fake model: each non-question sentence of the session's user lines, as a rule."""
    said = [ln[len("[user] ") :] for ln in prompt.splitlines() if ln.startswith("[user] ")]
    rules = [s for line in said for s in decisions.sentences(line) if not s.rstrip().endswith("?")]
    return json.dumps({"entries": [{"type": "rule", "rule": r, "confidence": 0.7} for r in rules[:6]], "pairs": []})


def whole(text: str, ask: Ask = parrot) -> list[str]:
    """``Consolidator.run`` on a fresh store for a session holding ``text``, the model ``ask``."""
    from clio.app.consolidate import Consolidator
    from clio.memory.ltm import render_entry
    from clio.memory.ltm_store import LtmStore
    from clio.messages import make
    from clio.safety.redact import Redactor
    from clio.store.sessions import SessionStore

    with tempfile.TemporaryDirectory() as tmp:
        store, sessions = LtmStore(Path(tmp) / "ltm.json"), SessionStore(Path(tmp) / "sessions")
        session = sessions.create("fake-model")
        for m in (make("user", text), make("assistant", "OK."), make("user", "anything else?"), make("assistant", "OK.")):
            session.append(m)  # two user messages: worth a read-back even with no decision read
        Consolidator(store, sessions, Redactor("standard"), max_chars=lambda: 8_000).run(session, ask)
        session.close()
        return [render_entry(e).removeprefix("- ") for e in store.all()]  # as a later prompt shows it


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


@contextmanager
def real_model(ctx: int, threads: int | None) -> Iterator[tuple[Ask, RecordingProxy]]:
    """The real model as the background read-back asks it: ``(ask, the proxy recording each request)``."""
    from clio.app.background import _Reader, _scratch
    from clio.config import load_settings
    from clio.paths import Paths
    from testkit.realmodel_harness import RealProject, real_backend

    with tempfile.TemporaryDirectory(prefix="clio-bench-standalone-") as tmp, real_backend(ctx, threads) as backend:
        project = RealProject(Path(tmp) / "project", Path(tmp) / "home", backend).reset(temperature=0)
        settings, _ = load_settings(project.home, project.root / ".clio", {"base_url": backend.proxy.base_url}, env={})
        app = _scratch(settings, Paths(root=project.root, cwd=project.root, home=project.home))
        try:
            app.settle_model()
            print(
                f"llama-server -c {backend.ctx} -t {backend.threads}, model {settings.model}, "
                f"temperature {settings.temperature}; clio's side request -> proxy -> {backend.upstream}",
                file=sys.stderr, flush=True,
            )  # fmt: skip
            yield _Reader(app).ask, backend.proxy
        finally:
            app.close()


def report(name: str, n: int, r: dict[str, float]) -> None:
    print(
        f"{name}: {n} messages: stored {r['stored']}, right {r['right']} (precision {r['precision']:.0%}); "
        f"wanted {r['wanted']}, given {r['given']} (recall {r['recall']:.0%})",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print the cases not fully right")
    parser.add_argument("--real", action="store_true", help="then the whole consolidation with the real 0.5B model")
    parser.add_argument("--cases", type=int, default=0, help="only the first N cases (default: all)")
    parser.add_argument("--ctx", type=int, default=4096, help="llama-server -c (default 4096)")
    parser.add_argument("--threads", type=int, default=None, help="llama-server -t (default 1, or $CLIO_REALMODEL_THREADS)")
    args = parser.parse_args()
    cases = json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]
    if args.cases > 0:
        cases = cases[: args.cases]
    for name, layer in (("user-words layer", user_words), ("whole consolidation, parroting fake model", whole)):
        report(name, len(cases), score(cases, layer, args.show))
    if not args.real:
        return 0
    from testkit.realmodel_server import SKIP_REASON, llama_paths

    if llama_paths() is None:
        print(f"bench_standalone: {SKIP_REASON}", file=sys.stderr)
        return 2
    load = os.getloadavg()
    started = time.monotonic()
    with real_model(args.ctx, args.threads) as (ask, proxy):
        done = 0

        def timed(text: str) -> list[str]:
            nonlocal done
            before = len(proxy.chat())
            got = whole(text, ask)
            done += 1
            for ex in proxy.chat()[before:]:
                print(f"  case {done}/{len(cases)}: {ex.ended - ex.started:.1f} s, {len(got)} stored", file=sys.stderr)
                if args.show:
                    print(f"    the model's reply: {ex.content!r}", file=sys.stderr)
            sys.stderr.flush()
            return got

        r = score(cases, timed, args.show)
        took = [ex.ended - ex.started for ex in proxy.chat()]
    report("whole consolidation, real model (Qwen2.5-Coder-0.5B)", len(cases), r)
    print(
        f"  {len(took)} requests, {statistics.median(took) if took else 0:.1f} s median per request "
        f"(max {max(took, default=0):.1f} s), {time.monotonic() - started:.0f} s in all; "
        f"load average {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
