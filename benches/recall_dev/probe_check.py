"""A new blind probe set, its material and its check (the brief of the tenth to fourteenth sets:
README.md). Two steps:

    python probe_check.py archives DIR [--sets kl]
                                                # the ten sets' sessions (or those of --sets), without
                                                # their probes, as DIR/archive_a.json ..: all a writer reads
    python probe_check.py check PROBES.json [--archives DIR | --sets kl]
                                                # the brief checked (DIR: those copies; default the
                                                # ten sets a .. j)

The check: each probe is ``{"set", "text", "kind", "session", "needles"}``; per archive 3 ``same``,
3 ``reworded`` (at least 2 sharing no content word with their session, as clio counts a message's
own words: :func:`clio.recall.relevance.own_words`) and 6 ``unrelated`` (no session, no needles);
each ``same`` probe sharing a content word with its session (stop 102: the seventy-eighth's first
probe asked set A's celery question labelled with the staging database's session; of the 2,310
``same`` probes of the sets up to it, that one alone shares none, the next fewest 22% of its words);
every needle verbatim (case aside) in its session, and not all of a probe's needles in any other
session of its archive; no text twice. Prints what fails, or ``OK: N probes``; exits 1 on a failure.
A writer may run it (it reads clio's code; the writer need not).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from clio.recall.relevance import own_words  # noqa: E402

KEYS = {"set", "text", "kind", "session", "needles"}
TEN = "abcdefghij"  # the archives the blind sets up to the fifty-eighth were written over (K and L: stop 97)
WANT = collections.Counter(same=3, reworded=3, unrelated=6)
UNWORDED = 2  # reworded probes an archive needs that share no content word with their session


def sets(letters: str = TEN) -> dict[str, dict[str, Any]]:
    """The sets' archives (by default the ten), their probes left out, by letter."""
    out = {}
    for f in sorted(HERE.glob("set_?.json")):
        if f.stem[-1] not in letters:
            continue
        data = json.loads(f.read_text(encoding="utf-8"))
        data.pop("probes", None)
        out[f.stem[-1]] = data
    return out


def session_text(session: dict[str, Any]) -> str:
    parts = []
    for m in session["messages"]:
        if m.get("content"):
            parts.append(str(m["content"]))
        parts += [json.dumps(c.get("arguments")) for c in m.get("tool_calls") or ()]
    return "\n".join(parts)


def problems(probes: list[dict[str, Any]], archives: dict[str, dict[str, Any]]) -> list[str]:
    bad: list[str] = []
    per: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    unworded: collections.Counter[str] = collections.Counter()
    seen: set[str] = set()
    texts = {k: {s["name"]: session_text(s) for s in a["sessions"]} for k, a in archives.items()}
    for i, p in enumerate(probes):
        if set(p) != KEYS or p["set"] not in archives:
            bad.append(f"{i}: keys must be exactly {sorted(KEYS)}, set one of {sorted(archives)}")
            continue
        if p["text"] in seen:
            bad.append(f"{i}: the same text twice")
        seen.add(p["text"])
        per[p["set"]][p["kind"]] += 1
        if p["kind"] == "unrelated":
            if p["session"] or p["needles"]:
                bad.append(f"{i}: an unrelated probe has session '' and needles []")
            continue
        sessions = texts[p["set"]]
        if p["kind"] not in ("same", "reworded") or p["session"] not in sessions or not p["needles"]:
            bad.append(f"{i}: kind same/reworded/unrelated, a session of archive {p['set']}, needles")
            continue
        text = sessions[p["session"]].lower()
        bad += [f"{i}: {n!r} is not in session {p['session']!r}" for n in p["needles"] if n.lower() not in text]
        if any(all(n.lower() in t.lower() for n in p["needles"]) for s, t in sessions.items() if s != p["session"]):
            bad.append(f"{i}: all its needles are in another session of archive {p['set']} too")
        shared = set(own_words(p["text"])) & set(own_words(sessions[p["session"]]))
        if p["kind"] == "reworded" and not shared:
            unworded[p["set"]] += 1
        if p["kind"] == "same" and not shared:
            bad.append(f"{i}: a same-words probe shares no content word with its session {p['session']!r} (labelled with another's?)")
    for k in sorted(archives):
        if per[k] != WANT:
            bad.append(f"archive {k}: {dict(per[k])}, want {dict(WANT)}")
        if unworded[k] < UNWORDED:
            bad.append(f"archive {k}: {unworded[k]} reworded probes share no content word with their session, want {UNWORDED}")
    return bad


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("archives", "check"))
    ap.add_argument("path", type=Path)
    ap.add_argument("--archives", type=Path, help="check: the archive_?.json copies (default: the sets)")
    ap.add_argument("--sets", default=TEN, help=f"the sets' letters (default {TEN}: the ten)")
    args = ap.parse_args()
    if args.step == "archives":
        args.path.mkdir(parents=True, exist_ok=True)
        for k, data in sets(args.sets).items():
            (args.path / f"archive_{k}.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
        return
    archives = (
        {f.stem[-1]: json.loads(f.read_text(encoding="utf-8")) for f in sorted(args.archives.glob("archive_?.json"))}
        if args.archives
        else sets(args.sets)
    )
    probes = json.loads(args.path.read_text(encoding="utf-8"))
    bad = problems(probes, archives)
    print("\n".join(bad) if bad else f"OK: {len(probes)} probes")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
