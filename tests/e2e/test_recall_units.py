"""End to end, issue 32: the automatic recall quotes exchanges, decides on words of the message's
own, and costs a one-shot run no heavy import; through the installed clio and the fake server.

- A reworded question brings back the answer of an earlier session, not only its question.
- "ok, continue" and "thanks, that looks good" get no block, though the archive holds the same
  small talk; nor do "wait" and "same error again", though the archive holds each one's only word
  ("error", "wait") in a message of real work; nor do "run the linter" and "CI is failing", though
  the archive holds a session that did both.
- A question nobody answered ("Done.") is never quoted, however many words it shares; a statement
  of the user's answered the same way is. Nor is a question whose reply was given word for word to
  other questions (a canned reply).
- A tool call is quoted and indexed in words, never its JSON.
- The memory tool shows a matched step's answer with room for its fact (past 160 characters), and
  its best three units whole, the later ones compact.
- An agent that explains what it found, edits, then says "Done." has its explanation quoted.
- The one-shot path of a project with history imports no numpy, tokenizers or onnxruntime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testkit.clio_run import run_clio, tool_results
from testkit.fakeserver import FakeServer, Reply
from testkit.helper_stand_in import stand_in_helper
from testkit.scripted import latest_user

UPLOADS = (
    "CHUNK_BYTES = 8 * 1024 * 1024\n"
    "def upload(file):\n"
    "    if file.size > 100 * 1024 * 1024:\n"
    "        return s3_multipart(file, part_size=CHUNK_BYTES)\n"
    "    return direct_put(file)\n"
)
ANSWER = "Anything over 100 MB goes through S3 multipart in 8 MB parts (api/uploads.py); smaller files are a single PUT."
EXPLANATION = (
    "Yes: the preview profile sets no APP_VARIANT, so app.config.ts falls back to the production API. "
    "Preview builds are meant to use https://api-staging.example.dev; I'll set APP_VARIANT=staging."
)
NIGHTLY = "The nightly upload job retries three times after a timeout, 30 seconds apart; I raised the wait to 60."
HELM = (  # a diagnosis whose fix comes after the 160 characters a unit's other messages get
    "The upgrade renders the ingress from deploy/values.yaml, and since chart 4.x the ingress class is "
    "no longer defaulted: the Ingress object comes out without one, so no controller picks it up and "
    "the health check times out. Set ingress.className: nginx-internal in the staging values."
)
CANNED = "Here is what I found: it depends on how the deployment is configured."  # a harness's one reply to all
HEAVY = ("numpy", "tokenizers", "onnxruntime", "torch", "sentence_transformers")


def responder(body: dict[str, Any]) -> Reply:
    text, rounds = latest_user(body)
    text = text.split("\n\n<recalled_context>")[0]
    if text.startswith("How do we handle file uploads") and rounds == 0:
        return Reply(tool_calls=[read("api/uploads.py")])
    if text.startswith("How do we handle file uploads"):
        return Reply(text=ANSWER)
    if text.startswith("[recall]") and rounds == 0:
        query = text.split("]", 1)[1].strip()
        return Reply(tool_calls=[{"name": "memory_operations", "arguments": {"operation": "recall_sessions", "query": query}}])
    if text.startswith("I installed the preview build"):
        steps = [
            Reply(text="Let me check the config.", tool_calls=[read("app.config.ts")]),
            Reply(text=EXPLANATION, tool_calls=[read("eas.json")]),
            Reply(text="Done."),
        ]
        return steps[min(rounds, 2)]
    if text.startswith("Tidy the navbar") and rounds == 0:
        return Reply(tool_calls=[read("web/navbar.css")])
    if text.startswith("The nightly upload job fails"):
        return Reply(text=NIGHTLY)
    if text.startswith("Why does the staging deploy fail"):
        return Reply(tool_calls=[read("deploy/values.yaml")]) if rounds == 0 else Reply(text=HELM)
    if text.startswith("[canned]"):
        return Reply(text=CANNED)
    return Reply(text="Done.")


def read(path: str) -> dict[str, Any]:
    return {"name": "file_operations", "arguments": {"operation": "read_file", "path": path}}


@pytest.fixture
def env(tmp_path: Path) -> Any:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / "api").mkdir(parents=True)
    (project / "web").mkdir()
    (project / "api" / "uploads.py").write_text(UPLOADS)
    (project / "web" / "navbar.css").write_text(".navbar { display: flex; gap: 4px; }\n")
    (project / "app.config.ts").write_text("const API = { staging: 'https://api-staging.example.dev' };\n")
    (project / "eas.json").write_text('{"build": {"preview": {"distribution": "internal"}}}\n')
    server = FakeServer(responder).start()
    try:
        yield project, home, server
    finally:
        server.stop()


def clio(env: Any, text: str, *args: str, extra: dict[str, str] | None = None) -> Any:
    project, home, server = env
    r = run_clio(
        ["--model", "fake-model", "--yes", *args, "-p", text], server=server, project=project, home=home, env_extra=extra
    )
    assert r.returncode == 0, r.stderr
    return r


def sent(server: FakeServer, start: str) -> str:
    """The user message of the first request of the turn that starts with ``start``."""
    for body in server.chat_requests:
        text, rounds = latest_user(body)
        if text.startswith(start) and rounds == 0:
            return text
    raise AssertionError(f"no request for {start!r}")


def history(env: Any) -> None:
    clio(env, "How do we handle file uploads larger than 100 MB?")
    clio(env, "Tidy the navbar spacing please")
    clio(env, "ok that worked, thanks")
    clio(env, "looks good, commit it")


def test_a_reworded_question_brings_back_the_answer_not_only_the_question(env: Any) -> None:
    project, home, server = env
    history(env)
    clio(env, "how are really big file uploads to S3 handled here?")
    text = sent(server, "how are really big")
    block = text.partition("<recalled_context>")[2]
    assert "8 MB parts" in block, text  # the answer, from the assistant's reply
    assert "How do we handle file uploads larger than 100 MB?" in block  # with what it answered
    assert "the assistant:" in block and "the user:" in block
    assert "{" not in block and '"operation"' not in block and "read_file" not in block


def test_the_explanation_is_quoted_not_the_done_after_the_edits(env: Any) -> None:
    """The question's unit quotes the reply that says the most: here the explanation, between a
    narrated step and the closing "Done.", which the new message shares no word with."""
    project, home, server = env
    history(env)
    clio(env, "I installed the preview build on my phone and it shows my real plants, is it talking to prod?")
    clio(env, "my real plants showed up on the phone again, why?")
    block = sent(server, "my real plants showed up").partition("<recalled_context>")[2]
    assert "I installed the preview build" in block, block
    assert "api-staging.example.dev" in block and "APP_VARIANT" in block, block


@pytest.mark.parametrize("small_talk", ["ok, continue", "thanks, that looks good"])
def test_small_talk_gets_no_block(env: Any, small_talk: str) -> None:
    project, home, server = env
    history(env)
    clio(env, small_talk)
    assert "<recalled_context>" not in sent(server, small_talk)


@pytest.mark.parametrize("talk", ["same error again", "wait"])
def test_one_everyday_word_gets_no_block(env: Any, talk: str) -> None:
    project, home, server = env
    history(env)
    clio(env, "The nightly upload job fails with a timeout error, should it wait longer between retries?")
    clio(env, talk)
    assert "<recalled_context>" not in sent(server, talk)
    clio(env, "does the nightly upload job retry after a timeout?")  # a real question still gets one
    assert "<recalled_context>" in sent(server, "does the nightly upload job")


def test_the_work_at_hand_gets_no_block_a_word_of_the_project_does(env: Any) -> None:
    """"run the linter" and "CI is failing" are about the task in front of the user, though the
    archive holds a session that ran the linter for a failing CI job; naming the project's own
    thing in it still asks."""
    project, home, server = env
    history(env)
    clio(env, "CI is failing on the ruff step for the billing module, run the linter and fix what it finds")
    for talk in ("run the linter", "CI is failing"):
        clio(env, talk)
        assert "<recalled_context>" not in sent(server, talk)
    clio(env, "the ruff step is failing again for billing")  # the project's own words: a block
    assert "<recalled_context>" in sent(server, "the ruff step is failing again")


def test_a_question_nobody_answered_is_not_quoted_a_statement_is(env: Any) -> None:
    """An earlier question whose reply says nothing ("Done.": a one-shot question answered by a
    greeting, a session that ended on it) holds no fact: quoting it would only tell the model that
    it was once asked. The same words said as a statement are the user's fact, and are quoted."""
    project, home, server = env
    history(env)
    clio(env, "which port does the staging database listen on, and is the replica on the same one?")
    clio(env, "staging database port?")
    assert "<recalled_context>" not in sent(server, "staging database port?")
    clio(env, "the staging database listens on port 6543 now, the replica on 6544")
    clio(env, "port of the staging database?")
    block = sent(server, "port of the staging database?").partition("<recalled_context>")[2]
    assert "6543" in block, block
    assert "is the replica on the same one" not in block, block


