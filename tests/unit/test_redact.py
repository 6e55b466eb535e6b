"""Secret redaction: a corpus of fake but correctly shaped secrets in many surroundings, a corpus of
look-alikes that must stay byte-identical, JSON / Python / YAML validity, levels, idempotency, messages.

The fake secrets are assembled at import time from a seeded generator, so no secret-shaped literal
sits in the repository (push protection of code hosts would flag them).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import random
import re
import string
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clio.safety.redact import LEVELS, PLACEHOLDER_RE, Redactor, placeholder

_rnd = random.Random(20240501)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def rand(n: int, alphabet: str = ALNUM) -> str:
    """Random characters, guaranteed to mix lower, upper and digits when the alphabet has them."""
    while True:
        s = "".join(_rnd.choice(alphabet) for _ in range(n))
        need = [
            cls
            for cls in (string.ascii_lowercase, string.ascii_uppercase, string.digits)
            if set(cls) & set(alphabet)
        ]
        if all(set(s) & set(cls) for cls in need):
            return s


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def make_jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "1234567890", "name": "Jane", "iat": 1716239022}).encode())
    return f"{header}.{payload}.{rand(43, ALNUM + '-_')}"


def pem(kind: str, lines: int = 6) -> str:
    body = "\n".join(rand(64, ALNUM + "+/") for _ in range(lines))
    return f"-----BEGIN {kind}-----\n{body}\n{rand(20, ALNUM + '+/')}==\n-----END {kind}-----"


# --- standalone secrets: recognisable by shape anywhere ---
STANDALONE: list[tuple[str, str]] = [
    ("aws_access_key", "AKIA" + rand(16, UPPER_DIGITS)),
    ("aws_access_key", "ASIA" + rand(16, UPPER_DIGITS)),
    ("google_api_key", "AIza" + rand(35, ALNUM + "-_")),
    ("gcp_client_secret", "GOCSPX-" + rand(28, ALNUM + "-_")),
    ("gcp_access_token", "ya29." + rand(80, ALNUM + "-_")),
    ("azure_client_secret", rand(3) + "8Q~" + rand(34, ALNUM + "~._-")),
    ("anthropic_api_key", "sk-ant-api03-" + rand(93, ALNUM + "-_") + "AA"),
    ("openai_api_key", "sk-proj-" + rand(156, ALNUM + "-_")),
    ("openai_api_key", "sk-" + rand(48)),
    ("openai_api_key", "sk-svcacct-" + rand(64, ALNUM + "-_")),
    ("github_token", "ghp_" + rand(36)),
    ("github_token", "gho_" + rand(36)),
    ("github_token", "ghs_" + rand(36)),
    ("github_token", "github_pat_" + rand(22) + "_" + rand(59)),
    ("gitlab_token", "glpat-" + rand(20, ALNUM + "-_")),
    ("slack_token", "xoxb-" + rand(12, string.digits) + "-" + rand(13, string.digits) + "-" + rand(24)),
    ("slack_token", "xoxp-" + rand(12, string.digits) + "-" + rand(12, string.digits) + "-" + rand(32)),
    ("stripe_key", "sk_" + "live_" + rand(24)),
    ("stripe_key", "rk_" + "live_" + rand(24)),
    ("stripe_key", "sk_" + "test_" + rand(24)),
    ("stripe_key", "whsec_" + rand(32)),
    ("twilio_api_key", "SK" + rand(32, HEX)),
    ("sendgrid_api_key", "SG." + rand(22, ALNUM + "-_") + "." + rand(43, ALNUM + "-_")),
    ("npm_token", "npm_" + rand(36)),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + rand(120, ALNUM + "-_")),
    ("huggingface_token", "hf_" + rand(34)),
    ("jwt", make_jwt()),
]

# how a standalone secret may appear: {s} is the secret
SURROUNDINGS: dict[str, str] = {
    "env": "# deploy settings\nSERVICE_URL=https://api.example.com\nSERVICE_CRED={s}\nDEBUG=0\n",
    "json": '{\n "service": "billing",\n "cred": "{s}",\n "retries": 3\n}\n',
    "yaml": "service:\n  name: billing\n  cred: {s}\n  retries: 3\n",
    "python": 'import os\n\nCLIENT = make_client(cred="{s}", timeout=30)\n',
    "shell": "$ curl -sS -d 'cred={s}' https://api.example.com/v1/items | jq .\n",
    "url": "see https://dashboard.example.com/connect?cred={s}&next=/home for details\n",
    "log": "2024-05-01T10:00:00.123Z INFO  auth  loaded credential {s} for tenant 42 (took 12ms)\n",
}


@dataclass(frozen=True)
class Case:
    label: str
    secret: str
    text: str  # contains the secret exactly once; expected output is text with secret -> placeholder
    expected: str | None = None  # when the redaction adds quotes


def standalone_cases() -> list[Case]:
    return [
        Case(label, secret, tpl.replace("{s}", secret))
        for label, secret in STANDALONE
        for name, tpl in SURROUNDINGS.items()
    ]


AWS_SECRET = rand(40, ALNUM + "/+")
AZURE_KEY = base64.b64encode(_rnd.randbytes(64)).decode()
SAS_SIG = (
    base64.b64encode(_rnd.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
)
PRIVATE_KEYS = [
    pem("RSA PRIVATE KEY"),
    pem("PRIVATE KEY"),
    pem("EC PRIVATE KEY", 3),
    pem("OPENSSH PRIVATE KEY", 8),
]
PW = "Tr0ub4dor&3x!"
TOKEN = rand(40)

CONTEXT_CASES: list[Case] = [
    # AWS secret keys need their key name
    Case(
        "aws_secret_key",
        AWS_SECRET,
        f"[default]\naws_access_key_id = AKIA{'X' * 4}\naws_secret_access_key = {AWS_SECRET}\n",
    ),
    Case("aws_secret_key", AWS_SECRET, f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"),
    Case("aws_secret_key", AWS_SECRET, f'{{"AccessKeyId": "x", "SecretAccessKey": "{AWS_SECRET}"}}'),
    Case("aws_secret_key", AWS_SECRET, f"env:\n  AWS_SECRET_ACCESS_KEY: {AWS_SECRET}\n"),
    Case("aws_secret_key", AWS_SECRET, f'boto3.client("s3", aws_secret_access_key="{AWS_SECRET}")\n'),
    # Azure
    Case(
        "azure_storage_key",
        AZURE_KEY,
        f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_KEY};"
        "EndpointSuffix=core.windows.net\n",
    ),
    Case("azure_storage_key", AZURE_KEY, f'{{"conn": "AccountName=acct;AccountKey={AZURE_KEY}"}}'),
    Case(
        "azure_shared_access_key",
        AZURE_KEY,
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        f"SharedAccessKey={AZURE_KEY}",
    ),
    Case(
        "azure_sas_signature",
        SAS_SIG,
        "GET https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2030-01-01T00:00:00Z&spr=https&sig={SAS_SIG} 200\n",
    ),
    # Slack webhook: the path is the secret, the host stays
    Case(
        "slack_webhook",
        f"T{rand(8, UPPER_DIGITS)}/B{rand(10, UPPER_DIGITS)}/{rand(24)}",
        "",
    ),
    Case(
        "twilio_auth_token",
        (tw := rand(32, HEX)),
        f"TWILIO_ACCOUNT_SID=AC{'0' * 32}\nTWILIO_AUTH_TOKEN={tw}\n",
    ),
    # passwords in URLs: user and host stay
    Case("url_password", PW, f"DATABASE_URL=postgres://app_user:{PW}@db.example.com:5432/app\n"),
    Case("url_password", PW, f'{{"redis": "redis://:{PW}@cache.internal:6379/0"}}'),
    Case("url_password", PW, f"git clone https://deploy:{PW}@git.example.com/team/repo.git\n"),
    Case(
        "url_password",
        PW,
        f"mongo 'mongodb+srv://admin:{PW}@cluster0.ab12c.mongodb.net/db?retryWrites=true'\n",
    ),
    # headers
    Case("bearer_token", TOKEN, f'curl -H "Authorization: Bearer {TOKEN}" https://api.example.com\n'),
    Case("bearer_token", TOKEN, f'{{"headers": {{"Authorization": "Bearer {TOKEN}"}}}}'),
    Case("bearer_token", TOKEN, f"10:00:01 DEBUG > authorization: bearer {TOKEN}\n"),
    Case(
        "authorization",
        (basic := base64.b64encode(b"admin:" + PW.encode()).decode()),
        f"Authorization: Basic {basic}\n",
    ),
    Case("authorization", (gh := rand(40, HEX)), f"Authorization: token {gh}\n"),
    # assignments: only the value goes, key and quotes stay
    Case("password", PW, f"PASSWORD={PW}\n"),
    Case("password", PW, f"DB_PASS={PW}\nDB_HOST=localhost\n"),
    Case("password", PW, f'{{"user": "app", "password": "{PW}"}}'),
    Case("password", PW, f'database:\n  user: app\n  password: "{PW}"\n'),
    Case(
        "password",
        "s3cr3tPass",
        "database:\n  password: s3cr3tPass  # rotate monthly\n",
        "database:\n  password: '[REDACTED:password]'  # rotate monthly\n",
    ),
    Case("password", PW, f'conn = psycopg.connect(host="db", password="{PW}")\n'),
    Case("password", PW, f"PGPASSWORD='{PW}' psql -h db -U app\n"),
    Case("password", "hunter22", "mysql -h db --password=hunter22 app\n"),
    Case("password", "hunter22", "mysql -h db --password hunter22 app\n"),
    Case("password", "hunter22", "machine api.example.com login deploy password hunter22\n"),
    Case("password", "hunter22", "curl -u deploy:hunter22 https://example.com\n"),
    Case("password", "hunter22", "Enter your password: hunter22\n"),
    Case("secret", TOKEN, f"CLIENT_SECRET={TOKEN}\n"),
    Case("secret", TOKEN, f"STRIPE_WEBHOOK_SECRET={TOKEN}\n"),
    Case("token", TOKEN, f"DEPLOY_TOKEN={TOKEN}\n"),
    Case("token", TOKEN, f'{{"access_token": "{TOKEN}", "expires_in": 3600}}'),
    Case("token", TOKEN, f"GET /callback?access_token={TOKEN}&state=xyz HTTP/1.1\n"),
    Case("token", TOKEN, f"//registry.npmjs.org/:_authToken={TOKEN}\n"),
    Case("api_key", TOKEN, f"API_KEY={TOKEN}\n"),
    Case("api_key", TOKEN, f"curl -H 'x-api-key: {TOKEN}' https://api.example.com\n"),
    Case("api_key", TOKEN, f"settings = {{'apiKey': '{TOKEN}'}}\n"),
    Case("api_key", TOKEN, f"const client = new Client({{ apiKey: `{TOKEN}` }});\n"),
    Case("secret_key", TOKEN, f"SECRET_KEY = '{TOKEN}'\n"),
    Case(
        "private_key",
        TOKEN,
        f"signing:\n  private_key: {TOKEN}\n",
        f"signing:\n  private_key: '{placeholder('private_key')}'\n",
    ),
    Case("credential", TOKEN, f"GOOGLE_CREDENTIALS={TOKEN}\n"),
]
# the slack webhook case needs its secret in the text
_SLACK = CONTEXT_CASES[9]
CONTEXT_CASES[9] = Case(
    "slack_webhook",
    _SLACK.secret,
    f'SLACK_WEBHOOK_URL="https://hooks.slack.com/services/{_SLACK.secret}"\n',
)

PRIVATE_KEY_CASES: list[Case] = []
for key in PRIVATE_KEYS:
    PRIVATE_KEY_CASES += [
        Case("private_key", key, f"$ cat ~/.ssh/id\n{key}\n$ ls\n"),
        Case(
            "private_key", (indented := key.replace("\n", "\n  ")), f"deploy_key: |\n  {indented}\nother: 1\n"
        ),
    ]
# GCP service-account JSON: the key is inside a JSON string with \n escapes
GCP_KEY = pem("PRIVATE KEY", 10)
GCP_JSON = json.dumps(
    {
        "type": "service_account",
        "project_id": "demo-project",
        "private_key_id": rand(40, HEX),
        "private_key": GCP_KEY + "\n",
        "client_email": "svc@demo-project.iam.gserviceaccount.com",
        "client_id": "1" + rand(20, string.digits),
    },
    indent=2,
)


def all_cases() -> list[Case]:
    return standalone_cases() + CONTEXT_CASES + PRIVATE_KEY_CASES


def _id(case: Case) -> str:
    return f"{case.label}:{case.text[:30]!r}"


@pytest.mark.parametrize("case", all_cases(), ids=_id)
def test_secret_is_replaced_with_its_label(case: Case) -> None:
    assert case.text.count(case.secret) == 1
    out, labels = Redactor().redact(case.text)
    assert labels == [case.label]
    expected = case.expected or case.text.replace(case.secret, placeholder(case.label))
    assert out == expected
    assert case.secret not in out
    assert PLACEHOLDER_RE.findall(out) == [placeholder(case.label)]  # the user sees what was hidden
    assert Redactor().redact(out) == (out, [])  # idempotent


@pytest.mark.parametrize("case", all_cases(), ids=_id)
def test_strict_also_redacts_every_case(case: Case) -> None:
    out, labels = Redactor("strict").redact(case.text)
    assert case.secret not in out
    assert case.label in labels
    assert Redactor("strict").redact(out) == (out, [])


def test_json_surroundings_stay_valid_json() -> None:
    checked = 0
    for case in all_cases():
        try:
            before = json.loads(case.text)
        except ValueError:
            continue
        out, _ = Redactor().redact(case.text)
        after = json.loads(out)
        assert isinstance(after, type(before))
        checked += 1
    assert checked >= len(STANDALONE)


def test_gcp_service_account_file() -> None:
    out, labels = Redactor().redact(GCP_JSON)
    data = json.loads(out)
    assert labels == ["private_key"]
    assert data["private_key"] == placeholder("private_key") + "\n"
    original = json.loads(GCP_JSON)
    for k in ("type", "project_id", "private_key_id", "client_email", "client_id"):
        assert data[k] == original[k]


def test_truncated_private_key_is_still_redacted() -> None:
    key = PRIVATE_KEYS[0]
    cut = key[: len(key) // 2]  # a tool output cut off in the middle of the key
    text = f"output:\n{cut}\n[... truncated]"
    out, labels = Redactor().redact(text)
    assert labels == ["private_key"]
    body_line = key.splitlines()[1]
    assert body_line not in out
    assert out.endswith("\n[... truncated]")


PYTHON_FILE = f'''"""Settings module with secrets in string literals."""
import os

AWS_KEY = "{STANDALONE[0][1]}"
OPENAI = '{STANDALONE[7][1]}'
DB = {{"host": "db", "password": "{PW}", "port": 5432}}
URL = f"postgres://app:{PW}@{{os.environ['HOST']}}/app"
HEADERS = {{"Authorization": "Bearer {TOKEN}"}}
PRIVATE = """{PRIVATE_KEYS[3]}"""
ESCAPED = "{GCP_KEY.replace(chr(10), chr(92) + "n")}"
token_count = 5
max_tokens: int = 4096


def connect(password: str, token: str | None = None, api_key=None) -> dict:
    secret = password if token else api_key
    kwargs = dict(password=password, token=token, api_key=api_key)
    return {{"secret": secret, "api_key": "{STANDALONE[10][1]}", **kwargs}}


class Config:
    password: str = "{PW}"
    token: str | None = None
    jwt = "{STANDALONE[-1][1]}"
'''


def _shape(tree: ast.AST) -> str:
    """The AST with every string constant blanked: code structure only."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def test_python_code_stays_valid_and_only_strings_change() -> None:
    out, labels = Redactor().redact(PYTHON_FILE)
    compile(out, "settings.py", "exec")
    assert _shape(ast.parse(out)) == _shape(ast.parse(PYTHON_FILE))
    for secret in (STANDALONE[0][1], STANDALONE[7][1], PW, TOKEN, STANDALONE[10][1], STANDALONE[-1][1]):
        assert secret not in out
    assert "BEGIN OPENSSH PRIVATE KEY" not in out and "BEGIN PRIVATE KEY" not in out
    assert sorted(set(labels)) == sorted(
        {
            "aws_access_key",
            "openai_api_key",
            "password",
            "url_password",
            "bearer_token",
            "private_key",
            "github_token",
            "jwt",
        }
    )


