"""A user config that does not parse stops clio, naming the file and line; a project's is moved aside."""

from __future__ import annotations

from pathlib import Path

import pytest

from clio.config import ConfigError, load_settings


def setup(tmp_path: Path, user: bytes | None, project: bytes | None = None) -> tuple[Path, Path]:
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    if user is not None:
        (home / "config.yaml").write_bytes(user)
    if project is not None:
        (clio_dir / "config.yaml").write_bytes(project)
    return home, clio_dir


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (b"model: gpt-4o\nbase_url: [http://127.0.0.1:1/v1\nredaction: strict\n", "line 3, column 10"),
        (b"model: gpt-4o\n  bad: indent\n", "line 2, column 6"),
        (b"model: 'unclosed\n", "line 2, column 1"),
    ],
)
def test_a_broken_user_config_is_an_error_naming_file_and_line(
    tmp_path: Path, text: bytes, where: str
) -> None:
    home, clio_dir = setup(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(home, clio_dir, {}, env={"OPENAI_API_KEY": "sk-x"})
    message = str(info.value)
    assert str(home / "config.yaml") in message and where in message, message
    assert (home / "config.yaml").read_bytes() == text  # not moved, not rewritten
    if b"[http" in text:
        assert "flow sequence started on line 2" in message, message
    assert sorted(p.name for p in home.iterdir()) == ["config.yaml"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [(b"- a list\n- not settings\n", "not a mapping"), (b"model: \xff\xfe\n", "not UTF-8")],
)
def test_a_user_config_of_the_wrong_shape_or_encoding_is_an_error(
    tmp_path: Path, text: bytes, needle: str
) -> None:
    home, clio_dir = setup(tmp_path, text)
    with pytest.raises(ConfigError, match=needle):
        load_settings(home, clio_dir, {}, env={})
    assert (home / "config.yaml").read_bytes() == text


def test_an_unreadable_user_config_is_an_error(tmp_path: Path) -> None:
    home, clio_dir = setup(tmp_path, None)
    (home / "config.yaml").mkdir()  # a folder where the file should be: reading fails
    with pytest.raises(ConfigError, match="could not read your config"):
        load_settings(home, clio_dir, {}, env={})


def test_incognito_does_not_soften_it(tmp_path: Path) -> None:
    home, clio_dir = setup(tmp_path, b"model: [x\n")
    with pytest.raises(ConfigError, match="line 2"):
        load_settings(home, clio_dir, {"incognito": True}, env={})


def test_a_broken_project_config_is_moved_aside_with_its_line(tmp_path: Path) -> None:
    home, clio_dir = setup(tmp_path, b"model: user-model\n", b"model: [project\n")
    s, warnings = load_settings(home, clio_dir, {}, env={})
    assert s.model == "user-model" and s.project is None
    (moved,) = clio_dir.glob("config.damaged-*.yaml")
    assert moved.read_bytes() == b"model: [project\n"
    assert len(warnings) == 1 and "line 2" in warnings[0] and moved.name in warnings[0]


def test_a_bare_off_is_read_as_the_redaction_level(tmp_path: Path) -> None:
    home, clio_dir = setup(tmp_path, b"redaction: off\n")  # YAML 1.1 reads `off` as false
    s, _ = load_settings(home, clio_dir, {}, env={})
    assert s.redaction == "off"
