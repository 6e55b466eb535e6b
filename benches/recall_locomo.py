"""Evidence retrieval on LoCoMo with clio's recall index (prints figures, asserts nothing).

Every turn of a conversation is one archived message (each LoCoMo session is one clio
session); every question is run through ``RecallIndex.search`` against its own
conversation, and the dia_ids of the returned messages are compared with the
question's evidence. Category 5 (adversarial) and items with empty or malformed
evidence are skipped, as the data's README says. Each clio mode runs twice: "before" is the
fused ranking alone (``search(..., refine=False)``), "after" adds the stages of
``clio/recall/refine.py``; every row is followed by its figures per question category
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).

    python benches/recall_locomo.py [--data ../shared/data/locomo/locomo7.json] [--variants]

The data is read where it lies; it is never copied into the repository.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

import lend_variants  # noqa: E402

import clio.recall.index as recall_index_mod  # noqa: E402
import clio.recall.ivf as ivf_mod  # noqa: E402
import clio.recall.tool_search as tool_search  # noqa: E402
import clio.recall.units as units_mod  # noqa: E402
import clio.recall.vectors as vectors_mod  # noqa: E402
from clio.recall.embedder import Embedder, get_embedder, unavailable_reason  # noqa: E402
from clio.recall.index import RecallIndex  # noqa: E402
from clio.recall.query import STOPWORDS, build_fts_query, query_terms  # noqa: E402
from clio.store.session_info import Digest  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo" / "locomo7.json"
DIA_RE = re.compile(r"D\d+:\d+")


@dataclass
class Info:
    id: str
    name: str
    created: float
    updated: float
    message_count: int
    digests: list[Digest] = field(default_factory=list)


# --digests: what each LoCoMo session carries as its digest (clio.store.session_info.Digest, as a
# read-back leaves it): "summary", the data's own session_summary (written by a model from the
# session, as clio's read-back is); "lift" the same, its units taken out of the results after the
# ranking (only what it lends its session counts); "none" (default) as before
DIGESTS: list[str] = ["none"]
DIGEST_MARK = "digest:"  # a digest unit's place among the k shown: never evidence
LIFT_RESULTS = 16  # "lift": units asked, so that 10 messages remain once the digests are taken out


class LocomoSessions:
    """A read-only session source over one LoCoMo conversation (the SessionStore surface)."""

    def __init__(
        self, conv: dict[str, Any], doc: Callable[[dict[str, Any]], str], summaries: dict[str, Any] | None = None
    ) -> None:
        self.infos: list[Info] = []
        self.msgs: dict[str, list[dict[str, Any]]] = {}
        self.dia: dict[tuple[str, int], str] = {}
        speaker_a = conv.get("speaker_a")
        n = 1
        while f"session_{n}" in conv:
            sid = f"session_{n}"
            ts = _parse_date(str(conv.get(f"{sid}_date_time", "")))
            turns = conv[sid] or []
            msgs = []
            for seq, turn in enumerate(turns):
                role = "user" if turn.get("speaker") == speaker_a else "assistant"
                msgs.append({"role": role, "content": doc(turn), "meta": {"seq": seq, "ts": ts + seq}})
                self.dia[(sid, seq)] = str(turn.get("dia_id"))
            self.msgs[sid] = msgs
            summary = (summaries or {}).get(f"{sid}_summary")
            digests = [Digest(len(msgs), " ".join(summary.split()), ts + len(turns), False)] if isinstance(summary, str) and summary.strip() and msgs else []
            self.infos.append(Info(sid, sid, ts, ts + len(turns), len(msgs), digests))
            n += 1

    def list(self) -> list[Info]:
        return list(self.infos)

    def iter_messages(self, session_id: str) -> Iterator[dict[str, Any]]:
        yield from self.msgs.get(session_id, [])


def _parse_date(text: str) -> float:
    try:
        return datetime.strptime(text, "%I:%M %p on %d %B, %Y").timestamp()
    except ValueError:
        return 0.0


DOCS: dict[str, Callable[[dict[str, Any]], str]] = {
    "text": lambda t: str(t.get("text", "")),
    "text+caption": lambda t: " ".join(
        [str(t.get("text", ""))]
        + ([f"[shares a photo: {t['blip_caption']}]"] if t.get("blip_caption") else [])
    ),
    "speaker+text+caption": lambda t: (
        f"{t.get('speaker', '')}: "
        + " ".join(
            [str(t.get("text", ""))]
            + ([f"[shares a photo: {t['blip_caption']}]"] if t.get("blip_caption") else [])
        )
    ),
}

NO_STOP: frozenset[str] = frozenset()
DEFAULT_QUERY = "or-no-stopwords (clio default)"
QUERIES: dict[str, Callable[[str], str]] = {
    "or-all-words": lambda q: build_fts_query(q, NO_STOP, max_terms=64),
    DEFAULT_QUERY: lambda q: build_fts_query(q),
    "or-no-stopwords+prefix>=6": lambda q: build_fts_query(q, prefix_min=6),
}


MODES: dict[str, Literal["lexical", "semantic", "hybrid"]] = {
    "clio": "lexical",
    "clio-sem": "semantic",
    "clio-hyb": "hybrid",
    "clio-hyb+enc": "hybrid",  # the memory tool with the encoder helper: its nearest messages fused in
    "clio+enc": "lexical",  # bm25 and the helper's nearest, no static table
}
ENCODER_NEAR = 30  # as the memory tool asks the helper (clio.recall.tool_search.NEAR)
WHOLE_UNITS: list[int | None] = [tool_search.WHOLE_UNITS]  # the memory tool's whole units (--whole-units)


class Nearest:
    """The encoder helper's scan, in process: every indexed message's chunks embedded with the
    helper's model (clio.recall.encoder), the nearest messages by their best chunk's cosine."""

    def __init__(self, index: RecallIndex) -> None:
        import numpy as np

        from clio.recall.encoder import chunks

        rows = index._conn.execute("SELECT id, body FROM msgs").fetchall()
        pieces = [(int(rid), c) for rid, body in rows for c in (chunks(str(body)) or [""])]
        self.owners = np.array([rid for rid, _ in pieces], dtype=np.int64)
        self.matrix = encoder().embed([c for _, c in pieces])

    def __call__(self, query: str, k: int = ENCODER_NEAR) -> list[int]:
        from clio.recall.encoder_scan import nearest_rows

        return [rid for rid, _ in nearest_rows(self.owners, self.matrix, encoder().embed([query])[0], k)]


_encoder: Any = None
_judge: Any = None
JUDGE = [True]  # --no-judge: the memory tool's search without its judge's re-rank (recall_judge: false)


def rerank(query: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The memory tool's re-rank of its first units by the helper's judge
    (clio.recall.tool_search.judged_order), the judge run in process."""
    global _judge
    from clio.recall.judge import Judge

    if _judge is None:
        _judge = Judge()
    judge = _judge
    return tool_search.judged_order(hits, lambda head: judge.score(query, tool_search.judge_texts(head, query)))