def test_unquoted_values_in_code_get_quotes_so_code_stays_valid() -> None:
    src = "def f():\n    password = hunter22\n    call(password=hunter22, token=Ab12Cd34Ef56Gh78)\n"
    out, labels = Redactor().redact(src)
    compile(out, "x.py", "exec")
    assert "hunter22" not in out and "Ab12Cd34Ef56Gh78" not in out
    assert labels == ["password", "password", "token"]


YAML_FILE = f"""version: "3.9"
services:
  db:
    image: postgres:16.2
    environment:
      POSTGRES_PASSWORD: {PW.replace("&", "and").replace("!", "")}
      POSTGRES_USER: app
  api:
    image: registry.example.com/api@sha256:{hashlib.sha256(b"api").hexdigest()}
    environment:
      - DATABASE_URL=postgres://app:s3cretpw9@db:5432/app
      - OPENAI_API_KEY={STANDALONE[8][1]}
      - GITHUB_TOKEN=${{GITHUB_TOKEN}}
    command: ["serve", "--port", "8080"]
secrets:
  api_key:
    file: ./api_key.txt
"""


def test_yaml_file_stays_loadable() -> None:
    out, labels = Redactor().redact(YAML_FILE)
    before, after = yaml.safe_load(YAML_FILE), yaml.safe_load(out)
    assert after["services"]["db"]["environment"]["POSTGRES_PASSWORD"] == placeholder("password")
    assert after["services"]["db"]["environment"]["POSTGRES_USER"] == "app"
    assert after["services"]["api"]["image"] == before["services"]["api"]["image"]
    env = after["services"]["api"]["environment"]
    assert env[0] == f"DATABASE_URL=postgres://app:{placeholder('url_password')}@db:5432/app"
    assert env[1] == f"OPENAI_API_KEY={placeholder('openai_api_key')}"
    assert env[2] == "GITHUB_TOKEN=${GITHUB_TOKEN}"  # a reference, not a secret
    assert after["secrets"] == before["secrets"]
    assert sorted(labels) == ["openai_api_key", "password", "url_password"]


