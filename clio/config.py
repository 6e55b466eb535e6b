"""Layered settings: defaults < $CLIO_HOME/config.yaml < .clio/config.yaml < environment < flags.

One typed object (:class:`Settings`) that the rest of clio reads.

The repository clio runs in is untrusted, so its ``.clio/config.yaml`` may only set what
cannot send data elsewhere or run anything unasked (:data:`HARMLESS_KEYS`, and tightening
values of :data:`TIGHTEN_ONLY` and ``approvals``). Everything else it asks for (the endpoint,
keys, ``approvals: allow``, turning the sandbox off, unknown keys) is applied only when the
user trusts that project config, byte for byte (:mod:`clio.store.trust` keeps the digests);
redaction is never lowered below the user's level by a project, trusted or not.

The user's own config that does not parse stops clio (:class:`ConfigError`, naming the file and
line: carrying on with defaults would send the key to the default endpoint). A project config
that does not parse is moved aside (named in one line) and clio carries on without it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    mcp: str = "ask"  # ask | allow: calls to the tools of MCP servers (clio.mcp.client)


@dataclass
class ProjectConfig:
    """The project's ``.clio/config.yaml`` as read at start-up, and what of it needs trust."""

    path: Path
    digest: str  # sha256 of the file's bytes as read (trust is granted to exactly these bytes)
    risky: dict[str, Any]  # settings only a trusted project may make (dotted names, as written)
    refused: dict[str, Any]  # never taken from a project (redaction below the user's level, an api_key)
    trusted: bool = False  # the user trusts these bytes: the risky settings were applied
    instructions_trusted: bool = False  # and the instruction files as they are now (clio/cli.py)

    @property
    def ignored(self) -> dict[str, Any]:
        """The risky settings left out of this run (the project is not trusted)."""
        return {} if self.trusted else dict(self.risky)


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
    consolidate: bool = True  # at a session's end, one request reads back what it established (LTM)
    auto_recall: bool = True  # each user message brings back what the archive holds about it
    auto_recall_tokens: int = 600  # the recall block's most (capped by its share of the window)
    approvals: Approvals = field(default_factory=Approvals)
    # MCP servers clio starts as a client: name -> {command, args, env} or {url} (clio.mcp.config)
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    # USD per million tokens per model, {model: {input, output, cached}} (clio.llm.prices; /cost)
    prices: dict[str, Any] = field(default_factory=dict)
    # team memory (docs/team-memory.md): the PostgreSQL URL of the store shared by the project's
    # checkouts, an explicit project id (else its git remote), who this user is to teammates
    shared_memory: str | None = None
    team_project: str | None = None
    team_author: str | None = None
    # flags and modes
    incognito: bool = False
    no_ltm: bool = False
    no_custom_instructions: bool = False
    sandbox: bool = False
    sandbox_network: bool = False  # under --sandbox, shell commands may use the network
    # under --sandbox, more paths commands may not read (besides $CLIO_HOME and the credential stores)
    sandbox_hide: list[str] = field(default_factory=list)
    yes: bool = False
    debug: bool = False
    plan: bool = False  # read-only: --plan, /plan (clio.tools.policy)
    allow_tools: str | None = None  # --allow-tools: run these without asking
    deny_tools: str | None = None  # --deny-tools: never offer these
    color: bool = True
    # where it came from (for /context and error messages)
    sources: dict[str, str] = field(default_factory=dict)
    # the project config and what of it needs trust (None: the project has none)
    project: ProjectConfig | None = None

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


_SCALAR_FIELDS = {
    f.name: f
    for f in dataclasses.fields(Settings)
    if f.name not in ("approvals", "sources", "project", "mcp_servers", "prices", "sandbox_hide")
}
_FILE_KEYS = set(_SCALAR_FIELDS) - {"incognito", "yes", "debug", "plan", "allow_tools", "deny_tools"}

