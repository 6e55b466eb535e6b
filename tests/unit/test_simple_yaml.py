"""clio/simple_yaml.py: a flat ``key: value`` config is read as PyYAML reads it, or left to PyYAML."""

from __future__ import annotations

import random

import pytest
import yaml

from clio.project_config import parse_yaml
from clio.simple_yaml import parse_flat

KEYS = ["model", "auto_recall", "context_window", "base_url", "Yes", "on", "y", "n", "null", "_x", "k-1", "a.b"]
VALUES = [
    "true", "false", "True", "FALSE", "yes", "No", "on", "OFF", "y", "n", "null", "Null", "~", "0", "7", "007",
    "8192", "1_000", "0x1f", "0o17", "1e3", "0.5", "1.", ".5", "1.0.0", "-1", "+1", "12:30", "1:2:3",
    "2024-01-01", "2024-01-01 10:00:00", "qwen2.5-coder", "qwen2.5-coder:7b", "gpt-4o-mini", "a/b", "http://x:1/v1",
    "strict", "'quoted'", '"dq"', "x # note", "[a, b]", "{a: 1}", "&a x", "*a", "!!str 1", "|", ">", "-", "inf",
    ".inf", "NaN", ".nan", "Infinity", "e5", "déjà", "tab\tbed", "",
]  # fmt: skip
SHAPES = ["{k}: {v}", "{k}:  {v}  ", "  {k}: {v}", "{k} : {v}", "{k}:{v}", "# {k}: {v}", "", "   ", "- {v}", "{k}:"]


def loaded(text: str) -> object:
    data = yaml.safe_load(text)
    return {} if data is None else data


def test_what_it_reads_is_what_pyyaml_reads_and_the_rest_is_left_to_pyyaml() -> None:
    rng = random.Random(35)
    read = 0
    for _ in range(4000):
        lines = [rng.choice(SHAPES).format(k=rng.choice(KEYS), v=rng.choice(VALUES)) for _ in range(rng.randint(0, 4))]
        text = rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"])
        flat = parse_flat(text)
        if flat is None:
            continue
        read += 1
        assert flat == loaded(text), text
        assert [type(v) for v in flat.values()] == [type(v) for v in loaded(text).values()], text  # type: ignore[attr-defined]
    assert read > 500  # the fast path did take most plain documents


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("auto_recall: false\n", {"auto_recall": False}),
        ("# mine\nmodel: qwen2.5-coder\ncontext_window: 8192\ntemperature: 0.2\n", {"model": "qwen2.5-coder", "context_window": 8192, "temperature": 0.2}),
        ("redaction: strict\nmodel: a\nmodel: b\n", {"redaction": "strict", "model": "b"}),  # the last one wins, as in PyYAML
        ("", {}),
        ("# only a comment\n", {}),
    ],
)  # fmt: skip
def test_the_usual_small_configs_take_the_fast_path(text: str, expected: dict[str, object]) -> None:
    assert parse_flat(text) == expected == loaded(text)


@pytest.mark.parametrize("text", ["model: qwen2.5-coder:7b\n", "auto_recall: off\n", "approvals:\n  shell: ask\n", "model: 'x'\n", "k: v # c\n"])
def test_anything_else_goes_to_pyyaml_and_reads_the_same_through_parse_yaml(text: str) -> None:
    assert parse_flat(text) is None
    assert parse_yaml(text.encode()) == loaded(text)