# --- look-alikes: must come out byte-identical ---
_sha1 = hashlib.sha1(b"clio").hexdigest()
_sha256 = hashlib.sha256(b"clio").hexdigest()
_png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + random.Random(3).randbytes(600)).decode()
_integrity = "sha512-" + base64.b64encode(hashlib.sha512(b"left-pad").digest()).decode()

LOOKALIKES_ALL_LEVELS: dict[str, str] = {
    "git sha": f"commit {_sha1}\nMerge: {_sha1[:7]} {_sha1[7:14]}\n",
    "short shas": f"{_sha1[:7]} fix: handle empty file\n{_sha1[:12]} feat: add notes\n",
    "digests": f"md5={hashlib.md5(b'x').hexdigest()} sha1={_sha1} sha256={_sha256}\n",
    "sha512 hex": hashlib.sha512(b"x").hexdigest(),
    "uuid": f"request_id={uuid.UUID(int=123456789012345678901234567890)} trace {str(uuid.uuid5(uuid.NAMESPACE_DNS, 'x')).upper()}",
    "timestamps": "2024-05-01T10:00:00.123456+02:00 2024-05-01 10:00:00,123 Tue May  7 10:00:00 2024 +0200",
    "epochs": "created=1714557600 updated=1714557600123 ns=1714557600123456789",
    "long numbers": "pi=3.14159265358979323846264338327950288 big=123456789012345678901234567890123456789",
    "versions": "python 3.11.7, numpy==1.26.4, node v20.11.1, 2.0.0-rc.1+build.5, 1.2.3.post4.dev0",
    "short base64": "aGVsbG8gd29ybGQ= dGVzdA== Y2xpbw==",
    "data uri png": f'<img src="data:image/png;base64,{_png}">',
    "package-lock": json.dumps(
        {
            "node_modules/left-pad": {
                "version": "1.3.0",
                "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",
                "integrity": _integrity,
            }
        },
        indent=2,
    ),
    "go.sum": f"golang.org/x/text v0.14.0 h1:{base64.b64encode(hashlib.sha256(b'g').digest()).decode()}\n",
    "docker digest": f"FROM python:3.11-slim@sha256:{_sha256}",
    "ssh public key": f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rand(43, ALNUM + '+/')} deploy-key\n",
    "certificate": pem("CERTIFICATE", 5),
    "public key": pem("PUBLIC KEY", 4),
    "urls without password": "https://example.com:8443/path?q=1 http://localhost:8080/ ssh://git@host:22/r.git "
    "git@github.com:org/repo.git",
    "python code": (
        "def login(self, password: str, token: str | None = None) -> None:\n"
        "    self.token = token\n"
        "    self.password = password\n"
        "    client.connect(password=password, api_key=self.api_key)\n"
        "    if token == 'x':\n        pass\n"
        "    token = tokens[i]\n"
        "    max_tokens: int = 4096\n"
        "    secret = get_secret(name)\n"
        "    password = os.environ['DB_PASSWORD']\n"
        "    api_key = settings.OPENAI_API_KEY\n"
        "    credentials: Credentials = load()\n"
        "    password: SecretStr\n"
        "    token_count = len(tokens)\n"
    ),
    "docstring": "Args:\n    password: The password used to log in.\n    token: The token.\n",
    "references": (
        "PASSWORD=${DB_PASSWORD}\n"
        "password: ${{ secrets.DB_PASSWORD }}\n"
        "api_key: <your-api-key>\n"
        'token: "{{ vault_token }}"\n'
        "SECRET=\n"
        'password: "****"\n'
        "Authorization: Bearer $TOKEN\n"
    ),
    "json schema": '{"password": {"type": "string", "minLength": 8}, "max_tokens": 4096, "token": null}',
    "prose": "Enter your password below. The token count is 42; keys are rotated. max tokens: 4096",
    "identifiers": "task-runner-large-component-v2 sk-learn InputUnionMember1DecisionInputFunctionCall "
    "AbstractSingletonProxyFactoryBean very_long_snake_case_identifier_name_2024",
    "css colour": "Token: '#e6edf3', secret_color: #aabbcc",
    "paths": "/usr/lib/python3.11/site-packages/clio/safety/redact.py src/components/UserProfile2/Header.tsx",
    "placeholders": f"{placeholder('aws_access_key')} PASSWORD={placeholder('password')} "
    f"postgres://u:{placeholder('url_password')}@h/db",
    "alphabet": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
}
LOOKALIKES_STANDARD_ONLY: dict[str, str] = {  # strict redacts the e-mail addresses in these
    "git log": (
        f"commit {_sha1}\nAuthor: Jane Dev <jane.dev@example.com>\nDate:   Tue May 7 10:00:00 2024 +0200\n\n"
        "    fix(store): keep damaged files\n\n    Signed-off-by: Jane Dev <jane.dev@example.com>\n"
    ),
    "package metadata": '{"name": "clio", "author": "Team <team@example.org>", "license": "MIT"}',
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES_ALL_LEVELS))
@pytest.mark.parametrize("level", ["standard", "strict"])
def test_lookalikes_stay_byte_identical(name: str, level: str) -> None:
    text = LOOKALIKES_ALL_LEVELS[name]
    assert Redactor(level).redact(text) == (text, [])


