"""Layered settings: defaults < $CLIO_HOME/config.yaml < .clio/config.yaml < environment < flags.

One typed object (:class:`Settings`) that the rest of clio reads. A config file that
does not parse is moved aside (named in one line) and clio carries on without it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clio.store.atomic import quarantine

PROFILE_SETTINGS = ("auto", "full", "lean")  # auto: full unless its fixed part is too big (agent/window.py)
DEFAULT_MODEL = "gpt-4o-mini"
OPENAI_URL = "https://api.openai.com/v1"

# context windows of well-known models; anything else uses DEFAULT_CONTEXT_WINDOW unless configured
KNOWN_WINDOWS = {
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
}
DEFAULT_CONTEXT_WINDOW = 32_768


class ConfigError(Exception):
    """A setting is missing or wrong; the message says what to set."""


@dataclass
class Approvals:
    write: str = "ask"  # ask | allow
    shell: str = "ask"  # ask | allow
    git: str = "ask"  # ask | allow


@dataclass
class Settings:
    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = None
    context_window: int | None = None  # None: known table, else DEFAULT_CONTEXT_WINDOW
    max_output_tokens: int | None = None
    temperature: float | None = None
    max_iterations: int = 40
    max_retries: int = 4
    request_timeout: float = 600.0
    redaction: str = "standard"  # off | standard | strict
    tool_call_recovery: bool = True  # run tool calls written as text by models without native tool calling
    profile: str = "auto"  # auto | full | lean: the tools and system prompt sent (clio.agent.window)
    tool_choice: str | None = None  # None (not sent) | auto | required (first request of a turn only)
    ltm_budget_tokens: int = 1200
    prefs_budget_tokens: int = 300
    approvals: Approvals = field(default_factory=Approvals)
    # flags and modes
    incognito: bool = False
    no_ltm: bool = False
    no_custom_instructions: bool = False
    sandbox: bool = False
    yes: bool = False
    debug: bool = False
    color: bool = True
    # where it came from (for /context and error messages)
    sources: dict[str, str] = field(default_factory=dict)

    def window(self) -> int:
        if self.context_window:
            return self.context_window
        name = self.model.lower().split("/")[-1]
        best = ""
        for prefix in KNOWN_WINDOWS:
            if name.startswith(prefix) and len(prefix) > len(best):
                best = prefix
        return KNOWN_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW

    def endpoint(self) -> str:
        return self.base_url or OPENAI_URL

    def is_local_endpoint(self) -> bool:
        url = self.endpoint()
        return any(h in url for h in ("://127.", "://localhost", "://[::1]", "://0.0.0.0"))

    def require_key(self) -> str:
        """The API key to send; local endpoints work without one."""
        if self.api_key:
            return self.api_key
        if self.base_url and (self.is_local_endpoint() or "openai.com" not in self.endpoint()):
            return "not-needed"
        raise ConfigError(
            "No API key: set OPENAI_API_KEY, or point clio at a local endpoint with "
            "--base-url (e.g. http://localhost:11434/v1 for Ollama)."
        )


_SCALAR_FIELDS = {f.name: f for f in dataclasses.fields(Settings) if f.name not in ("approvals", "sources")}
_FILE_KEYS = set(_SCALAR_FIELDS) - {"incognito", "yes", "debug"}


def _coerce(name: str, value: Any) -> Any:
    f = _SCALAR_FIELDS[name]
    kind = str(f.type)
    if value is None:
        return None
    try:
        if "bool" in kind:
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if "int" in kind:
            return int(value)
        if "float" in kind:
            return float(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"Setting '{name}' has a bad value {value!r}: expected {kind.split('|')[0].strip()}."
        ) from None
    return str(value)


def _apply(s: Settings, data: dict[str, Any], source: str, warnings: list[str]) -> None:
    for key, value in data.items():
        key = key.replace("-", "_")
        if key == "approvals" and isinstance(value, dict):
            for k, v in value.items():
                if hasattr(s.approvals, k) and v in ("ask", "allow"):
                    setattr(s.approvals, k, v)
                else:
                    warnings.append(f"{source}: approvals.{k} must be 'ask' or 'allow'")
            continue
        if key not in _FILE_KEYS:
            warnings.append(f"{source}: unknown setting '{key}' ignored")
            continue
        setattr(s, key, _coerce(key, value))
        s.sources[key] = source


def load_yaml(path: Path, warnings: list[str], *, may_write: bool = True) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        warnings.append(f"could not read {path}: {exc}")
        return {}
    try:
        data = yaml.safe_load(raw.decode("utf-8-sig"))
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ValueError("top level is not a mapping")
    except (yaml.YAMLError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        reason = str(exc).splitlines()[0]
        if not may_write:  # incognito moves nothing
            warnings.append(f"{path} is damaged ({reason}); ignored it")
            return {}
        moved = quarantine(path)
        warnings.append(f"{path} is damaged ({reason}); moved it to {moved.name} and continued with defaults")
        return {}
    return data


ENV_MAP = {
    "OPENAI_API_KEY": "api_key",
    "OPENAI_BASE_URL": "base_url",
    "CLIO_MODEL": "model",
    "CLIO_CONTEXT_WINDOW": "context_window",
}


def load_settings(
    home: Path, clio_dir: Path | None, flags: dict[str, Any], env: dict[str, str] | None = None
) -> tuple[Settings, list[str]]:
    """Build the settings from every layer; returns (settings, warnings for the user)."""
    env = dict(os.environ) if env is None else env
    s = Settings()
    warnings: list[str] = []
    writes = not flags.get("incognito")
    _apply(
        s, load_yaml(home / "config.yaml", warnings, may_write=writes), str(home / "config.yaml"), warnings
    )
    if clio_dir is not None:
        proj = load_yaml(clio_dir / "config.yaml", warnings, may_write=writes)
        _apply(s, proj, ".clio/config.yaml", warnings)
    for var, key in ENV_MAP.items():
        if env.get(var):
            setattr(s, key, _coerce(key, env[var]))
            s.sources[key] = f"${var}"
    if env.get("NO_COLOR"):
        s.color = False
    for key, value in flags.items():
        if value is None or key not in _SCALAR_FIELDS:
            continue
        if isinstance(value, bool) and not value:
            continue
        setattr(s, key, _coerce(key, value))
        s.sources[key] = "flag"
    if s.redaction not in ("off", "standard", "strict"):
        raise ConfigError(f"redaction must be off, standard or strict (got {s.redaction!r}).")
    if s.tool_choice not in (None, "auto", "required"):
        raise ConfigError(f"tool_choice must be auto or required (got {s.tool_choice!r}).")
    if s.profile not in PROFILE_SETTINGS:
        raise ConfigError(f"profile must be auto, full or lean (got {s.profile!r}).")
    if s.context_window is not None and s.context_window < 1024:
        raise ConfigError(f"context_window {s.context_window} is too small: use at least 1024 tokens.")
    return s, warnings
