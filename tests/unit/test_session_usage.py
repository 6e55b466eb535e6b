"""A session's usage: every request in ``usage``, and the judge model's requests also kept apart by
model (``judged``), so /cost and the usage line price them at that model's price."""

from __future__ import annotations

import json
from pathlib import Path

from clio.messages import make
from clio.store.sessions import SessionStore


def _request(prompt: int, out: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": out, "cached_tokens": 0}


def test_the_judge_models_requests_count_in_the_total_and_apart(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    s = store.create("big")
    s.append(make("user", "hello"))
    s.add_usage(_request(900, 40))
    s.add_usage(_request(300, 2), judge_model="small")
    s.add_usage(_request(310, 3), judge_model="small")
    s.close()
    saved = json.loads((tmp_path / "sessions" / s.id / "session.json").read_text())
    assert saved["usage"] == {"prompt_tokens": 1510, "completion_tokens": 45, "cached_tokens": 0, "requests": 3}
    assert saved["judged"] == {"small": {"prompt_tokens": 610, "completion_tokens": 5, "cached_tokens": 0, "requests": 2}}
    again = store.open(s.id)
    assert again.info.judged == saved["judged"] and again.info.usage == saved["usage"]
    again.close()


def test_a_session_without_the_judge_model_writes_no_judged_field(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    s = store.create("big")
    s.append(make("user", "hello"))
    s.add_usage(_request(900, 40))
    s.close()
    assert "judged" not in json.loads((tmp_path / "sessions" / s.id / "session.json").read_text())


def test_a_damaged_judged_field_reads_as_what_of_it_is_numbers(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    s = store.create("big")
    s.append(make("user", "hello"))
    s.close()
    path = tmp_path / "sessions" / s.id / "session.json"
    for damaged, read in (
        ("nonsense", {}),
        ({"small": "x", "other": {"requests": 2, "prompt_tokens": "many"}}, {"small": {}, "other": {"requests": 2}}),
    ):
        meta = json.loads(path.read_text())
        meta["judged"] = damaged
        path.write_text(json.dumps(meta))
        assert store.info(s.id).judged == read
