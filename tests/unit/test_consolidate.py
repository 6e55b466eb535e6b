"""Consolidation (issue 14, part 5): the pure reading of a session and of the model's reply
(clio.memory.consolidate), and the Consolidator that stores it (clio.app.consolidate) with a
real on-disk session store and LTM store. The model is a plain function here: what it is asked
is checked, and its reply is the text a model would give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clio.app.consolidate import Consolidator
from clio.memory import consolidate as cons
from clio.memory.ltm_store import LtmStore
from clio.memory.provenance import Provenance
from clio.messages import make
from clio.prompts import load_prompt
from clio.safety.redact import Redactor
from clio.store.sessions import Session, SessionStore

TEMPLATE = load_prompt("consolidate.md")


def tool_call(name: str, cid: str, **args: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def exchange(question: str, answer: str) -> list[dict[str, Any]]:
    return [make("user", question), make("assistant", answer)]


def worked(n_calls: int, tool: str = "file_operations", op: str = "read_file") -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [make("user", "fix the failing parser test")]
    for i in range(n_calls):
        msgs.append({"role": "assistant", "content": "", "tool_calls": [tool_call(tool, f"c{i}", operation=op, path=f"src/p{i}.py")]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"contents {i}"})
    msgs.append(make("assistant", "Fixed: the tokenizer now skips BOMs."))
    return msgs


# ---------------------------------------------------------------- the gate


def test_a_lone_question_and_its_answer_is_not_worth_a_request() -> None:
    assert not cons.worth_it(exchange("what does main.py do?", "It starts the server."))


def test_no_answer_means_nothing_to_consolidate() -> None:
    assert not cons.worth_it([make("user", "we decided to use PostgreSQL for billing")])


def test_a_stated_decision_a_conversation_or_real_work_is_worth_it() -> None:
    assert cons.worth_it(exchange("we decided to use PostgreSQL for billing, note it", "Noted."))
    assert cons.worth_it(exchange("what is x?", "x is 1") + exchange("and y?", "y is 2"))
    assert cons.worth_it(worked(cons.MIN_TOOL_CALLS))
    assert not cons.worth_it(worked(cons.MIN_TOOL_CALLS - 1))


def test_new_part_starts_after_the_marker() -> None:
    msgs = exchange("a", "b") + exchange("c", "d")
    assert cons.new_part(msgs, 2) == msgs[2:]
    assert cons.new_part(msgs, 0) == msgs
    assert cons.new_part(msgs, 9) == []


# ---------------------------------------------------------------- the prompt


def test_transcript_names_tool_calls_and_failed_results_not_file_contents() -> None:
    msgs = worked(1)
    msgs.insert(3, {"role": "assistant", "content": "", "tool_calls": [tool_call("terminal_operations", "t1", command="pytest -q")]})
    msgs.insert(4, {"role": "tool", "tool_call_id": "t1", "content": "Error: exit code 1\nFAILED test_parse"})
    text = cons.transcript(msgs, 10_000)
    assert "[user] fix the failing parser test" in text
    assert "[tool call] file_operations read_file src/p0.py" in text
    assert "[tool call] terminal_operations pytest -q" in text
    assert "[tool error] Error: exit code 1" in text
    assert "contents 0" not in text  # a successful result's content is not sent again
    assert text.endswith("[assistant] Fixed: the tokenizer now skips BOMs.")


def test_transcript_keeps_the_newest_lines_within_its_budget() -> None:
    msgs: list[dict[str, Any]] = []
    for i in range(60):
        msgs += exchange(f"question number {i} " + "x" * 80, f"answer number {i}")
    text = cons.transcript(msgs, 2_000)
    assert len(text) <= 2_000
    assert text.startswith("[earlier messages left out]")
    assert "answer number 59" in text and "question number 0 " not in text


def test_prompt_carries_summary_pairs_types_and_stays_in_budget() -> None:
    store = LtmStore(None)
    a = store.add("discovery", fact="the api service listens on port 8080")[0]
    b = store.add("discovery", fact="the api service listens on port 8080 in dev")[0]
    msgs = exchange("we decided to deploy with podman", "Noted.") * 40
    prompt = cons.build_prompt(TEMPLATE, msgs, "<thread_summary>earlier: set up CI</thread_summary>", [(a, b, 0.7)], 6_000)
    assert "earlier: set up CI" in prompt
    assert f'"{a.id}"' in prompt and f'"{b.id}"' in prompt
    assert "- discovery: fact" in prompt and "- solution: error, solution, examples" in prompt
    assert len(prompt) <= 6_000 + 200
    assert "we decided to deploy with podman" in prompt


# ---------------------------------------------------------------- the reply


def test_parse_reply_keeps_valid_entries_and_drops_the_rest() -> None:
    reply = json.dumps(
        {
            "entries": [
                {"type": "discovery", "fact": "billing uses PostgreSQL 16", "confidence": 0.9},
                {"type": "rule", "rule": "never edit generated/ by hand"},
                {"type": "solution", "error": "BOM breaks the tokenizer"},  # no solution field
                {"type": "gossip", "fact": "x"},
                {"type": "discovery", "fact": "y", "confidence": "high"},
                "not an object",
            ],
            "pairs": [{"a": "d-1", "b": "d-2", "decision": "merge"}, {"a": "d-9", "b": "d-8", "decision": "merge"}],
        }
    )
    store = LtmStore(None)
    a = store.add("discovery", fact="one")[0]
    b = store.add("discovery", fact="two")[0]
    pairs = [(a, b, 0.6)]
    learned = cons.parse_reply("Here you go:\n" + reply.replace("d-1", a.id).replace("d-2", b.id), pairs)
    assert [(t, f) for t, f, _ in learned.entries] == [
        ("discovery", {"fact": "billing uses PostgreSQL 16"}),
        ("rule", {"rule": "never edit generated/ by hand"}),
        ("discovery", {"fact": "y"}),
    ]
    assert learned.entries[0][2] == 0.9
    assert learned.rejected == 3
    assert learned.decisions == [(a.id, b.id, "merge")]  # the pair nobody asked about is ignored


def test_parse_reply_of_prose_learns_nothing() -> None:
    learned = cons.parse_reply("Nothing durable happened in this session.", [])
    assert learned.entries == [] and learned.decisions == []


def test_at_most_max_entries_are_kept() -> None:
    items = [{"type": "discovery", "fact": f"fact number {i}"} for i in range(20)]
    assert len(cons.parse_reply(json.dumps({"entries": items}), []).entries) == cons.MAX_ENTRIES


# ---------------------------------------------------------------- the Consolidator, on disk


class Model:
    """A model as a function: records each prompt, answers with the next reply."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def __call__(self, prompt: str, max_tokens: int) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0) if self.replies else ""


