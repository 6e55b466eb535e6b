"""The secret shapes behind clio.safety.redact: one regex per known shape, and the scanner for
secret-named assignments (PASSWORD=..., "api_key": "...", token: ...) that decides, from the
surroundings (.env line, shell, URL query, YAML, code), where the value ends and how to keep
the file valid around the placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from clio.lazy_re import lazy

MARK = "[REDACTED:"


def placeholder(label: str) -> str:
    return f"[REDACTED:{label}]"


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
ESCAPE_LETTERS = frozenset('bfnrtu"\\/')


def escaped(text: str, i: int) -> bool:
    """Is text[i] preceded by an odd number of backslashes (the tail of an escape)?"""
    n = 0
    while i - n > 0 and text[i - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def starts_token(text: str, i: int, extra: str = "") -> bool:
    """A token starts at i when not glued to a word character. In raw JSON text it may follow an
    escaped backslash or a \\n, \\r, \\t escape, but never take the letter of an escape (\\r + k_live)."""
    if i == 0:
        return True
    c = text[i - 1]
    if c == "\\":
        return not escaped(text, i) or text[i] not in ESCAPE_LETTERS
    if c not in _WORD and c not in extra:
        return True
    return c in "nrt" and escaped(text, i - 1)


@dataclass(frozen=True)
class Rule:
    label: str
    regex: re.Pattern[str]  # case-insensitive rules are written lowercase and run on text.lower()
    regex_i: re.Pattern[str] | None  # the same with re.IGNORECASE, for text whose lower() changes length
    needles: tuple[str, ...]  # run the regex only if one occurs (lowercase needles: case-insensitive)
    min_classes: int  # the secret must mix this many of lower / upper / digit
    bounded: str | None  # check starts_token at the match start, with these extra glue characters
    check: Callable[[str], bool] | None = None  # a last test of the value (e.g. it decodes as expected)


def _rule(
    label: str,
    pattern: str,
    needles: tuple[str, ...],
    min_classes: int = 0,
    bounded: str | None = None,
    check: Callable[[str], bool] | None = None,
) -> Rule:
    ci = pattern.startswith("(?i)")
    if ci:
        pattern = pattern[4:]
    return Rule(
        label,
        lazy(pattern),
        lazy(pattern, re.I) if ci else None,
        needles,
        min_classes,
        bounded,
        check,
    )


_PEM_BODY = r"[A-Za-z0-9+/=\s\\:,.()-]*?"
_PEM_TAIL = r"(?:(?:\s|\\[nrt])*(?:[A-Za-z0-9+/=]{16,}|[A-Z][A-Za-z-]+: [^\n\\\"]*))*"
_Q = r"\\?[\"']?"  # an optional quote, maybe escaped (JSON inside JSON)

STANDARD_RULES: tuple[Rule, ...] = (
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
        ("gh", "github_pat_"),
        3,
        bounded="",
    ),
    _rule(
        "gitlab_token",
        r"gl(?:pat|dt|rt|ptt|ft|soat|cbt)-[A-Za-z0-9_-]{20,}(?![A-Za-z0-9_-])",
        ("gl",),
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
    _rule(  # SG.<22>.<43>; lengths loosely (issue 34): a key of another length is still a key
        "sendgrid_api_key", r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,60}(?![A-Za-z0-9_-])", ("SG.",), 3, bounded=""
    ),
    _rule("npm_token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])", ("npm_",), 3, bounded=""),
    _rule("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,}", ("pypi-AgE",), bounded=""),
    _rule("huggingface_token", r"hf_[A-Za-z0-9]{34,}(?![A-Za-z0-9_])", ("hf_",), 3, bounded=""),
    _rule(
        "url_password",
        r"://[^\s:/?#@\"'\\<>\[\]]*:(?P<s>[^\s/?#\"'\\<>\[\]]+)@(?=[^\s/?#@\"'\\<>])",
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
_ASSIGN = lazy(_ASSIGN_PATTERN)  # run on text.lower()
_ASSIGN_I = lazy(_ASSIGN_PATTERN, re.I)
# where a keyword may start: a cheap literal scan, the full pattern is then tried at each hit
_STARTS = r"pass|pwd|secret|token|credential|api|access|private|auth|signing|encryption|master|account|client"
_KEYWORD_START = lazy(_STARTS)
_KEYWORD_START_I = lazy(_STARTS, re.I)
SECRET_KEY = lazy(r"^[A-Za-z0-9_.-]*?(?P<kw>" + _KEYWORD + r")$", re.I)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/:")
_NOT_SECRET_WORDS = (
    "true false null none nil yes no on off undefined required optional str string bytes int integer bool"
    " boolean number any object secretstr text unknown redacted hidden masked"
)
_NOT_SECRET = frozenset(_NOT_SECRET_WORDS.split())
_CAMEL = lazy(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+")  # SecretBytes: a type
_SNAKE = lazy(r"[a-z]+(?:_[a-z0-9]+)+")  # next_api_key: a variable
_DOTTED = lazy(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")  # self.token, settings.PASSWORD
_TEMPLATE = lazy(r"^(?:\$|\{\{|%\(|<.*>$|\{.*\}$)|^[*xX.•#_-]+$")  # ${VAR}, {{ x }}, <your-key>, ****
_EXAMPLE = lazy(  # YOUR_API_KEY_HERE, changeme: documentation, not a secret
    r"(?i)(?:your|my|insert|enter)[_-][\w-]*|[\w-]*[_-]here|change[_-]?me|replace[_-]?me"
)
_NETRC = lazy(r"(?i)\b(?:machine|login)\b")
_ENV_LINE = lazy(r"(?:export |set )?")
_YAML_LINE = lazy(r"[ \t]*(?:- )?")


def label_for(keyword: str) -> str:
    kw = keyword.lower().replace("-", "").replace("_", "")
    if kw.startswith("pass") or kw == "pwd":
        return "password"
    if kw.startswith("credential"):
        return "credential"
    if kw in ("token", "secret"):
        return kw
    return kw[:-3] + "_key"  # apikey -> api_key, secretkey -> secret_key


def classes(s: str) -> int:
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


def quoted_ok(value: str, password: bool) -> bool:
    """A quoted value under a secret-named key: anything but references, masks and (for tokens) words."""
    if len(value) < 3 or MARK in value or _TEMPLATE.search(value) or _EXAMPLE.fullmatch(value):
        return False
    return password or (_token_like(value) and not _DOTTED.fullmatch(value))


def _plausible(value: str, key: str, password: bool) -> bool:
    """Could this unquoted value be a real secret (not a reference, a type, a mask, a number or code)?"""
    if not quoted_ok(value, password) or value.lower() in _NOT_SECRET or _norm(value) == _norm(key):
        return False
    if value[0] in "[{(<@!&*-" or "(" in value or _DOTTED.fullmatch(value) or _CAMEL.fullmatch(value):
        return False
    return not value.replace(".", "").isdigit()  # numbers in code and JSON are counts and ids


def _assignment_value(text: str, m: re.Match[str]) -> tuple[int, int, str] | None:
    """Where the secret value of an assignment is, and the quote to put around the placeholder."""
    password = label_for(m["kw"]) == "password"
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
            return (a, b, "") if quoted_ok(text[a:b], password) else None
    a, b = m.span("uq")
    value = text[a:b]
    if sep == ":" and raw_sep.endswith(":") and not kq:
        return None  # "passwd:name" is not YAML (that needs a space after the colon)
    if raw_sep == "=" and not kq and _ENV_LINE.fullmatch(line):  # .env line: the value as written
        ok = (
            len(value) >= 3
            and MARK not in value
            and not _TEMPLATE.search(value)
            and not _EXAMPLE.fullmatch(value)
        )
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


def redact_assignments(text: str, low: str | None, labels: list[str]) -> str:
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
        label = label_for(m["kw"])
        out += [text[pos:a], quote + placeholder(label) + quote]
        pos = b
        labels.append(label)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)
