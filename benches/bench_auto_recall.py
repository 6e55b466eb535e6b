"""Automatic recall: whether the block it injects quotes the fact a message needs, how often a
message that needs nothing gets one, and what it costs per message.

The data are the ten labelled sets of ``benches/recall_dev/`` (written for clio by hand, no public
data): ten imaginary projects, each with 14 sessions that settle a fact among 30 sessions of other
work (tool calls and results, everyday turns, near-miss topics), and 24 new messages: 6 that need a
fact in the same key words, 6 reworded, 12 unrelated (everyday short messages, new tasks sharing
words with the archive; in E to J also questions near a topic the archive does not answer).
Sets A and E are the dev half (``--sweep`` shows the decision's thresholds chosen on them), and G
since stop 57 (written then, read, and one rule taken from it); B, C, D, F, H, I and J are reported only
(C to J each by another author; H written in stop 57 after G was read; I in stop 58 after that
stop's rule was fixed; J in stop 59 likewise). Two more, K and L (stop 97, 12 facts each, written
with sibling values in their other work), are run only when named (``--sets set_k,set_l``): the
docs' figures for "the ten sets" are A to J. Per set it also counts the blocks given to
the everyday short messages of ``recall_dev/everyday.json`` (a dev list and a held-out list).
For each message the product's path runs in-process: RecallIndex.search
(lexical, units) -> clio.recall.auto (features, score, block).

Figures (printed; docs/memory.md keeps them), per set:
- related: messages whose block quotes the fact (a labelled needle appears in the block), same
  words and reworded apart;
- false blocks: unrelated messages that got a block;
- precision: of the blocks, the share that quote the fact; of the quoted units, the share from
  the fact's session;
- the fact among the candidates (before the decision), and latency p50/p95 of the whole step.

``--tool`` also measures the memory tool's ``recall_sessions`` on the related messages: the fact's
unit in its top 3 and first, and the fact's words in the top 3 as the model reads it (the
formatted excerpts), hybrid as shipped and (with ``--encoder``) with the helper's nearest
messages fused in, then, unless ``--no-judge``, as the tool runs with the helper's judge
re-ranking its first units (its search timed with the judge off and on).

``--scale DIR`` also times the per-message step over a corpus built by ``benches/recall_scale.py
--workdir DIR`` (200,000 messages by default), with queries drawn from that corpus; with
``--encoder`` the archive is embedded first (``--random-vectors``: random values, for the
latency alone, where a real fill would take hours), twice: as it was, and with a session's file
written again before each step, as in the REPL, where every turn writes one. ``--scale-dev N`` times it over N messages of
the sets' own sessions, copied until there are N, with the sets' messages as the queries.

``--misses`` lists each set's missed facts and false blocks with the decision's reasons, and at
the end tallies where the missed facts were lost (not among the candidates; quoted but cut; found by
meaning and under the bar whatever the judge says; read by the judge and under it; no word shared
and the cosine under; decided without the judge): all but the first are the decision's, so the
reworded facts a perfect decision would quote over today's candidates are those quoted plus those.

``--digests FILE`` gives each session the digest a model would write at its end (what it
settled, then in other words; ``recall_dev/digests.json``), as clio's read-back keeps it: in
``session.json``, indexed as a unit of its own (docs/memory.md, "Digests").

``--narrated`` runs the sets as a model that narrates its tool steps would have written them
(every assistant message that only calls a tool first says "Let me look at api/uploads.py.").
``--whole-files`` runs them as reads of real files return them: every read_file result gets
60-150 lines of real code (the standard library's own sources, seeded) appended.
``--long-replies`` runs them as a chatty model writes its replies: an opening line, a few lines of
the step's output quoted, a closing offer (seeded); the authors' words stay whole inside.

``--near-asked``, ``--nearby-results`` and ``--judged`` set the product's constants for an
experiment (the helper's nearest messages asked, their units kept after the words', the units the
packaged judge reads); each defaults to what clio ships.

    python benches/bench_auto_recall.py [--encoder] [--tool] [--narrated] [--whole-files] [--long-replies] [--sweep] [--misses]
        [--scale DIR] [--random-vectors] [--repeat N] [--near-asked N] [--nearby-results N] [--judged N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import signal
import statistics
import sys
import sysconfig
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit; clio as installed

import lend_variants  # noqa: E402

from clio.memory.consolidate import digest_text  # noqa: E402
from clio.memory.digest_check import grounded  # noqa: E402
from clio.prompts import load_prompt  # noqa: E402
from clio.recall import auto  # noqa: E402
from clio.recall import relevance as R  # noqa: E402
from clio.recall.auto_turn import NEAR_ASKED, SEARCH_RESULTS, SEARCH_SESSIONS, judged, plan  # noqa: E402
from clio.recall.cpu_kind import describe, this_cpu
from clio.recall.encoder import Encoder  # noqa: E402
from clio.recall.encoder_cache import filled  # noqa: E402
from clio.recall.encoder_calibration import stored  # noqa: E402
from clio.recall.encoder_client import EncoderClient  # noqa: E402
from clio.recall.encoder_models import EncoderModel, Endpoint, chosen  # noqa: E402
from clio.recall.format import format_hits  # noqa: E402
from clio.recall.index import RecallIndex  # noqa: E402
from clio.recall.query import DIGEST_ROLES, NEAR_RESULTS, best_first  # noqa: E402
from clio.recall.tool_search import NEAR as TOOL_NEAR  # noqa: E402
from clio.recall.tool_search import WHOLE_UNITS, search_with_meaning  # noqa: E402
from clio.recall.verdict import JUDGED  # noqa: E402
from clio.store.sessions import SessionStore  # noqa: E402
from testkit.encoder_helper import wait_for_judge  # noqa: E402
from testkit.fakeserver import FakeServer  # noqa: E402
from testkit.recall_sets import SETS, archived, build, load_set  # noqa: E402

SET_NAMES = ("set_a", "set_b", "set_c", "set_d", "set_e", "set_f", "set_g", "set_h", "set_i", "set_j")
DEV_SETS = ("set_a", "set_e", "set_g")  # where thresholds and rules are chosen (G since stop 57); the others are reported only
EVERYDAY = SETS / "everyday.json"  # short everyday messages: none may get a block
WORK_AT_HAND = SETS / "work_at_hand.json"  # short messages about the work at hand in any code base: none either
WORK_AT_HAND_LONG = SETS / "work_at_hand_long.json"  # long ones (15-45 words, stop 80): none either
BLOCK_CHARS = 2100  # the block's share at the default auto_recall_tokens
ASK_CUT: list[float | None] = [None]  # the encoder's threshold while a sweep tries one (else the model's)
TYPED_AHEAD: list[bool] = [False]  # --typed-ahead: each timed message was embedded while typed (the REPL)
JUDGE: list[bool] = [True]  # --no-judge: the decision without the helper's judge (recall_judge: false)
RECALLED_AHEAD: list[bool] = [False]  # --recalled-ahead: the REPL's pause had the helper recall each message
MEANING_WEIGHT: list[float | None] = [None]  # --meaning-weight: instead of the model's own (a sweep)
WEAK_WORDS_WEIGHT: list[float | None] = [None]  # --weak-words-weight: likewise, when the words barely match
SERVED: list[Endpoint | None] = [None]  # --served: the helper asks this endpoint's embeddings API (recall_embeddings)
MODELS_FROM: list[Path | None] = [None]  # --models-from: a $CLIO_HOME whose installed models the helper may run
# the product's constants, set by flags for an experiment (each defaults to what clio ships)
NEAR: list[int] = [NEAR_ASKED]  # --near-asked: the helper's nearest messages asked for a message
NEARBY_RESULTS: list[int] = [NEAR_RESULTS]  # --nearby-results: their units after the words' results
JUDGED_UNITS: list[int] = [JUDGED]  # --judged: the admissible units the packaged judge reads


def say(call: dict[str, Any]) -> str:
    """What a model narrating its step says before a tool call."""
    args = call.get("arguments") or {}
    if not isinstance(args, dict):
        args = {}
    if args.get("path"):
        return f"Let me look at {args['path']}."
    if args.get("command"):
        return f"I'll run `{str(args['command'])[:60]}`."
    if args.get("query"):
        return f"Let me search for {str(args['query'])[:40]}."
    return "Let me check."


def narrated(data: dict[str, Any]) -> dict[str, Any]:
    """The set as a model that narrates its steps writes it (``--narrated``): every assistant
    message that only makes tool calls says first what it is about to do ("Let me look at
    api/uploads.py."), as many models do; what the sets' authors wrote is otherwise unchanged."""
    out = json.loads(json.dumps(data))
    for session in out["sessions"]:
        for m in session["messages"]:
            if m["role"] == "assistant" and m.get("tool_calls") and not (m.get("content") or "").strip():
                m["content"] = say(m["tool_calls"][0])
    return out


def whole_files(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The set as reads of real files return them (``--whole-files``): every read_file result gets
    60-150 lines of real code appended, drawn with ``rng`` from the Python standard library's own
    sources (a different Python may draw other lines); a draw holding a needle is left out."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in lib.glob("*.py") if p.stat().st_size > 8000)
    out = json.loads(json.dumps(data))
    needles = [n.lower() for p in out["probes"] for n in p.get("needles", [])]
    for session in out["sessions"]:
        calls: list[str] = []
        for m in session["messages"]:
            if m["role"] == "assistant" and m.get("tool_calls"):
                calls = [c["name"] + json.dumps(c.get("arguments")) for c in m["tool_calls"]]
            if m["role"] == "tool" and any("read_file" in c for c in calls):
                lines = rng.choice(files).read_text(errors="replace").splitlines()
                k = rng.randint(60, 150)
                at = rng.randint(0, max(0, len(lines) - k))
                extra = "\n".join(lines[at : at + k])
                if not any(n in extra.lower() for n in needles):
                    m["content"] = (m.get("content") or "") + "\n" + extra
    return out


LEADS = ("", "", "Here's what I found.", "I checked the code.", "Short answer first, then the details.", "Good question.", "I looked into it.")
CLOSES = (
    "Let me know if you want me to change anything.",
    "Want me to add a test that pins this down?",
    "I haven't changed any files.",
    "Anything else you'd like me to look at?",
    "If you want, I can open a PR for it.",
)


def long_replies(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The set as a chatty model writes its replies (``--long-replies``): every prose reply after
    a tool step gets, drawn with ``rng``, an opening line, 3-8 lines of the step's result quoted in
    a code block (before the reply's own words or after them) and a closing offer; other replies
    get the opening and the closing. What the authors wrote stays in the reply, whole."""
    out = json.loads(json.dumps(data))
    for session in out["sessions"]:
        results: list[str] = []
        for m in session["messages"]:
            if m["role"] == "user":
                results = []
            elif m["role"] == "tool":
                results.append(m.get("content") or "")
            elif m["role"] == "assistant" and not m.get("tool_calls") and len((m.get("content") or "").strip()) > 40:
                lead, body, close = rng.choice(LEADS), m["content"].strip(), rng.choice(CLOSES)
                parts = [lead] if lead else []
                lines = [x for x in (results[-1] if results else "").splitlines() if x.strip()]
                if lines:
                    k = rng.randint(3, 8)
                    at = rng.randint(0, max(0, len(lines) - k))
                    code = "```\n" + "\n".join(lines[at : at + k]) + "\n```"
                    parts += [body, "Relevant lines:\n" + code] if rng.random() < 0.5 else ["What the output says:\n" + code, body]
                else:
                    parts.append(body)
                parts.append(close)
                m["content"] = "\n\n".join(parts)
    return out


def step(
    index: RecallIndex, text: str, encoder: EncoderClient | None = None
) -> tuple[list[auto.Hit], list[auto.Hit], str]:
    """The product's per-message path (one-shot: the task is the message); with ``encoder`` (the
    helper, ``--encoder``) the query goes to it before the search and the units after, as
    clio.app.auto_recall does; else words only. What the product does not search
    (clio.recall.auto_turn.plan: a message that asks nothing, an order of new work) is not searched;
    what it searches is searched by the plan's query (an order that asks after it: what it asks)."""
    text = plan(text, text)[0]
    if not text:
        return [], [], ""
    if encoder is not None:
        encoder.judge = JUDGE[0]  # as clio.app.app sets it from recall_judge
    pending = encoder.begin(text, near=NEAR[0]) if encoder is not None else None
    try:
        results = best_first(
            index.search,
            text,
            SEARCH_RESULTS,
            max_sessions=SEARCH_SESSIONS,
            with_text=True,
            mode="lexical",
            nearby=pending.near if pending is not None else None,
            nearby_results=NEARBY_RESULTS[0],
        )
        similarity = pending.finish if pending is not None else None
        cut = ASK_CUT[0] if ASK_CUT[0] is not None else encoder.cosine_ask() if encoder is not None else R.COSINE_ASK
        hits = auto.score_hits(text, results, None, partial(index.frequencies, refresh=False), similarity, cut, index.said_to_other_questions, task=False) if results else []
        weights = encoder.verdict() if encoder is not None and ASK_CUT[0] is None else None
        if pending is not None and weights is not None:
            hits = judged(hits, text, pending, weights, JUDGED_UNITS[0])  # as clio.recall.auto_turn.search_and_score does
    finally:
        if pending is not None:
            pending.close()
    chosen = auto.choose(hits)
    return hits, chosen, auto.render(chosen, text, BLOCK_CHARS)


def typed_ahead(client: EncoderClient | None, text: str) -> None:
    """With ``--typed-ahead``: ``text`` embedded by the helper before the step is timed, as the
    REPL has it sent during the user's pause before Enter (clio.ui.typing_ahead)."""
    if client is not None and TYPED_AHEAD[0]:
        client.embed_ahead(text)
        client.status(5.0)  # the helper answers connections in turn: the text is embedded by now


def has(text: str, needles: list[str]) -> bool:
    low = text.lower()
    return any(n.lower() in low for n in needles)


def shows(block: str, needles: list[str]) -> bool:
    """Whether a block shows a needle: as written, or as the block quotes it (its "<" and ">" made
    "‹" and "›", clio.recall.auto's escaping: "local_<yourname>_" is shown as "local_‹yourname›_")."""
    return has(block, [*needles, *(auto.quote(n) for n in needles)])


def holds_fact(h: auto.Hit, sid: str, needles: list[str]) -> bool:
    """Whether a unit is the fact's: of the fact's session, holding one of its needles."""
    return h.session_id == sid and has(h.text, needles)


def quotes_fact(block: str, chosen: list[auto.Hit], sid: str, needles: list[str]) -> bool:
    """Whether a block quotes the fact: a quoted unit of its own session holds a needle and the block
    shows it (a needle that also occurs in another session's quoted unit does not count)."""
    return bool(block) and shows(block, needles) and any(holds_fact(h, sid, needles) for h in chosen)


def candidate(h: auto.Hit, probe: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """What the decision reads of a candidate unit besides an encoder's cosine, for replaying it
    with another encoder (recall_dev/calibration_data.py, recall_dev/second_encoder.py): whether it
    is the fact's unit (of the fact's session, holding a needle), whether the words alone quote it,
    whether it is left out whatever its cosine (the message's words again, a question nobody
    answered, or another environment than the one asked), whether it could hold the kind of answer asked (clio.recall.answer_kind), and its
    words' score."""
    return {
        "fact": probe["kind"] != "unrelated" and holds_fact(h, ids[probe["session"]], probe["needles"]),
        "words": h.new_words >= auto.MIN_NEW_WORDS and h.score >= h.words_bar,
        "skip": h.new_words < auto.MIN_NEW_WORDS or h.unanswered or h.elsewhere,
        "typed": h.typed,
        "score": round(h.score, 4),
    }


MISSED_WHERE = (
    "not among the candidates",
    "the block quoted its unit, not the fact",
    "found by meaning, under the bar whatever the judge says",
    "read by the judge, under the bar",
    "no word shared, its cosine under",
    "decided without the judge",
)


def with_digests(data: dict[str, Any], digests: dict[str, str]) -> dict[str, Any]:
    """The set with each session that has a digest carrying it as a read-back would have left it
    (``--digests``: in ``session.json``, indexed as a unit of its own, clio.recall.refresh): what
    a summary written at a session's end, in other words than the session's, brings back."""
    template = load_prompt("consolidate.md")
    kept = {  # as a read-back keeps them: one line, and only one that speaks of its session
        s["name"]: text
        for s in data["sessions"]
        if s["name"] in digests and (text := digest_text(digests[s["name"]])) and grounded(text, archived(s["messages"], 0), template)
    }
    sessions = [{**s, "digests": [kept[s["name"]]]} if s["name"] in kept else s for s in data["sessions"]]
    return {**data, "sessions": sessions}


def missed_where(best: auto.Hit | None, chosen: list[auto.Hit]) -> str:
    """Where a fact the block did not quote was lost (``--misses``' tally, of
    :data:`MISSED_WHERE`): not found, quoted but cut, or turned down, and by which part of the
    decision. A perfect decision over the same candidates would quote all but the first."""
    if best is None:
        return MISSED_WHERE[0]
    if any(h is best for h in chosen):
        return MISSED_WHERE[1]
    if best.verdict is None:
        return MISSED_WHERE[5]
    if best.unworded:
        return MISSED_WHERE[4]
    return MISSED_WHERE[2] if best.judge is None else MISSED_WHERE[3]


def evaluate(
    index: RecallIndex, data: dict[str, Any], ids: dict[str, str], encoder: EncoderClient | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"same": [0, 0], "reworded": [0, 0], "unrelated": [0, 0], "candidates": [0, 0]}
    lost: Counter[tuple[str, str]] = Counter()  # (kind, where) of the facts not quoted
    digested: Counter[str] = Counter()  # what the digests' units did (--digests)
    blocks = blocks_ok = units = units_ok = 0
    times: list[float] = []
    misses: list[str] = []
    for p in data["probes"]:
        typed_ahead(encoder, p["text"])
        started = time.perf_counter()
        hits, chosen, block = step(index, p["text"], encoder)
        times.append((time.perf_counter() - started) * 1000)
        kind = p["kind"]
        out[kind][1] += 1
        if kind == "unrelated":
            out[kind][0] += bool(block)
            if block:
                blocks += 1
                units += len(chosen)
                misses.append(f"  false block for {p['text']!r} [{', '.join(h.role for h in chosen)}]: {chosen[0].why()} {chosen[0].text[:90]!r}")
                if any(h.role in DIGEST_ROLES for h in chosen):
                    digested["false blocks with a digest among their units"] += 1
                    digested["false blocks by digests alone"] += all(h.role in DIGEST_ROLES for h in chosen)
            continue
        sid = ids[p["session"]]
        out["candidates"][1] += 1
        out["candidates"][0] += any(holds_fact(h, sid, p["needles"]) for h in hits)
        ok = quotes_fact(block, chosen, sid, p["needles"])
        out[kind][0] += ok
        if ok and all(h.role in DIGEST_ROLES for h in chosen if holds_fact(h, sid, p["needles"])):
            digested[f"{kind} facts quoted through their digest alone"] += 1
            via = next(h for h in chosen if holds_fact(h, sid, p["needles"]))
            misses.append(f"  through its digest {p['text']!r} ({kind}) [{', '.join(h.role for h in chosen)}]: {via.why()}")
        if block:
            blocks += 1
            blocks_ok += ok
            units += len(chosen)
            units_ok += sum(h.session_id == sid for h in chosen)
        if not ok:
            best = next((h for h in hits if holds_fact(h, sid, p["needles"])), None)
            lost[kind, missed_where(best, chosen)] += 1
            misses.append(f"  missed {p['text']!r} ({kind}): fact {'candidate ' + best.why() if best else 'not among the candidates'}")
    times.sort()
    out.update(
        block_precision=blocks_ok / max(1, blocks),
        blocks=blocks,
        unit_precision=units_ok / max(1, units),
        p50=statistics.median(times),
        p95=times[int(0.95 * (len(times) - 1))],
        misses=misses,
        lost=lost,
        digested=digested,
    )
    return out


@contextlib.contextmanager
def decided_with(**values: float) -> Iterator[None]:
    """The decision's thresholds (``clio.recall.relevance`` constants) set to ``values`` for the
    block, then back to what they were: the sweeps below try each value this way."""
    saved = {name: getattr(R, name) for name in values}
    try:
        for name, value in values.items():
            setattr(R, name, value)
        if "COSINE_ASK" in values:  # the step passes the threshold itself (the model's, unless swept)
            ASK_CUT[0] = values["COSINE_ASK"]
        yield
    finally:
        ASK_CUT[0] = None
        for name, value in saved.items():
            setattr(R, name, value)


def sweep_encoder(index: RecallIndex, data: dict[str, Any], ids: dict[str, str], encoder: EncoderClient) -> None:
    """The encoder's two cosine thresholds (a question or problem; an order of new work) swept,
    the words' threshold as shipped, then the words' threshold for an order of new work (they are
    chosen on the dev sets with this)."""
    for ask in [x / 100 for x in range(30, 62, 2)]:
        row = []
        for task in (0.55, 0.60, 0.65, 0.70, math.inf):
            with decided_with(COSINE_ASK=ask, COSINE_TASK=task):
                r = evaluate(index, data, ids, encoder)
            row.append(f"task {task:.2f}: {r['same'][0]}/{r['reworded'][0]}/{r['unrelated'][0]}")
        print(f"  ask {ask:.2f} (same/reworded/false): " + "; ".join(row))
    row = []
    for words in (0.65, 0.70, 0.75, 0.80, 0.90, math.inf):
        with decided_with(THRESHOLD_TASK=words):
            r = evaluate(index, data, ids, encoder)
        row.append(f"{words:.2f}: {r['same'][0]}/{r['reworded'][0]}/{r['unrelated'][0]}")
    print("  an order of new work, the words' threshold (same/reworded/false): " + "; ".join(row))


def tool_figures(
    name: str, data: dict[str, Any], ids: dict[str, str], root: Path, encoder: EncoderClient | None, show: bool = False
) -> None:
    """The memory tool's recall_sessions on the set's related messages: the fact's unit in the top
    3 and first, hybrid as shipped (bm25 and the static table), with the helper's nearest messages
    fused in when ``encoder``, and, unless ``--no-judge``, as the tool runs with the helper's judge
    re-ranking its first units (:func:`clio.recall.tool_search.search_with_meaning`, the model's
    own weights), timed against the same call with the judge off; ``show`` lists the last arm's
    misses with the fact's rank in a search for 10 (whose first places can differ from a search
    for 3's: units join)."""
    index = RecallIndex(root / "recall-tool.sqlite", SessionStore(root / "sessions"))
    index.refresh()
    index.sync_vectors(None)
    arms: dict[str, list[int]] = {}
    misses: list[str] = []
    names: tuple[str, ...] = ("hybrid", "hybrid and the helper") if encoder is not None else ("hybrid",)
    judging = encoder is not None and JUDGE[0] and encoder.model.verdict is not None
    if judging:
        names = (*names, SHIPPED)
    took: dict[bool, list[float]] = {False: [], True: []}  # the tool's search with the judge off / on, ms
    for p in data["probes"]:
        if p["kind"] == "unrelated":
            continue
        sid = ids[p["session"]]

        def rank(hits: list[dict[str, Any]], p: dict[str, Any] = p, sid: str = sid) -> int | None:
            """Where the fact's unit is in ``hits`` (1-based), if anywhere."""
            at = [h["session_id"] == sid and has(str(h.get("text", "")), p["needles"]) for h in hits]
            return at.index(True) + 1 if any(at) else None

        for arm in names:
            if arm == SHIPPED:
                assert encoder is not None
                hits, shown = shipped_tool(p["text"], index, encoder, took)
                at, wide = rank(hits), None
                if show and at is None and arm == names[-1]:
                    wide = search_with_meaning(index.search, p["text"], 10, encoder, max_sessions=10, with_text=True)
                tally(arms, misses, arm, p, at, shown, hits, wide, rank)
                continue
            pending = encoder.begin(p["text"], near=TOOL_NEAR) if encoder is not None and arm != "hybrid" else None
            near = pending.near() if pending is not None else []  # read once: each search below fuses the same list
            try:
                search = partial(
                    best_first, index.search, p["text"], max_sessions=10, mode="hybrid", whole_units=WHOLE_UNITS,
                    nearby=(lambda near=near: near) if pending is not None else None, fuse_nearby=pending is not None,
                    meaning_weight=(
                        MEANING_WEIGHT[0] if MEANING_WEIGHT[0] is not None
                        else encoder.model.meaning_weight if encoder is not None else 0.0
                    ),
                    weak_words_weight=(
                        WEAK_WORDS_WEIGHT[0] if WEAK_WORDS_WEIGHT[0] is not None
                        else MEANING_WEIGHT[0] if MEANING_WEIGHT[0] is not None
                        else encoder.model.weak_words_weight if encoder is not None else 0.0
                    ),
                )  # fmt: skip
                hits = search(3, with_text=True)
                at = rank(hits)
                shown = format_hits(p["text"], search(3, with_text=False))  # what the model reads
                # a miss of the last arm is listed with where the fact was in the top 10
                wide = search(10, with_text=True) if show and at is None and arm == names[-1] else None
            finally:
                if pending is not None:
                    pending.close()
            tally(arms, misses, arm, p, at, shown, hits, wide, rank)
    for arm, (top3, top1, n, read) in arms.items():
        print(
            f"{name} recall_sessions, {arm}: fact in the top 3 {top3}/{n}, first {top1}/{n}, "
            f"its words in the excerpts the model reads {read}/{n}"
        )
    if took[True]:
        off, on = (sorted(took[j]) for j in (False, True))
        print(
            f"{name} recall_sessions with the helper, a search (ms, p50 / p95): the judge off {off[len(off) // 2]:.1f} / "
            f"{off[int(len(off) * 0.95)]:.1f}, re-ranking {on[len(on) // 2]:.1f} / {on[int(len(on) * 0.95)]:.1f} (load {os.getloadavg()[0]:.2f})"
        )
    for line in misses:
        print(line)
    index.close()


SHIPPED = "as shipped, the judge re-ranking"


def shipped_tool(
    query: str, index: RecallIndex, encoder: EncoderClient, took: dict[bool, list[float]]
) -> tuple[list[dict[str, Any]], str]:
    """recall_sessions for three results as the tool runs it, the judge on (its units, and what the
    model reads), after the same search with the judge off, each timed into ``took``."""
    hits: list[dict[str, Any]] = []
    for judge in (False, True):
        encoder.judge = judge
        t0 = time.perf_counter()
        hits = search_with_meaning(index.search, query, 3, encoder, max_sessions=10, with_text=True)
        took[judge].append(1000 * (time.perf_counter() - t0))
    shown = format_hits(query, search_with_meaning(index.search, query, 3, encoder, max_sessions=10))
    encoder.judge = JUDGE[0]
    return hits, shown


def tally(
    arms: dict[str, list[int]], misses: list[str], arm: str, p: dict[str, Any], at: int | None, shown: str,
    hits: list[dict[str, Any]], wide: list[dict[str, Any]] | None, rank: Any,
) -> None:  # fmt: skip
    """One related message's reading in ``arm``: top 3, first, its words read; a miss listed."""
    counts = arms.setdefault(arm, [0, 0, 0, 0])
    counts[0] += at is not None
    counts[1] += at == 1
    counts[2] += 1
    counts[3] += has(shown, p["needles"])
    if wide is not None:
        first = str(hits[0].get("text", ""))[:70] if hits else ""
        misses.append(f"  tool missed {p['text']!r} ({p['kind']}): fact at {rank(wide) or '>10'}; first {first!r}")


def encoder_helper(home: Path, clio_dir: Path) -> EncoderClient:
    """A client of a helper started for the bench (its own $CLIO_HOME, given the models installed
    in ``--models-from``'s), once it answers."""
    home.mkdir(parents=True, exist_ok=True)
    if (home / "models").is_symlink():  # an earlier run's (--scale keeps its folder): this run's choice decides
        (home / "models").unlink()
    if MODELS_FROM[0] is not None:
        (home / "models").symlink_to(MODELS_FROM[0].resolve() / "models")
    client = EncoderClient(home, clio_dir, timeout_s=60.0, endpoint=SERVED[0])
    client.start()
    for _ in range(600):
        try:
            client.ping()
            return client
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the encoder helper did not start: {client.state}")


def embedded_helper(home: Path, clio_dir: Path) -> EncoderClient:
    """:func:`encoder_helper` once it has embedded the archive and, unless ``--no-judge``, loaded
    its judge: the steady state the figures are measured in (a judge still loading leaves the
    first messages of a set, timing deciding how many, to the decision without it)."""
    client = encoder_helper(home, clio_dir)
    client.fill()
    while not filled(clio_dir, client.model):
        time.sleep(0.2)
    if JUDGE[0] and client.model.verdict is not None and SERVED[0] is None:
        wait_for_judge(client)
    if SERVED[0] is not None:  # the endpoint's model: its threshold chosen by the helper's calibration first
        while stored(home, client.model.model_id) is None:
            time.sleep(0.2)
        client.model = client.calibrated_model()
    return client


def indexed(data: dict[str, Any], tmp: Path) -> tuple[RecallIndex, dict[str, str], Path]:
    """The set written in clio's layout under ``tmp`` and indexed: (the index, session name ->
    id, the project's ``.clio`` folder)."""
    ids = build(data, tmp / "sessions")
    clio_dir = tmp / ".clio"
    clio_dir.mkdir()
    index = RecallIndex(clio_dir / "recall.sqlite", SessionStore(tmp / "sessions"), embedder=None)
    index.refresh()
    return index, ids, clio_dir


def serve_embeddings(models_from: Path | None) -> Endpoint:
    """The model clio would run (MiniLM, or the stronger one installed in ``models_from``) behind an
    embeddings API on 127.0.0.1 (the fake server's ``/v1/embeddings``, in this process)."""
    which = chosen(models_from or Path("/nonexistent"))
    assert isinstance(which, EncoderModel), which
    encoder = Encoder(threads=2, model=which, home=models_from)
    server = FakeServer()
    server.embedder = lambda texts: encoder.embed(texts).tolist()
    server.start()
    print(f"embeddings of {which.name} served at {server.base_url} (the helper asks it as a user's endpoint)")
    return Endpoint(server.base_url, server.embed_model, None)


def stop_helper(client: EncoderClient) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(client.ping(), signal.SIGTERM)


def everyday_blocks(
    index: RecallIndex, client: EncoderClient | None, show: bool, path: Path = EVERYDAY, parts: tuple[str, ...] = ("dev", "heldout")
) -> str:
    """How many of the everyday short messages (``recall_dev/everyday.json``: "wait", "same error
    again", "open the file"; or ``work_at_hand.json``: "run the linter", "CI is failing") get a
    block over this set's archive, per list (dev, held-out; tune, report, report2)."""
    lists = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for part in parts:
        given = []
        for text in lists[part]:
            chosen, block = step(index, text, client)[1:]
            if block:
                given.append(f"{text!r} ({chosen[0].why()})")
        out.append(f"{part} {len(given)}/{len(lists[part])}" + (f" [{'; '.join(given)}]" if show and given else ""))
    return ", ".join(out)


def sweep(index: RecallIndex, data: dict[str, Any], ids: dict[str, str]) -> None:
    """The decision's threshold from 0.30 to 0.80: facts quoted (same words, reworded) and false
    blocks at each (the threshold is chosen on set A with this)."""
    for t in [x / 100 for x in range(30, 81, 5)]:
        with decided_with(THRESHOLD=t):
            r = evaluate(index, data, ids)
        print(f"  threshold {t:.2f}: same {r['same'][0]}/{r['same'][1]}, reworded {r['reworded'][0]}/{r['reworded'][1]}, "
              f"false blocks {r['unrelated'][0]}/{r['unrelated'][1]}")


class RandomVectors:
    """An encoder for ``--random-vectors``: unit vectors of random values for every chunk, through
    the cache's own chunking and packing. For latency only: the helper's scan and look-ups cost
    the same whatever the values, and a 200k archive's real fill is hours of one core."""

    def __init__(self, dim: int) -> None:
        import numpy as np

        self.np, self.rng, self.dim = np, np.random.default_rng(5), dim

    def embed(self, texts: list[str]) -> Any:
        vecs = self.rng.standard_normal((len(texts), self.dim)).astype(self.np.float32)
        return vecs / self.np.linalg.norm(vecs, axis=1, keepdims=True)


def timed(index: RecallIndex, queries: list[str], client: EncoderClient | None, turn: Path | None = None) -> str:
    """The step timed once per query: p50 and p95, with the load. With ``turn`` (a session's
    ``session.json``), that file is written again before each step, as the REPL's previous turn
    did, so the step's refresh has a changed session to look at, as it has in use."""
    times = []
    for query in queries:
        if turn is not None:
            fresh = turn.with_name("session.json.bench")
            fresh.write_bytes(turn.read_bytes())
            os.replace(fresh, turn)  # a new file, as the store's atomic write makes
        if client is not None and RECALLED_AHEAD[0]:
            # the REPL's pause before Enter: the helper does the message's whole recall (the search,
            # the cosines, the judge); Enter only fetches the block (clio.app.auto_recall.typed)
            client.judge = JUDGE[0]
            token = client.recall_ahead(query, query, "bench-running-session", "standard")
            client.status(5.0)  # the helper answers connections in turn: the recall is done by now
            t = time.perf_counter()
            got = client.recalled(token, BLOCK_CHARS) if token is not None else None
            times.append((time.perf_counter() - t) * 1000)
            assert got is not None, f"the helper recalled nothing ahead: {client.state}"
            continue
        typed_ahead(client, query)
        t = time.perf_counter()
        step(index, query, client)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return (
        f"{' with the encoder' if client else ''} p50 {statistics.median(times):.1f} ms, "
        f"p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms ({len(times)} messages; load {os.getloadavg()[0]:.2f})"
    )


def scale(workdir: Path, repeat: int, encoder: bool = False, random_vectors: bool = False) -> None:
    store = SessionStore(workdir / "sessions")
    index = RecallIndex(workdir / "recall.sqlite", store, embedder=None)
    started = time.perf_counter()
    count = index.counts()["messages"]
    index.search("warm up the index", mode="lexical")
    print(f"scale: {count:,} messages; first search (freshness check) {time.perf_counter() - started:.1f} s")
    client = None
    if encoder:  # the helper embeds the whole index first (the steady state of a project it knows)
        if workdir.resolve().name != ".clio":
            raise SystemExit("--scale with --encoder needs a corpus made with --workdir SOMEWHERE/.clio")
        t = time.perf_counter()
        home = workdir.parent / "encoder-home"
        which = chosen(MODELS_FROM[0] or home / "none")
        assert isinstance(which, EncoderModel), which
        if not filled(workdir, which):  # the helper's own fill, run here on both cores (the helper's is niced)
            from clio.recall.encoder_cache import VectorCache

            cache = VectorCache(workdir / which.cache_name, which)
            model: Any = RandomVectors(which.dim) if random_vectors else Encoder(threads=2, model=which, home=MODELS_FROM[0])
            cache.fill_from_index(workdir / "recall.sqlite", model, 10**9, lambda: False)
            cache.close()
            print(f"scale: the archive embedded in {time.perf_counter() - t:.0f} s ({which.name})")
        client = encoder_helper(home, workdir)
        client.timeout_s = 0.25
    rng = random.Random(3)
    every = max(7, count // 400)
    bodies = [r[0] for r in index._conn.execute("SELECT body FROM msgs WHERE rowid % ? = 0 LIMIT 400", (every,))]
    queries = []
    for _ in range(repeat):
        for body in rng.sample(bodies, min(len(bodies), 100)):
            words = body.split()
            queries.append(" ".join(rng.sample(words, min(len(words), 8))))
    turn = max((workdir / "sessions").glob("*/session.json"), key=lambda p: p.stat().st_mtime)
    print(f"scale: per-message automatic recall{timed(index, queries, client)}")
    print(f"scale, each step after a turn wrote its session: per-message automatic recall{timed(index, queries, client, turn)}")
    if client is not None:
        stop_helper(client)


def copied_archive(clio_dir: Path, sets: list[dict[str, Any]], size: int) -> tuple[RecallIndex, int]:
    """The sets' sessions written again and again under ``clio_dir`` (made here) in clio's layout
    (the helper's recall ahead reads the sessions there), each copy its own session a day later,
    until the archive holds ``size`` messages, and indexed: (the index, the sessions written)."""
    root = clio_dir / "sessions"
    clio_dir.mkdir()
    written, k = 0, 0
    while written < size:
        for data in sets:
            build(data, root, k)
            k += len(data["sessions"])
            written += sum(len(s["messages"]) for s in data["sessions"])
    index = RecallIndex(clio_dir / "recall.sqlite", SessionStore(root), embedder=None)
    index.refresh()
    return index, k


def scale_dev(size: int, repeat: int, encoder: bool) -> None:
    """The per-message step over an archive of ``size`` messages of realistic work: the sets'
    sessions written again and again (each copy its own session, a day later) until the archive
    holds ``size`` messages, and the sets' 144 new messages as the queries (everyday lengths: where
    ``--scale``'s queries are 8 synthetic words, ~30 model tokens, these are 5-25). Latency only:
    the copies repeat each fact, so the choices are not figures."""
    sets = [load_set(n) for n in SET_NAMES]
    probes = [p["text"] for data in sets for p in data["probes"]]
    with tempfile.TemporaryDirectory() as tmp:
        clio_dir = Path(tmp) / ".clio"
        index, k = copied_archive(clio_dir, sets, size)
        count = index.counts()["messages"]
        client = embedded_helper(Path(tmp) / "home", clio_dir) if encoder else None
        for _ in range(2):  # warm: the index's pages, the helper's scan
            for text in probes:
                step(index, text, client)
        if client is not None:
            client.timeout_s = 0.25
        print(
            f"scale-dev: {count:,} messages ({k} sessions of the sets), per-message automatic recall"
            f"{timed(index, probes * repeat, client)}"
        )
        if client is not None:
            stop_helper(client)
        index.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", action="store_true", help="the decision's threshold swept on each set")
    ap.add_argument("--scale", type=Path, help="a recall_scale.py --workdir folder")
    ap.add_argument(
        "--random-vectors", action="store_true",
        help="with --scale --encoder, an archive not embedded yet gets random vectors (latency only)",
    )  # fmt: skip
    ap.add_argument("--scale-dev", type=int, metavar="N", help="time the step over N messages of the sets' sessions, copied")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--misses", action="store_true", help="list what each set missed or wrongly quoted")
    ap.add_argument("--encoder", action="store_true", help="the decision with the encoder helper's cosines")
    ap.add_argument("--typed-ahead", action="store_true", help="with --encoder: time each step after the helper embedded the message ahead, as the REPL has it sent while the user types")
    ap.add_argument("--recalled-ahead", action="store_true", help="with --encoder and --scale-dev: time Enter after the REPL's pause had the helper recall the message (the block fetched)")
    ap.add_argument("--no-judge", action="store_true", help="with --encoder: the decision without the helper's judge, as recall_judge: false has it (clio.recall.verdict)")
    ap.add_argument("--models-from", type=Path, metavar="CLIO_HOME", help="with --encoder: the models installed there (clio encoder install); the helper runs the one clio would")
    ap.add_argument("--sets", default=",".join(SET_NAMES), help="the sets to run, comma-separated (empty: none)")
    ap.add_argument("--narrated", action="store_true", help="the sets as a model that narrates its tool steps writes them")
    ap.add_argument("--whole-files", action="store_true", help="read results as whole files (real stdlib code appended, seeded)")
    ap.add_argument("--long-replies", action="store_true", help="replies as a chatty model writes them (an opening, quoted output, a closing offer; seeded)")
    ap.add_argument("--meaning-weight", type=float, help="with --tool --encoder: the helper's list fused at this weight, not its model's (alone: also when the words barely match)")
    ap.add_argument("--weak-words-weight", type=float, help="with --tool --encoder: the helper's list's weight when the words barely match, not its model's")
    ap.add_argument("--tool", action="store_true", help="also the memory tool's recall_sessions top 3 (with --encoder: and fused with the helper's)")
    ap.add_argument("--probes", type=Path, help="a JSON list of other probes for the sets ({set: 'b', text, kind, session, needles}): each set's own probes replaced by its items (sets without any are skipped)")
    ap.add_argument("--digests", type=Path, help="a JSON {set letter: {session name: digest}}: each session carries its digest as clio's read-back keeps it (recall_dev/digests.json: what a model would write at a session's end)")
    ap.add_argument("--served", action="store_true", help="with --encoder: the model (MiniLM, or --models-from's) served over HTTP on 127.0.0.1 as an embeddings API, and the helper asking it as for recall_embeddings (its threshold calibrated)")
    ap.add_argument("--lend", choices=lend_variants.MODES, default="shipped", help="a variant of the refine stage that lends a hit's score to its neighbours (benches/lend_variants.py)")
    ap.add_argument("--near-asked", type=int, default=NEAR_ASKED, help=f"with --encoder: the helper's nearest messages asked for each message (shipped: {NEAR_ASKED})")
    ap.add_argument("--nearby-results", type=int, default=NEAR_RESULTS, help=f"with --encoder: the units of those nearest messages kept after the words' results (shipped: {NEAR_RESULTS})")
    ap.add_argument("--judged", type=int, default=JUDGED, help=f"with --encoder: the admissible units the packaged judge reads a message (shipped: {JUDGED})")
    args = ap.parse_args()
    print(f"cpu: {describe(this_cpu())}", flush=True)  # a timing from one kind of CPU says little of the other
    NEAR[0], NEARBY_RESULTS[0], JUDGED_UNITS[0] = args.near_asked, args.nearby_results, args.judged
    lend_variants.use(args.lend)
    MODELS_FROM[0] = args.models_from
    if args.served:
        SERVED[0] = serve_embeddings(args.models_from)
    TYPED_AHEAD[0] = args.typed_ahead
    JUDGE[0] = not args.no_judge
    RECALLED_AHEAD[0] = args.recalled_ahead
    MEANING_WEIGHT[0] = args.meaning_weight
    WEAK_WORDS_WEIGHT[0] = args.weak_words_weight
    whole_rng = random.Random(7)  # one draw across the sets, in their order
    lost: Counter[tuple[str, str]] = Counter()  # over the sets: where their missed facts were lost
    digested: Counter[str] = Counter()  # over the sets: what the digests' units did (--digests)
    digests = json.loads(args.digests.read_text(encoding="utf-8")) if args.digests is not None else None
    reply_rng = random.Random(11)
    for name in [n for n in args.sets.split(",") if n]:
        if not (SETS / f"{name}.json").is_file():
            print(f"{name}: not found in {SETS}")
            continue
        data = load_set(name)
        if args.probes is not None:
            others = [p for p in json.loads(args.probes.read_text(encoding="utf-8")) if f"set_{p['set']}" == name]
            if not others:
                continue
            data["probes"] = others
        if digests is not None:
            data = with_digests(data, digests.get(name[-1], {}))
        if args.narrated:
            data = narrated(data)
        if args.whole_files:
            data = whole_files(data, whole_rng)
        if args.long_replies:
            data = long_replies(data, reply_rng)
        with tempfile.TemporaryDirectory() as tmp:
            index, ids, clio_dir = indexed(data, Path(tmp))
            client = embedded_helper(Path(tmp) / "home", clio_dir) if args.encoder else None
            if args.sweep:
                print(f"{name}: the threshold swept")
                if client is not None:
                    sweep_encoder(index, data, ids, client)
                else:
                    sweep(index, data, ids)
            for _ in range(max(0, args.repeat - 1)):
                evaluate(index, data, ids, client)  # warm (the helper's vectors too)
            if client is not None:
                client.timeout_s = 0.25  # measured as clio asks: within 250 ms, else words only
            r = evaluate(index, data, ids, client)
            if args.tool:
                if client is not None:
                    client.timeout_s = 5.0  # the tool's figures, not its latency
                tool_figures(name, data, ids, Path(tmp), client, show=args.misses)
            if client is not None:
                client.timeout_s = 0.25  # the short messages below are decided as clio decides them
            everyday = everyday_blocks(index, client, args.misses)
            at_hand = everyday_blocks(index, client, args.misses, WORK_AT_HAND, ("tune", "report", "report2"))
            at_length = everyday_blocks(index, client, args.misses, WORK_AT_HAND_LONG, ("report", "report2"))
            if client is not None:
                stop_helper(client)
            print(
                f"{name} ({'dev' if name in DEV_SETS else 'reported'}; {index.counts()['messages']:,} messages): "
                f"same words {r['same'][0]}/{r['same'][1]}, reworded {r['reworded'][0]}/{r['reworded'][1]}, "
                f"false blocks {r['unrelated'][0]}/{r['unrelated'][1]}; fact among the candidates "
                f"{r['candidates'][0]}/{r['candidates'][1]}; block precision {r['block_precision']:.2f}, "
                f"unit precision {r['unit_precision']:.2f}; p50 {r['p50']:.1f} ms, p95 {r['p95']:.1f} ms "
                f"(load {os.getloadavg()[0]:.2f})"
            )
            lost.update(r["lost"])
            digested.update(r["digested"])
            if args.misses:
                print("\n".join(r["misses"]))
            print(f"{name}: everyday messages given a block: {everyday}")
            print(f"{name}: messages about the work at hand given a block: {at_hand}")
            print(f"{name}: long messages about the work at hand given a block: {at_length}")
            index.close()
    if args.digests:
        print("digests over the sets: " + "; ".join(f"{k} {v}" for k, v in sorted(digested.items())))
    if args.misses and lost:
        for kind in ("same", "reworded"):
            print(f"{kind} facts missed over the sets, by where: " + "; ".join(f"{where} {lost[kind, where]}" for where in MISSED_WHERE))
    if args.scale:
        scale(args.scale, args.repeat, args.encoder, args.random_vectors)
    if args.scale_dev:
        scale_dev(args.scale_dev, args.repeat, args.encoder)


if __name__ == "__main__":
    sys.exit(main())