@pytest.mark.parametrize("name", sorted(LOOKALIKES_STANDARD_ONLY))
def test_standard_keeps_emails_strict_redacts_them(name: str) -> None:
    text = LOOKALIKES_STANDARD_ONLY[name]
    assert Redactor("standard").redact(text) == (text, [])
    out, labels = Redactor("strict").redact(text)
    assert out == re.sub(r"[\w.+-]+@example\.\w+", placeholder("email"), text)
    assert labels == ["email"] * text.count("@example.")


# --- levels ---


def test_levels_and_bad_level() -> None:
    assert LEVELS == ("off", "standard", "strict")
    with pytest.raises(ValueError) as err:
        Redactor("paranoid")
    for level in LEVELS:
        assert level in str(err.value)


def test_off_changes_nothing() -> None:
    red = Redactor("off")
    for case in all_cases():
        assert red.redact(case.text) == (case.text, [])
    msg = {"role": "user", "content": STANDALONE[0][1]}
    assert red.redact_message(msg) == (msg, 0)


HIGH_ENTROPY = rand(40)  # a bare random token with no known prefix and no key name


@pytest.mark.parametrize(
    "text",
    [
        f"use {HIGH_ENTROPY} to connect",
        f"INTERNAL_ID={HIGH_ENTROPY}",
        f'{{"value": "{HIGH_ENTROPY}"}}',
        f"x\\n{HIGH_ENTROPY}\\n",
    ],
)
def test_strict_adds_high_entropy_tokens(text: str) -> None:
    assert Redactor("standard").redact(text) == (text, [])
    out, labels = Redactor("strict").redact(text)
    assert labels == ["high_entropy"]
    assert out == text.replace(HIGH_ENTROPY, placeholder("high_entropy"))


