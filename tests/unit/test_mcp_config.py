"""``mcp_servers:``: the entries read into server specs, the names the model sees, and the trust
split (a project's servers run only when the user trusts that project config)."""

from __future__ import annotations

from pathlib import Path

from clio.config import Settings, load_settings
from clio.mcp.config import DEFAULT_TIMEOUT, DEFAULT_TOOL_TIMEOUT, parse_servers, tool_name
from clio.project_config import split_project_config


def test_stdio_and_http_entries_in_the_claude_code_shape() -> None:
    parsed = parse_servers(
        {
            "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"], "env": {"TZ": 1}},
            "docs": {"url": "http://127.0.0.1:8000/mcp", "tools": ["search"], "timeout": 5, "lean": True,
                     "tool_timeout": 90},
        }
    )
    assert parsed.problems == []
    time, docs = parsed.servers
    assert (time.transport, time.command, time.args, time.env) == (
        "stdio", "uvx", ("mcp-server-time", "--local-timezone", "UTC"), {"TZ": "1"}
    )
    assert time.tools is None and time.allows("anything") and time.timeout == DEFAULT_TIMEOUT and not time.lean
    assert (docs.transport, docs.url, docs.timeout, docs.lean) == ("http", "http://127.0.0.1:8000/mcp", 5.0, True)
    assert (docs.tool_timeout, time.tool_timeout) == (90.0, DEFAULT_TOOL_TIMEOUT)
    assert docs.allows("search") and not docs.allows("delete")
    assert docs.where() == "http://127.0.0.1:8000/mcp" and time.where().startswith("uvx mcp-server-time")


def test_a_wrong_entry_costs_one_line_and_only_that_server() -> None:
    parsed = parse_servers(
        {
            "ok": {"command": "srv"},
            "both": {"command": "x", "url": "http://127.0.0.1:1/mcp"},
            "neither": {"args": ["x"]},
            "badurl": {"url": "ftp://127.0.0.1/x"},
            "badtimeout": {"command": "x", "timeout": -1},
            "badtooltimeout": {"command": "x", "tool_timeout": "soon"},
            "typo": {"command": "x", "argz": ["y"]},
            "notamap": "srv --stdio",
            "a__b": {"command": "x"},
            "sp ace": {"command": "x"},
            "OK": {"command": "x"},
            "off": {"command": "x", "enabled": False},
        }
    )
    assert [s.name for s in parsed.servers] == ["ok"]
    assert len(parsed.problems) == 10, parsed.problems
    joined = "\n".join(parsed.problems)
    for expected in ("either command", "url must start", "timeout must be", "tool_timeout must be", "unknown key argz", "same name as 'ok'"):
        assert expected in joined
    assert all(p.count("\n") == 0 and p.endswith("left out") for p in parsed.problems)


def test_tool_names_are_namespaced_and_valid_function_names() -> None:
    assert tool_name("time", "get_current_time") == "time__get_current_time"
    assert tool_name("my-srv", "do.thing/now") == "my-srv__do_thing_now"
    long = tool_name("s", "x" * 100)
    assert len(long) == 64 and long.startswith("s__x")


def test_user_and_trusted_project_servers_merge(tmp_path: Path) -> None:
    home, clio_dir = tmp_path / "home", tmp_path / "proj" / ".clio"
    home.mkdir()
    clio_dir.mkdir(parents=True)
    (home / "config.yaml").write_text("mcp_servers:\n  time:\n    command: a\n  docs:\n    url: http://127.0.0.1:1/mcp\n")
    (clio_dir / "config.yaml").write_text("mcp_servers:\n  time:\n    command: b\n")
    env = {"OPENAI_API_KEY": "sk-x"}
    untrusted, _ = load_settings(home, clio_dir, {}, env=env)
    assert untrusted.mcp_servers["time"] == {"command": "a"}  # the project's needs trust
    assert untrusted.project is not None and "mcp_servers" in untrusted.project.ignored
    digest = untrusted.project.digest
    trusted, _ = load_settings(home, clio_dir, {}, env=env, trusted_digest=digest)
    assert trusted.mcp_servers == {"time": {"command": "b"}, "docs": {"url": "http://127.0.0.1:1/mcp"}}


def test_mcp_servers_and_an_mcp_allow_from_a_project_are_risky() -> None:
    split = split_project_config(
        {"mcp_servers": {"x": {"command": "evil"}}, "approvals": {"mcp": "allow"}}, Settings()
    )
    assert set(split.risky) == {"mcp_servers", "approvals.mcp"} and not split.harmless


def test_a_non_mapping_setting_is_one_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("mcp_servers: [time]\napprovals:\n  mcp: allow\n")
    s, warnings = load_settings(home, None, {}, env={"OPENAI_API_KEY": "sk-x"})
    assert s.mcp_servers == {} and s.approvals.mcp == "allow"
    assert any("mcp_servers must be a mapping" in w for w in warnings)
