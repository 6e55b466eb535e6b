"""Secret redaction: known secret shapes become ``[REDACTED:<label>]``.

Applied before text leaves the machine (requests) or lands on disk (sessions, notes, exports).
Every rule is a precompiled regex run once over the text; rules are ordered so that the most
specific shape wins and each secret yields exactly one label. Output is idempotent: a
placeholder is never matched again. Replacements never split a JSON escape sequence and never
remove a quote, so JSON and code around a secret stay valid.

Levels: ``off`` (nothing), ``standard`` (known shapes and secret-named assignments),
``strict`` (adds high-entropy tokens and e-mail addresses).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LEVELS = ("off", "standard", "strict")
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_MARK = "[REDACTED:"


def placeholder(label: str) -> str:
    return f"[REDACTED:{label}]"


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_ESCAPE_LETTERS = frozenset('bfnrtu"\\/')


def _escaped(text: str, i: int) -> bool:
    """Is text[i] preceded by an odd number of backslashes (the tail of an escape)?"""
    n = 0
    while i - n > 0 and text[i - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def _starts_token(text: str, i: int, extra: str = "") -> bool:
    """A token starts at i when not glued to a word character. In raw JSON text it may follow an
    escaped backslash or a \\n, \\r, \\t escape, but never take the letter of an escape (\\r + k_live)."""
    if i == 0:
        return True
    c = text[i - 1]
    if c == "\\":
        return not _escaped(text, i) or text[i] not in _ESCAPE_LETTERS
    if c not in _WORD and c not in extra:
        return True
    return c in "nrt" and _escaped(text, i - 1)


@dataclass(frozen=True)
class _Rule:
    label: str
    regex: re.Pattern[str]  # case-insensitive rules are written lowercase and run on text.lower()
    regex_i: re.Pattern[str] | None  # the same with re.IGNORECASE, for text whose lower() changes length
    needles: tuple[str, ...]  # run the regex only if one occurs (lowercase needles: case-insensitive)
    min_classes: int  # the secret must mix this many of lower / upper / digit
    bounded: str | None  # check _starts_token at the match start, with these extra glue characters


def _rule(
    label: str, pattern: str, needles: tuple[str, ...], min_classes: int = 0, bounded: str | None = None
) -> _Rule:
    ci = pattern.startswith("(?i)")
    if ci:
        pattern = pattern[4:]
    return _Rule(
        label, re.compile(pattern), re.compile(pattern, re.I) if ci else None, needles, min_classes, bounded
    )


_PEM_BODY = r"[A-Za-z0-9+/=\s\\:,.()-]*?"
_PEM_TAIL = r"(?:(?:\s|\\[nrt])*(?:[A-Za-z0-9+/=]{16,}|[A-Z][A-Za-z-]+: [^\n\\\"]*))*"
_Q = r"\\?[\"']?"  # an optional quote, maybe escaped (JSON inside JSON)

_STANDARD_RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:"
        + _PEM_BODY
        + r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|"
        + _PEM_TAIL
        + ")",
        ("PRIVATE KEY",),
    ),
    _rule("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", ("eyJ",), bounded=""),
    _rule(
        "aws_access_key",
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        bounded="",
    ),
    _rule(
        "aws_secret_key",
        r"(?i)(?:aws_?secret(?:_?access)?_?key|secret_?access_?key)"
        + _Q
        + r"[ \t]*(?:=>|[:=])[ \t]*"
        + _Q
        + r"(?P<s>[a-z0-9/+]{40})(?![a-z0-9/+=])",
        ("secret",),
    ),
    _rule("google_api_key", r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", ("AIza",), bounded=""),
    _rule("gcp_client_secret", r"GOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])", ("GOCSPX-",), bounded=""),
    _rule("gcp_access_token", r"ya29\.[0-9A-Za-z_-]{20,}", ("ya29.",), bounded=""),
    _rule(
        "azure_storage_key",
        r"AccountKey[ \t]*=[ \t]*(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
        ("AccountKey",),
        bounded="",
    ),
    _rule(
        "azure_shared_access_key",
        r"SharedAccessKey[ \t]*=[ \t]*(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
        ("SharedAccessKey",),
        bounded="",
    ),
    _rule("azure_sas_signature", r"sig=(?P<s>[A-Za-z0-9%+/=]{16,})", ("sig=",), bounded=""),
    _rule(
        "azure_client_secret",
        r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        ("Q~",),
        2,
        bounded="~.-",
    ),
    _rule("anthropic_api_key", r"sk-ant-[A-Za-z0-9_-]{20,}", ("sk-ant-",), bounded=""),
    _rule(
        "openai_api_key",
        r"sk-(?!ant-)(?:[a-z0-9]{2,10}-){0,2}[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])",
        ("sk-",),
        3,
        bounded="-",
    ),
    _rule(
        "github_token",
        r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})(?![A-Za-z0-9_])",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        3,
        bounded="",
    ),
    _rule(
        "gitlab_token",
        r"gl(?:pat|dt|rt|ptt|ft|soat|cbt)-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-"),
        bounded="",
    ),
    _rule(
        "slack_token",
        r"(?:xox[baprs]-|xapp-\d-)[A-Za-z0-9-]{10,}(?![A-Za-z0-9-])",
        ("xox", "xapp-"),
        bounded="",
    ),
    _rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9/_-]{8,})",
        ("hooks.slack.com",),
    ),
    _rule(
        "stripe_key",
        r"(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})(?![A-Za-z0-9_])",
        ("_live_", "_test_", "whsec_"),
        bounded="",
    ),
    _rule("twilio_api_key", r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])", ("SK",), bounded=""),
    _rule(
        "twilio_auth_token",
        r"(?i)twilio\w*?(?:auth)?_?token"
        + _Q
        + r"[ \t]*[:=][ \t]*"
        + _Q
        + r"(?P<s>[0-9a-f]{32})(?![0-9a-z])",
        ("twilio",),
    ),
    _rule(
        "sendgrid_api_key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", ("SG.",), bounded=""
    ),
    _rule("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])", ("npm_",), 3, bounded=""),
    _rule("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,}", ("pypi-AgE",), bounded=""),
    _rule("huggingface_token", r"hf_[A-Za-z0-9]{34,}(?![A-Za-z0-9_])", ("hf_",), 3, bounded=""),
    _rule(
        "url_password",
        r"://[^\s:/?#@\"'\\<>]*:(?P<s>[^\s/?#\"'\\<>]+)@(?=[^\s/?#@\"'\\<>])",
        ("://",),
    ),
    _rule("bearer_token", r"(?i)bearer[ \t]+(?P<s>[a-z0-9._~+/-]{12,}=*)", ("bearer",), 2, bounded=""),
    _rule(
        "authorization",
        r"(?i)authorization" + _Q + r"[ \t]*[:=][ \t]*" + _Q + r"(?:(?:basic|token|apikey|api-key)[ \t]+)?"
        r"(?P<s>(?=[a-z._~-]*[0-9+/=])[a-z0-9._~+/-]{8,}=*)",  # not "Optional[str]"
        ("authorization",),
        2,
    ),
    _rule(  # curl -u user:pass (not docker's -u 1000:1000)
        "password",
        r"(?:-u|--user)[ \t=]+" + _Q + r"[^\s:\"'\\]+:(?P<s>[^\s\"'\\@]*[^\s\"'\\@0-9][^\s\"'\\@]*)",
        ("-u", "--user"),
        bounded="-",
    ),
    _rule(  # .netrc
        "password",
        r"(?i)(?:login|user)[ \t]+[^\s\"'\\]+[ \t]+password[ \t]+(?P<s>[^\s\"'\\]+)",
        ("password",),
        bounded="",
    ),
)

_EMAIL_DOMAIN = re.compile(
    r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])(?!\.[A-Za-z0-9])(?!:[\w~/])"
)
_EMAIL_LOCAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")


def _redact_emails(text: str, low: str | None, labels: list[str]) -> str:
    """Strict only: user@example.org (not git@github.com:org/repo, not the user of a URL)."""
    out: list[str] = []
    pos = 0
    for m in _EMAIL_DOMAIN.finditer(text) if "@" in text else ():
        a = m.start()
        while a > pos and text[a - 1] in _EMAIL_LOCAL:
            a -= 1
        if a < m.start() and _escaped(text, a) and text[a] in _ESCAPE_LETTERS:
            a += 5 if text[a] == "u" else 1  # raw JSON: an escape (\n, \u00e9) is not part of the address
        elif a > 0 and text[a - 1] == "/":
            continue  # the user of a URL
        if a >= m.start():
            continue
        out += [text[pos:a], placeholder("email")]
        pos = m.end()
        labels.append("email")
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


# --- secret-named assignments: PASSWORD=..., "api_key": "...", token: ..., --password ... ---

_KEYWORD = (
    r"password|passwd|passphrase|(?<=[_.-])pass|(?<=[_.-])pwd|secret|token|credentials?"
    r"|api[_-]?key|apikey|(?:access|secret|private|auth|signing|encryption|master|account|client)[_-]?key"
)
_ASSIGN_PATTERN = (
    r"(?P<kw>" + _KEYWORD + r")(?![A-Za-z0-9_])(?P<kq>\\?[\"'])?"
    r"(?P<sep>[ \t]*(?::[ \t]*[A-Za-z_][\w\[\]., |]*?[ \t]*(?==))?(?::=|=>|=|:)[ \t]*|[ \t]+)"
    r"(?:(?P<pfx>[rbfu]{1,2}(?=[\"']))?(?:\"(?P<dq>(?:\\.|[^\"\\\n])*)\"|'(?P<sq>(?:\\.|[^'\\\n])*)')"
    r"|`(?P<bq>[^`\\\n]*)`|\\\"(?P<eq>[^\"\\\n]*)\\\"|(?P<uq>(?:[^\s\"'`\\]|\\[^\snrt])+))"
)
_ASSIGN = re.compile(_ASSIGN_PATTERN)  # run on text.lower()
_ASSIGN_I = re.compile(_ASSIGN_PATTERN, re.I)
# where a keyword may start: a cheap literal scan, the full pattern is then tried at each hit
_STARTS = r"pass|pwd|secret|token|credential|api|access|private|auth|signing|encryption|master|account|client"
_KEYWORD_START = re.compile(_STARTS)
_KEYWORD_START_I = re.compile(_STARTS, re.I)
_SECRET_KEY = re.compile(r"^[A-Za-z0-9_.-]*?(?P<kw>" + _KEYWORD + r")$", re.I)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/:")
_NOT_SECRET_WORDS = (
    "true false null none nil yes no on off undefined required optional str string bytes int integer bool"
    " boolean number any object secretstr text unknown redacted hidden masked"
)
_NOT_SECRET = frozenset(_NOT_SECRET_WORDS.split())
_CAMEL = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+")  # SecretBytes: a type
_SNAKE = re.compile(r"[a-z]+(?:_[a-z0-9]+)+")  # next_api_key: a variable
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # self.token, settings.PASSWORD
_TEMPLATE = re.compile(r"^(?:\$|\{\{|%\(|<.*>$|\{.*\}$)|^[*xX.•#_-]+$")  # ${VAR}, {{ x }}, <your-key>, ****
_NETRC = re.compile(r"(?i)\b(?:machine|login)\b")
_ENV_LINE = re.compile(r"(?:export |set )?")
_YAML_LINE = re.compile(r"[ \t]*(?:- )?")


def _label_for(keyword: str) -> str:
    kw = keyword.lower().replace("-", "").replace("_", "")
    if kw.startswith("pass") or kw == "pwd":
        return "password"
    if kw.startswith("credential"):
        return "credential"
    if kw in ("token", "secret"):
        return kw
    return kw[:-3] + "_key"  # apikey -> api_key, secretkey -> secret_key


def _classes(s: str) -> int:
    return any(c.islower() for c in s) + any(c.isupper() for c in s) + any(c.isdigit() for c in s)


def _token_like(value: str) -> bool:
    """Tokens and keys are long, unspaced and not plain words: 'Keyword', 'ClientSecret' are not."""
    if len(value) < 8 or value.isalpha() or any(c.isspace() for c in value):
        return False
    if value.isidentifier() and not any(c.isdigit() for c in value):
        return False  # FG_DEFAULT, next_api_key: names
    return not re.fullmatch(r"#[0-9a-fA-F]{3,8}", value)  # a colour


def _norm(s: str) -> str:
    return s.lower().rsplit(".", 1)[-1].replace("_", "").replace("-", "")


def _quoted_ok(value: str, password: bool) -> bool:
    """A quoted value under a secret-named key: anything but references, masks and (for tokens) words."""
    if len(value) < 3 or _MARK in value or _TEMPLATE.search(value):
        return False
    return password or (_token_like(value) and not _DOTTED.fullmatch(value))


def _plausible(value: str, key: str, password: bool) -> bool:
    """Could this unquoted value be a real secret (not a reference, a type, a mask, a number or code)?"""
    if not _quoted_ok(value, password) or value.lower() in _NOT_SECRET or _norm(value) == _norm(key):
        return False
    if value[0] in "[{(<@!&*-" or "(" in value or _DOTTED.fullmatch(value) or _CAMEL.fullmatch(value):
        return False
    return not value.replace(".", "").isdigit()  # numbers in code and JSON are counts and ids


def _assignment_value(text: str, m: re.Match[str]) -> tuple[int, int, str] | None:
    """Where the secret value of an assignment is, and the quote to put around the placeholder."""
    password = _label_for(m["kw"]) == "password"
    ks = m.start("kw")
    while ks > 0 and text[ks - 1] in _KEY_CHARS:
        ks -= 1
    key = text[ks : m.end("kw")]
    line = text[text.rfind("\n", 0, ks) + 1 : ks].rstrip("\"'\\")
    prev = line.rstrip()[-1:]
    raw_sep, kq = m["sep"], m["kq"] or ""
    sep = raw_sep.strip()
    if not sep and not (key.startswith("--") or _NETRC.search(line)):
        return None  # "password hunter2" is prose unless it is a --flag or a .netrc line
    for name in ("dq", "sq", "bq", "eq"):
        a, b = m.span(name)
        if a >= 0:
            pfx = (m["pfx"] or "").lower()
            if pfx.strip("bu") and any(c in text[a:b] for c in "\\[](){}|*?^$"):
                return None  # a regex (r"...") or an f-string, not a secret
            return (a, b, "") if _quoted_ok(text[a:b], password) else None
    a, b = m.span("uq")
    value = text[a:b]
    if sep == ":" and raw_sep.endswith(":") and not kq:
        return None  # "passwd:name" is not YAML (that needs a space after the colon)
    if raw_sep == "=" and not kq and _ENV_LINE.fullmatch(line):  # .env line: the value as written
        ok = len(value) >= 3 and _MARK not in value and not _TEMPLATE.search(value)
        return (a, b, "") if ok and value.lower() not in _NOT_SECRET else None
    eol = text.find("\n", a)
    eol = len(text) if eol < 0 else eol
    quote = ""
    if raw_sep == "=" and not kq and prev in ("?", "&"):  # URL query
        value = re.split(r"[&#]", value)[0]
    elif raw_sep == "=" and not kq and line.strip() and prev not in "(,":  # inline shell: X=1 TOKEN=abc cmd
        value = re.split(r"[;&|)`]", value)[0]
    elif not sep:  # --password hunter2 (not "--password option" in prose)
        value = re.split(r"[;&|)`]", value)[0]
        if value.isalpha():
            return None
    elif sep == ":" and _YAML_LINE.fullmatch(line):  # YAML (or pretty JSON) line: one word up to a comment
        rest = re.split(r"[ \t]+#|\\n", text[a:eol])[0].strip().rstrip(",")
        if len(rest.split()) != 1 or any(c in rest for c in "()[]{}") or _SNAKE.fullmatch(rest):
            return None
        if kq and rest.isidentifier() and not any(c.isdigit() for c in rest):
            return None  # {"api_key": api_key} is code
        value, quote = rest, kq or "'"
    else:  # code: keyword argument, assignment, annotation, object literal
        value = re.split(r"[,;]", value)[0].rstrip(")]}")  # f(token=abc) ends the value at ")"
        if any(c in value for c in "()[]{}"):
            return None
        rest = text[a + len(value) : eol].strip()
        if rest and not rest.startswith(("#", "//", ",", ")", "}", "]", ";", '"', "'", "\\")):
            return None  # an expression goes on: "key = a if b else c"
        if value.isidentifier() and not any(c.isdigit() for c in value):
            return None  # a variable name
        # code gets a string literal; an inline "key: value" (a header, prose) the bare placeholder
        quote = kq or ("" if sep == ":" else "'")
    if (len(value) - len(value.rstrip("\\"))) % 2:  # never cut a JSON escape in half
        value = value[:-1]
    return (a, a + len(value), quote) if value and _plausible(value, key, password) else None


def _redact_assignments(text: str, low: str | None, labels: list[str]) -> str:
    out: list[str] = []
    pos = 0
    src, regex, starts = (
        (low, _ASSIGN, _KEYWORD_START) if low is not None else (text, _ASSIGN_I, _KEYWORD_START_I)
    )
    for cand in starts.finditer(src):
        if cand.start() < pos:
            continue
        m = regex.match(src, cand.start())
        hit = _assignment_value(text, m) if m is not None else None
        if m is None or hit is None:
            continue
        a, b, quote = hit
        label = _label_for(m["kw"])
        out += [text[pos:a], quote + placeholder(label) + quote]
        pos = b
        labels.append(label)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


# --- strict: generic high-entropy tokens ---

_RUN = re.compile(r"[A-Za-z0-9+/_=\\-]{32,}")  # cheap scan; _TOKEN then runs inside each run only
_TOKEN = re.compile(
    r"(?:(?<![A-Za-z0-9+/_.\\-])|(?<=\\[nrt])|(?<=\\\\))[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/=_-])"
)
_HEX = re.compile(r"[0-9a-fA-F-]+")
_PROTECTED_BEFORE = re.compile(
    r"(?:sha(?:1|224|256|384|512)[-:]|md5[-:]|h1:|;base64,|(?:ssh-[a-z0-9]+|ecdsa-sha2-nistp\d+|[a-z-]+@openssh\.com) )$"
)
_DIGEST_PREFIX = re.compile(r"(?:sha(?:1|224|256|384|512)|md5)-")  # sha512-<base64>: an npm integrity field
ENTROPY_BITS = 4.0  # per character; random base62 of 32 chars scores 4.2-4.9 (99%), 64 chars 4.9+
WORDY = 0.75  # share of a token made of words: identifiers 0.78+, random 32-char tokens above it 0.3%
_WORDS = re.compile(r"[A-Z]?[a-z]{3,}|[A-Z]{2,}(?![a-z])")
MAX_TOKEN = 1024  # longer runs are data blobs (images, archives), not credentials


def entropy(s: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


def _high_entropy(token: str) -> bool:
    """A random-looking credential, not a hash, identifier, path, alphabet or base64 of a sentence."""
    if len(token) > MAX_TOKEN or _HEX.fullmatch(token) or _classes(token) < 3 or token.count("/") >= 2:
        return False
    if max(len(p) for p in re.split(r"[-_/+]", token)) < 16:
        return False  # kebab-case and snake_case names: short segments
    if sum(len(w) for w in _WORDS.findall(token)) >= WORDY * len(token):
        return False  # InputUnionMember1DecisionInputFunctionCall
    if sum(ord(b) - ord(a) == 1 for a, b in zip(token, token[1:], strict=False)) * 2 > len(token):
        return False  # ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789
    if entropy(token) < ENTROPY_BITS:
        return False
    try:  # base64 of a sentence ("These aren't the droids...") is data, not a key
        std = token.replace("-", "+").replace("_", "/")
        plain = base64.b64decode(std + "=" * (-len(std) % 4), validate=True).decode()
    except ValueError:
        return True
    return not (" " in plain and plain.isprintable())


def _redact_tokens(text: str, low: str | None, labels: list[str]) -> str:
    out: list[str] = []
    pos = 0
    for run in _RUN.finditer(text):
        for m in _TOKEN.finditer(text, run.start(), run.end()):
            s, e = m.span()
            if text[e : e + 1] == "." and text[e + 1 : e + 2].isalnum():
                continue  # a file or host name
            if _DIGEST_PREFIX.match(m[0]) or _PROTECTED_BEFORE.search(text, max(0, s - 48), s):
                continue
            if not _high_entropy(m[0]):
                continue
            head = text.rfind("-----BEGIN ", 0, s)
            if head >= 0 and text.find("-----END ", head, s) < 0:
                continue  # inside a certificate or public key block
            out += [text[pos:s], placeholder("high_entropy")]
            pos = e
            labels.append("high_entropy")
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _lower(text: str) -> str | None:
    """text.lower() when it keeps every index (almost always), else None."""
    low = text.lower()
    return low if len(low) == len(text) else None


def _apply(rule: _Rule, text: str, low: str | None, labels: list[str]) -> tuple[str, str | None]:
    """Run one rule; returns the new text and its lowercase twin (None if lower() changes indexes)."""
    if rule.regex_i is None:
        regex, src = rule.regex, text
    elif low is None:
        regex, src = rule.regex_i, text
    else:
        regex, src = rule.regex, low
    grp = "s" if "s" in regex.groupindex else 0
    out: list[str] = []
    out_low: list[str] = []
    pos = i = 0
    while (m := regex.search(src, i)) is not None:
        i = max(m.end(), m.start() + 1)
        if rule.bounded is not None and not _starts_token(text, m.start(), rule.bounded):
            i = m.start() + 1  # maybe a token starts a little later (after a JSON escape)
            continue
        a, b = m.span(grp)
        secret = text[a:b]
        if _MARK in secret or _classes(secret) < rule.min_classes:
            continue
        out += [text[pos:a], placeholder(rule.label)]
        if low is not None:
            out_low += [low[pos:a], placeholder(rule.label).lower()]
        pos = b
        labels.append(rule.label)
    if not out:
        return text, low
    out.append(text[pos:])
    out_low.append(low[pos:] if low is not None else "")
    return "".join(out), "".join(out_low) if low is not None else None


class Redactor:
    """Replaces secrets with ``[REDACTED:<label>]``; see the module docstring for the levels."""

    def __init__(self, level: str = "standard") -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown redaction level {level!r}: choose one of {', '.join(LEVELS)}")
        self.level = level
        self._rules: tuple[_Rule, ...] = _STANDARD_RULES
        self._steps: list[Callable[[str, str | None, list[str]], str]] = [_redact_assignments]
        if level == "strict":
            self._steps += [_redact_emails, _redact_tokens]

    @property
    def enabled(self) -> bool:
        return self.level != "off"

    def redact(self, text: str) -> tuple[str, list[str]]:
        """The text with every secret replaced, and one label per replacement."""
        labels: list[str] = []
        if self.level == "off" or not text:
            return text, labels
        low = _lower(text)
        lowered = low if low is not None else text.lower()
        for rule in self._rules:
            if rule.needles and not any((n in lowered) if n.islower() else (n in text) for n in rule.needles):
                continue
            hits = len(labels)
            text, low = _apply(rule, text, low, labels)
            if len(labels) != hits:
                lowered = low if low is not None else text.lower()
        for step in self._steps:
            hits = len(labels)
            text = step(text, low, labels)
            if len(labels) != hits:
                low = _lower(text)
        return text, labels

    def redact_obj(self, obj: Any) -> tuple[Any, int]:
        """A deep copy of a JSON-like value with every string redacted (dict keys kept) and the hit count."""
        if self.level == "off":
            return copy.deepcopy(obj), 0
        return self._obj(obj, None)

    def _obj(self, obj: Any, key: str | None) -> tuple[Any, int]:
        if isinstance(obj, str):
            text, labels = self.redact(obj)
            m = _SECRET_KEY.match(key) if not labels and key is not None else None
            if m and _quoted_ok(obj, _label_for(m["kw"]) == "password"):
                return placeholder(_label_for(m["kw"])), 1  # {"password": "hunter2"}: the key says it
            return text, len(labels)
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            total = 0
            for k, v in obj.items():
                out[k], n = self._obj(v, k if isinstance(k, str) else None)
                total += n
            return out, total
        if isinstance(obj, (list, tuple)):
            items = [self._obj(v, None) for v in obj]
            return type(obj)(v for v, _ in items), sum(n for _, n in items)
        return copy.deepcopy(obj), 0

    def redact_message(self, msg: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """A redacted copy of a chat message: content, tool-call arguments, other text fields; meta kept."""
        out: dict[str, Any] = {}
        total = 0
        for key, val in msg.items():
            if key in ("meta", "role", "tool_call_id", "name") or self.level == "off":
                out[key] = copy.deepcopy(val)
            elif key == "tool_calls" and isinstance(val, list):
                out[key] = []
                for call in val:
                    new_call, n = self._tool_call(call)
                    out[key].append(new_call)
                    total += n
            elif key == "content" and isinstance(val, list):
                parts = []
                for part in val:
                    part = copy.deepcopy(part)
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        part["text"], labels = self.redact(part["text"])
                        total += len(labels)
                    parts.append(part)
                out[key] = parts
            else:
                out[key], n = self._obj(val, None)
                total += n
        return out, total

    def _tool_call(self, call: Any) -> tuple[Any, int]:
        call = copy.deepcopy(call)
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or "arguments" not in fn:
            return call, 0
        raw = fn["arguments"]
        if not isinstance(raw, str):
            fn["arguments"], n = self._obj(raw, None)
            return call, n
        try:
            decoded = json.loads(raw)
        except ValueError:
            fn["arguments"], labels = self.redact(raw)
            return call, len(labels)
        new, n = self._obj(decoded, None)
        if n:
            fn["arguments"] = json.dumps(new, ensure_ascii=False)
        return call, n