def test_strict_keeps_base64_of_a_sentence() -> None:
    data = base64.b64encode(b"These aren't the droids you're looking for").decode()
    assert Redactor("strict").redact(f"value = {data}") == (f"value = {data}", [])


def test_strict_redacts_email_but_not_scp_urls_or_url_users() -> None:
    text = "mail jane.doe+ci@mail.example.co.uk, clone git@github.com:org/repo.git or https://bob@host.example.com/x"
    out, labels = Redactor("strict").redact(text)
    assert labels == ["email"]
    assert out == text.replace("jane.doe+ci@mail.example.co.uk", placeholder("email"))


# --- idempotency and JSON validity as properties ---

SECRET_VALUES = [s for _, s in STANDALONE] + [PW]
SEPARATORS = [
    " ",
    "\n",
    "\t",
    "\r",
    '"',
    "'",
    "\\",
    "/",
    ",",
    ";",
    ":",
    "=",
    "(",
    ")",
    "[",
    "<",
    ">",
    "é",
    "—",
]
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    st.sampled_from(SECRET_VALUES),
    # a secret glued to letters or digits is another token: embed it after a separator
    st.builds(
        lambda a, s, b: f"{a}{s}{b}",
        st.builds(lambda t, sep: t + sep, st.text(max_size=10), st.sampled_from(SEPARATORS)),
        st.sampled_from(SECRET_VALUES),
        st.builds(lambda sep, t: sep + t, st.sampled_from(SEPARATORS), st.text(max_size=10)),
    ),
)
json_keys = st.one_of(
    st.text(max_size=12), st.sampled_from(["password", "api_key", "token", "secret", "note"])
)
json_values = st.recursive(
    json_leaf,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(json_keys, children, max_size=4),
    max_leaves=12,
)


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