# What an untrusted project config may set: how the model is called and how much it may do per
# turn, nothing about where requests go, which key they carry, or what runs without asking.
HARMLESS_KEYS = frozenset(
    {
        "model",
        "context_window",
        "max_output_tokens",
        "temperature",
        "max_iterations",
        "max_retries",
        "request_timeout",
        "profile",
        "tool_choice",  # asks the model to call a tool; every call still passes the approvals
        "ltm_budget_tokens",
        "prefs_budget_tokens",
        "auto_recall_tokens",  # capped by its share of the window
        "color",
    }
)
# Settings a project may always tighten (to this value) but loosen only when trusted.
TIGHTEN_ONLY: dict[str, Any] = {
    "sandbox": True,
    "sandbox_network": False,
    "tool_call_recovery": False,  # on: tool calls written as text in an answer are run
    "no_ltm": True,
    "no_custom_instructions": True,
    "consolidate": False,
    "auto_recall": False,
}
REDACTION_LEVELS = ("off", "standard", "strict")
# Why each risky setting needs trust (shown when asking).
RISKY_REASONS = {
    "base_url": "where every request, and your API key, is sent",
    "api_key": "the key sent with every request",
    "approvals.write": "file edits without asking",
    "approvals.shell": "shell commands without asking",
    "approvals.git": "git actions without asking",
    "approvals.mcp": "calls to MCP servers' tools without asking",
    "sandbox": "turns off the sandbox you chose",
    "sandbox_network": "lets sandboxed shell commands use the network",
    "sandbox_hide": "paths hidden from sandboxed commands (user-only)",
    "tool_call_recovery": "runs tool calls the model writes as plain text",
    "no_ltm": "sends your memory and preferences again",
    "no_custom_instructions": "reads the project's instructions again",
    "mcp_servers": "starts programs and sends them data",
    "prices": "the prices /cost shows your spending with",
    "consolidate": "writes what each session established into the project's memory",
    "auto_recall": "sends what the archive holds about each of your messages with it",
    "shared_memory": "sends the project's memory to this database, and reads memory from it",
    "team_project": "which shared memory this project reads and writes",
    "team_author": "the name your memory entries carry for your teammates",
}


def _coerce(name: str, value: Any) -> Any:
    f = _SCALAR_FIELDS[name]
    kind = str(f.type)
    if value is None:
        return None
    if name == "redaction" and value is False:  # YAML 1.1 reads a bare `off` as false
        return "off"
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


# Sane bounds of the numeric settings (a project config outside them is ignored with one line).
BOUNDS: dict[str, tuple[float, float]] = {
    "context_window": (1024, 10_000_000), "max_output_tokens": (1, 1_000_000), "temperature": (0, 2),
    "max_iterations": (1, 1000), "max_retries": (0, 20), "request_timeout": (1, 86_400),
    "ltm_budget_tokens": (0, 100_000), "prefs_budget_tokens": (0, 100_000),
}  # fmt: skip
_CHOICES: dict[str, tuple[Any, ...]] = {
    "redaction": REDACTION_LEVELS, "tool_choice": (None, "auto", "required"), "profile": ("auto", "full", "lean"),
}  # fmt: skip


def bad_value(key: str, value: Any) -> str | None:
    """Why ``value`` (already coerced) is not a usable value of ``key``; None when it is."""
    if key in _CHOICES and value not in _CHOICES[key]:
        return "expected " + " or ".join(str(c) for c in _CHOICES[key] if c is not None)
    low, high = BOUNDS.get(key, (None, None))
    if low is not None and high is not None and value is not None and not low <= value <= high:
        return f"expected {low:g} to {high:g}"
    return None


def _usable(s: Settings, key: str, value: Any, source: str, warnings: list[str]) -> bool:
    """A project's value that would make clio unusable is ignored with one line (never fatal)."""
    try:
        why = bad_value(key, _coerce(key, value))
    except ConfigError as exc:
        why = str(exc).split(": ", 1)[-1].rstrip(".")
    if why is None:
        return True
    warnings.append(f"{source}: {key}: {value!r} ignored ({why}); using {getattr(s, key)!r}")
    return False


APPROVAL_KINDS = tuple(f.name for f in dataclasses.fields(Approvals))


