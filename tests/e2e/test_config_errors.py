"""End to end: a user config that does not parse stops clio (exit 2) before any request."""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio, stderr_lines
from testkit.fakeserver import FakeServer, Reply


def test_broken_user_config_stops_clio_and_is_left_alone(fake_server: FakeServer, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    broken = f"model: gpt-4o\nbase_url: {fake_server.base_url}\n  api_key_env: [oops\n"
    (home / "config.yaml").write_text(broken, encoding="utf-8")
    fake_server.script(Reply(text="must not be asked"))
    r = run_clio(
        ["-p", "hello"], server=None, project=project, home=home, env_extra={"OPENAI_API_KEY": "sk-user-key"}
    )
    assert r.returncode == 2, r.stderr
    lines = stderr_lines(r)
    assert len(lines) == 1, lines
    assert str(home / "config.yaml") in lines[0] and "line 3" in lines[0]
    assert r.stdout == ""
    assert fake_server.requests == []  # nothing sent anywhere, with or without the key
    assert (home / "config.yaml").read_text(encoding="utf-8") == broken
    assert sorted(p.name for p in home.iterdir()) == ["config.yaml"]  # not moved aside
