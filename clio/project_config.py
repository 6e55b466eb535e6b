"""Project trust: what an untrusted project's ``.clio/config.yaml`` may set on its own.

The repository clio runs in is untrusted, so its ``.clio/config.yaml`` may only set what
cannot send data elsewhere or run anything unasked (:data:`HARMLESS_KEYS`, and tightening
values of :data:`TIGHTEN_ONLY` and ``approvals``). Everything else it asks for (the endpoint,
keys, ``approvals: allow``, turning the sandbox off, unknown keys) is applied only when the
user trusts that project config, byte for byte (:mod:`clio.store.trust` keeps the digests);
redaction is never lowered below the user's level by a project, trusted or not.

This module also reads the file (one that does not parse is moved aside, named in one line)
and parses YAML for :mod:`clio.config`, which applies what this module lets through. That
module imports this one, so this one knows the user's settings only as a :class:`UserLayer`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clio.simple_yaml import parse_flat
from clio.store.atomic import quarantine

PROJECT_SOURCE = ".clio/config.yaml"
REDACTION_LEVELS = ("off", "standard", "strict")

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
    "recall_encoder": False,
}
# Settings a project never makes, trusted or not, and why: which paths are the user's credential
# stores (a repository could hide the project itself from clio's tools, or "/"), how long a
# process of the user's stays loaded after clio is gone.
USER_ONLY_WHY = {
    "credential_stores": "which paths are your credential stores is yours to say",
    "sandbox_hide": "which paths are your credential stores is yours to say",
    "recall_encoder_idle_minutes": "how long clio's encoder helper stays in your memory after clio exits is yours to say",
    "recall_embeddings": "whether every archived message of your projects goes to your endpoint to be embedded is yours to say",
    "recall_judge": "whether clio's encoder helper loads its judge (23 MB more in your memory, ~20 ms of CPU a searched message) is yours to say",
    "recall_judge_model": "whether each searched message's best archived passages, and the memory tool's first results, go to a model of your endpoint to be judged, a request more each, is yours to say",
}
USER_ONLY = frozenset(USER_ONLY_WHY)
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
    "tool_call_recovery": "runs tool calls the model writes as plain text",
    "no_ltm": "sends your memory and preferences again",
    "no_custom_instructions": "reads the project's instructions again",
    "mcp_servers": "starts programs and sends them data",
    "prices": "the prices /cost shows your spending with",
    "consolidate": "writes what each session established into the project's memory",
    "auto_recall": "sends what the archive holds about each of your messages with it",
    "recall_encoder": "starts clio's sentence-encoder helper for the automatic recall",
    "shared_memory": "sends the project's memory to this database, and reads memory from it",
    "team_project": "which shared memory this project reads and writes",
    "team_author": "the name your memory entries carry for your teammates",
}


class UserLayer(Protocol):
    """The user's own layer as the split reads it: a :class:`clio.config.Settings`."""

    redaction: str
    approvals: Any

    def coerce(self, key: str, value: Any) -> Any: ...
    def same(self, key: str, value: Any, current: Any) -> bool: ...
    def approvals_map(self, value: Any) -> Any: ...
    def in_files(self, key: str) -> bool: ...


def yaml_mark(exc: Exception) -> str:
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


def parse_yaml(raw: bytes) -> dict[str, Any]:
    text = raw.decode("utf-8-sig")
    flat = parse_flat(text)  # a plain `key: value` file is read without PyYAML (clio/simple_yaml.py)
    if flat is not None:
        return flat
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise YamlProblem(exc) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("the top level is not a mapping of settings")
    return data