def _did_you_mean(word: str, choices: Any) -> str:
    import difflib  # only for a typo: off the start-up path

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.7)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _approvals_map(value: Any) -> Any:
    """``approvals: allow`` (or ``ask``) is that answer for every kind; a mapping stays as it is."""
    if isinstance(value, str) and value in ("ask", "allow"):
        return dict.fromkeys(APPROVAL_KINDS, value)
    return value


def _apply_approvals(s: Settings, value: Any, source: str, warnings: list[str]) -> None:
    value = _approvals_map(value)
    if not isinstance(value, dict):
        warnings.append(
            f"{source}: approvals must be 'ask', 'allow' or a mapping such as {{write: allow}}; ignored"
        )
        return
    for k, v in value.items():
        kind = str(k).replace("-", "_")
        if kind not in APPROVAL_KINDS:
            hint = _did_you_mean(kind, APPROVAL_KINDS)
            warnings.append(f"{source}: unknown approval kind '{k}' ignored{hint} (kinds: {', '.join(APPROVAL_KINDS)})")
        elif v in ("ask", "allow"):
            setattr(s.approvals, kind, v)
        else:
            warnings.append(f"{source}: approvals.{kind} must be 'ask' or 'allow'")


def _apply(s: Settings, data: dict[str, Any], source: str, warnings: list[str]) -> None:
    for key, value in data.items():
        key = key.replace("-", "_")
        if key == "approvals":
            _apply_approvals(s, value, source, warnings)
            continue
        if key == "mcp_servers":
            if isinstance(value, dict):  # a project's servers join the user's (same name: the project's)
                s.mcp_servers = {**s.mcp_servers, **value}
                s.sources[key] = source
            elif value is not None:
                warnings.append(f"{source}: mcp_servers must be a mapping of server names; ignored")
            continue
        if key == "sandbox_hide":
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                s.sandbox_hide = [*s.sandbox_hide, *value]
                s.sources[key] = source
            elif value is not None:
                warnings.append(f"{source}: sandbox_hide must be a list of paths; ignored")
        if key == "prices":
            if isinstance(value, dict):  # per model; a later layer's model replaces an earlier one's
                s.prices = {**s.prices, **{str(k): v for k, v in value.items()}}
                s.sources[key] = source
            elif value is not None:
                warnings.append(f"{source}: prices must map model names to {{input, output, cached}}; ignored")
            continue
        if key not in _FILE_KEYS:
            hint = _did_you_mean(key, _FILE_KEYS | {"approvals", "mcp_servers"})
            warnings.append(f"{source}: unknown setting '{key}' ignored{hint}")
            continue
        if source == PROJECT_SOURCE and not _usable(s, key, value, source, warnings):
            continue
        setattr(s, key, _coerce(key, value))
        s.sources[key] = source


@dataclass
class ProjectSplit:
    """A project config cut by what it may set on its own (dotted names: ``approvals.shell``)."""

    harmless: dict[str, Any]  # applied always
    risky: dict[str, Any]  # applied only when the user trusts the project
    refused: dict[str, Any]  # never applied (redaction below the user's level, an api_key)


def _same(key: str, value: Any, current: Any) -> bool:
    try:
        return bool(_coerce(key, value) == current)
    except ConfigError:
        return False