_models_from: list[Path | None] = [None]  # --models-from: a $CLIO_HOME whose installed encoder to use
_weight: list[float | None] = [None]  # --meaning-weight: instead of the model's own
_weak_weight: list[float | None] = [None]  # --weak-words-weight: likewise, when the words barely match


def meaning_weight() -> float:
    """The weight of the helper's nearest list in the fusion: the model's own, as the memory tool
    has it (clio.recall.encoder_models), unless ``--meaning-weight`` says."""
    return _weight[0] if _weight[0] is not None else float(encoder().model.meaning_weight)


def weak_words_weight() -> float:
    """Its weight when the words barely match (clio.recall.query.WEAK_WORDS): the model's own,
    unless ``--weak-words-weight`` says (``--meaning-weight`` alone: that one weight throughout)."""
    if _weak_weight[0] is not None:
        return _weak_weight[0]
    return _weight[0] if _weight[0] is not None else float(encoder().model.weak_words_weight)


def encoder() -> Any:
    """The encoder clio would run for the user whose $CLIO_HOME ``--models-from`` names (MiniLM
    without it, or with ``CLIO_RECALL_ENCODER=minilm``)."""
    global _encoder
    if _encoder is None:
        from clio.recall.encoder import Encoder
        from clio.recall.encoder_models import MINILM, EncoderModel, chosen

        home = _models_from[0]
        model = chosen(home) if home is not None else MINILM
        if not isinstance(model, EncoderModel):
            raise SystemExit(f"no encoder: {model}")
        _encoder = Encoder(threads=2, model=model, home=home)
    return _encoder
BEFORE = "-fused"  # an engine name ending so: the fused ranking alone, no refine stages
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def embedder() -> Embedder:
    found = get_embedder()
    if found is None:
        raise SystemExit(unavailable_reason())
    return found


