"""End to end, issue 32: a model of the user's endpoint as the automatic recall's judge
(``recall_judge_model``; clio.recall.model_judge, clio.app.model_judge), through the installed
clio and the fake server, which answers the judge's requests as the test scripts them.

A project with history (one session settled why logins drop, three of other work); the questions
are asked in one-shot runs, words only (the helper off), so the packaged decision quotes the
settled answer for the same words. With the judge model named: its request comes before the
turn's, on the user's endpoint with the named model, the instructions and the units lettered; the
block quotes exactly what it names, nothing for "QUOTE: none"; a reply that is no QUOTE line, or
a failed request, leaves the packaged decision (and a model the endpoint does not have is told
once); a secret typed in the message never reaches it; a message that is not searched asks it
nothing; and a project's config cannot name one. With the user's encoder helper up, the helper
searches the judge model's units ahead with the message's own, and the run asks it over them; and
the REPL, through a real pseudo-terminal, asks it and /context tells what it answered. Its requests
are priced at its own price (the usage line, --output json, /cost), kept apart in the session.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clio.recall import model_judge, model_order
from clio.recall.encoder_client import EncoderClient
from clio.recall.encoder_readiness import installed
from clio.recall.query import content_words
from testkit.clio_run import run_clio, session_dirs
from testkit.encoder_helper import wait_for_judge
from testkit.fakeserver import Fail, FakeServer, Reply
from testkit.scripted import latest_user
from tests.e2e.test_recall_encoder import history, one_shot, sent
from tests.e2e.test_repl_pty import Spawn, project, spawn  # noqa: F401  (fixtures)

ASKED = "session logins get dropped randomly in production"
FACT = (
    "The production Redis evicts with allkeys-lru, and sessions share that instance with the cache, so under "
    "memory pressure Django sessions get evicted. Move sessions to the database backend."
)
OTHER = [
    "Tidy the navbar css: flex layout and a 4px gap between the links",
    "add a CSV export to the invoices page",
    "rename the customers app to accounts everywhere",
]
QUESTION = "why did session logins get dropped randomly in production, what did we find?"
JUDGE = "judge-model"
TOOL_QUERY = "session logins dropped randomly in production navbar invoices"  # the fact's words, and two other sessions'
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


class Server:
    """The fake endpoint: the turn's model answers as a session would; the judge model as
    ``judge_reply`` says (a reply text or a :class:`Fail`)."""

    def __init__(self) -> None:
        # the judge model's reply to the automatic recall's request (or a function of the request)
        self.judge_reply: Reply | Fail | Callable[[dict[str, Any]], Reply | Fail] = Reply(text="QUOTE: none")
        # the judge model asked to order the memory tool's results: the reply for that request
        self.order_reply: Callable[[dict[str, Any]], Reply | Fail] = lambda body: Reply(text="ORDER: none")
        self.tool_query = TOOL_QUERY  # what the turn's model searches with the memory tool
        self.server = FakeServer(self.respond).start()

    def respond(self, body: dict[str, Any]) -> Reply | Fail:
        if body.get("model") == JUDGE:
            if body["messages"][0]["content"] == model_order.ORDER_INSTRUCTIONS:
                return self.order_reply(body)
            reply = self.judge_reply
            return reply(body) if callable(reply) else reply
        text, rounds = latest_user(body)
        if text.startswith("[tool]") and rounds == 0:  # the turn's model calls the memory tool
            args = {"operation": "recall_sessions", "query": self.tool_query, "max_results": 3}
            return Reply(tool_calls=[{"name": "memory_operations", "arguments": args}])
        return Reply(text=FACT if text.startswith(ASKED) else "Done.")

    def judge_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.server.chat_requests if b.get("model") == JUDGE]

    def turn_request(self, start: str) -> str:
        """The user message of the latest turn request for ``start``, block and all."""
        for body in reversed(self.server.chat_requests):
            text, rounds = latest_user(body)
            if body.get("model") != JUDGE and text.startswith(start) and rounds == 0:
                return str([m for m in body["messages"] if m.get("role") == "user"][-1]["content"])
        raise AssertionError(f"no request for {start!r}")


@pytest.fixture
def server() -> Iterator[Server]:
    """The fake endpoint for one test, stopped after it."""
    endpoint = Server()
    yield endpoint
    endpoint.server.stop()


def project_with_history(tmp_path: Path, server: Server) -> Callable[..., Any]:
    proj, home = tmp_path / "proj", tmp_path / "home"
    proj.mkdir()
    home.mkdir()

    def clio(text: str, judge: str | None = JUDGE) -> Any:
        env = {"CLIO_RECALL_ENCODER": "0", "CLIO_RECALL_JUDGE_MODEL": judge}
        r = run_clio(["--model", "fake-model", "-p", text], server=server.server, project=proj, home=home, env_extra=env)
        assert r.returncode == 0, r.stderr
        return r

    for text in (ASKED, *OTHER):
        clio(text, None)
    return clio


def test_the_judge_model_decides_what_the_block_quotes(tmp_path: Path, server: Server) -> None:
    clio = project_with_history(tmp_path, server)
    assert not server.judge_requests()  # not named: never asked

    clio(QUESTION, None)  # the packaged decision quotes the settled answer for the same words
    assert "allkeys-lru" in server.turn_request(QUESTION)

    server.judge_reply = Reply(text="QUOTE: none")
    clio(QUESTION)
    (asked,) = server.judge_requests()
    assert "<recalled_context>" not in server.turn_request(QUESTION)  # it named none: no block
    # the judge's request: the named model, the instructions, the message, the units lettered
    assert asked["messages"][0] == {"role": "system", "content": model_judge.INSTRUCTIONS}
    body = asked["messages"][1]["content"]
    assert body.startswith(f"<message>\n{QUESTION}\n</message>")
    assert '<passage id="A">' in body and "allkeys-lru" in body
    # asked before the turn's own request
    models = [b.get("model") for b in server.server.chat_requests]
    assert models[-2:] == [JUDGE, "fake-model"], models

    # it names the passage that settled it: the block quotes that unit
    letter = next(model_judge.LETTERS[i] for i, p in enumerate(body.split("<passage ")[1:]) if "allkeys-lru" in p)
    server.judge_reply = Reply(text=f"The passage gives the cause.\nQUOTE: {letter}")
    r = clio(QUESTION)
    quoted = server.turn_request(QUESTION)
    assert "<recalled_context>" in quoted and "allkeys-lru" in quoted, quoted
    assert ", 2 requests" in r.stderr, r.stderr  # the run's usage line counts its request

    # its request counts in the session's usage, beside the turn's
    newest = max(session_dirs(tmp_path / "proj"), key=lambda d: d.stat().st_mtime)
    usage = json.loads((newest / "session.json").read_text())["usage"]
    assert usage["requests"] == 2, usage


def test_no_answer_to_go_by_leaves_the_packaged_decision(tmp_path: Path, server: Server) -> None:
    clio = project_with_history(tmp_path, server)
    server.judge_reply = Reply(text="Sure! Passage A looks relevant to me.")  # no QUOTE line
    clio(QUESTION)
    assert "allkeys-lru" in server.turn_request(QUESTION)
    server.judge_reply = Reply(text="QUOTE: F")  # a letter it was not sent
    clio(QUESTION)
    assert "allkeys-lru" in server.turn_request(QUESTION)

    # the endpoint does not have the model: told once, the run goes on with the packaged decision
    server.judge_reply = Fail(404, {"error": {"message": f"The model `{JUDGE}` does not exist", "type": "invalid_request_error", "code": "model_not_found"}})
    r = clio(QUESTION)
    assert "allkeys-lru" in server.turn_request(QUESTION)
    assert f"recall_judge_model {JUDGE}:" in r.stderr, r.stderr
    assert f"has no model '{JUDGE}': name one it serves in recall_judge_model" in r.stderr, r.stderr
    assert "the automatic recall and the memory tool go without it for the rest of this run" in r.stderr

    # a server error: this message goes without it, nothing told beyond /context
    server.judge_reply = Fail(500, {"error": {"message": "upstream overloaded"}})
    r = clio(QUESTION)
    assert "allkeys-lru" in server.turn_request(QUESTION)
    assert "recall_judge_model" not in r.stderr + r.stdout


def test_the_judge_model_sees_no_secret_and_no_unsearched_message(tmp_path: Path, server: Server) -> None:
    clio = project_with_history(tmp_path, server)
    server.judge_reply = Reply(text="QUOTE: A")
    clio(f"why did session logins get dropped randomly in production with token {SECRET}?")
    (asked,) = server.judge_requests()
    assert SECRET not in json.dumps(asked)
    assert SECRET not in json.dumps(server.server.chat_requests)
    clio("thanks, that looks good")  # asks nothing: not searched, the judge not asked
    clio("ok, continue")
    assert len(server.judge_requests()) == 1


def test_a_project_cannot_name_the_judge_model(tmp_path: Path, server: Server) -> None:
    clio = project_with_history(tmp_path, server)
    (tmp_path / "proj" / ".clio" / "config.yaml").write_text(f"recall_judge_model: {JUDGE}\n")
    r = clio(QUESTION, None)
    assert not server.judge_requests()
    assert "allkeys-lru" in server.turn_request(QUESTION)
    assert "recall_judge_model" in r.stderr and "yours to say" in r.stderr, r.stderr


@pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")
def test_with_the_helper_the_judge_models_units_are_searched_ahead(tmp_path: Path) -> None:
    """With the user's encoder helper up, a one-shot run's recall is the helper's, done ahead; with
    a judge model named, the helper searches that model's units there too (the memory tool's
    first, as the run would), and the run asks the model over them and decides: a reworded
    question gets the fact it names, "QUOTE: none" leaves the helper's block out, and the run
    imports no index and not even sqlite3 for it."""
    asked: list[dict[str, Any]] = []
    reply = ["QUOTE: none"]

    def respond(body: dict[str, Any]) -> Reply:
        if body.get("model") == JUDGE:
            asked.append(body)
            passages = body["messages"][1]["content"].split("<passage ")[1:]
            letters = [model_judge.LETTERS[i] for i, p in enumerate(passages) if "allkeys-lru" in p]
            return Reply(text=reply[0].format(fact=letters[0] if letters else "none"))
        text, _ = latest_user(body)
        return Reply(text=FACT if text.startswith(ASKED) else "Done.")

    with history(tmp_path, respond, (ASKED, *OTHER)) as (server, proj, home):
        clio = one_shot(server, proj, home)
        helper = EncoderClient(home, proj / ".clio")
        wait_for_judge(helper)
        assert "allkeys-lru" in clio(QUESTION)  # the helper's recall ahead quotes it
        assert not asked
        (home / "config.yaml").write_text(f"recall_judge_model: {JUDGE}\n")  # the user's
        served = helper.status()["recalls_ahead"]
        assert "<recalled_context>" not in clio(QUESTION)  # the judge model named none
        assert len(asked) == 1 and "allkeys-lru" in asked[0]["messages"][1]["content"]
        assert helper.status()["recalls_ahead"] == served + 1  # searched by the helper ahead

        reworded = "users keep getting signed out of the live site, any idea why?"
        reply[0] = "QUOTE: {fact}"
        r = run_clio(["--model", "fake-model", "-p", reworded], server=server, project=proj, home=home,
                     env_extra={"CLIO_RECALL_ENCODER": None, "PYTHONPROFILEIMPORTTIME": "1"})  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert len(asked) == 2 and helper.status()["recalls_ahead"] == served + 2
        message = sent(server, reworded)
        assert "<recalled_context>" in message and "allkeys-lru" in message, message
        imported = {ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")}
        assert "clio.recall.model_judge" in imported  # the decision is the run's (its units' features), the search is not
        assert sorted(m for m in imported if m in ("sqlite3", "clio.recall.index")) == []


def test_the_repl_asks_the_judge_model_and_context_tells_its_answer(fake_server: FakeServer, project: Path, spawn: Spawn) -> None:  # noqa: F811
    """Through a real pseudo-terminal: the REPL's message asks the judge model, the block quotes
    the unit it named, and /context says what it answered."""
    home = project.parent / "home"
    judged: list[dict[str, Any]] = []

    def respond(body: dict[str, Any]) -> Reply:
        if body.get("model") == JUDGE:
            judged.append(body)
            letters = [model_judge.LETTERS[i] for i, p in enumerate(body["messages"][1]["content"].split("<passage ")[1:]) if "allkeys-lru" in p]
            return Reply(text=f"QUOTE: {letters[0]}" if letters else "QUOTE: none")
        text, _ = latest_user(body)
        return Reply(text=FACT if text.startswith(ASKED) else "Done.")

    fake_server.responder = respond
    for text in (ASKED, *OTHER):
        r = run_clio(["--model", "fake-model", "-p", text], server=fake_server, project=project, home=home)
        assert r.returncode == 0, r.stderr
    term = spawn(env={"CLIO_RECALL_JUDGE_MODEL": JUDGE})
    term.prompt()
    term.type(QUESTION)
    term.expect("Done.")
    term.prompt()
    assert len(judged) == 1
    turn = [b for b in fake_server.chat_requests if b.get("model") != JUDGE][-1]
    assert "allkeys-lru" in str(turn["messages"][-1]["content"])
    term.type("/context")
    term.expect("named by the judge model")  # the quoted unit
    term.expect(r"judge model \(recall_judge_model\): judge-model named [A-H] of A[B-H]* \(\d+ ms\)")
    term.prompt()


def test_the_judge_models_requests_are_priced_at_its_own_price(tmp_path: Path, server: Server) -> None:
    """/cost, the usage line and --output json price the judge model's requests at its price, kept
    apart in the session, not at the turn model's; and /cost does not call them "outside turns"."""
    project_with_history(tmp_path, server)
    prices = {"fake-model": {"input": 10.0, "output": 30.0}, JUDGE: {"input": 1.0, "output": 2.0}}
    (tmp_path / "home" / "config.yaml").write_text(json.dumps({"prices": prices}))  # the user's own config
    server.judge_reply = Reply(text="QUOTE: none")
    proj = tmp_path / "proj"

    def run(*args: str) -> Any:
        env = {"CLIO_RECALL_ENCODER": "0", "CLIO_RECALL_JUDGE_MODEL": JUDGE}
        r = run_clio(["--model", "fake-model", *args], server=server.server, project=proj, home=tmp_path / "home", env_extra=env)
        assert r.returncode == 0, r.stderr
        return r

    r = run("--output", "json", "-p", QUESTION)
    out = json.loads(r.stdout)
    judge_body = server.judge_requests()[-1]
    turn_body = server.server.chat_requests[-1]
    assert turn_body.get("model") == "fake-model" and out["usage"]["requests"] == 2

    newest = max(session_dirs(proj), key=lambda d: d.stat().st_mtime)
    meta = json.loads((newest / "session.json").read_text())
    judged = meta["judged"][JUDGE]
    assert judged["requests"] == 1 and meta["usage"]["requests"] == 2, meta
    assert judge_body["messages"][1]["content"].startswith("<message>")

    def dollars(u: dict[str, int], p: dict[str, float]) -> float:
        return (u["prompt_tokens"] * p["input"] + u["completion_tokens"] * p["output"]) / 1e6

    own = {k: meta["usage"][k] - judged[k] for k in ("prompt_tokens", "completion_tokens")}
    expected = dollars(own, prices["fake-model"]) + dollars(judged, prices[JUDGE])
    at_turn_price = dollars(meta["usage"], prices["fake-model"])
    assert out["usage"]["cost_usd"] == pytest.approx(expected, abs=2e-6), (out["usage"], expected)
    assert abs(expected - at_turn_price) > 1e-4  # the test tells the two apart
    assert "the judge model judge-model at its own" in r.stderr, r.stderr

    # /cost, in the same session: a line for the judge model, its requests not "outside turns"
    r = run("--continue", "-p", "/cost")
    (line,) = [x for x in r.stdout.splitlines() if x.startswith(f"  the judge model {JUDGE} (recall_judge_model): ")]
    assert line.endswith(", 1 req  " + f"${dollars(judged, prices[JUDGE]):.4f}"), line
    assert "outside turns" not in r.stdout, r.stdout
    figures = json.loads(run("--continue", "-p", "/cost --json").stdout)
    assert figures["judge_model"][JUDGE]["requests"] == 1
    assert figures["judge_model"][JUDGE]["cost_usd"] == pytest.approx(dollars(judged, prices[JUDGE]), abs=2e-6)
    assert figures["session"]["cost_usd"] == pytest.approx(expected, abs=2e-6)