def split_project_config(data: dict[str, Any], user: Settings) -> ProjectSplit:
    """Split a project config into what it may set untrusted, what needs trust, what never applies.

    ``user`` holds the user's own layer (defaults and $CLIO_HOME/config.yaml): a value equal to
    the user's changes nothing and is harmless. Allow-list: a key not known to be harmless
    (including any unknown or future key) needs trust.
    """
    out = ProjectSplit({}, {}, {})
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        value = _approvals_map(value) if key == "approvals" else value
        if key == "approvals" and isinstance(value, dict):
            for k, v in value.items():
                kind = str(k).replace("-", "_")
                name = f"approvals.{kind}"
                if v == "ask" or v == getattr(user.approvals, kind, None):
                    out.harmless[name] = v
                else:
                    out.risky[name] = v
            continue
        if key in HARMLESS_KEYS:
            out.harmless[key] = value
        elif key == "api_key":  # in the project, every command clio runs could read it: never taken
            out.refused[key] = value
        elif key == "redaction":
            level = str(_coerce(key, value)).strip().lower()
            mine = REDACTION_LEVELS.index(user.redaction) if user.redaction in REDACTION_LEVELS else 1
            if level in REDACTION_LEVELS and REDACTION_LEVELS.index(level) < mine:
                out.refused[key] = level
            else:  # the same or higher (a bad value fails validation as from any layer)
                out.harmless[key] = level if level in REDACTION_LEVELS else value
        elif key in TIGHTEN_ONLY:
            if _same(key, value, TIGHTEN_ONLY[key]) or _same(key, value, getattr(user, key)):
                out.harmless[key] = value
            else:
                out.risky[key] = value
        elif key in _FILE_KEYS and _same(key, value, getattr(user, key)):
            out.harmless[key] = value  # e.g. the same base_url as the user's: changes nothing
        else:
            out.risky[key] = value
    return out


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted names back into the config's shape (``approvals.shell`` -> approvals: {shell: })."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        head, dot, tail = name.partition(".")
        if dot:
            out.setdefault(head, {})[tail] = value
        else:
            out[name] = value
    return out


def config_digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def _looks_secret(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in ("key", "token", "secret", "password", "credential", "auth"))


def show_value(name: str, value: Any, limit: int = 160) -> str:
    """A setting's value for a question on screen: secrets hidden, invisible characters escaped."""
    from clio.safety.redact import Redactor
    from clio.safety.visible import escape_invisible

    if _looks_secret(name) and value not in (None, ""):
        return "(hidden)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text, _ = Redactor("strict").redact(text.strip())
    text = escape_invisible(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_risky(risky: dict[str, Any]) -> list[str]:
    """One line per risky setting: name, value (secrets hidden), and what it would do."""
    from clio.safety.visible import escape_invisible

    lines = []
    for name, value in risky.items():
        reason = RISKY_REASONS.get(name, "a setting clio does not know as harmless")
        lines.append(f"{escape_invisible(name)}: {show_value(name, value)}  ({reason})")
    return lines


def risky_names(risky: dict[str, Any]) -> str:
    """``base_url, approvals.shell`` (names only, invisible characters escaped)."""
    from clio.safety.visible import escape_invisible

    return ", ".join(escape_invisible(name) for name in risky)


def _mark(exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    if mark is None:
        return ""
    return f", line {mark.line + 1}, column {mark.column + 1}"


class YamlProblem(ValueError):
    """A YAML syntax error, carrying the parser's problem and marks (yaml is imported only when
    a config file exists)."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        for name in ("problem", "problem_mark", "context", "context_mark"):
            setattr(self, name, getattr(exc, name, None))


def _parse(raw: bytes) -> dict[str, Any]:
    import yaml

    text = raw.decode("utf-8-sig")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise YamlProblem(exc) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("the top level is not a mapping of settings")
    return data


def load_user_yaml(path: Path) -> dict[str, Any]:
    """The user's own config; one that cannot be read or parsed stops clio (ConfigError).

    Never moved aside or replaced with defaults: the default endpoint would then get the key.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"could not read your config {path}: {exc.strerror or exc}.") from None
    try:
        return _parse(raw)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start}); fix or remove it.") from None
    except ValueError as exc:  # a YamlProblem, or a top level that is not a mapping
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and start.line != getattr(exc, "problem_mark", start).line:
            problem += f" ({context} started on line {start.line + 1})"
        raise ConfigError(f"{path}{_mark(exc)}: {problem}. Fix the file; clio left it as it is.") from None


def load_yaml(path: Path, warnings: list[str], *, may_write: bool = True) -> dict[str, Any]:
    """A project config: one that does not parse is moved aside (named in ``warnings``)."""
    return _load_project(path, warnings, may_write=may_write)[1]


