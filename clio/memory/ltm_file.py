"""The shape of ``.clio/ltm.json``: ``{"version": 1, "entries": [...]}`` (plus any keys clio does
not know, kept), read into entries and written back signed (:mod:`clio.memory.ltm_store` does the
reading and writing under the lock).

A file in the shape CLIO (the Perl agent clio grew from) writes is read, never moved aside: its
items become clio's entries marked as imported (:mod:`clio.memory.clio_perl`), foreign (unsigned)
until the user adopts them. Before clio first writes the file in its own shape, the original is
copied to ``ltm.clio-perl.json`` beside it (:func:`keep_clio_perl`), and the new file says where it
came from (``imported_from``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from clio.memory import clio_perl, ltm
from clio.memory.ltm import Entry
from clio.memory.provenance import BY_CLIO_PERL
from clio.store.atomic import atomic_write_bytes
from clio.store.signing import Signer

VERSION = 1
CLIO_PERL_COPY = "ltm.clio-perl.json"  # CLIO's own file, kept as it was before clio first wrote

Raw = dict[str, Any]


def empty() -> Raw:
    return {"version": VERSION, "entries": []}


def valid(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("entries"), list) or clio_perl.is_clio_perl(data)


def imported(e: Entry) -> bool:
    """``e`` was read from CLIO's memory and not yet adopted by the user."""
    return e.provenance is not None and e.provenance.by == BY_CLIO_PERL


def split(data: Raw, signer: Signer | None = None, now: float | None = None) -> tuple[list[Entry], list[Any]]:
    """(parsed entries, raw items that are not valid entries -- kept as they are).

    With a ``signer``, an entry not signed by this machine's clio is ``foreign``: marked in the
    prompt and ``/memory list``, and a pin it claims is not honoured (it can be pruned). CLIO's
    memory (:mod:`clio.memory.clio_perl`) is read as imported entries, foreign until adopted."""
    if clio_perl.is_clio_perl(data):
        converted = clio_perl.entries(data, time.time() if now is None else now)
        for e in converted:
            e.foreign = signer is not None
        return converted, []
    good: list[Entry] = []
    bad: list[Any] = []
    for item in data.get("entries", []):
        try:
            e = Entry.from_dict(item)
        except ltm.LtmError:
            bad.append(item)
            continue
        if signer is not None and not signer.valid(item):
            e.foreign = True
        good.append(e)
    return good, bad


def join(data: Raw, entries: list[Entry], bad: list[Any], signer: Signer | None = None) -> Raw:
    if clio_perl.is_clio_perl(data):  # CLIO's file, now in clio's shape: where it came from is kept
        meta = data.get("metadata")
        out: Raw = {"imported_from": {"agent": "CLIO", "copy": CLIO_PERL_COPY, "metadata": meta}}
    else:
        out = {k: v for k, v in data.items() if k not in ("version", "entries")}
    items = []
    for e in entries:
        item = e.to_dict()
        if signer is not None and not e.foreign:
            item["sig"] = signer.sign(item)
        items.append(item)
    return {"version": VERSION, **out, "entries": items + bad}


def keep_clio_perl(path: Path) -> None:
    """CLIO's ``ltm.json`` as it is now, copied to ``ltm.clio-perl.json`` (a later one, written
    by CLIO again since, gets the time in its name); the lock on ``path`` is held."""
    raw = path.read_bytes()
    copy = path.with_name(CLIO_PERL_COPY)
    if copy.exists():
        if copy.read_bytes() == raw:
            return
        copy = path.with_name(f"ltm.clio-perl-{time.strftime('%Y%m%d-%H%M%S')}.json")
    atomic_write_bytes(copy, raw)