@pytest.fixture
def stores(tmp_path: Path) -> tuple[LtmStore, SessionStore]:
    return LtmStore(tmp_path / "ltm.json"), SessionStore(tmp_path / "sessions")


GITHUB_KEY = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a secret the redactor knows by its shape


def started(sessions: SessionStore, messages: list[dict[str, Any]]) -> Session:
    """A new session holding ``messages``, as a finished run leaves it (still open)."""
    s = sessions.create("m")
    for m in messages:
        s.append(m)
    return s


def consolidator(stores: tuple[LtmStore, SessionStore], redaction: str = "standard") -> Consolidator:
    return Consolidator(stores[0], stores[1], Redactor(redaction), max_chars=lambda: 8_000, clock=lambda: 1000.0)


def test_run_stores_entries_with_provenance_and_moves_the_marker(stores: tuple[LtmStore, SessionStore]) -> None:
    ltm_store, sessions = stores
    s = started(sessions, exchange("we decided to keep invoices in S3 bucket acme-invoices", "Noted."))
    model = Model(json.dumps({"entries": [{"type": "rule", "rule": "invoices live in S3 bucket acme-invoices"}]}))
    out = consolidator(stores).run(s, model)
    assert out.skipped == "" and len(out.stored) == 2 and all(created for _, created in out.stored)
    said, learned = (e for e, _ in out.stored)
    assert said.fields["rule"] == "we decided to keep invoices in S3 bucket acme-invoices"  # the user's words
    assert learned.fields["rule"] == "invoices live in S3 bucket acme-invoices"  # the model's
    for entry in (said, learned):
        assert entry.provenance == Provenance(s.id, 1000.0, False, (), by="consolidation")
    assert "- we decided to keep invoices in S3 bucket acme-invoices" in model.prompts[0]  # not to repeat
    assert s.info.consolidated == 2
    assert sessions.info(s.id).consolidated == 2  # on disk
    again = consolidator(stores).run(s, model)
    assert again.skipped and len(model.prompts) == 1  # nothing new: no second request
    s.close()