def test_a_reply_given_word_for_word_to_other_questions_answers_none_of_them(env: Any) -> None:
    """A canned reply (a test harness's, a refusal) has words of its own, but said word for word to
    different questions it answers none of them: once the archive shows that, the question it
    followed is no longer quoted. The same question asked twice and answered alike is not that."""
    project, home, server = env
    history(env)
    asked = "[canned] which keycloak realm does the billing backend use in staging?"
    clio(env, asked)
    clio(env, "keycloak realm of the billing backend?")
    assert "which keycloak realm does the billing backend use" in sent(server, "keycloak realm of the billing")  # its words clear
    clio(env, asked)  # the same question, the same reply: still its own answer
    clio(env, "the billing backend keycloak realm?")
    assert "which keycloak realm does the billing backend use" in sent(server, "the billing backend keycloak")
    clio(env, "[canned] how many workers does the image resizer run?")
    clio(env, "what keycloak realm is the billing backend on?")
    block = sent(server, "what keycloak realm is the billing").partition("<recalled_context>")[2]
    assert "which keycloak realm does the billing backend use" not in block, block


def test_a_tool_call_is_recalled_in_words_never_as_json(env: Any) -> None:
    project, home, server = env
    history(env)
    clio(env, "[recall] read api/uploads.py")
    (out,) = tool_results(server.chat_requests[-1]).values()
    assert "read file api/uploads.py" in out, out
    assert '{"operation"' not in out and '"path"' not in out and "file_operations" not in out


