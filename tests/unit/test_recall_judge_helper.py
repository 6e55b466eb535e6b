"""The judge on the helper's side (issue 32; clio.recall.judge, clio.recall.encoder_service,
clio.recall.encoder_pending): the packaged model reads an answer above a near miss; the real
helper loads it as it starts, says so, and after a score's cosines waits on the same connection
for the units to judge, or for the connection to close; a client takes a helper without a judge,
or one that answers nothing, as the decision without it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from clio.recall.encoder_client import ENV_SWITCH, EncoderClient
from clio.recall.encoder_readiness import installed, socket_path
from testkit.encoder_helper import stop_helper, wait_for_judge
from testkit.helper_stand_in import stand_in_helper

needs_model = pytest.mark.skipif(installed() is not None, reason=f"the encoder cannot run here: {installed()}")

QUESTION = "which port does the staging mqtt broker listen on?"
ANSWER = "Staging's mqtt broker listens on port 8884 with TLS; production stays on 8883."
NEAR_MISS = "The staging grafana shows the broker's metrics on port 3000."
UNRELATED = "Tidy the navbar: flex layout with a 4px gap between the links."


@needs_model
def test_the_packaged_judge_reads_the_answer_above_a_near_miss() -> None:
    from clio.recall.judge import Judge

    logits = Judge(threads=1).score(QUESTION, [UNRELATED, NEAR_MISS, ANSWER])
    assert len(logits) == 3 and logits[2] > 0 > logits[0], logits
    assert logits[2] > logits[1] > logits[0], logits
    # the judge the decision's weights were fitted on (clio.recall.encoder_models.Verdict): these
    # logits are those of its export before its NaN guards were stripped (stop 68), to the bit, on
    # every x86 CPU: without VNNI (AVX2 only: AMD Zen 2/3, Intel before Ice Lake) onnxruntime's
    # default int8 products saturate, and this read [-3.8112, 0.5468, 3.8287] (the near miss over 0)
    assert logits == [-3.8271, -0.0404, 4.1232], logits
    # pairs read at once on two threads read as one after the other, in the order given
    assert Judge(threads=2).score(QUESTION, [UNRELATED, NEAR_MISS, ANSWER, NEAR_MISS]) == [*logits, logits[1]]


@needs_model
def test_the_judge_asks_for_exact_int8_products_whatever_the_cpu() -> None:
    # where the CPU has VNNI the products are exact anyway and the logits above cannot tell the
    # option is gone: the session itself is asked
    from clio.recall.judge import PRECISE_INT8, Judge

    options = Judge(threads=1).session.get_session_options()
    assert PRECISE_INT8 == "session.x64quantprecision"  # onnxruntime's kOrtSessionOptionsAvx2PrecisionMode
    assert options.get_session_config_entry(PRECISE_INT8) == "1"


@needs_model
def test_the_judge_reads_short_forms_written_out_on_both_sides() -> None:
    from clio.recall.judge import Judge

    judge = Judge(threads=1)
    unit = "session logins get dropped randomly in production\nThe production Redis evicts with allkeys-lru."
    short = judge.score("users keep getting logged out in prod", [unit, unit.replace("production", "prod")])
    long = judge.score("users keep getting logged out in production", [unit])
    assert short == [long[0], long[0]] and long[0] > 1.0, (short, long)


def test_a_damaged_judge_file_is_refused_by_its_sha256(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    from clio.recall import judge
    from clio.recall.embedder import EmbedderUnavailable

    bad = tmp_path / "judge.onnx.gz"
    bad.write_bytes(gzip.compress(b"not the model"))
    monkeypatch.setattr(judge, "JUDGE_FILE", bad)
    with pytest.raises(EmbedderUnavailable, match="sha256"):
        judge.Judge()


@needs_model
def test_the_helper_judges_the_units_on_the_scores_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    client = EncoderClient(home, clio_dir, timeout_s=30.0)
    try:
        client.start()
        plain = EncoderClient(home, clio_dir, timeout_s=30.0)  # a run without recall_judge
        while True:
            try:
                plain.ping(1.0)
                break
            except (OSError, ValueError):
                time.sleep(0.1)
        quiet_start = plain.begin(QUESTION)
        assert quiet_start is not None and quiet_start.finish(QUESTION, [[ANSWER]]) is not None
        assert not quiet_start.judging and plain.status()["judge"] is False  # not asked: never loaded
        assert plain.status()["judged"] == 0 and plain.status()["judge_ms"] is None  # nothing read yet
        wait_for_judge(client)
        pending = client.begin(QUESTION)
        assert pending is not None
        cos = pending.finish(QUESTION, [[UNRELATED], [ANSWER]])
        assert cos is not None and cos[1] > cos[0] and pending.judging
        logits = pending.judge(QUESTION, [UNRELATED, ANSWER])
        assert logits is not None and logits[1] > 0 > logits[0], logits
        assert pending.judge(QUESTION, [ANSWER]) is None  # once only: the connection is closed
        pending.close()
        # none worth reading (clio.recall.verdict.reachable): the helper has a judge, and reads nothing
        nothing = client.begin(QUESTION)
        assert nothing is not None and nothing.finish(QUESTION, [[ANSWER]]) is not None
        assert nothing.judge(QUESTION, []) == []

        # a score whose client closes without asking the judge: the helper serves the next at once
        quiet = client.begin(QUESTION)
        assert quiet is not None and quiet.finish(QUESTION, [[ANSWER]]) is not None and quiet.judging
        quiet.close()
        assert client.score(QUESTION, [[ANSWER]]) == [cos[1]]
        # a bad list to judge gets an error line, and the decision goes without the judge
        bad = client.begin(QUESTION)
        assert bad is not None and bad.finish(QUESTION, [[ANSWER]]) is not None
        assert bad.judge(QUESTION, [ANSWER] * 9) is None
        assert client.status()["judge"] is True  # the helper serves on
        # what `clio encoder` tells: the reads with units, and their median time (none read nothing)
        got = client.status()
        assert got["judged"] == 1 and isinstance(got["judge_ms"], float) and got["judge_ms"] > 0, got
    finally:
        stop_helper(home)


def test_a_helper_without_a_judge_or_silent_on_it_leaves_the_decision_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_SWITCH, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    seen: list[Any] = []

    def answer(f: Any) -> None:
        req = json.loads(f.readline())  # the query
        units = json.loads(f.readline())["units"]
        judge = req["q"].startswith("judged")
        f.write(json.dumps({"cos": [0.6] * len(units), "ahead": False, **({"judge": True} if judge else {})}).encode() + b"\n")
        f.flush()
        if judge:
            seen.append(f.readline())  # the units to judge, then nothing: a helper gone quiet
            time.sleep(0.5)

    server = stand_in_helper(socket_path(home), answer)
    try:
        client = EncoderClient(home, tmp_path / ".clio", timeout_s=0.2)
        plain = client.begin("plain question")
        assert plain is not None and plain.finish("plain question", [[ANSWER]]) == [0.6]
        assert not plain.judging and plain.judge("plain question", [ANSWER]) is None  # nothing sent
        quiet = client.begin("judged question")
        assert quiet is not None and quiet.finish("judged question", [[ANSWER]]) == [0.6] and quiet.judging
        assert quiet.judge("judged question", [ANSWER]) is None  # no answer within the timeout
        assert client.state == "ready; its judge gave no answer in time (200 ms)"  # as /context says
        assert json.loads(seen[0]) == {"judge": [ANSWER]}
    finally:
        server.close()
