"""The project's long-term memory file, ``.clio/ltm.json``: ``{"version": 1, "entries": [...]}``.

Every change is a read-modify-write under the inter-process lock
(:class:`clio.store.json_doc.JsonDocument`) applied to what is on disk at that moment, so
several agents in one project never lose each other's entries. A file that does not
parse is quarantined by ``read_json`` (and reported); a single stored entry that does
not parse is kept in the file untouched and left out of ``all()``.

The file's shape, and CLIO's read as imported entries (the original kept beside as
``ltm.clio-perl.json`` before clio first writes its own shape), are :mod:`clio.memory.ltm_file`'s.

Lifecycle (:mod:`clio.memory.lifecycle`): ``reinforce`` after a recall or a turn that used
entries, ``pin``/``unpin``, ``prune``, ``compact`` (a group replaced by one summary entry),
``decide`` (the model's decision on an ambiguous pair, :mod:`clio.memory.dedup`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from clio.memory import clio_perl, dedup, lifecycle, ltm, ltm_rank, ltm_stats
from clio.memory.ltm import Entry
from clio.memory.ltm_file import Raw, empty, imported, join, keep_clio_perl, split, valid
from clio.memory.ltm_stats import LtmStats
from clio.memory.provenance import Provenance, adopted_from_clio
from clio.store.json_doc import JsonDocument
from clio.store.signing import Signer


class LtmStore:
    """Long-term memory on disk; ``path=None`` disables it (incognito: no reads, no writes)."""

    def __init__(
        self, path: Path | None, *, clock: Callable[[], float] = time.time, signer: Signer | None = None
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.clock = clock
        self.signer = signer  # None: every entry counts as clio's own (no check)
        self._doc: JsonDocument[Raw] = JsonDocument(self.path, empty, validate=valid)

    @property
    def enabled(self) -> bool:
        return self.path is not None

    def _write(self, apply: Callable[[Raw], Raw]) -> None:
        """Replace the document by ``apply(current)`` under the lock; CLIO's file is copied aside
        first, once (:data:`CLIO_PERL_COPY`), since clio then writes its own shape."""

        def keeping(data: Raw) -> Raw:
            if clio_perl.is_clio_perl(data) and self.path is not None:
                keep_clio_perl(self.path)
            return apply(data)

        self._doc.replace(keeping)

    def _update(self, change: Callable[[list[Entry]], list[Entry]]) -> None:
        """Apply ``change`` to the entries on disk, under the lock."""
        assert self.path is not None

        def apply(data: Raw) -> Raw:
            entries, bad = split(data, self.signer, self.clock())
            return join(data, change(entries), bad, self.signer)

        self._write(apply)

    def all(self) -> list[Entry]:
        if self.path is None:
            return []
        return split(self._doc.read(), self.signer, self.clock())[0]

    def adopt(self, entry_ids: Iterable[str] | None = None, *, legacy_only: bool = False) -> list[str]:
        """Make foreign entries clio's own (signed): those of ``entry_ids``, or all of them
        (``None``); ``legacy_only``: only entries that carry no signature at all (written by a
        clio from before signing). The user's explicit action (``/memory adopt``) or the
        migration (clio/app/memory.py). Returns the ids adopted."""
        if self.path is None or self.signer is None:
            return []
        wanted = None if entry_ids is None else set(entry_ids)

        def chosen(data: Raw) -> tuple[list[Entry], list[Any], set[str]]:
            legacy = {str(i.get("id")) for i in data.get("entries", []) if isinstance(i, dict) and "sig" not in i}
            entries, bad = split(data, self.signer, self.clock())
            ids = {
                e.id
                for e in entries
                if e.foreign and (wanted is None or e.id in wanted)
                # CLIO's entries are never a clio's from before signing: /memory adopt-clio adopts them
                and (not legacy_only or (e.id in legacy and not imported(e)))
            }
            return entries, bad, ids

        if not chosen(self._doc.read())[2]:
            return []  # nothing to adopt: the file is left as it is
        adopted: list[str] = []

        def apply(data: Raw) -> Raw:
            entries, bad, ids = chosen(data)
            for e in entries:
                if e.id in ids:
                    e.foreign = False  # adopted as it was written, pin included
                    adopted.append(e.id)
            return join(data, entries, bad, self.signer)

        self._write(apply)
        return adopted

    def adopt_imported(self, session_id: str | None = None) -> list[Entry]:
        """The entries imported from CLIO's memory made the user's own (``/memory adopt-clio``):
        provenance ``by: user``, adopted from CLIO, no longer tainted, signed. Returns them."""
        if self.path is None:
            return []
        if not any(imported(e) for e in self.all()):
            return []
        now = self.clock()
        done: list[list[Entry]] = []

        def change(entries: list[Entry]) -> list[Entry]:
            out = [
                dataclasses.replace(e, provenance=adopted_from_clio(session_id, now), foreign=False)
                if imported(e)
                else e
                for e in entries
            ]
            done.append([e for e, old in zip(out, entries, strict=True) if imported(old)])
            return out

        self._update(change)
        return done[-1]

    def get(self, entry_id: str) -> Entry | None:
        return next((e for e in self.all() if e.id == entry_id), None)

    def add(
        self,
        type: str,
        *,
        confidence: float = ltm.DEFAULT_CONFIDENCE,
        provenance: Provenance | None = None,
        **fields: Any,
    ) -> tuple[Entry, bool]:
        """Add an entry or confirm its near-duplicate; returns (stored entry, created).

        ``provenance`` says who wrote it (the model's writes always carry one). Raises
        ``ltm.LtmError`` for bad fields. When disabled, validates and returns (entry, False)
        without writing.
        """
        entry = ltm.make_entry(type, fields, confidence=confidence, now=self.clock(), provenance=provenance)
        if self.path is None:
            return entry, False
        result: list[tuple[Entry, bool]] = []

        def change(entries: list[Entry]) -> list[Entry]:
            out, stored, created = dedup.upsert(entries, entry)
            result.append((stored, created))
            return out

        self._update(change)
        return result[-1]

    def delete(self, entry_id: str) -> bool:
        if self.path is None:
            return False
        found: list[bool] = []

        def change(entries: list[Entry]) -> list[Entry]:
            kept = [e for e in entries if e.id != entry_id]
            found.append(len(kept) != len(entries))
            return kept

        self._update(change)
        return found[-1]

    def clear(self) -> int:
        """Remove every entry (including unparsable ones); returns how many were there."""
        if self.path is None:
            return 0
        count: list[int] = []

        def wipe(data: Raw) -> Raw:
            count.append(len(split(data)[0]) if clio_perl.is_clio_perl(data) else len(data.get("entries", [])))
            return empty()

        self._write(wipe)
        return count[-1]

    def prune(
        self,
        max_unused_days: float = lifecycle.PRUNE_UNUSED_DAYS,
        min_score: float = lifecycle.PRUNE_SCORE,
        now: float | None = None,
    ) -> list[Entry]:
        """Remove faded entries (rules in :func:`clio.memory.lifecycle.prune`: effective score
        below ``min_score`` or unused for ``max_unused_days``, pinned ones kept); returns them."""
        if self.path is None:
            return []
        at = self.clock() if now is None else now
        removed: list[list[Entry]] = []

        def change(entries: list[Entry]) -> list[Entry]:
            kept, gone = ltm_stats.prune(entries, at, max_unused_days, min_score)
            removed.append(gone)
            return kept

        self._update(change)
        return removed[-1]

    def reinforce(self, ids: Iterable[str], now: float | None = None) -> list[str]:
        """Mark the entries ``ids`` as used now (recalled, or used in a turn): their decay
        restarts and their use count grows. Returns the ids found (unknown ones are ignored)."""
        wanted = set(ids)
        if self.path is None or not wanted:
            return []
        at = self.clock() if now is None else now
        found: list[list[str]] = []

        def change(entries: list[Entry]) -> list[Entry]:
            out = [lifecycle.reinforce(e, at) if e.id in wanted else e for e in entries]
            found.append([e.id for e in entries if e.id in wanted])
            return out

        self._update(change)
        return found[-1]

    def pin(self, entry_id: str, pinned: bool = True) -> Entry | None:
        """Pin (never pruned or compacted) or unpin an entry; returns it, None when not found."""
        if self.path is None:
            return None
        result: list[Entry | None] = []

        def change(entries: list[Entry]) -> list[Entry]:
            out = [dataclasses.replace(e, pinned=pinned) if e.id == entry_id else e for e in entries]
            result.append(next((e for e in out if e.id == entry_id), None))
            return out

        self._update(change)
        return result[-1]

    def compaction_groups(self, now: float | None = None) -> list[list[Entry]]:
        """The groups :func:`clio.memory.lifecycle.compaction_groups` proposes, as entries."""
        entries = self.all()
        by_id = {e.id: e for e in entries}
        at = self.clock() if now is None else now
        return [[by_id[i] for i in g] for g in lifecycle.compaction_groups(entries, at)]

    def needs_compaction(self) -> bool:
        """More than :data:`clio.memory.lifecycle.AUTO_COMPACT_AT` entries and something to compact."""
        entries = self.all()
        return len(entries) > lifecycle.AUTO_COMPACT_AT and bool(
            lifecycle.compaction_groups(entries, self.clock())
        )

    def compact(
        self,
        ids: Sequence[str],
        fields: Mapping[str, Any],
        *,
        type: str | None = None,
        confidence: float | None = None,
        provenance: Provenance | None = None,
    ) -> Entry | None:
        """Replace the entries ``ids`` by one summary entry made of ``fields`` (of ``type``, by
        default the type of the group's first entry); their wordings stay in its history and
        its provenance is tainted if any of theirs was. ``confidence`` defaults to the
        group's highest. Returns the summary, None when none of ``ids`` is there any more.
        Raises ``ltm.LtmError`` for bad fields (nothing is written then)."""
        if self.path is None:
            return None
        now = self.clock()
        result: list[Entry | None] = []

        def change(entries: list[Entry]) -> list[Entry]:
            group = [e for e in entries if e.id in set(ids)]
            if not group:
                result.append(None)
                return entries
            conf = max(e.confidence for e in group) if confidence is None else confidence
            summary = ltm.make_entry(
                type or group[0].type, dict(fields), confidence=conf, now=now, provenance=provenance
            )
            out, stored = lifecycle.compact(entries, ids, summary)
            result.append(stored)
            return out

        self._update(change)
        return result[-1]

    def ambiguous_pairs(
        self, semantic: Callable[[list[Entry]], Iterable[tuple[str, str, float]]] | None = None
    ) -> list[tuple[Entry, Entry, float]]:
        """Pairs that may be one fact, for the model to decide (:func:`clio.memory.dedup.ambiguous_pairs`);
        ``semantic`` gives the entries' candidate pairs by meaning (``Meaning.dedup_candidates``)."""
        entries = self.all()
        by_id = {e.id: e for e in entries}
        candidates = semantic(entries) if semantic is not None else None
        return [(by_id[a], by_id[b], s) for a, b, s in dedup.ambiguous_pairs(entries, candidates)]

    def decide(self, a_id: str, b_id: str, decision: str) -> None:
        """Apply the model's decision on an ambiguous pair (:func:`clio.memory.dedup.apply_decision`)."""
        if decision not in dedup.DECISIONS:
            raise ltm.LtmError(f"unknown decision {decision!r}; use one of: {', '.join(dedup.DECISIONS)}")
        if self.path is not None:
            self._update(lambda entries: dedup.apply_decision(entries, a_id, b_id, decision))

    def stats(self) -> LtmStats:
        return ltm_stats.stats(self.all())

    def select(
        self,
        task: str,
        files: list[str],
        budget_tokens: int,
        count_tokens: Callable[[str], int],
        semantic: dict[str, float] | None = None,
        similar_to: Callable[[list[Entry], str], dict[str, float] | None] | None = None,
    ) -> list[Entry]:
        """The entries for the system prompt (:func:`clio.memory.ltm_rank.select_for_prompt`); the
        lead keeps their ids to call :meth:`reinforce` with those a turn used
        (:func:`clio.memory.lifecycle.used_in_turn`). ``similar_to(entries, task)`` gives the
        entries' similarity to the task by meaning when ``semantic`` is not given
        (``Meaning.similarities``; None: lexical)."""
        return self._ranked(self.all(), task, files, budget_tokens, count_tokens, semantic, similar_to)

    def _ranked(
        self,
        entries: list[Entry],
        task: str,
        files: list[str],
        budget_tokens: int,
        count_tokens: Callable[[str], int],
        semantic: dict[str, float] | None,
        similar_to: Callable[[list[Entry], str], dict[str, float] | None] | None,
    ) -> list[Entry]:
        """``entries`` ranked for the prompt within ``budget_tokens``, their meaning filled in by
        ``similar_to`` when ``semantic`` is not given (the team store ranks its candidates here too)."""
        if semantic is None and similar_to is not None:
            semantic = similar_to(entries, task)
        return ltm_rank.select_for_prompt(
            entries, task, files, self.clock(), budget_tokens, count_tokens, semantic=semantic
        )

    def prompt_block(
        self,
        task: str,
        files: list[str],
        budget_tokens: int,
        count_tokens: Callable[[str], int],
        semantic: dict[str, float] | None = None,
    ) -> str:
        """The ranked, budgeted markdown block for the system prompt ('' when empty or disabled).

        Framed as notes to verify, never as instructions; tainted entries are marked.
        ``semantic``: entry id -> similarity to the task, only when the caller has it."""
        return self.render_block(self.select(task, files, budget_tokens, count_tokens, semantic))

    def describe_author(self, entry_id: str) -> str:
        """Who wrote an entry, for listings ('' here: a local memory has one author, the user)."""
        return ""

    def writer(self, entry_id: str) -> str | None:
        """The teammate who wrote an entry; None when it is the user's own (always, here: a local
        memory has one author). Listings say 'written by you' only for the user's own."""
        return None

    def render_block(self, entries: list[Entry]) -> str:
        """The prompt block of ``entries`` chosen by :meth:`select` (a shared store, clio.team,
        puts teammates' entries under their own heading)."""
        return ltm.render_ltm(entries)
