"""Secrets wrapped in base64 (issue 34): a Kubernetes ``Secret``'s ``data:`` values, a
``.dockerconfigjson``, a registry ``auth:``, a ``KEY=<base64>`` line.

Only a *value* is looked at (a YAML or ``.env`` line's value, a JSON pair's string), never a run
of characters in prose; it is decoded, and replaced by ``[REDACTED:base64_<label>]`` only when
the decoded text is printable and the redactor (the same one, at the same level: a base64 inside
the decoded text is decoded in turn) finds a secret in it, or, under a key named ``auth``, when
it is a registry's ``user:password``. An unquoted YAML value gets its placeholder in quotes, so
the document keeps its structure. A base64 value that decodes to
harmless text (``aW5mbw==``, ``info``) or to binary data is left exactly as it was.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable

from clio.lazy_re import lazy
from clio.safety.redact_rules import placeholder

__all__ = ["redact_base64"]

# a candidate: 16+ base64 characters right after a ":" or "=" (and maybe a quote); its line then
# says whether it is a value (YAML, JSON, .env) or something else (code, prose)
_CANDIDATE = lazy(r"[:=][ \t]*[\"']?([A-Za-z0-9+/_-]{16,}={0,2})")
_YAML_HEAD = lazy(r"[ \t]*(?:- )?[\"']?[\w.-]+[\"']?[ \t]*:[ \t]*[\"']?")
_YAML_TAIL = lazy(r"[\"']?[ \t]*,?[ \t]*(?:#.*)?")
_JSON_HEAD = lazy(r"\"[\w.-]+\"[ \t]*:[ \t]*\"$")
_ENV_HEAD = lazy(r"(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]*=")


def _value_of(text: str, a: int, b: int) -> tuple[str, str] | None:
    """(kind, key) when text[a:b] is a whole value: of a YAML key ("yaml", or "yaml-bare" when not
    quoted), of a JSON pair ("json"), of a .env line ("env"); None for anything else."""
    line_start = text.rfind("\n", 0, a) + 1
    line_end = text.find("\n", b)
    head, tail = text[line_start:a], text[b : len(text) if line_end < 0 else line_end]
    key = head.rsplit(":", 1)[0].strip().strip("\"'- ")
    if (m := _JSON_HEAD.search(head)) and tail.startswith('"'):
        return "json", m[0].split('"')[1]
    if _ENV_HEAD.fullmatch(head):
        return ("env", head.removeprefix("export").strip().rstrip("=")) if not tail.strip() else None
    if _YAML_HEAD.fullmatch(head) is None or _YAML_TAIL.fullmatch(tail) is None:
        return None
    return ("yaml" if head.rstrip().endswith(("'", '"')) else "yaml-bare"), key


def _user_password(plain: str) -> bool:
    """A registry ``auth`` value: ``user:password``, both parts present, on one line."""
    user, sep, password = plain.partition(":")
    return bool(sep and user and len(password) >= 6 and "\n" not in plain and " " not in plain)


_CONTROL_OK = frozenset("\n\r\t")


def _decoded(value: str) -> str | None:
    """The text ``value`` is the base64 of (standard or URL-safe alphabet), if it is printable."""
    std = value.replace("-", "+").replace("_", "/")
    try:
        raw = base64.b64decode(std + "=" * (-len(std) % 4), validate=True)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if not text or not all(c.isprintable() or c in _CONTROL_OK for c in text):
        return None
    return text


def redact_base64(text: str, labels: list[str], find: Callable[[str], list[str]]) -> str:
    """``text`` with every base64 value whose decoded text holds a secret replaced; ``find``
    returns the labels of the secrets in a text (the redactor itself)."""
    if len(text) < 16:
        return text
    out: list[str] = []
    pos = 0
    for m in _CANDIDATE.finditer(text):
        a, b = m.span(1)
        if a < pos or len(m[1].rstrip("=")) % 4 == 1:
            continue
        plain = _decoded(m[1])  # most candidates (identifiers, hashes) fail here, cheaply
        value = _value_of(text, a, b) if plain is not None else None
        if plain is None or value is None:
            continue
        kind, key = value
        found = find(plain)
        if found:
            label = "base64_" + found[0].removeprefix("base64_")
        elif key.lower() == "auth" and _user_password(plain):
            label = "docker_auth"  # a registry's auth: in YAML (in JSON the docker_auth rule takes it)
        else:
            continue
        quote = "'" if kind == "yaml-bare" else ""  # YAML would read a bare [REDACTED:x] as a list
        out += [text[pos:a], quote + placeholder(label) + quote]
        pos = b
        labels.append(label)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)