def test_the_memory_tool_shows_the_answer_of_a_matched_step_with_room_for_its_fact(env: Any) -> None:
    """recall_sessions matches a file read (the tool result); its unit quotes the question it
    served and the answer it came to, whose fix sits past the first 160 characters: the model
    reads it in the tool's result."""
    project, home, server = env
    (project / "deploy").mkdir()
    (project / "deploy" / "values.yaml").write_text("replicaCount: 3\ningress:\n  enabled: true\n  hosts: [shop.staging]\n")
    history(env)
    clio(env, "Why does the staging deploy fail after the helm upgrade?")
    clio(env, "[recall] replicaCount ingress hosts")
    (out,) = tool_results(server.chat_requests[-1]).values()
    assert "replicaCount: 3" in out and "Why does the staging deploy fail" in out, out  # the step, with its ask
    assert HELM.index("nginx-internal") > 160 and "ingress.className: nginx-internal" in out, out


def test_the_memory_tool_shows_its_best_three_units_whole_and_the_rest_compact(env: Any) -> None:
    """recall_sessions through the installed clio: the first three units with the reply that
    followed, the later ones as the matched remark alone (its reply, "Done.", says nothing more)."""
    project, home, server = env
    for i in range(5):
        clio(env, f"the nightly export job {i} now writes to bucket exports-{i}")
    clio(env, "[recall] nightly export job bucket")
    (out,) = tool_results(server.chat_requests[-1]).values()
    lines = out.splitlines()[1:]
    heads = [i for i, line in enumerate(lines) if line[:1].isdigit()]
    sizes = [b - a - 1 for a, b in zip(heads, [*heads[1:], len(lines)], strict=True)]
    assert len(heads) == 5 and sizes == [2, 2, 2, 1, 1], out
    assert all("nightly export job" in lines[h + 1] for h in heads[3:]), out  # the match itself


