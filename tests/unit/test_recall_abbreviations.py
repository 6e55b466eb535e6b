"""Developers' short forms written out for the judge (clio.recall.abbreviations): pure."""

from __future__ import annotations

import pytest

from clio.recall.abbreviations import SHORT_FORMS, written_out


@pytest.mark.parametrize(
    ("text", "out"),
    [
        ("users keep getting logged out in prod", "users keep getting logged out in production"),
        ("is the prod db config in the repo?", "is the production database configuration in the repository?"),
        ("Prod is down (k8s).", "production is down (kubernetes)."),
        ("bump the deps, then check perf in stg", "bump the dependencies, then check performance in staging"),
        ("in prod.", "in production."),
        ('"auth" fails', '"authentication" fails'),
    ],
)
def test_a_short_form_standing_alone_is_written_out(text: str, out: str) -> None:
    assert written_out(text) == out


@pytest.mark.parametrize(
    "text",
    [
        "prod-db-1 is down",  # a host's name
        "see prod.example.com",
        "edit config/app.yaml and db_url",  # a path, an identifier
        "src/app/env.py",
        "DB_HOST and PROD_URL",
        "the product and the database",  # whole words that only start like one
        "app.config.get('x')",
        "--env production",
        "the kafka-stg cluster and deploy/prod",  # a name's last part
        "the .env file",
    ],
)
def test_a_short_form_inside_a_name_is_kept(text: str) -> None:
    assert written_out(text) == text


def test_every_short_form_is_a_lower_case_word_written_out_longer() -> None:
    for short, long in SHORT_FORMS.items():
        assert short.isalnum() and short == short.lower() and len(long) > len(short), short
        assert written_out(short) == long and written_out(short.upper()) == long
