"""More secret shapes for clio.safety.redact (chat and commerce services, cloud hosts, vaults, and
passwords on command lines), split from clio.safety.redact_rules to keep each module short.

Shapes that a regex alone would confuse with ordinary text carry a ``check`` on the value: a
Discord bot token's first part is the base64 of a numeric user id, a docker ``auth`` value is the
base64 of ``user:password``, a command-line password is not a ``$VARIABLE``.
"""

from __future__ import annotations

import base64
import binascii

from clio.safety.redact_rules import Rule, _rule

__all__ = ["SERVICE_RULES"]


def _b64(value: str) -> bytes | None:
    std = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(std + "=" * (-len(std) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _discord_id(token: str) -> bool:
    """The first part of a Discord bot token is the base64 of a 17-20 digit user id."""
    raw = _b64(token.split(".", 1)[0])
    return raw is not None and raw.isdigit() and 17 <= len(raw) <= 20


def _user_password(value: str) -> bool:
    """docker config.json ``"auth"``: base64 of ``user:password``."""
    raw = _b64(value)
    if raw is None or b":" not in raw:
        return False
    try:
        return raw.decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return False


def _literal(value: str) -> bool:
    """A password written out, not a reference ($PW, ${PW}, {{ pw }}, <password>, %PW%)."""
    return len(value) >= 2 and value[0] not in "$<{%(" and not value.startswith("`")


# a command-line value: quoted (the quotes stay, see redact._apply) or one shell word
_CLI_VALUE = r"(?P<s>\"[^\"\n]+\"|'[^'\n]+'|[^\s\"'`;&|]+)"
_MYSQL = r"(?:mysql(?:dump|admin|import|check|show|slap|binlog|pump)?|mariadb(?:-dump|-admin)?)"

SERVICE_RULES: tuple[Rule, ...] = (
    _rule(
        "discord_bot_token",
        r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_.-])",
        (),
        3,
        bounded="-.",
        check=_discord_id,
    ),
    _rule(
        "discord_webhook",
        r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d{5,}/"
        r"(?P<s>[A-Za-z0-9_-]{60,72})(?![A-Za-z0-9_-])",
        ("discord",),
    ),
    _rule(  # 123456789:AAH...; also inside https://api.telegram.org/bot<token>/getMe
        "telegram_bot_token",
        r"(?:(?<=/bot)|(?<![A-Za-z0-9_:-]))\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
        (":AA",),
    ),
    _rule(
        "shopify_token",
        r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}(?![A-Za-z0-9_])",
        ("shp",),
        bounded="",
    ),
    _rule(
        "digitalocean_token",
        r"do[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9_])",
        ("_v1_",),
        bounded="",
    ),
    _rule("vault_token", r"hv[sb]\.[A-Za-z0-9_-]{24,}(?![A-Za-z0-9_-])", ("hvs.", "hvb."), 3, bounded=""),
    _rule(  # ~/.docker/config.json: {"auths": {"registry": {"auth": "<base64 of user:password>"}}}
        "docker_auth",
        r"(?i)auth(?<=\"auth)\\?\"[ \t]*:[ \t]*\\?\"(?P<s>[a-z0-9+/]{8,}={0,2})(?![a-z0-9+/=])",  # literal first: fast
        ('"auth"', 'auth\\"'),
        check=_user_password,
    ),
    _rule("docker_pat", r"dckr_pat_[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])", ("dckr_pat_",), 2, bounded=""),  # Docker Hub
    _rule(  # mysql -u root -pS3cret (the password glued to -p; "-p dbname" prompts, "-P" is the port)
        "password",
        r"(?<![\w-])" + _MYSQL + r"(?![\w-])[^\n|;&]*?[ \t]-p" + _CLI_VALUE,
        ("mysql", "mariadb"),
        check=_literal,
    ),
    _rule(  # sshpass -p 'pw' ssh host: only sshpass's own options may come first (ssh -p is a port)
        "password",
        r"(?<![\w-])sshpass(?:[ \t]+-[a-zA-Z]\S*)*?[ \t]+-p[ \t]*" + _CLI_VALUE,
        ("sshpass",),
        check=_literal,
    ),
)