def test_a_one_shot_run_with_history_recalls_without_loading_a_heavy_library(env: Any) -> None:
    project, home, server = env
    history(env)
    r = clio(env, "how do we handle big file uploads over 100 MB?", extra={"PYTHONPROFILEIMPORTTIME": "1"})
    assert "8 MB parts" in sent(server, "how do we handle big file uploads")  # recall did run, and found it
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in r.stderr.splitlines() if ln.startswith("import time:")}
    assert "clio.recall.index" in imported and "clio.recall.relevance" in imported
    assert sorted(m for m in imported if m.split(".")[0] in HEAVY) == []
    # nor the vector side of the index, which a lexical search never uses (~4 ms of imports)
    assert sorted(m for m in imported if m in ("clio.recall.vectors", "clio.recall.vec_table", "clio.recall.ivf")) == []


def stand_in(home: Path, answer: Any) -> Any:
    """The stand-in helper on the user's socket, ``answer(request, file)`` for each connection."""
    import json

    from clio.recall.encoder_readiness import socket_path

    return stand_in_helper(socket_path(home), lambda f: answer(json.loads(f.readline()), f))


def test_a_helper_that_takes_the_message_but_never_answers_leaves_the_recall_to_the_words(env: Any) -> None:
    """A one-shot run hands its message to the encoder helper as it starts, to have the recall done
    there; a helper that takes it and then says nothing (hung, busy) costs the run its timeout, and
    the words still recall (the block as without a helper; the helper is not asked again). A
    stand-in on the helper's socket records what the run sent: the message redacted, its own
    session to leave out, clio's version."""
    import json
    import time

    from clio import __version__

    project, home, server = env
    history(env)
    asked: list[dict[str, Any]] = []

    def answer(req: dict[str, Any], f: Any) -> None:
        asked.append(req)
        if req.get("op") == "recalled":
            time.sleep(1.0)  # holds the run's question without an answer

    listener = stand_in(home, answer)
    token = "ghp_" + "k3Yq9ZtW2xLm8RvB4nPc7sDf1GhJ6aQe0UoI"
    try:
        clio(env, "how do we handle big file uploads over 100 MB?", extra={"CLIO_RECALL_ENCODER": None})
        assert "8 MB parts" in sent(server, "how do we handle big file uploads")  # the words recalled it
        clio(env, f"does the deploy job still push with {token}?", extra={"CLIO_RECALL_ENCODER": None})
    finally:
        listener.close()
    assert [a.get("op") for a in asked] == ["recall", "recalled"] * 2, asked
    recall, recalled = asked[0], asked[1]
    assert recall["q"] == "how do we handle big file uploads over 100 MB?" and recall["task"] == ""
    assert recall["v"] == __version__ and recall["redaction"] == "standard"
    assert recall["index"] == str(project / ".clio" / "recall.sqlite")
    sessions = {p.name for p in (project / ".clio" / "sessions").iterdir()}
    assert recall["current"] in sessions and recalled["id"] == recall["id"] and recalled["budget"] > 0
    assert token not in json.dumps(asked) and "[REDACTED" in asked[2]["q"]  # a secret typed never reaches it


def test_a_helper_that_has_no_recall_for_the_run_still_gives_it_cosines(env: Any) -> None:
    """A helper of another clio version (left running across an upgrade) answers that it knows no
    such recall; the run then recalls in process and asks that helper for its cosines as before."""
    import json

    project, home, server = env
    history(env)
    asked: list[str] = []

    def answer(req: dict[str, Any], f: Any) -> None:
        asked.append(str(req.get("op")))
        if req.get("op") == "recalled":
            f.write(b'{"error": "ValueError: unknown op \'recalled\'"}\n')
        elif req.get("op") == "score":
            if "near" in req:
                f.write(b'{"near": []}\n')
                f.flush()
            units = json.loads(f.readline())["units"]
            f.write(json.dumps({"cos": [0.9] * len(units)}).encode() + b"\n")

    listener = stand_in(home, answer)
    try:
        clio(env, "how do we handle big file uploads over 100 MB?", extra={"CLIO_RECALL_ENCODER": None})
    finally:
        listener.close()
    assert asked[:3] == ["recall", "recalled", "score"], asked
    assert "8 MB parts" in sent(server, "how do we handle big file uploads")