def test_a_session_that_read_files_yields_tainted_entries(stores: tuple[LtmStore, SessionStore]) -> None:
    ltm_store, sessions = stores
    s = started(sessions, worked(3))
    model = Model(json.dumps({"entries": [{"type": "solution", "error": "BOM in input", "solution": "skip it"}]}))
    consolidator(stores).run(s, model)
    p = ltm_store.all()[0].provenance
    assert p is not None and p.tainted and p.by == "consolidation"
    assert "file_operations.read_file" in p.sources
    s.close()


def test_what_the_user_stated_is_stored_untainted_even_after_reading_files(
    stores: tuple[LtmStore, SessionStore],
) -> None:
    ltm_store, sessions = stores
    s = started(sessions, worked(3) + exchange("From now on we format Python with ruff format instead of black.", "Noted."))
    consolidator(stores).run(s, Model("{}"))  # the model learns nothing: the user's rule is kept
    (entry,) = ltm_store.all()
    assert entry.fields["rule"] == "From now on we format Python with ruff format instead of black."
    assert entry.provenance is not None and not entry.provenance.tainted
    s.close()


def test_established_reads_statements_agreements_and_replacements() -> None:
    part = (
        exchange("We'll use requests for the HTTP client.", "Noted.")
        + exchange("what does main.py do?", "It starts the server. I suggest we add a --port flag.")
        + exchange("yes, sounds good", "Done.")
        + exchange("Actually, we'll use httpx for the HTTP client.", "Switching.")
        + exchange("Should we use Redis?", "Maybe.")
    )
    statements = [item[2] for item in cons.established(part)]
    assert statements == ["agreed: add a --port flag", "Actually, we'll use httpx for the HTTP client."]


def test_secrets_in_the_reply_are_redacted_before_storing(stores: tuple[LtmStore, SessionStore]) -> None:
    ltm_store, sessions = stores
    s = started(sessions, exchange("we decided to deploy from the ci runner", "Noted.") + exchange("ok", "ok"))
    key = GITHUB_KEY
    model = Model(json.dumps({"entries": [{"type": "discovery", "fact": f"the deploy token is {key}"}]}))
    consolidator(stores).run(s, model)
    stored = json.dumps([e.fields for e in ltm_store.all()])
    assert key not in stored and "the deploy token is" in stored
    s.close()


def test_no_reply_leaves_the_marker_so_it_is_tried_again(stores: tuple[LtmStore, SessionStore]) -> None:
    _, sessions = stores
    s = started(sessions, exchange("we decided to use ruff", "Noted."))
    out = consolidator(stores).run(s, Model())
    assert "no answer" in out.skipped and s.info.consolidated == 0
    s.close()


def test_pair_decisions_are_applied(stores: tuple[LtmStore, SessionStore]) -> None:
    ltm_store, sessions = stores
    a = ltm_store.add("discovery", fact="the worker polls the queue every 5 seconds by default")[0]
    b = ltm_store.add("discovery", fact="the worker polls the queue every 5 seconds by default in production")[0]
    pairs = ltm_store.ambiguous_pairs()
    assert [(x.id, y.id) for x, y, _ in pairs] == [(a.id, b.id)]
    s = started(sessions, exchange("we decided to poll every 5 seconds", "Noted."))
    model = Model(json.dumps({"entries": [], "pairs": [{"a": a.id, "b": b.id, "decision": "keep_both"}]}))
    out = consolidator(stores).run(s, model)
    assert out.decided == 1
    assert ltm_store.ambiguous_pairs() == []  # decided: not queued again
    s.close()


def test_previous_consolidates_the_last_unconsolidated_session_once(stores: tuple[LtmStore, SessionStore]) -> None:
    ltm_store, sessions = stores
    old = sessions.create("m")
    for m in exchange("we decided to name branches feature/<ticket>", "Noted."):
        old.append(m)
    old.close()
    current = sessions.create("m")
    current.append(make("user", "next task"))
    model = Model(json.dumps({"entries": [{"type": "rule", "rule": "branches are named feature/<ticket>"}]}))
    c = consolidator(stores)
    out = c.previous(current.id, model)
    assert out is not None and out.session_id == old.id and len(out.stored) == 2
    assert sessions.info(old.id).consolidated == 2
    assert c.previous(current.id, model) is None and len(model.prompts) == 1
    current.close()