class PlainFts5:
    """The reference shape: one FTS5 column per turn (porter), no neighbour context."""

    def __init__(self, src: LocomoSessions) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5(body, sid UNINDEXED, seq UNINDEXED, tokenize='porter unicode61')"
        )
        for info in src.list():
            for m in src.iter_messages(info.id):
                self.conn.execute("INSERT INTO t VALUES (?, ?, ?)", (m["content"], info.id, m["meta"]["seq"]))

    def search_match(
        self, match: str, terms: list[str], max_sessions: int, max_results: int
    ) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT sid, seq FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (match, max_results)
        )
        return [{"session_id": sid, "seq": seq} for sid, seq in rows]

    def close(self) -> None:
        self.conn.close()


def load(path: Path) -> list[dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a list of conversations")
    return data


def usable(qa: dict[str, Any], known: set[str]) -> bool:
    ev = qa.get("evidence")
    if qa.get("category") == 5 or not isinstance(ev, list) or not ev:
        return False
    return all(isinstance(e, str) and DIA_RE.fullmatch(e) and e in known for e in ev) and bool(
        qa.get("question")
    )


def _figures(r5: list[float], r10: list[float], rr: list[float]) -> dict[str, float]:
    return {
        "questions": len(r10),
        "recall@5": statistics.fmean(r5),
        "recall@10": statistics.fmean(r10),
        "mrr@10": statistics.fmean(rr),
    }


def shown(units: list[list[str]], k: int) -> set[str]:
    """The messages of the first units that fit whole in ``k`` messages."""
    out: set[str] = set()
    used = 0
    for u in units:
        if used + len(u) > k:
            break
        used += len(u)
        out.update(u)
    return out


def run(data: list[dict[str, Any]], engine: str, doc_name: str, query_name: str) -> dict[str, Any]:
    build = QUERIES[query_name]
    base, refine = engine.removesuffix(BEFORE), not engine.endswith(BEFORE)
    r5: list[float] = []
    r10: list[float] = []
    rr: list[float] = []
    lat: list[float] = []
    extra: list[float] = []  # per question: with the refine stages minus without (same index)
    cats: list[int] = []
    build_s = 0.0
    for rec in data:
        src = LocomoSessions(rec["conversation"], DOCS[doc_name], rec.get("session_summary") if DIGESTS[0] != "none" else None)
        t0 = time.perf_counter()
        index: RecallIndex | PlainFts5
        nearest: Nearest | None = None
        weight = 0.0
        if engine.startswith("clio"):
            index = RecallIndex(
                None, src, embedder=None if base in ("clio", "clio+enc") else embedder(), sync_budget_s=None
            )
            index.refresh()
            index.sync_vectors()
            nearest = Nearest(index) if base.endswith("+enc") else None
            weight = meaning_weight() if nearest is not None else 0.0
            weak = weak_words_weight() if nearest is not None else 0.0
        else:
            index = PlainFts5(src)
        build_s += time.perf_counter() - t0
        known = set(src.dia.values())
        for qa in rec.get("qa", []):
            if not usable(qa, known):
                continue
            q = str(qa["question"])
            product = isinstance(index, RecallIndex) and query_name == DEFAULT_QUERY
            # the same question without the stages, just before: the pair's cost
            if isinstance(index, RecallIndex) and product and refine:
                t0 = time.perf_counter()
                index.search(
                    q, max_sessions=1000, max_results=10, mode=MODES[base], refine=False,
                    nearby=functools.partial(nearest, q) if nearest is not None else None, fuse_nearby=nearest is not None,
                    meaning_weight=weight, weak_words_weight=weak,
                )  # fmt: skip
                fused_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            if isinstance(index, RecallIndex) and product:
                mode = MODES[base]  # the product's own path
                near = functools.partial(nearest, q) if nearest is not None else None
                hits = index.search(
                    q, max_sessions=1000, max_results=LIFT_RESULTS if DIGESTS[0] == "lift" else 10, mode=mode, refine=refine, nearby=near, fuse_nearby=near is not None,
                    meaning_weight=weight, weak_words_weight=weak,
                    whole_units=WHOLE_UNITS[0] if mode == "hybrid" else None,  # the memory tool's; lexical: the automatic recall's
                    texts=JUDGE[0] and near is not None,
                )
                if JUDGE[0] and near is not None:  # the memory tool with the helper: its judge re-ranks
                    hits = rerank(q, hits)
            else:
                match = build(q)
                hits = index.search_match(match, query_terms(q, STOPWORDS), 1000, 10) if match else []
            lat.append(time.perf_counter() - t0)
            if product and refine:
                extra.append(lat[-1] - fused_s)
            # a unit of n messages counts as n of the k shown: R@k reads the units that fit whole
            # in k messages
            if DIGESTS[0] == "lift":
                hits = [h for h in hits if h["seq"] >= 0]
            units = [[src.dia.get((h["session_id"], s), DIGEST_MARK + h["session_id"]) for s in h.get("seqs", [h["seq"]])] for h in hits]
            got = [d for u in units for d in u]
            ev = set(qa["evidence"])
            r5.append(len(ev & shown(units, 5)) / len(ev))
            r10.append(len(ev & shown(units, 10)) / len(ev))
            first = next((i for i, d in enumerate(got) if d in ev), None)
            rr.append(0.0 if first is None else 1.0 / (first + 1))
            cats.append(int(qa.get("category", 0)))
        index.close()
    lat.sort()
    extra.sort()
    per = {
        name: _figures(*([x for x, c in zip(a, cats, strict=True) if c == cat] for a in (r5, r10, rr)))
        for cat, name in CATEGORIES.items()
        if cat in cats
    }
    return {
        **_figures(r5, r10, rr),
        "p50_ms": 1000 * lat[len(lat) // 2],
        "p95_ms": 1000 * lat[int(len(lat) * 0.95)],
        "build_s": build_s,
        "categories": per,
        "extra_ms": (1000 * extra[len(extra) // 2], 1000 * extra[int(len(extra) * 0.95)]) if extra else None,
    }


STAGES = {
    "session relevance": ("SESSION_WEIGHT",),
    "reply and neighbours": ("ANSWER_WEIGHT", "NEIGHBOUR_WEIGHT"),
    "time for when-questions": ("WHEN_WEIGHT",),
    "the time a query names": ("PERIOD_WEIGHT",),
}


def stage_gains(data: list[dict[str, Any]]) -> None:
    """Each refine stage's gain (R@5 / R@10 with every stage, minus without that one), lexical,
    on each half of the conversations (0, 2, 4.. and 1, 3, 5..) and per question category."""
    import clio.recall.refine as refine_mod

    for half in (0, 1):
        part = data[half::2]
        full = run(part, "clio", "text+caption", DEFAULT_QUERY)
        print(f"half {half} ({len(part)} conversations, {full['questions']} questions): all stages "
              f"R@5 {full['recall@5']:.3f} R@10 {full['recall@10']:.3f}")
        for stage, names in STAGES.items():
            saved = {n: getattr(refine_mod, n) for n in names}
            for n in names:
                setattr(refine_mod, n, 0.0)
            try:
                without = run(part, "clio", "text+caption", DEFAULT_QUERY)
            finally:
                for n, v in saved.items():
                    setattr(refine_mod, n, v)
            cats = ", ".join(
                f"{c} {full['categories'][c]['recall@10'] - without['categories'][c]['recall@10']:+.3f}"
                for c in full["categories"]
            )
            print(f"  {stage:24} gain R@5 {full['recall@5'] - without['recall@5']:+.3f} "
                  f"R@10 {full['recall@10'] - without['recall@10']:+.3f}  (R@10 by category: {cats})")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="LoCoMo-format JSON (default: %(default)s)"
    )
    ap.add_argument("--variants", action="store_true", help="also run the query/document variants tried")
    ap.add_argument("--models-from", type=Path, metavar="CLIO_HOME", help="the encoder installed there (clio encoder install) for the helper's nearest")
    ap.add_argument("--rrf-k", type=int, default=None, help="override clio's RRF k")
    ap.add_argument("--min-cosine", type=float, default=None, help="override the semantic floor")
    ap.add_argument(
        "--ivf-min-rows",
        type=int,
        default=None,
        help="override the vector count from which IVF lists are used",
    )
    ap.add_argument("--nprobe", type=int, default=None, help="override the IVF lists scanned per query")
    ap.add_argument("--only", default=None, help="comma-separated engines to run (e.g. clio-hyb)")
    ap.add_argument("--parts", type=int, default=None, help="override the messages of a recall unit (1: single messages)")
    ap.add_argument(
        "--whole-units", type=int, default=None,
        help="hybrid (the memory tool): units shown whole before the compact ones (0: every unit whole)",
    )  # fmt: skip
    ap.add_argument("--meaning-weight", type=float, default=None, help="override the weight of the helper's nearest list (alone: also when the words barely match)")
    ap.add_argument("--weak-words-weight", type=float, default=None, help="override its weight when the words barely match")
    ap.add_argument("--stages", action="store_true", help="each refine stage's gain per half and category (lexical)")
    ap.add_argument("--half", type=int, choices=(0, 1), default=None, help="only conversations 0,2,4.. (0) or 1,3,5.. (1)")
    ap.add_argument(
        "--digests", choices=("none", "summary", "lift"), default="none",
        help="each session's digest: the data's session_summary, counted as a unit among the k (summary), or only lending its session (lift)",
    )  # fmt: skip
    ap.add_argument(
        "--no-judge", action="store_true",
        help="engines with the helper (+enc): the memory tool without its judge's re-rank of the first units (recall_judge: false)",
    )  # fmt: skip
    ap.add_argument("--lend", choices=lend_variants.MODES, default="shipped", help="a variant of the stage that lends a hit's score to its neighbours (benches/lend_variants.py)")
    args = ap.parse_args(argv)
    lend_variants.use(args.lend)
    JUDGE[0] = not args.no_judge
    DIGESTS[0] = args.digests
    _models_from[0] = args.models_from
    if args.parts is not None:
        units_mod.MAX_PARTS = args.parts
    if args.whole_units is not None:
        WHOLE_UNITS[0] = args.whole_units or None
    if args.rrf_k is not None:
        recall_index_mod.RRF_K = args.rrf_k
    _weight[0] = args.meaning_weight
    _weak_weight[0] = args.weak_words_weight
    if args.min_cosine is not None:
        vectors_mod.MIN_COSINE = args.min_cosine
    if args.ivf_min_rows is not None:
        ivf_mod.MIN_ROWS = args.ivf_min_rows
    if args.nprobe is not None:
        ivf_mod.NPROBE = args.nprobe
    data = load(args.data.resolve())
    if args.half is not None:
        data = data[args.half :: 2]
    if args.stages:
        stage_gains(data)
        return
    turns = sum(
        len(v)
        for rec in data
        for k, v in rec["conversation"].items()
        if k.startswith("session_") and isinstance(v, list)
    )
    print(
        "engines: plain-fts5 (reference), clio (bm25, lexical), clio-sem (cosine only, "
        "static table distilled from all-MiniLM-L6-v2), clio-hyb (bm25 + cosine fused by RRF: the default), "
        "clio-hyb+enc / clio+enc (with / without the static table, the encoder helper's 30 nearest messages fused in: the memory tool with the helper); "
        f"NAME{BEFORE}: the fused ranking alone (before the refine stages)"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"LoCoMo: {len(data)} conversations, {turns} turns, data {args.data.resolve()}")
    default = DEFAULT_QUERY
    combos = [("plain-fts5", "text+caption", "or-all-words"), ("plain-fts5", "text+caption", default)]
    combos += [(e + end, "text+caption", default) for e in MODES for end in (BEFORE, "")]
    if args.variants:
        combos += [("clio", d, q) for d in DOCS for q in QUERIES if (d, q) != ("text+caption", default)]
    print(
        f"{'engine':15} {'document':20} {'query':31} {'n':>5} {'R@5':>6} {'R@10':>6} {'MRR@10':>6} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'build s':>7}"
    )
    if args.only:
        combos = [c for c in combos if c[0] in args.only.split(",")]
    for engine, doc_name, query_name in combos:
        r = run(data, engine, doc_name, query_name)
        print(
            f"{engine:15} {doc_name:20} {query_name:31} {r['questions']:5d} {r['recall@5']:6.3f} "
            f"{r['recall@10']:6.3f} {r['mrr@10']:6.3f} {r['p50_ms']:7.2f} {r['p95_ms']:7.2f} {r['build_s']:7.2f}"
        )
        if r["extra_ms"]:
            print(
                f"{'':15}   refine stages add p50 {r['extra_ms'][0]:.2f} ms, p95 {r['extra_ms'][1]:.2f} ms (paired)"
            )
        for name, c in r["categories"].items():
            print(
                f"{'':15} {'  ' + name:20} {'':31} {c['questions']:5d} {c['recall@5']:6.3f} "
                f"{c['recall@10']:6.3f} {c['mrr@10']:6.3f}"
            )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
