"""Long-term memory dedup figures: what survives, what merges, what is queued, and what it costs.

Run: .venv/bin/python benches/bench_ltm_dedup.py [--quick]
Prints the figures; docs/memory.md records them. Pure CPU, no disk.

1. Quality: 24 distinct facts from 6 templates, each template's 4 facts differing in ONE
   identifier, path, number, version or name (the case of issue 14: "the granite service ..."
   merged into "the cobalt service ..."), plus 6 true duplicates reworded (case, punctuation,
   word order, a stopword, an inflection) and 5 ambiguous ones (a plain word replaced, or a
   shorter rewording). Added one by one through ``dedup.upsert``, then ``ambiguous_pairs``.
   The same stream through the old rule (Jaccard >= 0.85 merges, old wording kept) for comparison.
2. Cost: the one-new-entry dedup check (``upsert``) and the all-pairs scan
   (``ambiguous_pairs``) at 1,000 and 5,000 entries, with and without MinHash.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # testkit/ (appended: an installed clio comes first)

from clio.memory import dedup, ltm, similarity  # noqa: E402
from clio.memory.ltm import Entry  # noqa: E402
from clio.memory.similarity import jaccard, near_duplicates, similar_pairs, word_set  # noqa: E402

T0 = 1_800_000_000.0

TEMPLATES: list[tuple[str, list[str]]] = [
    ("the {} service stores its {} sessions under /var/lib/{} on every host of the fleet",
     ["granite", "cobalt", "basalt", "quartz"]),
    ("The billing API server listens on port {} inside the staging cluster behind the nginx proxy",
     ["8080", "8081", "9090", "7001"]),
    ("Invoice PDFs are rendered by the template engine defined in invoices/{}.py for every customer account",
     ["render_pdf", "render_html", "layout", "quillmark"]),
    ("The CI pipeline pins the Python interpreter to version {} for every job in the main workflow file",
     ["3.10", "3.11", "3.12", "3.13"]),
    ("Deployments to the production cluster are approved by {} before the release train leaves on Friday",
     ["Alice", "Bob", "Carol", "Dave"]),
    ("The retry loop in the payment worker reads its limit from the {} setting of the config module",
     ["MAX_RETRIES", "MAX_ATTEMPTS", "RETRY_LIMIT", "BACKOFF_CAP"]),
]  # fmt: skip


def distinct_facts() -> list[str]:
    return [t.format(*([v] * t.count("{}"))) for t, values in TEMPLATES for v in values]


DISTINCT = distinct_facts()
# (index of the fact it repeats, rewording): must merge into that fact
DUPLICATES: list[tuple[int, str]] = [
    (4, "the billing api server listens on port 8080, inside the staging cluster, behind the nginx proxy."),
    (8, "invoice PDFs are rendered by the template engine defined in `invoices/render_pdf.py`, for every customer account"),
    (13, "The CI pipeline pins the Python interpreter to version 3.11 for every job in its main workflow file"),
    (16, "Deployments to the production cluster are approved by Alice before the release train leaves on Fridays"),
    (0, "Under /var/lib/granite the granite service stores its granite sessions on every host of the fleet"),
    (20, "The retry loop in the payment worker reads its limit from the MAX_RETRIES setting of the config module!"),
]  # fmt: skip
# (index of the fact it resembles, text): may or may not be the same fact (another proxy, a shorter
# wording, a synonym); must be kept and queued
AMBIGUOUS: list[tuple[int, str]] = [
    (5, "The billing API server listens on port 8081 inside the staging cluster behind the envoy proxy"),
    (9, "Invoice PDFs come from the template engine in invoices/render_html.py"),
    (14, "The CI pipeline pins the Python interpreter to version 3.12 for the jobs of the workflow"),
    (23, "The retry loop in the payment worker reads its ceiling from the BACKOFF_CAP setting of the config module"),
    (1, "the cobalt service keeps its cobalt sessions under /var/lib/cobalt on every host of the cluster"),
]  # fmt: skip


def old_upsert(entries: list[Entry], new: Entry) -> list[Entry]:
    """The rule before issue 14: Jaccard >= 0.85 with a same-type entry merges, old wording kept."""
    sets = [word_set(e.text()) for e in entries]
    hits = near_duplicates(word_set(new.text()), sets, 0.85)
    if hits:
        return entries
    return [*entries, new]


def quality() -> None:
    stream: list[tuple[str, str]] = [("distinct", f) for f in DISTINCT]
    stream += [("duplicate", t) for _, t in DUPLICATES] + [("ambiguous", t) for _, t in AMBIGUOUS]
    random.Random(14).shuffle(stream)
    stream.sort(key=lambda kt: kt[0] != "distinct")  # facts first, then the rewordings, in shuffled order
    new: list[Entry] = []
    old: list[Entry] = []
    for i, (_kind, text) in enumerate(stream):
        e = ltm.make_entry("discovery", {"fact": text}, now=T0 + i)
        new, _, _ = dedup.upsert(new, e)
        old = old_upsert(old, e)

    def kept(entries: list[Entry], text: str) -> bool:
        return any(e.text() == text or any(h.get("fact") == text for h in e.history) for e in entries)

    def current(entries: list[Entry], text: str) -> bool:
        return any(e.text() == text for e in entries)

    reworded = {i: t for i, t in DUPLICATES}

    def own(entries: list[Entry], i: int) -> bool:  # the fact, or its own rewording with the fact in history
        f = DISTINCT[i]
        return current(entries, f) or any(
            e.text() == reworded.get(i) and any(h.get("fact") == f for h in e.history) for e in entries
        )

    facts_new = sum(own(new, i) for i in range(len(DISTINCT)))
    facts_old = sum(current(old, f) for f in DISTINCT)
    merged = sum(
        1
        for i, t in DUPLICATES
        if current(new, t) and not current(new, DISTINCT[i]) and kept(new, DISTINCT[i])
    )
    ambiguous_kept = sum(current(new, t) for _, t in AMBIGUOUS)
    pairs = dedup.ambiguous_pairs(new)
    by_id = {e.id: e.text() for e in new}
    queued = sum(
        1 for i, t in AMBIGUOUS
        if any({by_id[a], by_id[b]} == {t, DISTINCT[i]} for a, b, _ in pairs)
    )  # fmt: skip
    amb_old = sum(current(old, t) for _, t in AMBIGUOUS)
    print("== Quality: 24 distinct facts, 6 reworded duplicates, 5 ambiguous ==")
    print(
        f"distinct facts kept (as an entry's current text):  new {facts_new}/24 ({facts_new / 24:.0%})   old rule {facts_old}/24 ({facts_old / 24:.0%})"
    )
    print(f"true duplicates merged, newer wording + history:   {merged}/{len(DUPLICATES)}")
    print(
        f"ambiguous kept separate / queued as pairs:         {ambiguous_kept}/{len(AMBIGUOUS)} / {queued}/{len(AMBIGUOUS)}   (old rule kept {amb_old})"
    )
    print(f"entries: new {len(new)}, old rule {len(old)}; ambiguous pairs queued in all: {len(pairs)}")
    # the pair of the finding
    g, c = DISTINCT[0], DISTINCT[1]
    assert g and c
    print(f"granite vs cobalt: Jaccard {jaccard(word_set(g), word_set(c)):.3f}, both kept: {own(new, 0) and own(new, 1)}")  # fmt: skip


# ---------------------------------------------------------------- cost

VOCAB_RNG = random.Random(5)
VOCAB = [
    "".join(VOCAB_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(VOCAB_RNG.randint(3, 9)))
    for _ in range(3000)
]
FILLER = ["the", "a", "of", "to", "in", "is", "for", "on", "with", "by", "from"]


def synthetic(n: int, seed: int = 1) -> list[Entry]:
    """n discoveries of 10-22 words, about 5% near copies of an earlier one (a word or two changed)."""
    rng = random.Random(seed)
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < 0.05:
            words = rng.choice(texts).split()
            words[rng.randrange(len(words))] = rng.choice(VOCAB)
            texts.append(" ".join(words))
        else:
            words = [rng.choice(VOCAB) for _ in range(rng.randint(7, 16))] + rng.sample(
                FILLER, rng.randint(3, 6)
            )
            rng.shuffle(words)
            texts.append(" ".join(words))
    return [ltm.make_entry("discovery", {"fact": t}, now=T0 + i) for i, t in enumerate(texts)]


def timed(fn: Callable[..., object], repeat: int, *args: object, **kw: object) -> float:
    """Median milliseconds of ``repeat`` calls of fn(*args, **kw)."""
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args, **kw)
        runs.append((time.perf_counter() - t) * 1000)
    return statistics.median(runs)


def cold_lsh(sets: list[frozenset[str]]) -> None:
    similarity._signature.cache_clear()
    similar_pairs(sets, 0.5, lsh_min=1)


def cost(sizes: list[int], repeat: int) -> None:
    print("\n== Cost (median ms, 2 shared cores, pure Python) ==")
    print(
        "| entries | upsert exact | upsert MinHash prefilter | all pairs exact | all pairs MinHash LSH | LSH recall |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for n in sizes:
        entries = synthetic(n)
        probe = ltm.make_entry("discovery", {"fact": entries[n // 2].text() + " again"}, now=T0 + n)
        dedup.MINHASH_MIN = None
        exact_up = timed(dedup.upsert, repeat, entries, probe)
        dedup.MINHASH_MIN = 1
        mh_up = timed(dedup.upsert, repeat, entries, probe)
        dedup.MINHASH_MIN = None
        sets = [word_set(e.text()) for e in entries]
        reps = 1 if n > 2000 else max(1, repeat // 3)
        exact_pairs = timed(similar_pairs, reps, sets, 0.5)
        similar_pairs(sets, 0.5, lsh_min=1)  # warm the signature cache once, as a long-lived process would
        lsh_pairs = timed(similar_pairs, reps, sets, 0.5, lsh_min=1)
        truth = {(i, k) for i, k, _ in similar_pairs(sets, 0.5)}
        found = {(i, k) for i, k, _ in similar_pairs(sets, 0.5, lsh_min=1)}
        recall = len(truth & found) / len(truth) if truth else 1.0
        print(
            f"| {n:,} | {exact_up:.1f} | {mh_up:.1f} | {exact_pairs:.0f} | {lsh_pairs:.0f} | {recall:.1%} of {len(truth)} |"
        )
    print("\nCrossover of the all-pairs scan (exact vs LSH, cold signature cache):")
    for n in (100, 200, 300, 500, 800):
        sets = [word_set(e.text()) for e in synthetic(n, seed=n)]
        ex = timed(similar_pairs, 3, sets, 0.5)
        lsh = timed(cold_lsh, 3, sets)
        print(f"  {n:>4} entries: exact {ex:6.1f} ms, LSH {lsh:6.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 entries only, fewer repeats")
    args = ap.parse_args()
    quality()
    cost([1000] if args.quick else [1000, 5000], 3 if args.quick else 7)


if __name__ == "__main__":
    main()