def test_a_lone_question_is_noted_checked_and_read_whole_once_more_comes(stores: tuple[LtmStore, SessionStore]) -> None:
    """Not worth a request: ``checked`` moves, ``consolidated`` does not, so a later question in
    the same session makes a conversation of both, read back together."""
    _, sessions = stores
    s = started(sessions, exchange("which port does the staging database listen on again?", "5433."))
    model = Model("{}")
    c = consolidator(stores)
    out = c.run(s, model)
    assert out.skipped and model.prompts == []
    assert (sessions.info(s.id).consolidated, sessions.info(s.id).checked) == (0, 2)
    assert not sessions.info(s.id).unread()
    current = sessions.create("m")
    current.append(make("user", "next task"))
    assert c.previous(current.id, model) is None  # judged: not opened again
    for m in exchange("and the production one?", "5432."):
        s.append(m)
    assert sessions.info(s.id).unread()
    assert not c.run(s, model).skipped
    assert "staging database" in model.prompts[0] and "production one" in model.prompts[0]
    assert s.info.consolidated == 4
    s.close()
    current.close()


def test_previous_skips_a_session_open_in_another_process(stores: tuple[LtmStore, SessionStore]) -> None:
    _, sessions = stores
    busy = sessions.create("m")
    for m in exchange("we decided to use tabs", "Noted."):
        busy.append(m)  # still open: its lock is held
    current = sessions.create("m")
    current.append(make("user", "x"))
    model = Model("{}")
    assert consolidator(stores).previous(current.id, model) is None
    assert model.prompts == []
    busy.close()
    current.close()


# -- entries that stand alone (issue 33 item 2) -------------------------------------------------


def _said(text: str) -> list[str]:
    return [s for _k, _key, s in cons.established([{"role": "user", "content": text}, {"role": "assistant", "content": "OK."}])]


def test_a_rule_that_points_outside_itself_keeps_the_sentence_it_points_to() -> None:
    said = _said(
        "Note for later: the payments test flakes because the Redis TTL is set to 37 seconds in "
        "tests/conftest.py; we decided to raise it to 120."
    )
    assert said == [
        "the payments test flakes because the Redis TTL is set to 37 seconds in tests/conftest.py; "
        "we decided to raise it to 120."
    ]


def test_a_rule_with_nothing_to_point_to_is_not_stored() -> None:
    assert _said("We will use it.") == []
    assert _said("No, use httpx instead.") == []
    assert _said("Should we cache the tokens? We decided to keep them in Redis.") == []  # a question is no referent


def test_a_rule_that_names_its_subject_is_stored_as_said() -> None:
    assert _said("We will use pgbouncer in transaction mode for the billing database.") == [
        "We will use pgbouncer in transaction mode for the billing database."
    ]
    assert _said("It is important that we use UTC everywhere. We decided not to use Celery.") == [
        "We decided not to use Celery."
    ]
    assert not cons.points_outside("We decided that we use UTC.")  # "that" as a conjunction
    assert cons.points_outside("We will stick with that.")


def test_the_standalone_corpus_figures_hold() -> None:
    from benches.bench_standalone import CORPUS, score, user_words, whole

    cases = json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]
    r = score(cases, user_words)
    assert r["precision"] >= 0.9 and r["recall"] >= 0.55, r  # docs/memory.md: 92% and 57% (54% and 33% before)
    r = score(cases, whole)  # with a fake model that copies the user's sentences
    assert r["precision"] >= 0.7 and r["recall"] >= 0.95, r  # docs/memory.md: 73% and 100% (33% and 57% before)


TTL_NOTE = (
    "Note for later: the payments test flakes because the Redis TTL is set to 37 seconds in "
    "tests/conftest.py; we decided to raise it to 120."
)


def test_a_model_entry_copied_from_the_user_that_points_outside_itself_keeps_its_referent_or_is_dropped(
    stores: tuple[LtmStore, SessionStore],
) -> None:
    """The model's rules are held to what the user's words are: "we decided to raise it to 120."
    copied from the session is never stored alone; one the user never wrote that points outside
    itself is dropped; a self-contained one is kept as the model wrote it."""
    ltm_store, sessions = stores
    s = started(sessions, exchange(TTL_NOTE, "Noted."))
    reply = {"entries": [
        {"type": "rule", "rule": "We decided to raise it to 120."},
        {"type": "discovery", "fact": "It flakes because of that."},
        {"type": "rule", "rule": "The payments test Redis TTL in tests/conftest.py is 120 seconds"},
    ]}  # fmt: skip
    out = consolidator(stores).run(s, Model(json.dumps(reply)))
    texts = [e.fields.get("rule") or e.fields.get("fact") for e in ltm_store.all()]
    assert "we decided to raise it to 120." not in [t.lower() for t in texts]
    assert not any(t.lower().startswith(("we decided to raise it", "it flakes")) for t in texts), texts
    assert all("37 seconds" in t for t in texts if "raise it to 120" in t)
    assert "The payments test Redis TTL in tests/conftest.py is 120 seconds" in texts
    assert out.stored and s.info.consolidated == 2
    s.close()