def _standalone_in(text: str) -> list[str]:
    """Secrets present as tokens of their own (glued to more letters they are another token)."""
    edge = r"A-Za-z0-9_\-~.+/="
    return [s for _, s in STANDALONE if re.search(f"(?<![{edge}]){re.escape(s)}(?![{edge}])", text)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=json_values, ascii_only=st.booleans(), indent=st.sampled_from([None, 1, 2]))
def test_raw_json_text_stays_parseable(obj: Any, ascii_only: bool, indent: int | None) -> None:
    raw = json.dumps(obj, ensure_ascii=ascii_only, indent=indent)
    out, labels = Redactor("strict").redact(raw)
    parsed = json.loads(out)  # never corrupted
    assert type(parsed) is type(obj)
    assert not _standalone_in(out)
    assert Redactor("strict").redact(out) == (out, [])  # idempotent
    if not labels:
        assert out == raw


@settings(max_examples=300, deadline=None)
@given(obj=json_values)
def test_redact_obj_keeps_shape_and_removes_secrets(obj: Any) -> None:
    red = Redactor()
    out, count = red.redact_obj(obj)
    assert _shape_of(out) == _shape_of(obj)
    for s in _strings(out):
        for secret in _standalone_in(s):
            pytest.fail(f"secret left in {s!r}: {secret}")
    embedded = sum(len(_standalone_in(s)) > 0 for s in _strings(obj))
    assert count >= embedded
    again, n = red.redact_obj(out)
    assert (again, n) == (out, 0)


def _shape_of(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _shape_of(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shape_of(v) for v in obj]
    return type(obj).__name__


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(st.text(max_size=20), st.sampled_from(SECRET_VALUES)), max_size=8))
def test_idempotent_on_arbitrary_text(parts: list[str]) -> None:
    text = " ".join(parts)
    for level in LEVELS:
        red = Redactor(level)
        once, _ = red.redact(text)
        assert red.redact(once)[0] == once


def test_redact_obj_uses_secret_named_keys_and_keeps_keys() -> None:
    obj = {"password": "plain words here", "api_key": TOKEN, "note": "hello", "n": 1, "items": [PW, None]}
    out, count = Redactor().redact_obj(obj)
    assert out == {
        "password": placeholder("password"),
        "api_key": placeholder("api_key"),
        "note": "hello",
        "n": 1,
        "items": [PW, None],  # a bare password has no shape: only its key gives it away
    }
    assert count == 2
    assert obj["api_key"] == TOKEN  # input untouched


# --- messages ---