def test_the_judge_model_orders_the_memory_tools_results(tmp_path: Path, server: Server) -> None:
    """recall_sessions: its first units go to the judge model, lettered with their dates and
    messages; the units it names come first in the result, then the rest in the search's order. A
    reply that is no ORDER line leaves the search's order; without the judge model, none is asked."""
    clio = project_with_history(tmp_path, server)

    def tool_result() -> str:
        found = [str(m.get("content")) for m in server.server.turn_requests[-1]["messages"] if m.get("role") == "tool"]
        assert found, "the tool was not called"
        return found[-1]

    def first_excerpt(result: str) -> str:
        lines = result.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("1. "))
        return "\n".join(lines[start + 1 : next((i for i, line in enumerate(lines) if line.startswith("2. ")), len(lines))])

    clio("[tool] look it up", None)
    searched = tool_result()
    assert not server.judge_requests()  # not named: never asked
    assert "allkeys-lru" in first_excerpt(searched), searched  # the search puts the fact first

    asked: list[dict[str, Any]] = []

    def name_the_navbar(body: dict[str, Any]) -> Reply:
        asked.append(body)
        passages = body["messages"][1]["content"].split("<passage ")[1:]
        label = next(model_order.ORDER_LABELS[i] for i, p in enumerate(passages) if "navbar" in p)
        return Reply(text=f"Thinking it over.\nORDER: {label}")

    server.order_reply = name_the_navbar
    r = clio("[tool] look it up")
    (order,) = asked
    body = order["messages"][1]["content"]
    assert body.startswith(f"<query>\n{TOOL_QUERY}\n</query>") and '<passage id="2">' in body and "date: " in body
    assert "allkeys-lru" in body  # the fact's unit was read, and not named
    ordered = tool_result()
    assert "navbar" in first_excerpt(ordered) and "allkeys-lru" not in first_excerpt(ordered), ordered
    assert "allkeys-lru" in ordered  # the rest follow in the search's order
    newest = max(session_dirs(tmp_path / "proj"), key=lambda d: d.stat().st_mtime)
    assert json.loads((newest / "session.json").read_text())["judged"][JUDGE]["requests"] >= 1
    assert "requests" in r.stderr

    server.order_reply = lambda body: Reply(text="Passage 3 seems best.")  # no ORDER line
    clio("[tool] look it up")
    assert tool_result() == searched  # the search's order stood

    # a secret in the model's query never reaches the judge model (the tool's arguments are redacted,
    # and the request passes the redaction net again)
    server.tool_query = f"{TOOL_QUERY} {SECRET}"
    asked.clear()
    server.order_reply = name_the_navbar
    clio("[tool] look it up")
    assert asked and SECRET not in json.dumps(asked[-1]) and TOOL_QUERY in json.dumps(asked[-1])