def test_anchored_leaves_other_types_and_self_contained_entries_alone() -> None:
    part = exchange(TTL_NOTE, "Noted.")
    learned = cons.Learned(entries=[
        ("rule", {"rule": "Use ruff for linting"}, 0.8),
        ("workflow", {"name": "release", "steps": ["tag it", "push it"]}, 0.7),
    ])  # fmt: skip
    assert cons.anchored(learned, part).entries == [
        ("rule", {"rule": "Use ruff for linting"}, 0.8),
        ("workflow", {"name": "release", "steps": ["tag it", "push it"]}, 0.7),
    ]


DIGEST = "Invoices live in S3 bucket acme-invoices. Symptoms / other words: where the PDFs are stored."
WORKED = "The failing parser test: the tokenizer now skips BOMs (src/p0.py). Symptoms / other words: files that start with a byte order mark."


def test_the_digest_is_kept_redacted_with_the_marker(stores: tuple[LtmStore, SessionStore]) -> None:
    _, sessions = stores
    s = started(sessions, exchange("we decided to keep invoices in S3 bucket acme-invoices", "Noted.") + exchange("ok", "ok"))
    key = GITHUB_KEY
    model = Model(json.dumps({"entries": [], "digest": f"{DIGEST}\n  Uploaded with token {key}."}))
    out = consolidator(stores).run(s, model)
    assert '"digest"' in model.prompts[0]  # asked for
    assert out.digest and "wrote its digest" in out.describe()
    (d,) = sessions.info(s.id).digests  # on disk, with the marker
    assert d.through == 4 and d.at == 1000.0 and sessions.info(s.id).consolidated == 4
    assert d.text.startswith(DIGEST + " Uploaded with token") and key not in d.text  # one line, redacted
    assert not d.tainted  # the session read nothing from outside
    s.close()


def test_a_digest_of_a_session_that_read_files_is_kept_marked_tainted(stores: tuple[LtmStore, SessionStore]) -> None:
    """Kept where tainted entries are (the REPL, a trusted project), and marked as they are: recall
    quotes it as drawn from file content, and a new process reads the mark back."""
    ltm_store, sessions = stores
    s = started(sessions, worked(3))
    reply = json.dumps({"entries": [{"type": "discovery", "fact": "the BOM is skipped"}], "digest": WORKED})
    out = consolidator(stores).run(s, Model(reply))
    assert out.digest and not out.withheld
    (d,) = sessions.info(s.id).digests
    assert d.tainted and d.text == WORKED
    (entry,) = ltm_store.all()
    assert entry.provenance is not None and entry.provenance.tainted  # the same verdict as its entries
    s.close()


def test_no_digest_when_the_model_gives_none_or_says_nothing_settled(stores: tuple[LtmStore, SessionStore]) -> None:
    _, sessions = stores
    for reply in ({"entries": []}, {"digest": "Nothing settled."}, {"digest": ""}, {"digest": ["a", "list"]}):
        s = started(sessions, exchange("we decided to use ruff", "Noted.") + exchange("ok", "ok"))
        out = consolidator(stores).run(s, Model(json.dumps(reply)))
        assert not out.digest and sessions.info(s.id).digests == [], reply
        s.close()


def test_a_digest_drawn_from_outside_content_is_withheld_with_the_entries(stores: tuple[LtmStore, SessionStore]) -> None:
    """One-shot in an untrusted project (keep_tainted False): nobody to confirm what the model
    drew from files it read, so its digest is not kept either."""
    ltm_store, sessions = stores
    s = started(sessions, worked(3))
    reply = json.dumps({"entries": [{"type": "discovery", "fact": "the BOM is skipped"}], "digest": WORKED})
    out = Consolidator(ltm_store, sessions, Redactor("standard"), max_chars=lambda: 8_000, keep_tainted=lambda: False).run(
        s, Model(reply)
    )
    assert out.withheld == 2 and not out.digest
    assert sessions.info(s.id).digests == [] and ltm_store.all() == []
    s.close()


def test_digest_text_is_one_line_within_its_size() -> None:
    assert cons.digest_text("  port 6432\n through pgbouncer  ") == "port 6432 through pgbouncer"
    assert cons.digest_text(None) == "" and cons.digest_text("n/a") == "" and cons.digest_text("short") == ""
    long = cons.digest_text("word " * 400)
    assert long.endswith("…") and len(long) <= cons.DIGEST_CHARS + 1 and "  " not in long