def test_redact_message_content_tool_calls_and_meta() -> None:
    aws, gh = STANDALONE[0][1], STANDALONE[10][1]
    args = json.dumps({"operation": "write_file", "path": ".env", "content": f"API_KEY={TOKEN}\nX=1\n"})
    msg = {
        "role": "assistant",
        "content": f"I will store {aws}.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "file_operations", "arguments": args}},
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "terminal_operations", "arguments": f"not json {gh}"},
            },
            {"id": "call_3", "type": "function", "function": {"name": "x", "arguments": '{"a": 1}'}},
        ],
        "meta": {"seq": 7, "ts": 1714557600.5, "note": aws},
    }
    original = json.loads(json.dumps(msg))
    out, count = Redactor().redact_message(msg)
    assert msg == original  # not mutated
    assert count == 3
    assert out["content"] == f"I will store {placeholder('aws_access_key')}."
    decoded = json.loads(out["tool_calls"][0]["function"]["arguments"])
    assert decoded == {
        "operation": "write_file",
        "path": ".env",
        "content": f"API_KEY={placeholder('api_key')}\nX=1\n",
    }
    assert out["tool_calls"][1]["function"]["arguments"] == f"not json {placeholder('github_token')}"
    assert out["tool_calls"][2]["function"]["arguments"] == '{"a": 1}'  # untouched, byte for byte
    assert [c["id"] for c in out["tool_calls"]] == ["call_1", "call_2", "call_3"]
    assert out["meta"] == original["meta"]  # meta never leaves the machine: left alone


def test_redact_message_multimodal_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _png}}
    msg = {
        "role": "user",
        "content": [{"type": "text", "text": f"key {STANDALONE[2][1]}"}, image],
        "name": "me",
    }
    out, count = Redactor("strict").redact_message(msg)
    assert count == 1
    assert out["content"][0] == {"type": "text", "text": f"key {placeholder('google_api_key')}"}
    assert out["content"][1] == image
    assert out["name"] == "me"


def test_tool_result_message() -> None:
    msg = {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": f"$ env\nHOME=/root\nGITHUB_TOKEN={STANDALONE[10][1]}\n",
    }
    out, count = Redactor().redact_message(msg)
    assert count == 1
    assert out == {**msg, "content": f"$ env\nHOME=/root\nGITHUB_TOKEN={placeholder('github_token')}\n"}


@pytest.mark.parametrize("before", ["\\", "\\\\\\", "x \\"])
def test_a_token_after_a_json_escape_is_redacted_in_either_reading(before: str) -> None:
    """Found by hypothesis: in '\\npm_…' raw JSON reads an escape (\\n) then 'pm_…', plain text a
    backslash then an npm token. The escape's letter stays (raw JSON stays valid), the rest goes."""
    body = "orAkktSLdt88bglCdnrSd3dgYLagNLlveeey"
    text = f"{before}npm_{body} "
    out, labels = Redactor().redact(text)
    assert labels == ["npm_token"] and body not in out
    assert out == f"{before}n[REDACTED:npm_token] "
    assert not _standalone_in(out)
    raw = '{"k": "' + text + '"}'  # the same characters as raw JSON text
    red, _ = Redactor().redact(raw)
    assert body not in red and json.loads(red)["k"] == json.loads('"' + out + '"')
    assert Redactor().redact(f"{before}tpm_{body}") == (f"{before}tpm_{body}", [])  # no secret shape


# --- issue 11: more services, command-line passwords, keys split across string literals ---
HEXL = "0123456789abcdef"
_DISCORD_ID = base64.b64encode(b"112233445566778899").decode().rstrip("=")
DISCORD_TOKEN = f"{_DISCORD_ID}.{rand(6)}.{rand(38, ALNUM + '_-')}"
DISCORD_HOOK = rand(68, ALNUM + "_-")
TELEGRAM = "1234567890:AA" + rand(33, ALNUM + "_-")
SHOPIFY = ["shp" + kind + "_" + rand(32, HEXL) for kind in ("at", "ss", "ca", "pa")]
DIGITALOCEAN = ["do" + kind + "_v1_" + rand(64, HEXL) for kind in "opr"]
VAULT = ["hvs." + rand(91, ALNUM + "_-"), "hvb." + rand(140, ALNUM + "_-")]
DOCKER_AUTH = base64.b64encode(b"deploy:" + PW.encode()).decode()