def test_the_judge_model_reads_the_memory_tools_first_units(tmp_path: Path, server: Server) -> None:
    """The judge model is shown the memory tool's first units (its search by words and meaning),
    not only those the packaged decision admits: a question that shares no word with the session
    that settled it gets that answer, among the others, and the block quotes what it names.
    Without the judge model nothing is quoted for it."""
    clio = project_with_history(tmp_path, server)
    reworded = "users keep getting signed out of the live site, any idea why?"
    assert not set(content_words(reworded)) & set(content_words(ASKED + " " + FACT))

    clio(reworded, None)
    assert "allkeys-lru" not in server.turn_request(reworded)  # the packaged decision quotes nothing

    judged: list[dict[str, Any]] = []

    def name_the_fact(body: dict[str, Any]) -> Reply:
        judged.append(body)
        passages = body["messages"][1]["content"].split("<passage ")[1:]
        letters = [model_judge.LETTERS[i] for i, p in enumerate(passages) if "allkeys-lru" in p]
        return Reply(text=f"QUOTE: {letters[0]}" if letters else "QUOTE: none")

    server.judge_reply = name_the_fact
    clio(reworded)
    (body,) = [b["messages"][1]["content"] for b in judged]
    # the tool's units: the fact's, and the other sessions' that the packaged decision would not admit
    assert "allkeys-lru" in body and "navbar" in body and "invoices" in body, body
    quoted = server.turn_request(reworded)
    assert "<recalled_context>" in quoted and "allkeys-lru" in quoted and "navbar" not in quoted, quoted
