"""The ``mcp_servers:`` setting read into server specs, and the names their tools get.

The shape Claude Code and Codex users already write::

    mcp_servers:
      time:
        command: uvx
        args: [mcp-server-time]
        env: {TZ: Europe/Paris}
        tools: [get_current_time]   # optional allow-list (the server's own names)
        timeout: 20                 # optional: seconds to start (default 30)
        tool_timeout: 120           # optional: seconds for each call (default 60)
        lean: true                  # optional: offer its tools in the lean profile too
      docs:
        url: http://127.0.0.1:8000/mcp   # streamable HTTP

A server entry that is wrong costs one line (:attr:`Parsed.problems`) and that server, never the
session. No MCP SDK import here: parsing runs on the way to the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT = 30.0  # seconds to start: spawn or connect, initialize, tools/list
DEFAULT_TOOL_TIMEOUT = 60.0  # seconds for each call
SEPARATOR = "__"
MAX_NAME = 64  # OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_KEYS = {
    "command", "args", "env", "url", "tools", "timeout", "tool_timeout", "lean", "cwd", "type", "transport", "enabled"
}


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None = None  # stdio
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None  # streamable HTTP
    tools: tuple[str, ...] | None = None  # allow-list of the server's tool names; None: all
    timeout: float = DEFAULT_TIMEOUT  # to start
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT  # for each call
    lean: bool = False  # offered in the lean profile too

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def where(self) -> str:
        """A short description for /mcp: the command line or the URL."""
        return self.url or " ".join([self.command or "", *self.args])

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


@dataclass
class Parsed:
    servers: list[ServerSpec] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per server left out


def safe_name(text: str) -> str:
    """``text`` with anything a function name may not hold replaced by ``_``."""
    return _UNSAFE.sub("_", text)


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``server__tool``, cut to 64 characters."""
    return f"{safe_name(server)}{SEPARATOR}{safe_name(tool)}"[:MAX_NAME]


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return tuple(str(v) for v in value)
    raise ValueError(f"{what} must be a list of strings")


def _seconds(raw: dict[str, Any], key: str, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{key} must be a positive number of seconds")
    return float(value)


def parse_server(name: str, raw: Any) -> ServerSpec:
    """One entry; ValueError with the reason when it is wrong."""
    if not isinstance(raw, dict):
        raise ValueError("expected a mapping with command (stdio) or url (streamable HTTP)")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise ValueError(f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
    command, url = raw.get("command"), raw.get("url")
    if bool(command) == bool(url):
        raise ValueError("give either command (stdio) or url (streamable HTTP)")
    if command is not None and not isinstance(command, str):
        raise ValueError("command must be a string")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise ValueError("url must start with http:// or https://")
    env = raw.get("env") or {}
    if not isinstance(env, dict):
        raise ValueError("env must be a mapping of variable names to values")
    tools = raw.get("tools")
    timeout = _seconds(raw, "timeout", DEFAULT_TIMEOUT)
    tool_timeout = _seconds(raw, "tool_timeout", DEFAULT_TOOL_TIMEOUT)
    cwd = raw.get("cwd")
    return ServerSpec(
        name=name,
        command=command,
        args=_strings(raw.get("args") or [], "args"),
        env={str(k): str(v) for k, v in env.items()},
        cwd=str(cwd) if cwd else None,
        url=url,
        tools=None if tools is None else _strings(tools, "tools"),
        timeout=timeout,
        tool_timeout=tool_timeout,
        lean=raw.get("lean") is True,
    )


def parse_servers(raw: dict[str, Any]) -> Parsed:
    """Every server of the setting; a wrong entry or a disabled one (``enabled: false``) is left
    out, a wrong one with a line saying why."""
    out = Parsed()
    seen: dict[str, str] = {}
    for key, entry in raw.items():
        name = str(key)
        if isinstance(entry, dict) and entry.get("enabled") is False:
            continue
        if not name or SEPARATOR in name or _UNSAFE.search(name):
            out.problems.append(
                f"MCP server '{name}': a name may hold letters, digits, '-' and single '_'; left out"
            )
            continue
        try:
            spec = parse_server(name, entry)
        except ValueError as exc:
            out.problems.append(f"MCP server '{name}': {exc}; left out")
            continue
        if name.lower() in seen:
            out.problems.append(f"MCP server '{name}': same name as '{seen[name.lower()]}'; left out")
            continue
        seen[name.lower()] = name
        out.servers.append(spec)
    return out