NEW_CASES: list[Case] = [
    Case("discord_bot_token", DISCORD_TOKEN, f"DISCORD_TOKEN={DISCORD_TOKEN}\n"),
    Case("discord_bot_token", DISCORD_TOKEN, f"client.run('{DISCORD_TOKEN}')\n"),
    Case(
        "discord_webhook",
        DISCORD_HOOK,
        f'{{"url": "https://discord.com/api/webhooks/112233445566778899/{DISCORD_HOOK}"}}',
    ),
    Case("telegram_bot_token", TELEGRAM, f"curl https://api.telegram.org/bot{TELEGRAM}/getMe\n"),
    Case("telegram_bot_token", TELEGRAM, f"bot:\n  token_value: {TELEGRAM}\n"),
    *(Case("shopify_token", s, f"SHOPIFY_ADMIN={s}\n") for s in SHOPIFY),
    *(Case("digitalocean_token", s, f"doctl auth init -t {s}\n") for s in DIGITALOCEAN),
    *(Case("vault_token", s, f"$ vault login {s}\n") for s in VAULT),
    Case(
        "docker_auth",
        DOCKER_AUTH,
        json.dumps({"auths": {"ghcr.io": {"auth": DOCKER_AUTH}}}, indent=2),
    ),
    Case("password", "S3cretPw9", "mysql -h db -u root -pS3cretPw9 app < dump.sql\n"),
    Case("password", PW, f"mysqldump -u root -p'{PW}' app > backup.sql\n"),
    Case("password", PW, f"mysql -h db --password='{PW}' app\n"),
    Case("password", "S3cretPw9", "mariadb -uroot -pS3cretPw9\n"),
    Case("password", PW, f"sshpass -p '{PW}' ssh deploy@host uptime\n"),
    Case("password", "hunter22", "sshpass -phunter22 scp a.txt host:/tmp\n"),
]

NEW_LOOKALIKES: dict[str, str] = {
    "mysql prompts": "mysql -h db -u root -p app\nmysql -P 3306 -h db app\nmysql --skip-password app\n",
    "mysql references": 'mysql -u root -p"$MYSQL_PWD" app\nmysql -p${DB_PASSWORD} app\n',
    "ssh port after sshpass": "sshpass -e ssh -p 2222 deploy@host\nsshpass -f ~/.pw ssh -p 22 host\n",
    "mkdir -p": "mkdir -p build/out && cp -p a b && grep -pattern x\n",
    "docker auth not base64 of user:pass": '{"auth": "dGVzdA==", "auths": {}}',
    "discord-shaped, not an id": f"{rand(24)}.{rand(6)}.{rand(38)}",
    "telegram-shaped times": "12:34:56 1234567890:123 chat_id=1234567890:AB",
    "shopify and do prefixes": "shpat_ is the prefix; dop_v1_ tokens are 64 hex characters",
    "vault paths": "hvs.example is a file; vault kv get secret/app",
    "adjacent literals": '"a" "b" "c"\nprint("sk-", "abc")\nmsg = "AKIA" + " is the prefix"\n',
    "quotes in prose": "it's 'ok' and 'fine', \"really\" \"fine\"\n",
}


@pytest.mark.parametrize("case", NEW_CASES, ids=_id)
@pytest.mark.parametrize("level", ["standard", "strict"])
def test_new_rules_redact_the_secret(case: Case, level: str) -> None:
    out, labels = Redactor(level).redact(case.text)
    assert case.secret not in out
    assert case.label in labels
    if level == "standard":
        assert out == case.text.replace(case.secret, placeholder(case.label))
    assert Redactor(level).redact(out) == (out, [])


@pytest.mark.parametrize("name", sorted(NEW_LOOKALIKES))
def test_new_rules_leave_lookalikes_alone(name: str) -> None:
    text = NEW_LOOKALIKES[name]
    assert Redactor("standard").redact(text) == (text, [])


def test_docker_config_stays_valid_json() -> None:
    text = json.dumps({"auths": {"ghcr.io": {"auth": DOCKER_AUTH}}})
    out, _ = Redactor().redact(text)
    assert json.loads(out) == {"auths": {"ghcr.io": {"auth": placeholder("docker_auth")}}}
    escaped_out, labels = Redactor().redact(json.dumps({"config": text}))
    assert labels == ["docker_auth"] and DOCKER_AUTH not in escaped_out
    assert json.loads(json.loads(escaped_out)["config"])["auths"]["ghcr.io"]["auth"] == placeholder(
        "docker_auth"
    )


_OPENAI = STANDALONE[8][1]
_AWS = STANDALONE[0][1]
_GH = STANDALONE[10][1]


@pytest.mark.parametrize(
    ("code", "secret", "label"),
    [
        (f'KEY = "{_OPENAI[:6]}" "{_OPENAI[6:]}"\n', _OPENAI, "openai_api_key"),
        (f"AWS = '{_AWS[:4]}' + '{_AWS[4:]}'\n", _AWS, "aws_access_key"),
        (f'TOKEN = (\n    "{_GH[:10]}"\n    "{_GH[10:25]}"\n    "{_GH[25:]}"\n)\n', _GH, "github_token"),
        (f'x = f("{_OPENAI[:20]}" + "{_OPENAI[20:]}", timeout=3)\n', _OPENAI, "openai_api_key"),
    ],
)
def test_key_split_across_literals_is_redacted_and_code_stays_valid(
    code: str, secret: str, label: str
) -> None:
    assert ast.parse(code)
    out, labels = Redactor().redact(code)
    assert labels == [label]
    tree = ast.parse(out)  # still valid Python
    values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    joined = "".join(values)
    assert secret not in joined and secret[:4] + secret[-6:] not in joined
    assert placeholder(label) in joined
    assert all(part not in out for part in (secret[8:20], secret[-12:]))
    assert Redactor().redact(out) == (out, [])
    assert Redactor("off").redact(code) == (code, [])
