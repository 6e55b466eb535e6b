"""Memory upkeep through the installed clio and the fake server (issue 14, part 4 wiring):

- an injected entry that the turn then uses is reinforced (its decay restarts); one it does not
  use is left alone;
- ``/memory compact`` sends each group of faded entries on one topic to the model in one bounded
  request and replaces the group with the model's summary, the old wordings kept in its history.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from clio.memory.ltm_store import LtmStore
from testkit.clio_run import run_clio, system_text
from testkit.fakeserver import FakeServer, Reply

DAY = 86400.0


def entries(project: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((project / ".clio" / "ltm.json").read_text(encoding="utf-8"))
    items = data["entries"] if isinstance(data, dict) else data
    return {e["id"]: e for e in items}


def test_an_injected_entry_the_turn_uses_is_reinforced(fake_server: FakeServer, project: Path, home: Path) -> None:
    store = LtmStore(project / ".clio" / "ltm.json", clock=lambda: time.time() - 40 * DAY)
    used, _ = store.add("discovery", fact="the payments worker reads its queue name from PAYMENTS_QUEUE_URL")
    unused, _ = store.add("discovery", fact="the docs site is built with mkdocs-material from docs/")
    fake_server.responder = lambda body: Reply(
        text="Set PAYMENTS_QUEUE_URL before starting the payments worker."
    )
    result = run_clio(
        ["-p", "how does the payments worker find its queue? also, how are the docs built?"],
        server=fake_server, project=project, home=home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "PAYMENTS_QUEUE_URL" in system_text(fake_server.chat_requests[0])  # it was injected
    after = entries(project)
    assert after[used.id]["uses"] == 1 and after[used.id]["last_used"] > time.time() - 60
    assert after[unused.id].get("uses", 0) == 0 and after[unused.id].get("last_used") is None


def test_memory_compact_replaces_a_faded_topic_with_the_models_summary(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    old = LtmStore(project / ".clio" / "ltm.json", clock=lambda: time.time() - 150 * DAY)
    facts = [
        "redis runs on port 6380 in the dev compose file",
        "redis needs REDIS_PASSWORD_FILE mounted in the dev compose file",
        "redis data lives in the redis-data volume of the dev compose file",
    ]
    ids = [old.add("discovery", fact=f)[0].id for f in facts]
    summary = "redis (dev compose): port 6380, REDIS_PASSWORD_FILE mounted, data in the redis-data volume"

    def respond(body: dict[str, Any]) -> Reply:
        last = str(body["messages"][-1]["content"])
        if "Merge them into ONE note" in last:
            assert not body.get("tools")  # a bounded upkeep request offers no tools
            return Reply(text=f"Here it is:\n```json\n{json.dumps({'fact': summary})}\n```")
        return Reply(text="ok")

    fake_server.responder = respond
    result = run_clio(["-p", "/memory compact"], server=fake_server, project=project, home=home)
    assert result.returncode == 0, result.stderr
    asks = [b for b in fake_server.chat_requests if "Merge them into ONE note" in str(b["messages"][-1]["content"])]
    assert len(asks) == 1 and all(f in str(asks[0]["messages"][-1]["content"]) for f in facts)
    after = entries(project)
    assert not set(ids) & set(after), "the group was replaced"
    (merged,) = [e for e in after.values() if e.get("fact") == summary]
    history = json.dumps(merged["history"])
    assert len(merged["history"]) >= 3 and all(f in history for f in facts)  # nothing dropped silently


def test_memory_compact_keeps_the_group_when_the_model_gives_nothing_usable(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    old = LtmStore(project / ".clio" / "ltm.json", clock=lambda: time.time() - 150 * DAY)
    ids = [
        old.add("discovery", fact=f"the kafka topic orders-v{n} keeps messages for {n} days")[0].id
        for n in (2, 3, 4)
    ]
    fake_server.responder = lambda body: Reply(text="I cannot summarise these.")
    result = run_clio(["-p", "/memory compact"], server=fake_server, project=project, home=home)
    assert result.returncode == 0, result.stderr
    assert set(ids) <= set(entries(project)) and "left as it is" in result.stdout
