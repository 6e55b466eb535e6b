"""The judge in the automatic recall's decision (issue 32; clio.recall.verdict, auto.choose,
auto_turn.judged), pure: which units the judge reads, what it reads of them, the probability its
logit and the features make with a model's declared weights, and what a judged message quotes.
The helper's side and the judge itself: tests/unit/test_recall_judge_helper.py; end to end:
tests/e2e/test_recall_judge.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from clio.recall import auto, auto_turn, verdict
from clio.recall.encoder_models import MINILM, MPNET, Verdict, endpoint_model

QUESTION = "which port does the staging mqtt broker listen on?"
ANSWER = "Staging's broker is mqtt-staging.internal on port 8884 with TLS; production uses 8883."
NEAR = "The staging grafana for the broker's metrics listens on port 3000 since the upgrade."
SMALL = "ok that worked, thanks"
UNSAID = 9  # verdict.features: what the message says that the unit lacks (stop 79)


def _result(text: str, seq: int, parts: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"session_id": "s1", "session_name": "ops", "date": "2026-11-01 10:00", "role": "assistant", "seq": seq, "text": text}
    if parts:
        r["parts"] = [{"seq": seq + i, "role": role} for i, (role, _) in enumerate(parts)]
        r["texts"] = [t for _, t in parts]
    return r


def _freqs(words: list[str]) -> tuple[dict[str, int], int]:
    return {w: 3 for w in words}, 1000


def _hits(cosines: list[float | None], texts: list[str] | None = None) -> list[auto.Hit]:
    texts = texts or [ANSWER, NEAR, "The staging redis the broker's bridge writes to listens on port 6380.",
                      "Staging's mqtt broker: port 8884, TLS only, client certs from the vault."][: len(cosines)]
    results = [_result(t, 10 * (i + 1)) for i, t in enumerate(texts)]
    return auto.score_hits(QUESTION, results, None, _freqs, lambda q, units: cosines[: len(units)])


class Scores:
    """The encoder's side of one message as auto_turn sees it, its judge answering with ``logits``
    (None: a helper without a judge, or one that gave no answer in time)."""

    def __init__(self, logits: list[float] | None) -> None:
        self.logits = logits
        self.asked: list[tuple[str, list[str]]] = []

    def near(self) -> list[int]:
        return []

    def finish(self, query: str, units: list[list[str]]) -> list[float | None] | None:
        return None

    def judge(self, query: str, texts: list[str]) -> list[float] | None:
        self.asked.append((query, texts))
        return None if self.logits is None else self.logits[: len(texts)]

    def close(self) -> None:
        pass


def test_the_judge_reads_the_three_admissible_units_with_the_best_cosine() -> None:
    hits = _hits([0.30, 0.62, 0.55, 0.71])
    assert verdict.to_judge(hits) == [3, 1, 2]
    repeat = replace(hits[3], new_words=0)  # the same words again: not admissible, never judged
    assert verdict.to_judge([hits[0], hits[1], hits[2], repeat]) == [1, 2, 0]
    assert verdict.to_judge(hits, top=1) == [3]


def test_a_unit_is_read_as_the_block_quotes_it_a_line_a_message_cut_around_the_words() -> None:
    long_answer = "Background on the fleet. " * 40 + ANSWER + " More notes follow. " * 40
    text = verdict.judge_text([("user", QUESTION), ("assistant", long_answer)], QUESTION)
    lines = text.split("\n")
    assert len(lines) == 2 and lines[0] == QUESTION
    assert "8884" in lines[1] and len(text) <= verdict.JUDGE_CHARS + 2


def test_the_probability_rises_with_the_judges_logit_and_follows_the_declared_weights() -> None:
    hit = _hits([0.5])[0]
    v = MINILM.verdict
    assert v is not None
    low, mid, high = (verdict.probability(hit, x, v) for x in (-4.0, 0.0, 4.0))
    assert 0.0 < low < mid < high < 1.0
    # the logistic of the standardized features: one feature alone, everything else weighed 0
    only_logit = Verdict(mean=(1.0,) + (0.0,) * 9, scale=(2.0,) + (1.0,) * 9, weights=(1.5,) + (0.0,) * 9, bias=-0.5, bar=0.5)
    assert verdict.probability(hit, 3.0, only_logit) == 1 / (1 + 2.718281828459045 ** -(1.5 * (3.0 - 1.0) / 2.0 - 0.5))
    # a feature that never varied where it was fitted (scale 0: no unit lacked its cosine) weighs nothing
    assert v.scale[3] == 0.0 and verdict.probability(replace(hit, features=replace(hit.features, cosine=None)), 0.0, v) > 0


def test_a_longer_message_may_be_answered_by_meaning_a_remark_needs_its_words() -> None:
    """The tenth feature, what the message says that the unit lacks (stop 79): the same unit, the
    same cosine and the same reading of the judge, sharing none of the message's words, is
    likelier the answer to a message that says more. A remark about the work at hand ("run
    pytest") and a question reworded in other words than the session's both reach a unit by
    meaning alone; only the longer one says enough to be answered that way. A short question
    whose words the unit holds loses nothing by its length."""
    v = MINILM.verdict
    assert v is not None
    (unit,) = _hits([0.4], [ANSWER])
    lone = replace(unit.features, matched=0, weighted=0.0, rarest=0.0)  # found by meaning alone, no word shared
    short, long = (replace(unit, score=0.0, meaning=True, asks=True, features=replace(lone, asked=n)) for n in (2, 9))
    assert verdict.features(short, 0.0)[UNSAID] < verdict.features(long, 0.0)[UNSAID]
    assert verdict.probability(short, 2.0, v) < verdict.probability(long, 2.0, v)
    assert verdict.probability(short, 2.0, v) < v.bar <= verdict.probability(long, 2.0, v)
    held = [replace(unit, features=replace(unit.features, matched=n, asked=n, weighted=1.0)) for n in (1, 9)]
    assert [verdict.features(h, 0.0)[UNSAID] for h in held] == [0.0, 0.0]
    # mpnet's weights are fitted with it too (stop 82, on its own candidates): the same there
    m = MPNET.verdict
    assert m is not None and m.scale[UNSAID] > 0
    assert verdict.probability(short, 2.0, m) < m.bar <= verdict.probability(long, 2.0, m)


def test_a_judged_message_quotes_by_probability_alone() -> None:
    hits = _hits([0.66, 0.58, 0.10])
    assert [h.relevant for h in hits][:2] == [True, True]  # the decision without the judge quotes both
    judged = auto_turn.judged(hits, QUESTION, Scores([3.0, -4.0, -6.0]), MINILM.verdict)  # type: ignore[arg-type]
    assert judged[0].verdict is not None and judged[0].verdict >= judged[0].verdict_bar
    assert judged[1].verdict is not None and judged[1].verdict < judged[1].verdict_bar
    # the third could not reach the bar whatever the judge said: not sent, under the bar all the same
    assert judged[2].judge is None and judged[2].verdict is not None and judged[2].verdict < judged[2].verdict_bar
    assert "not judged: probability" in judged[2].why()
    assert auto.choose(judged) == [judged[0]]
    assert "judged +3.0, probability" in judged[0].why() and "(bar 0.25)" in judged[0].why()
    # the most probable first, whatever the words' rank
    flipped = auto_turn.judged(hits, QUESTION, Scores([0.5, 4.0, -6.0]), MINILM.verdict)  # type: ignore[arg-type]
    assert [h.seq for h in auto.choose(flipped)] == [20, 10]
    # a unit not judged is not quoted once the message was judged, even one the words would quote
    partly = [judged[0], hits[1]]
    assert auto.choose([replace(judged[0], verdict=0.1), hits[1]]) == [] and auto.choose(partly) == [judged[0]]


def test_a_unit_no_reading_could_bring_to_the_bar_is_not_sent_to_the_judge() -> None:
    v = MINILM.verdict
    assert v is not None
    hits = _hits([0.66, 0.58, 0.10])
    assert [verdict.reachable(h, v) for h in hits] == [True, True, False]
    assert verdict.probability(hits[2], verdict.LOGIT_CAP, v) < v.bar <= verdict.probability(hits[0], verdict.LOGIT_CAP, v)
    # the logit is held within the cap, so "unreachable" is exact: no reading past it scores more
    assert verdict.probability(hits[2], 50.0, v) == verdict.probability(hits[2], verdict.LOGIT_CAP, v)
    assert verdict.probability(hits[2], -50.0, v) == verdict.probability(hits[2], -verdict.LOGIT_CAP, v)
    asked = Scores([1.0, 1.0, 1.0])
    out = auto_turn.judged(hits, QUESTION, asked, v)
    assert len(asked.asked) == 1 and len(asked.asked[0][1]) == 2 and ANSWER[:20] in asked.asked[0][1][0]
    assert [h.judge for h in out] == [1.0, 1.0, None]
    # none worth reading: the judge is asked with none (whether the helper has one), and the
    # message is judged all the same, each unit at the most it could have had
    far = [replace(h, features=replace(h.features, cosine=0.1)) for h in hits[:2]]
    assert not any(verdict.reachable(h, v) for h in far)
    empty = Scores([])
    out = auto_turn.judged(far, QUESTION, empty, v)
    assert empty.asked == [(QUESTION, [])] and auto.choose(out) == []
    assert [h.verdict for h in out] == [verdict.probability(h, verdict.LOGIT_CAP, v) for h in far]
    # a helper without a judge says so (None) even then: the decision without it
    assert auto_turn.judged(far, QUESTION, Scores(None), v) == far


def test_a_unit_sharing_no_word_is_quoted_by_its_cosine_whatever_the_judge_says() -> None:
    """The judge reads worst the units that share no word with the message (docs/memory.md, "No word
    shared: the cosine decides"): those its cosine quotes stay quoted, after the judged ones, for a
    message of :data:`clio.recall.auto.UNWORDED_ASKED` own words or more."""
    v = MINILM.verdict
    assert v is not None
    owner = "Marta Lindqvist in compliance signs off every sender ID a clinic asks for."
    near = lambda q, units: [0.5] * len(units)  # noqa: E731  (over its bar, as such units were)
    asked = "which person approves a new customer brand on outgoing texts?"
    hits = auto.score_hits(asked, [_result(owner, 10)], None, _freqs, near)
    assert hits[0].features.matched == 0 and hits[0].relevant and hits[0].unworded
    judged = auto_turn.judged(hits, asked, Scores([-3.0]), v)
    assert judged[0].verdict is not None and judged[0].verdict < judged[0].verdict_bar
    assert auto.choose(judged) == [judged[0]] and "no word shared: its cosine decides" in judged[0].why()
    # after the judged units, within the block's count
    words = _hits([0.66, 0.58])
    mixed = auto_turn.judged([*words, hits[0]], QUESTION, Scores([3.0, 2.5, -3.0]), v)
    assert [h.seq for h in auto.choose(mixed)][-1] == 10 and len(auto.choose(mixed, max_hits=2)) == 2
    # a short remark on the work at hand is not: its few words carry too little to go by
    short = auto.score_hits("who approves brands?", [_result(owner, 10)], None, _freqs, near)
    assert short[0].relevant and not short[0].unworded
    assert auto.choose(auto_turn.judged(short, "who approves brands?", Scores([-3.0]), v)) == []
    # a unit that shares a word is the judge's to decide, even at the same cosine
    shared = auto.score_hits(asked, [_result("Brand approvals: Marta signs off in compliance.", 10)], None, _freqs, near)
    assert shared[0].features.matched > 0 and not shared[0].unworded
    assert auto.choose(auto_turn.judged(shared, asked, Scores([-3.0]), v)) == []
    # without the judge nothing changes: the cosine quotes it as it always did
    assert auto.choose(hits) == hits


def test_without_the_judges_answer_the_decision_goes_without_it() -> None:
    hits = _hits([0.66, 0.58])
    silent = Scores(None)
    assert auto_turn.judged(hits, QUESTION, silent, MINILM.verdict) == hits  # type: ignore[arg-type]
    assert silent.asked and silent.asked[0][0] == QUESTION and len(silent.asked[0][1]) == 2
    assert auto.choose(hits) == auto.choose(auto_turn.judged(hits, QUESTION, silent, MINILM.verdict))  # type: ignore[arg-type]
    short = Scores([2.0])  # a malformed answer (one logit for two units): not read
    assert auto_turn.judged(hits, QUESTION, short, MINILM.verdict) == hits  # type: ignore[arg-type]
    # a unit the helper gave no cosine in time (a first fill): the judge is not asked at all
    unscored = _hits([0.66, None])
    asked = Scores([2.0, 2.0])
    assert auto_turn.judged(unscored, QUESTION, asked, MINILM.verdict) == unscored and not asked.asked  # type: ignore[arg-type]
    # nothing admissible: nothing to ask
    none = Scores([2.0])
    assert auto_turn.judged([replace(h, new_words=0) for h in hits], QUESTION, none, MINILM.verdict) and not none.asked  # type: ignore[arg-type]


def test_a_model_has_weights_only_where_they_were_fitted_with_its_cosines() -> None:
    assert MINILM.verdict is not None and MPNET.verdict is not None and MINILM.verdict != MPNET.verdict
    for v in (MINILM.verdict, MPNET.verdict):
        assert len(v.mean) == len(v.scale) == len(v.weights) == len(verdict.features(_hits([0.5])[0], 0.0)) == 10
        assert 0 < v.bar < 1
    assert endpoint_model("http://127.0.0.1:9/v1", "nomic-embed").verdict is None  # its cosines were never fitted


def test_search_and_score_asks_the_judge_only_with_weights() -> None:
    def search(query: str, nearby: Any) -> list[dict[str, Any]]:
        return [_result(ANSWER, 10), _result(NEAR, 20)]

    class Pending(Scores):
        def finish(self, query: str, units: list[list[str]]) -> list[float | None] | None:
            return [0.66, 0.58][: len(units)]

    for weights, judged in ((MINILM.verdict, True), (None, False)):
        pending = Pending([3.0, -4.0])
        found = auto_turn.search_and_score(
            QUESTION, QUESTION, 4000, search=search, frequencies=_freqs, said_elsewhere=None,
            begin=lambda q, p=pending: p, current=None, cosine_ask=MINILM.cosine_ask, weights=weights,
        )  # fmt: skip
        assert bool(pending.asked) == judged
        block, last, quoted = auto_turn.outcome(found, 4000)
        assert [q["seq"] for q in quoted] == ([10] if judged else [10, 20])
        assert ("probability" in last["recalled"][0]["why"]) == judged
        if judged:
            assert last["best_rejected"]["seq"] == 20 and "probability" in last["best_rejected"]["why"]


def test_the_judge_is_the_users_to_turn_off_never_a_projects(tmp_path: Any) -> None:
    from clio.config import load_settings
    from tests.unit.test_encoder_idle import configs

    home, clio_dir = configs(tmp_path, "", "recall_judge: false\nmodel: m\n")
    s, warnings = load_settings(home, clio_dir, {}, env={})
    assert s.recall_judge is True and s.model == "m"  # on by default; a repository cannot switch it
    assert len(warnings) == 1 and "recall_judge ignored" in warnings[0]
    (home / "config.yaml").write_text("recall_judge: false\n")
    s, warnings = load_settings(home, clio_dir, {}, env={})
    assert s.recall_judge is False


def test_a_question_about_how_a_library_behaves_is_not_judged() -> None:
    """Only its own words may quote a unit (answer_kind.about_a_tool): the judge is not asked, and
    the decision without it stands."""
    question = "in oban, if i enqueue a job while an identical one is still executing, does it fail?"
    results = [_result("We set unique: [period: 3600] on the stop import worker so a retry never runs twice.", 10)]
    hits = auto.score_hits(question, results, None, _freqs, lambda q, units: [0.7] * len(units))
    assert hits[0].general and not hits[0].relevant  # by meaning alone it is not quoted
    asked = Scores([4.0])
    assert verdict.to_judge(hits) == []
    assert auto_turn.judged(hits, question, asked, MINILM.verdict) == hits and not asked.asked  # type: ignore[arg-type]
    assert auto.choose(hits) == []


def test_a_long_report_or_order_is_not_answered_by_its_length() -> None:
    """A message that asks nothing (a report of the work at hand, an order: relevance.asks_in_any_sentence) has its
    own words counted in the tenth feature only up to verdict.SAID_CAP (stop 80): "the docker image
    is 1.4 gigs which is absurd for this little service. switch to a multi-stage build, use a slim
    base for the runtime stage" says fourteen words the unit lacks and asks the archive nothing. The
    same unit, cosine, judge and length, asked as a question, may still be answered by meaning."""
    from clio.recall import relevance as R

    report = ("the docker image is 1.4 gigs which is absurd for this little service. switch to a multi-stage "
              "build, use a slim base for the runtime stage, and only copy the compiled binary over")
    asked = "the docker image got huge again after the last release and builds crawl, what did we do about that last time?"
    assert not R.asks_in_any_sentence(report) and R.asks_in_any_sentence(asked)
    assert R.asks_in_any_sentence("flaky test again. can you look at the fixture setup") and R.asks_in_any_sentence("deploy failed. why does the pod keep restarting")
    assert not R.asks_in_any_sentence("ran make and it fails at link time. pretty sure we just need -lm in the makefile")
    # the decision's hits carry it from the message
    assert [h.asks for h in auto.score_hits(report, [_result(ANSWER, 10)], None, _freqs, None)] == [False]
    assert [h.asks for h in auto.score_hits(asked, [_result(ANSWER, 10)], None, _freqs, None)] == [True]
    v = MINILM.verdict
    assert v is not None
    (unit,) = _hits([0.4], [ANSWER])
    lone = replace(unit.features, matched=0, weighted=0.0, rarest=0.0, asked=14)  # found by meaning alone
    says, asks = (replace(unit, score=0.0, meaning=True, asks=a, features=lone) for a in (False, True))
    assert verdict.features(says, 0.0)[UNSAID] < verdict.features(asks, 0.0)[UNSAID]
    # a middling reading of the judge: the question clears the bar, the report does not (with the
    # weights fitted on every read set, stop 87, the report reaches the bar at +1.0: 0.257)
    assert verdict.probability(says, 0.5, v) < v.bar <= verdict.probability(asks, 0.5, v)
    # up to the cap, asking or not counts the same
    few = [replace(x, features=replace(lone, asked=verdict.SAID_CAP)) for x in (says, asks)]
    assert verdict.features(few[0], 0.0) == verdict.features(few[1], 0.0)
