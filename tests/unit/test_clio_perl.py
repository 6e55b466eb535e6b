"""CLIO's ``.clio/ltm.json`` read as clio's entries (clio.memory.clio_perl) and kept by the store
(clio.memory.ltm_file, clio.memory.ltm_store): every list and the context rules mapped, marked as
imported (a note to verify, never the user's words), never moved aside, the original kept once
before clio writes its own shape, adopted by the user in one call."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from clio.memory import clio_perl, ltm
from clio.memory.ltm_store import LtmStore
from clio.memory.provenance import BY_CLIO_PERL, BY_USER
from clio.store.signing import Signer

FIXTURE = Path(__file__).parents[1] / "fixtures" / "clio-perl" / "ltm.json"
NOW = 1_800_000_000.0

FULL: dict[str, Any] = {
    "metadata": {"created": 1_700_000_000, "last_updated": 1_700_000_500, "version": "1.0"},
    "patterns": {
        "discoveries": [
            {"fact": "Config lives in CLIO::Core::Config", "confidence": 1.0, "verified": 1, "timestamp": 1_700_000_001},
            {"fact": "   ", "confidence": 0.9},  # no text: skipped
            "not an item",
        ],
        "problem_solutions": [
            {"error": "syntax error near }", "solution": "Check for a missing semicolon", "solved_count": 5,
             "examples": ["lib/CLIO/Module.pm:45", 7], "timestamp": 1_700_000_002, "updated": 1_700_000_900},
            {"error": "no solution given"},  # a solution needs both: skipped
        ],
        "code_patterns": [{"pattern": "Use error_result() not die", "confidence": 0.9, "timestamp": 9_999_999_999}],
        "workflows": [
            {"sequence": ["read", "analyze", "fix", "test"], "count": 10, "success_rate": 0.95, "timestamp": 1_700_000_003},
            {"name": "Release", "steps": ["bump the version", "tag"], "owner": "unknown field"},
        ],
        "failures": [
            {"what": "Changed an API without updating callers", "impact": "Runtime errors",
             "prevention": "grep for callers first", "occurrences": 2, "timestamp": 1_700_000_004},
            {"what": "Pushed on a Friday", "why": "nobody was there", "lesson": "push on Mondays"},
        ],
        "context_rules": {"lib/CLIO/Core/": ["use strict/warnings", "POD required"], "global": "Run perlcritic"},
    },
}  # fmt: skip


def by_type(entries: list[ltm.Entry]) -> dict[str, list[ltm.Entry]]:
    out: dict[str, list[ltm.Entry]] = {}
    for e in entries:
        out.setdefault(e.type, []).append(e)
    return out


def test_the_file_clio_wrote_becomes_three_entries_marked_as_imported() -> None:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert clio_perl.is_clio_perl(data)
    got = by_type(clio_perl.entries(data, NOW))
    assert {t: len(v) for t, v in got.items()} == {"discovery": 1, "solution": 1, "pattern": 1}
    (fact,), (sol,), (pat,) = got["discovery"], got["solution"], got["pattern"]
    assert fact.fields == {"fact": "The API server reads its port from APP_PORT and defaults to 8080"}
    assert fact.confidence == 0.85 and fact.first_seen == 1795475303
    assert sol.fields["error"] == "ImportError: libpq.so.5 not found" and sol.fields["applied"] == 1
    assert sol.fields["examples"] == ["tests/integration/test_db.py"]
    assert pat.fields["examples"] == ["api/handlers/orders.py"] and pat.confidence == 0.8
    for e in (fact, sol, pat):
        assert e.provenance is not None and e.provenance.by == BY_CLIO_PERL and e.provenance.tainted
        assert ltm.render_entry(e).endswith(ltm.IMPORTED_MARK)


def test_every_list_and_the_context_rules_map_to_clios_types() -> None:
    got = by_type(clio_perl.entries(FULL, NOW))
    assert [e.fields["fact"] for e in got["discovery"]] == ["Config lives in CLIO::Core::Config"]
    (sol,) = got["solution"]
    assert sol.fields["applied"] == 5 and sol.fields["examples"] == ["lib/CLIO/Module.pm:45", "7"]
    assert sol.last_confirmed == 1_700_000_900  # CLIO's "updated"
    (pat,) = got["pattern"]
    assert pat.first_seen == NOW  # a time ahead of this clock is not in the future here
    seq, release = got["workflow"]
    assert seq.fields == {"name": "a sequence CLIO recorded (10 runs, 95% successful)", "steps": ["read", "analyze", "fix", "test"]}
    assert release.fields == {"name": "Release", "steps": ["bump the version", "tag"]}  # unknown fields left out
    api, friday = got["failure"]
    assert api.fields == {"what": "Changed an API without updating callers", "impact": "Runtime errors", "prevention": "grep for callers first"}
    assert friday.fields == {"what": "Pushed on a Friday", "impact": "nobody was there", "prevention": "push on Mondays"}
    assert sorted(e.fields["rule"] for e in got["rule"]) == [
        "In lib/CLIO/Core/: POD required", "In lib/CLIO/Core/: use strict/warnings", "Run perlcritic",
    ]  # fmt: skip
    for e in got["rule"]:  # a rule CLIO kept is no rule the user stated: a note to verify
        assert e.provenance is not None and e.provenance.by == BY_CLIO_PERL and e.tainted
        assert "imported from CLIO" in e.provenance.describe()
    assert sum(map(len, got.values())) == 10
    assert not clio_perl.is_clio_perl({"version": 1, "entries": []}) and clio_perl.entries({"x": 1}, NOW) == []


def clio_file(tmp_path: Path, data: Any = None) -> tuple[LtmStore, Path]:
    path = tmp_path / ".clio" / "ltm.json"
    path.parent.mkdir(parents=True)
    if data is None:
        shutil.copy(FIXTURE, path)
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return LtmStore(path, signer=Signer.open(tmp_path / "home"), clock=lambda: NOW), path


def test_the_store_reads_it_in_place_and_keeps_the_original_before_writing(tmp_path: Path) -> None:
    store, path = clio_file(tmp_path)
    original = path.read_bytes()
    entries = store.all()
    assert len(entries) == 3 and all(e.foreign for e in entries)  # not written by clio here
    assert sorted(p.name for p in path.parent.iterdir()) == ["ltm.json"]  # read, nothing moved or written
    assert store.adopt(legacy_only=True) == []  # a clio's from before signing? no: CLIO's, left as they are
    assert path.read_bytes() == original

    store.reinforce([entries[0].id])  # the first write
    assert (path.parent / "ltm.clio-perl.json").read_bytes() == original
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 1 and "patterns" not in data and data["imported_from"]["copy"] == "ltm.clio-perl.json"
    after = store.all()
    assert [e.id for e in after] == [e.id for e in entries] and after[0].uses == 1
    assert all(e.foreign and e.provenance is not None and e.provenance.by == BY_CLIO_PERL for e in after)

    store.add("discovery", fact="clio's own finding")
    assert sorted(p.name for p in path.parent.glob("ltm.clio-perl*")) == ["ltm.clio-perl.json"]  # once


def test_adopting_makes_them_the_users_own_and_signed(tmp_path: Path) -> None:
    store, path = clio_file(tmp_path, FULL)
    adopted = store.adopt_imported("session-1")
    assert len(adopted) == 10
    again = LtmStore(path, signer=Signer.open(tmp_path / "home"), clock=lambda: NOW).all()
    for e in again:
        assert not e.foreign and not e.tainted  # signed by this machine's clio, no longer to verify
        assert e.provenance is not None and e.provenance.by == BY_USER
        assert e.provenance.describe() == "adopted by you from CLIO · session session-1"
        assert not ltm.render_entry(e).endswith("]")
    assert store.adopt_imported() == []
    assert json.loads((path.parent / "ltm.clio-perl.json").read_text(encoding="utf-8")) == FULL


def test_clearing_keeps_the_original_too(tmp_path: Path) -> None:
    store, path = clio_file(tmp_path)
    original = path.read_bytes()
    assert store.clear() == 3
    assert store.all() == [] and (path.parent / "ltm.clio-perl.json").read_bytes() == original