def _load_project(path: Path, warnings: list[str], *, may_write: bool) -> tuple[bytes | None, dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        warnings.append(f"could not read {path}: {exc}")
        return None, {}
    try:
        return raw, _parse(raw)
    except ValueError as exc:  # YamlProblem; UnicodeDecodeError is a ValueError too
        reason = (getattr(exc, "problem", None) or str(exc).splitlines()[0]) + _mark(exc)
        if not may_write:  # incognito moves nothing
            warnings.append(f"{path} is damaged ({reason}); ignored it")
            return None, {}
        moved = quarantine(path)
        warnings.append(f"{path} is damaged ({reason}); moved it to {moved.name} and continued without it")
        return None, {}


ENV_MAP = {
    "OPENAI_API_KEY": "api_key",
    "OPENAI_BASE_URL": "base_url",
    "CLIO_MODEL": "model",
    "CLIO_CONTEXT_WINDOW": "context_window",
    "CLIO_SHARED_MEMORY": "shared_memory",
}


PROJECT_SOURCE = ".clio/config.yaml"


def _overridden(env: dict[str, str], flags: dict[str, Any]) -> set[str]:
    """Settings the environment or the flags set (a project's value for them never counts)."""
    keys = {key for var, key in ENV_MAP.items() if env.get(var)}
    keys |= {k for k, v in flags.items() if k in _SCALAR_FIELDS and v is not None and v is not False}
    return keys


def _project(
    s: Settings,
    raw: bytes,
    data: dict[str, Any],
    path: Path,
    overridden: Iterable[str],
    trusted_digest: str | None,
) -> tuple[ProjectConfig, dict[str, Any]]:
    """What of the project config to apply now: (its state, the settings to apply)."""
    split = split_project_config(data, s)
    skip = set(overridden)
    risky = {k: v for k, v in split.risky.items() if k not in skip}
    digest = config_digest(raw)
    state = ProjectConfig(path, digest, risky, split.refused, trusted=trusted_digest == digest)
    apply = dict(split.harmless)
    if state.trusted:
        apply.update(risky)
    return state, _nest(apply)


def user_layer(home: Path) -> Settings:
    """The defaults with the user's own config applied (what a project is compared against)."""
    s = Settings()
    _apply(s, load_user_yaml(home / "config.yaml"), str(home / "config.yaml"), [])
    return s


def inspect_project(home: Path, clio_dir: Path, settings: Settings | None = None) -> ProjectConfig | None:
    """The project config as it is on disk now (for /trust); never moves or writes anything.

    ``settings``: the running settings, whose env and flag layers make a project's value moot.
    """
    raw, data = _load_project(clio_dir / "config.yaml", [], may_write=False)
    if raw is None:
        return None
    moot = {k for k, src in (settings.sources if settings else {}).items() if src == "flag" or src[:1] == "$"}
    state, _ = _project(user_layer(home), raw, data, clio_dir / "config.yaml", moot, None)
    return state


def load_settings(
    home: Path,
    clio_dir: Path | None,
    flags: dict[str, Any],
    env: dict[str, str] | None = None,
    *,
    trusted_digest: str | None = None,
) -> tuple[Settings, list[str]]:
    """Build the settings from every layer; returns (settings, warnings for the user).

    A project config's risky settings are applied only when ``trusted_digest`` is the digest
    of its bytes (the user trusts that exact file); ``settings.project.ignored`` names the risky
    settings left out, for the caller to ask about or report.
    """
    env = dict(os.environ) if env is None else env
    s = Settings()
    warnings: list[str] = []
    writes = not flags.get("incognito")
    _apply(s, load_user_yaml(home / "config.yaml"), str(home / "config.yaml"), warnings)
    if clio_dir is not None:
        path = clio_dir / "config.yaml"
        raw, data = _load_project(path, warnings, may_write=writes)
        if raw is not None:
            s.project, apply = _project(s, raw, data, path, _overridden(env, flags), trusted_digest)
            for name, value in s.project.refused.items():
                warnings.append(
                    f"{PROJECT_SOURCE}: api_key ignored: a key in the project can be read by every command clio "
                    "runs there; put it in $CLIO_HOME/config.yaml or the environment (OPENAI_API_KEY)"
                    if name == "api_key"
                    else f"{PROJECT_SOURCE}: {name}: {show_value(name, value)} ignored: a project may raise "
                    f"redaction, never lower it below yours ({s.redaction})"
                )
            _apply(s, apply, PROJECT_SOURCE, warnings)
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
