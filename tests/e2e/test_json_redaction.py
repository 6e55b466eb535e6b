"""End to end: ``--output json`` and ``stream-json`` redact every string with the archive's redactor.

The scripted model answers with every corpus secret (testkit/secrets_corpus.py) and look-alike,
and passes secrets to a tool as arguments, some of them only recognisable by their key
(``{"password": ...}``). Nothing of a secret clio has a rule for may reach stdout in either
mode; every look-alike comes through unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.clio_run import run_clio
from testkit.fakeserver import FakeServer, Reply
from testkit.secrets_corpus import LOOKALIKES, SECRETS

CAUGHT = [s for s in SECRETS if s.clio]


def _leaks(out: str) -> list[str]:
    """Labels of secrets any 12 consecutive characters of which survive in ``out``."""
    found = []
    for s in CAUGHT:
        pieces = [s.secret[i : i + 12] for i in range(0, max(1, len(s.secret) - 11), 4)]
        if any(p in out for p in pieces):
            found.append(s.label)
    return found


@pytest.mark.parametrize("mode", ["json", "stream-json"])
def test_every_string_of_the_json_output_is_redacted(tmp_path: Path, home: Path, mode: str) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    answer = "Here is what I found:\n" + "\n".join(s.text for s in CAUGHT) + "\n" + "\n".join(lk.text for lk in LOOKALIKES)
    args = [{"operation": "add", "content": s.text} for s in CAUGHT[:12]]
    keyed = {"operation": "add", "content": "db", "password": "Hunter2" + "x9Qz", "api_key": "k3yV4lu3" + "Zq81"}
    server = FakeServer().start()
    server.script(
        Reply(tool_calls=[{"name": "todo_operations", "arguments": a, "id": f"c{i}"} for i, a in enumerate([*args, keyed])]),
        Reply(text=answer, chunk_chars=5),
    )  # fmt: skip
    try:
        r = run_clio(["--yes", "-p", "audit", "--output", mode], server=server, project=proj, home=home)
    finally:
        server.stop()
    assert r.returncode == 0, r.stderr
    assert _leaks(r.stdout) == []
    assert "Hunter2x9Qz" not in r.stdout and "k3yV4lu3Zq81" not in r.stdout
    assert "[REDACTED:" in r.stdout
    for lk in LOOKALIKES:  # every look-alike line comes through (JSON-escaped as the output has it)
        import json

        for line in lk.text.strip().splitlines():
            assert json.dumps(line)[1:-1] in r.stdout, (lk.name, line)
