"""End to end, issue 14: long-term memory loses no fact that differs in one identifier.

The installed ``clio`` runs one-shot sessions against the fake server; in each, the scripted
"model" stores templated facts with ``memory_operations`` ``add_discovery``. Facts that differ
in one name, port, path or version (the old rule merged "the granite service ..." into "the
cobalt service ...") must all be in ``.clio/ltm.json`` afterwards, some runs at the same time;
a true duplicate (a reworded repeat) must update its entry, newer wording first, older kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testkit.clio_run import run_clio, run_parallel, without_context
from testkit.fakeserver import FakeServer, Reply

SERVICE = "the {0} service stores its {0} sessions under /var/lib/{0} on every host of the fleet"
PORT = "The billing API server listens on port {} inside the staging cluster behind the nginx proxy"
FACTS = [SERVICE.format(n) for n in ("granite", "cobalt", "basalt", "quartz")]
FACTS += [PORT.format(p) for p in ("8080", "8081", "9090", "7001")]
REWORDED = "Under /var/lib/granite the granite service stores its granite sessions on every host of the fleet"


def latest_user(body: dict[str, Any]) -> tuple[str, int]:
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
    return without_context(str(msgs[last].get("content"))), sum(
        1 for m in msgs[last + 1 :] if m.get("role") == "assistant"
    )


def model(body: dict[str, Any]) -> Reply:
    """'remember N' stores FACTS[N] (or the rewording for 'remember again'), then says 'Noted.'."""
    text, rounds = latest_user(body)
    if rounds:
        return Reply(text="Noted.")
    if text.startswith("remember again"):
        fact = REWORDED
    elif text.startswith("remember "):
        fact = FACTS[int(text.split()[1])]
    else:
        return Reply(text="ok")
    args = {"operation": "add_discovery", "fact": fact, "confidence": 0.8}
    return Reply(tool_calls=[{"name": "memory_operations", "arguments": args}])


def stored(project: Path) -> list[dict[str, Any]]:
    data = json.loads((project / ".clio" / "ltm.json").read_text(encoding="utf-8"))
    entries: list[dict[str, Any]] = data["entries"]
    return entries


def test_facts_differing_in_one_identifier_all_survive_one_shot_runs(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    with FakeServer(model) as server:
        for i in range(4):  # one after the other
            r = run_clio(["--yes", "-p", f"remember {i}"], server=server, project=project, home=home)
            assert r.returncode == 0 and r.stdout == "Noted.\n", r.stderr
        runs = run_parallel(  # and four at the same time
            *(
                {"args": ["--yes", "-p", f"remember {i}"], "server": server, "project": project, "home": home}
                for i in range(4, 8)
            )
        )
        assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
        texts = [e["fact"] for e in stored(project)]
        assert sorted(texts) == sorted(FACTS)  # every fact, each once
        r = run_clio(["--yes", "-p", "remember again"], server=server, project=project, home=home)
        assert r.returncode == 0, r.stderr
    entries = stored(project)
    assert len(entries) == len(FACTS)
    granite = [e for e in entries if "granite" in e["fact"]]
    assert len(granite) == 1 and granite[0]["fact"] == REWORDED
    assert [h["fact"] for h in granite[0]["history"]] == [FACTS[0]]
    assert {e["fact"] for e in entries} == {REWORDED, *FACTS[1:]}