def load_project(path: Path, warnings: list[str], *, may_write: bool) -> tuple[bytes | None, dict[str, Any]]:
    """A project config's bytes and settings; (None, {}) when it is missing, unreadable or damaged."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        warnings.append(f"could not read {path}: {exc}")
        return None, {}
    try:
        return raw, parse_yaml(raw)
    except ValueError as exc:  # YamlProblem; UnicodeDecodeError is a ValueError too
        reason = (getattr(exc, "problem", None) or str(exc).splitlines()[0]) + yaml_mark(exc)
        if not may_write:  # incognito moves nothing
            warnings.append(f"{path} is damaged ({reason}); ignored it")
            return None, {}
        moved = quarantine(path)
        warnings.append(f"{path} is damaged ({reason}); moved it to {moved.name} and continued without it")
        return None, {}


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
class ProjectSplit:
    """A project config cut by what it may set on its own (dotted names: ``approvals.shell``)."""

    harmless: dict[str, Any]  # applied always
    risky: dict[str, Any]  # applied only when the user trusts the project
    refused: dict[str, Any]  # never applied (redaction below the user's level, an api_key)


def split_project_config(data: dict[str, Any], user: UserLayer) -> ProjectSplit:
    """Split a project config into what it may set untrusted, what needs trust, what never applies.

    ``user`` holds the user's own layer (defaults and $CLIO_HOME/config.yaml): a value equal to
    the user's changes nothing and is harmless. Allow-list: a key not known to be harmless
    (including any unknown or future key) needs trust.
    """
    out = ProjectSplit({}, {}, {})
    for raw_key, value in data.items():
        key = str(raw_key).replace("-", "_")
        value = user.approvals_map(value) if key == "approvals" else value
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
        elif key == "api_key" or key in USER_ONLY:  # api_key: every command clio runs could read it
            out.refused[key] = value
        elif key == "redaction":
            level = str(user.coerce(key, value)).strip().lower()
            mine = REDACTION_LEVELS.index(user.redaction) if user.redaction in REDACTION_LEVELS else 1
            if level in REDACTION_LEVELS and REDACTION_LEVELS.index(level) < mine:
                out.refused[key] = level
            else:  # the same or higher (a bad value fails validation as from any layer)
                out.harmless[key] = level if level in REDACTION_LEVELS else value
        elif key in TIGHTEN_ONLY:
            if user.same(key, value, TIGHTEN_ONLY[key]) or user.same(key, value, getattr(user, key)):
                out.harmless[key] = value
            else:
                out.risky[key] = value
        elif user.in_files(key) and user.same(key, value, getattr(user, key)):
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


def project_layer(
    user: UserLayer,
    raw: bytes,
    data: dict[str, Any],
    path: Path,
    overridden: Iterable[str],
    trusted_digest: str | None,
) -> tuple[ProjectConfig, dict[str, Any]]:
    """What of the project config to apply now: (its state, the settings to apply)."""
    split = split_project_config(data, user)
    skip = set(overridden)
    risky = {k: v for k, v in split.risky.items() if k not in skip}
    digest = config_digest(raw)
    state = ProjectConfig(path, digest, risky, split.refused, trusted=trusted_digest == digest)
    apply = dict(split.harmless)
    if state.trusted:
        apply.update(risky)
    return state, _nest(apply)


def refused_warnings(refused: dict[str, Any], user_redaction: str) -> list[str]:
    """One line per setting a project may never make (its ``refused``), saying why."""
    out = []
    for name, value in refused.items():
        if name == "api_key":
            out.append(
                f"{PROJECT_SOURCE}: api_key ignored: a key in the project can be read by every command clio "
                "runs there; put it in $CLIO_HOME/config.yaml or the environment (OPENAI_API_KEY)"
            )
        elif name in USER_ONLY:
            out.append(
                f"{PROJECT_SOURCE}: {name} ignored: {USER_ONLY_WHY[name]}, in $CLIO_HOME/config.yaml "
                "(a project's is never used, trusted or not)"
            )
        else:
            out.append(
                f"{PROJECT_SOURCE}: {name}: {show_value(name, value)} ignored: a project may raise "
                f"redaction, never lower it below yours ({user_redaction})"
            )
    return out


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
