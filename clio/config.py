"""Layered settings: defaults < $CLIO_HOME/config.yaml < .clio/config.yaml < environment < flags.

One typed object (:class:`Settings`) that the rest of clio reads.

The repository clio runs in is untrusted: :mod:`clio.project_config` reads its
``.clio/config.yaml`` and decides what of it applies, and when; this module applies that part.

The user's own config that does not parse stops clio (:class:`ConfigError`, naming the file and
line: carrying on with defaults would send the key to the default endpoint).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clio.llm.endpoint import Endpoint
from clio.project_config import (
    PROJECT_SOURCE,
    REDACTION_LEVELS,
    ProjectConfig,
    load_project,
    parse_yaml,
    project_layer,
    refused_warnings,
    yaml_mark,
)

if TYPE_CHECKING:
    from clio.recall.encoder_models import Endpoint as EmbeddingsEndpoint

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
    # the automatic recall's decision also asks the sentence encoder, kept loaded by a per-user
    # helper process (clio.recall.encoder_service); off: words only (CLIO_RECALL_ENCODER=0 too)
    recall_encoder: bool = True
    # how long that helper stays loaded without a request (user only: it holds ~265-530 MiB)
    recall_encoder_idle_minutes: float = 30.0
    # the helper's judge in the automatic recall's decision (clio.recall.verdict): about a third
    # fewer blocks for near misses; false: stop 63's decision (docs/memory.md; user only)
    recall_judge: bool = True
    # an embedding model the endpoint serves, as that encoder ("text-embedding-3-small",
    # "nomic-embed-text"): every archived message of a project goes to the endpoint (user only)
    recall_embeddings: str | None = None
    # a model the endpoint serves ("gpt-4o-mini"), asked which of each searched message's units (up to
    # eight) the automatic recall quotes: a request more a searched message, the units in it (user only)
    recall_judge_model: str | None = None
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
    # more credential stores (besides clio.safety.hide.CREDENTIAL_STORES): no clio tool reads them,
    # nor, under --sandbox, any shell command. User-only (a project's is refused); the old name of the
    # setting, sandbox_hide, still works and adds to the same list.
    credential_stores: list[str] = field(default_factory=list)
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

    def embeddings_endpoint(self) -> EmbeddingsEndpoint | None:
        """The model of the endpoint that ``recall_embeddings`` names for the recall's encoder
        (with the endpoint's URL and key), or None."""
        if not self.recall_embeddings:
            return None
        from clio.recall.encoder_models import Endpoint as EmbeddingsEndpoint

        return EmbeddingsEndpoint(self.endpoint(), self.recall_embeddings, self.api_key)

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

    def client_endpoint(self) -> Endpoint:
        """The model client's settings (ConfigError without a key where one is needed)."""
        return Endpoint(self.endpoint(), self.require_key(), self.model, self.request_timeout, self.max_retries)

    # what clio.project_config asks of the user's layer (a clio.project_config.UserLayer)
    @staticmethod
    def coerce(key: str, value: Any) -> Any:
        """``value`` as setting ``key`` takes it (ConfigError: it cannot be one)."""
        return _coerce(key, value)

    @staticmethod
    def same(key: str, value: Any, current: Any) -> bool:
        """``value`` read as setting ``key`` is ``current`` (a value it cannot take never is)."""
        try:
            return bool(_coerce(key, value) == current)
        except ConfigError:
            return False

    @staticmethod
    def approvals_map(value: Any) -> Any:
        """``approvals: allow`` (or ``ask``) is that answer for every kind; a mapping stays as it is."""
        if isinstance(value, str) and value in ("ask", "allow"):
            return dict.fromkeys(APPROVAL_KINDS, value)
        return value

    @staticmethod
    def in_files(key: str) -> bool:
        """``key`` is a setting a config file may set (a flag-only one or a mapping is not)."""
        return key in _FILE_KEYS


_SCALAR_FIELDS = {
    f.name: f
    for f in dataclasses.fields(Settings)
    if f.name not in ("approvals", "sources", "project", "mcp_servers", "prices", "credential_stores")
}
_FILE_KEYS = set(_SCALAR_FIELDS) - {"incognito", "yes", "debug", "plan", "allow_tools", "deny_tools"}


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
    "recall_encoder_idle_minutes": (1, 1440),
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


def _apply_approvals(s: Settings, value: Any, source: str, warnings: list[str]) -> None:
    value = Settings.approvals_map(value)
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
        if key in ("credential_stores", "sandbox_hide"):  # sandbox_hide: its name before issue 34
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                s.credential_stores = [*s.credential_stores, *value]
                s.sources["credential_stores"] = source
            elif value is not None:
                warnings.append(f"{source}: {key} must be a list of paths; ignored")
            continue
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
        return parse_yaml(raw)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text (byte {exc.start}); fix or remove it.") from None
    except ValueError as exc:  # a YamlProblem, or a top level that is not a mapping
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and start is not None and start.line != getattr(exc, "problem_mark", start).line:
            problem += f" ({context} started on line {start.line + 1})"
        raise ConfigError(
            f"{path}{yaml_mark(exc)}: {problem}. Fix the file; clio left it as it is."
        ) from None


ENV_MAP = {
    "OPENAI_API_KEY": "api_key",
    "OPENAI_BASE_URL": "base_url",
    "CLIO_MODEL": "model",
    "CLIO_CONTEXT_WINDOW": "context_window",
    "CLIO_SHARED_MEMORY": "shared_memory",
    "CLIO_RECALL_EMBEDDINGS": "recall_embeddings",
    "CLIO_RECALL_JUDGE_MODEL": "recall_judge_model",
}


def _overridden(env: dict[str, str], flags: dict[str, Any]) -> set[str]:
    """Settings the environment or the flags set (a project's value for them never counts)."""
    keys = {key for var, key in ENV_MAP.items() if env.get(var)}
    keys |= {k for k, v in flags.items() if k in _SCALAR_FIELDS and v is not None and v is not False}
    return keys


def user_layer(home: Path) -> Settings:
    """The defaults with the user's own config applied (what a project is compared against)."""
    s = Settings()
    _apply(s, load_user_yaml(home / "config.yaml"), str(home / "config.yaml"), [])
    return s


def inspect_project(home: Path, clio_dir: Path, settings: Settings | None = None) -> ProjectConfig | None:
    """The project config as it is on disk now (for /trust); never moves or writes anything.

    ``settings``: the running settings, whose env and flag layers make a project's value moot.
    """
    raw, data = load_project(clio_dir / "config.yaml", [], may_write=False)
    if raw is None:
        return None
    moot = {k for k, src in (settings.sources if settings else {}).items() if src == "flag" or src[:1] == "$"}
    state, _ = project_layer(user_layer(home), raw, data, clio_dir / "config.yaml", moot, None)
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
        raw, data = load_project(path, warnings, may_write=writes)
        if raw is not None:
            s.project, apply = project_layer(s, raw, data, path, _overridden(env, flags), trusted_digest)
            warnings += refused_warnings(s.project.refused, s.redaction)
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
    why = bad_value("recall_encoder_idle_minutes", s.recall_encoder_idle_minutes)
    if why:  # user only (a project's is refused): its bound in BOUNDS, checked here
        raise ConfigError(f"recall_encoder_idle_minutes: {why} (got {s.recall_encoder_idle_minutes:g}).")
    return s, warnings
