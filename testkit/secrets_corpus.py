"""One corpus for judging secret redaction (issue 11): secrets of many providers inside realistic
text (shell commands, env files, JSON, YAML, code, logs), and look-alikes that must stay intact
(UUIDs, git SHAs, base64 of ordinary data, hashes, long identifiers, example placeholders).

Secrets are built at import time by a seeded generator with the right shape per provider, so no
secret-shaped literal sits in the repository (code hosts' push protection would flag it) and the
corpus is the same on every run. Used by benches/bench_secrets.py and tests/unit/test_redaction_sinks.py.

Each :class:`Secret` has ``secret`` (the exact characters that must disappear; for a key split
across string literals, its longer part) and ``text`` (the
surroundings, with ``kind`` telling which: env, shell, json, yaml, code, log, prose); ``clio``
says whether clio's rules are meant to catch it (a few providers are here to measure gaps).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from dataclasses import dataclass

__all__ = ["LOOKALIKES", "LOOKALIKES_34", "SECRETS", "SECRETS_34", "Lookalike", "Secret", "corpus_text"]

_rnd = random.Random(11_2024)
_ALNUM = string.ascii_letters + string.digits
_UP = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_URLSAFE = _ALNUM + "-_"
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _r(n: int, alphabet: str = _ALNUM) -> str:
    """Random characters mixing every class the alphabet has (real keys nearly always do)."""
    classes = [
        c for c in (string.ascii_lowercase, string.ascii_uppercase, string.digits) if set(c) & set(alphabet)
    ]
    while True:
        s = "".join(_rnd.choice(alphabet) for _ in range(n))
        if all(set(s) & set(c) for c in classes):
            return s


@dataclass(frozen=True)
class Secret:
    label: str  # the provider / shape
    secret: str  # what must not survive
    text: str  # the secret in its surroundings
    kind: str  # env, shell, json, yaml, code, log, prose
    clio: bool = True  # False: a shape clio has no rule for (measured, not required)


@dataclass(frozen=True)
class Lookalike:
    name: str
    text: str  # must come out unchanged


def _pem() -> str:
    body = "\n".join(_r(64, _ALNUM + "+/") for _ in range(8))
    return (
        f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n{_r(24, _ALNUM + '+/')}==\n-----END RSA PRIVATE KEY-----"
    )


def _jwt() -> str:
    def enc(d: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")

    return f"{enc({'alg': 'HS256', 'typ': 'JWT'})}.{enc({'sub': '42', 'iat': 1716239022})}.{_r(43, _URLSAFE)}"


# provider -> a correctly shaped fake value
_SHAPES: list[tuple[str, str, bool]] = [
    ("aws_access_key", "AKIA" + _r(16, _UP), True),
    ("google_api_key", "AIza" + _r(35, _URLSAFE), True),
    ("gcp_client_secret", "GOCSPX-" + _r(28, _URLSAFE), True),
    ("gcp_access_token", "ya29." + _r(90, _URLSAFE), True),
    ("azure_client_secret", _r(3) + "8Q~" + _r(34, _ALNUM + "~._-"), True),
    ("anthropic_api_key", "sk-ant-api03-" + _r(93, _URLSAFE) + "AA", True),
    ("openai_api_key", "sk-proj-" + _r(120, _URLSAFE), True),
    ("openai_api_key", "sk-" + _r(48), True),
    ("github_token", "ghp_" + _r(36), True),
    ("github_token", "github_pat_" + _r(22) + "_" + _r(59), True),
    ("gitlab_token", "glpat-" + _r(20, _URLSAFE), True),
    ("slack_token", "xoxb-" + _r(12, string.digits) + "-" + _r(13, string.digits) + "-" + _r(24), True),
    ("stripe_key", "sk_" + "live_" + _r(24), True),
    ("stripe_key", "whsec_" + _r(32), True),
    ("twilio_api_key", "SK" + _r(32, _HEX), True),
    ("sendgrid_api_key", "SG." + _r(22, _URLSAFE) + "." + _r(43, _URLSAFE), True),
    ("npm_token", "npm_" + _r(36), True),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmc" + _r(100, _URLSAFE), True),
    ("huggingface_token", "hf_" + _r(34), True),
    ("jwt", _jwt(), True),
    (
        "discord_bot_token",
        base64.b64encode(b"998877665544332211").decode().rstrip("=") + "." + _r(6) + "." + _r(38, _URLSAFE),
        True,
    ),
    ("telegram_bot_token", "7123456789:AA" + _r(33, _URLSAFE), True),
    ("shopify_token", "shpat_" + _r(32, _HEX), True),
    ("shopify_token", "shpss_" + _r(32, _HEX), True),
    ("digitalocean_token", "dop_v1_" + _r(64, _HEX), True),
    ("vault_token", "hvs." + _r(91, _URLSAFE), True),
    # shapes added for issue 25 (the first four were measured as gaps before)
    ("mailgun_key", "key-" + _r(32, _HEX), True),
    ("databricks_token", "dapi" + _r(32, _HEX), True),
    ("postman_key", "PMAK-" + _r(24, _HEX) + "-" + _r(34, _HEX), True),
    ("linear_key", "lin_api_" + _r(40), True),
    ("square_token", "EAAA" + _r(60, _URLSAFE), True),
    ("square_token", "sq0atp-" + _r(22, _URLSAFE), True),
    ("fcm_server_key", "AAAA" + _r(7, _URLSAFE) + ":APA91b" + _r(134, _URLSAFE), True),
    ("newrelic_key", "NRAK-" + _r(27, _UP), True),
    ("atlassian_token", "ATATT3" + _r(186, _URLSAFE), True),
    ("grafana_token", "glsa_" + _r(32) + "_" + _r(8, _HEX), True),
    ("age_secret_key", "AGE-SECRET-KEY-1" + "".join(_rnd.choice(_BECH32) for _ in range(58)), True),
]

# surroundings for a bare shape, rotated over the providers
_PLACES: list[tuple[str, str]] = [
    ("env", "# service settings\nSERVICE_URL=https://api.example.com\nSERVICE_CRED={s}\nLOG_LEVEL=info\n"),
    ("shell", "$ curl -sS -H 'X-Client: cli' -d 'cred={s}' https://api.example.com/v1/items | jq .\n"),
    ("json", '{\n  "service": "billing",\n  "cred": "{s}",\n  "retries": 3\n}\n'),
    ("yaml", "service:\n  name: billing\n  cred: {s}\n  retries: 3\n"),
    ("code", 'import client\n\nCLIENT = client.make(cred="{s}", timeout=30)\n'),
    ("log", "2024-05-01T10:00:00.123Z INFO auth loaded credential {s} for tenant 42 (12ms)\n"),
    ("prose", "I pasted the wrong thing earlier, the value was {s} and it is rotated now.\n"),
]


def _secrets() -> list[Secret]:
    out: list[Secret] = []
    for i, (label, value, clio) in enumerate(_SHAPES):
        kind, tpl = _PLACES[i % len(_PLACES)]
        out.append(Secret(label, value, tpl.replace("{s}", value), kind, clio))
    aws_secret, pw = _r(40, _ALNUM + "/+"), "Tr0ub4dor&3x!" + _r(4)
    hook, dhook = f"T{_r(8, _UP)}/B{_r(10, _UP)}/{_r(24)}", _r(68, _URLSAFE)
    docker = base64.b64encode(b"deploy:" + pw.encode()).decode()
    oa, ak = _SHAPES[7][1], _SHAPES[0][1]
    out += [
        Secret(
            "aws_secret_key",
            aws_secret,
            f"[default]\naws_access_key_id = AKIA{'X' * 4}\naws_secret_access_key = {aws_secret}\n",
            "env",
        ),
        Secret(
            "azure_storage_key",
            (az := base64.b64encode(_rnd.randbytes(64)).decode()),
            f"AZURE_CONN=DefaultEndpointsProtocol=https;AccountName=a;AccountKey={az};EndpointSuffix=core.windows.net\n",
            "env",
        ),
        Secret(
            "slack_webhook",
            hook,
            f'{{"webhook": "https://hooks.slack.com/services/{hook}"}}',
            "json",
        ),
        Secret(
            "discord_webhook",
            dhook,
            f"DISCORD_HOOK=https://discord.com/api/webhooks/112233445566778899/{dhook}\n",
            "env",
        ),
        Secret("private_key", _pem(), "", "shell"),
        Secret("url_password", pw, f"DATABASE_URL=postgres://app:{pw}@db.internal:5432/app\n", "env"),
        Secret(
            "bearer_token",
            (tok := _r(40)),
            f'curl -H "Authorization: Bearer {tok}" https://api.example.com\n',
            "shell",
        ),
        Secret("password", pw, f'database:\n  host: db\n  password: "{pw}"\n', "yaml"),
        Secret("password", (p2 := "S3cret" + _r(6)), f"mysql -h db -u root -p{p2} app < dump.sql\n", "shell"),
        Secret("password", pw, f"sshpass -p '{pw}' ssh deploy@host uptime\n", "shell"),
        Secret("docker_auth", docker, json.dumps({"auths": {"ghcr.io": {"auth": docker}}}, indent=2), "json"),
        Secret("split_literal", oa[10:], f'OPENAI = "{oa[:10]}" "{oa[10:]}"\n', "code"),
        Secret("split_literal", ak[4:], f"AWS_ID = '{ak[:4]}' + '{ak[4:]}'\n", "code"),
        Secret("token", (t2 := _r(40)), f'{{"access_token": "{t2}", "expires_in": 3600}}', "json"),
        Secret("api_key", (t3 := _r(32, _HEX)), f"DD_API_KEY={t3}\n", "env"),
    ]
    pg, nrc, kube = "pg-" + _r(14), "Nr" + _r(12), base64.b64encode(_rnd.randbytes(120)).decode()
    tf, ppk = _r(14) + ".atlasv1." + _r(67, _URLSAFE), "\n".join(_r(64, _ALNUM + "+/") for _ in range(4))
    out += [
        Secret("password", nrc, f"machine api.example.com\n  login deploy\n  password {nrc}\n", "env"),
        Secret("password", pg, f"db.example.com:5432:app:deploy:{pg}\n", "env"),
        Secret("private_key", kube, "users:\n- name: admin\n  user:\n    client-certificate-data: "
               f"{base64.b64encode(b'-----BEGIN CERTIFICATE-----').decode()}\n    client-key-data: {kube}\n", "yaml"),
        Secret("private_key", ppk, "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me@box\n"
               f"Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAI{_r(20)}\n{_r(20)}\nPrivate-Lines: 4\n{ppk}\n"
               f"Private-MAC: {_r(64, _HEX)}\n", "env"),
        Secret("terraform_token", tf, f'credentials "app.terraform.io" {{\n  token = "{tf}"\n}}\n', "code"),
        Secret("algolia_key", (alg := _r(32, _HEX)), f'const client = algoliasearch("ABCD1234EF", "{alg}");\n', "code"),
        Secret("split_join", (sj := _r(40)), f'KEY = "".join(["sk-proj-", "{sj}"])\n', "code"),
    ]  # fmt: skip
    pem = next(s for s in out if s.label == "private_key")
    out[out.index(pem)] = Secret(
        "private_key", pem.secret, f"$ cat ~/.ssh/id_rsa\n{pem.secret}\n$ ls\n", "shell"
    )
    return out


def _lookalikes() -> list[Lookalike]:
    sha1 = hashlib.sha1(b"clio").hexdigest()
    sha256 = hashlib.sha256(b"clio").hexdigest()
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + random.Random(3).randbytes(300)).decode()
    return [
        Lookalike(
            "uuids",
            f"request_id={uuid.UUID(int=_rnd.getrandbits(128))} trace={uuid.UUID(int=_rnd.getrandbits(128))}\n",
        ),
        Lookalike(
            "git log", f"commit {sha1}\nMerge: {sha1[:7]} {sha1[7:14]}\nDate:   Tue May 7 10:00:00 2024\n"
        ),
        Lookalike("hashes", f"md5={hashlib.md5(b'x').hexdigest()} sha256={sha256}\n"),
        Lookalike("docker digest", f"FROM python:3.12-slim@sha256:{sha256}\n"),
        Lookalike(
            "npm integrity",
            json.dumps({"integrity": "sha512-" + base64.b64encode(hashlib.sha512(b"x").digest()).decode()}),
        ),
        Lookalike(
            "go.sum",
            f"golang.org/x/text v0.14.0 h1:{base64.b64encode(hashlib.sha256(b'g').digest()).decode()}\n",
        ),
        Lookalike(
            "base64 of a sentence",
            base64.b64encode(b"These are not the droids you are looking for.").decode() + "\n",
        ),
        Lookalike(
            "base64 of json",
            "payload: " + base64.b64encode(b'{"user": 42, "items": [1, 2, 3]}').decode() + "\n",
        ),
        Lookalike("data uri", f'<img src="data:image/png;base64,{png}">\n'),
        Lookalike(
            "long identifiers",
            "AbstractSingletonProxyFactoryBean InputUnionMember1DecisionInputFunctionCall very_long_snake_case_identifier_name_2024\n",
        ),
        Lookalike(
            "k8s names",
            "pod/api-server-7d9f8b6c5d-x2k4p deployment.apps/frontend-canary-v2 configmap/app-settings-prod\n",
        ),
        Lookalike(
            "placeholders",
            'OPENAI_API_KEY=<your-api-key>\nGITHUB_TOKEN=${GITHUB_TOKEN}\nAWS_SECRET_ACCESS_KEY=YOUR_SECRET_HERE\npassword: "****"\ntoken: xxxxxxxxxxxxxxxx\n',
        ),
        Lookalike("example shapes", "ghp_" + "x" * 36 + " sk-" + "." * 20 + " token: changeme\n"),
        Lookalike(
            "python code",
            "def login(self, password: str, token: str | None = None) -> None:\n    self.token = token\n    api_key = settings.OPENAI_API_KEY\n    max_tokens: int = 4096\n",
        ),
        Lookalike(
            "json schema",
            '{"password": {"type": "string", "minLength": 8}, "max_tokens": 4096, "token": null}\n',
        ),
        Lookalike(
            "ssh public key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_r(43, _ALNUM + '+/')} deploy@ci\n"
        ),
        Lookalike(
            "urls", "https://example.com:8443/path?q=1 git@github.com:org/repo.git ssh://git@host:22/r.git\n"
        ),
        Lookalike(
            "versions and times",
            "python 3.12.3 numpy==1.26.4 2024-05-01T10:00:00.123456+02:00 epoch=1714557600123\n",
        ),
        Lookalike(
            "shell",
            "mysql -h db -u root -p app\nsshpass -e ssh -p 2222 deploy@host\nmkdir -p build && cp -p a b\n",
        ),
        Lookalike(
            "adjacent literals", 'print("sk-", "abc")\nmsg = "AKIA" + " is the AWS key prefix"\nx = "a" "b"\n'
        ),
        Lookalike(
            "css and paths", "color: #e6edf3; /usr/lib/python3.12/site-packages/clio/safety/redact.py\n"
        ),
        # one per shape added for issue 25
        Lookalike("netrc prose", "machine learning\npassword reset is done from the login page\n"),
        Lookalike("pgpass-like log", "localhost:8080:api:GET:200\nredis:6379:0:ok\n"),
        Lookalike("kube cert", "    client-certificate-data: " + base64.b64encode(b"-----BEGIN CERTIFICATE-----").decode() + "\n"),
        Lookalike("putty public", "PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 2\n"),
        Lookalike("age public key", "recipient: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n"),
        Lookalike("terraform reference", 'credentials "app.terraform.io" {\n  token = var.tfe_token\n}\n'),
        Lookalike("mailgun-like cache key", f"CACHE_KEY=redis-key-{hashlib.md5(b'k').hexdigest()}\n"),
        Lookalike("square-like base64", "EAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"),
        Lookalike("algolia app id", "algolia_app_id: ABCD1234EF\nalgoliasearch 4.20.0\n"),
        Lookalike("fcm-like", "AAAA" + "B" * 7 + ":not-a-key\n"),
        Lookalike("linear docs", "lin_api_docs = 'https://linear.app/docs'\n"),
        Lookalike("databricks-like", "dapi_version=2.0 dapi-client\n"),
        Lookalike("newrelic example", "keys look like NRAK-XXXX\n"),
        Lookalike("postman placeholder", "Postman keys look like PMAK-<24 hex>-<34 hex>\n"),
        Lookalike("atlassian short", "prefix ATATT3xxxx is Atlassian's\n"),
        Lookalike("grafana name", 'glsa_token_name = "ci"\n'),
        Lookalike("join of words", 'parts = ", ".join(["alpha", "beta"])\nkey = "".join(["sk-", "abc"])\n'),
    ]


# --- issue 34: new shapes, and shapes matched so exactly that a slightly different one passed ---
# (a generator of its own, so that the secrets and look-alikes above stay as they were)
_rnd34 = random.Random(34_2025)


def _r34(n: int, alphabet: str = _ALNUM) -> str:
    classes = [
        c for c in (string.ascii_lowercase, string.ascii_uppercase, string.digits) if set(c) & set(alphabet)
    ]
    while True:
        got = "".join(_rnd34.choice(alphabet) for _ in range(n))
        if all(set(got) & set(c) for c in classes):
            return got


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secrets_34() -> list[Secret]:
    sg = "SG." + _r34(22, _URLSAFE) + "." + _r34(43, _URLSAFE)
    sg_odd = "SG." + _r34(20, _URLSAFE) + "." + _r34(46, _URLSAFE)
    dsn, dsn2 = _r34(32, _HEX), _r34(32, _HEX)
    pg1, pg2 = "Zq8!vR2#" + _r34(6), "pL" + _r34(10)
    db_pw, stripe = "Tr0ub4dor&" + _r34(8), "sk_" + "live_" + _r34(24)
    docker_pw = "dckr_pat_" + _r34(27, _URLSAFE)
    dockercfg = json.dumps({"auths": {"ghcr.io": {"auth": _b64("deploy:" + docker_pw)}}})
    aws_cfg = f"[default]\naws_access_key_id = AKIA{_r34(16, _UP)}\naws_secret_access_key = {_r34(40, _ALNUM + '/+')}\n"
    gh, oa = "ghp_" + _r34(36), "sk-proj-" + _r34(100, _URLSAFE)
    age = "AGE-SECRET-KEY-1" + "".join(_rnd34.choice(_BECH32) for _ in range(62))
    age_low = "AGE-SECRET-KEY-1" + "".join(_rnd34.choice(_BECH32.lower()) for _ in range(58))
    glsa = "glsa_" + _r34(30) + "_" + _r34(6, _HEX)
    atlas = _r34(16) + ".atlasv1." + _r34(84, _URLSAFE)
    fb = "EAAB" + _r34(180)
    fb_a = "EAAA" + _r34(150)
    k8s = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\ndata:\n"
        f"  LOG_LEVEL: {_b64('info')}\n  DATABASE_URL: {_b64(f'postgres://app:{db_pw}@db:5432/app')}\n"
        f"  PAYMENTS: {_b64(stripe)}\n"
    )
    return [
        Secret("sendgrid_api_key", sg, f'{{"provider": "sendgrid", "value": "{sg}"}}\n', "json"),
        Secret("sendgrid_api_key", sg_odd, f"mail relay configured with {sg_odd} since Monday\n", "prose"),
        Secret("sentry_dsn", dsn, f"SENTRY_DSN=https://{dsn}@o4505123.ingest.sentry.io/4505123456\n", "env"),
        Secret("sentry_dsn", dsn2, f'Sentry.init({{ dsn: "https://{dsn2}@o123.ingest.us.sentry.io/456" }});\n', "code"),
        Secret("password", pg1, f'Add the line "db.prod.example.com:5432:orders:app_user:{pg1}" to ~/.pgpass.\n', "prose"),
        Secret("password", pg2, f"the pgpass entry is 10.0.0.7:5432:orders:app:{pg2} and it works\n", "prose"),
        Secret("base64_k8s_secret", _b64(f"postgres://app:{db_pw}@db:5432/app"), k8s, "yaml"),
        Secret("base64_k8s_secret", _b64(stripe), k8s, "yaml"),
        Secret(
            "base64_dockerconfigjson",
            _b64(dockercfg),
            "kind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n"
            f"  .dockerconfigjson: {_b64(dockercfg)}\n",
            "yaml",
        ),
        Secret(
            "base64_json_secret",
            _b64(aws_cfg),
            json.dumps({"apiVersion": "v1", "kind": "Secret", "data": {"credentials": _b64(aws_cfg)}}) + "\n",
            "json",
        ),
        Secret("base64_auth", _b64("ci-bot:" + docker_pw), f"registry:\n  auth: {_b64('ci-bot:' + docker_pw)}\n", "yaml"),
        Secret("split_shell", gh[14:], f"./deploy.sh --region eu \\\n  --token {gh[:14]}\\\n{gh[14:]}\n", "shell"),
        Secret("split_shell", oa[20:], f"export OPENAI_API_KEY={oa[:20]}\\\n{oa[20:]}\n", "shell"),
        Secret("split_literal", oa[12:], f'KEY = (\n    "{oa[:12]}"  # the first part\n    "{oa[12:]}"\n)\n', "code"),
        Secret("split_literal", gh[10:], f'TOKEN = "{gh[:10]}" r"{gh[10:]}"\n', "code"),
        Secret("age_secret_key", age, f"# created: 2025-01-01\n{age}\n", "env"),
        Secret("age_secret_key", age_low, f"key: {age_low}\n", "yaml"),
        Secret("grafana_token", glsa, f"GRAFANA_SA={glsa}\n", "env"),
        Secret("terraform_token", atlas, f'credentials "tfe.example.com" {{\n  token = "{atlas}"\n}}\n', "code"),
        Secret("facebook_token", fb, f"curl 'https://graph.facebook.com/me?fields=id&access={fb}'\n", "shell"),
        Secret("facebook_token", fb_a, f"page access: {fb_a}\n", "log"),
    ]


def _lookalikes_34() -> list[Lookalike]:
    return [
        Lookalike("SG. not a key", "SG.prototype.init = init; new SG.Transport(opts); aws_security_group: SG.web-tier\n"),
        Lookalike("sentry url without a key", "https://o4505123.ingest.sentry.io/api/4505123456/envelope/ https://sentry.io/organizations/acme/issues/\n"),
        Lookalike("url with a plain user", "https://deploy@git.example.com/org/repo.git and https://bob@example.com/42\n"),
        Lookalike("pgpass format in prose", "The ~/.pgpass format is hostname:port:database:username:password, one per line.\n"),
        Lookalike("pgpass-like log in a sentence", "pgpass was ignored; the log said localhost:8080:api:GET:200 then redis:6379:0:ok\n"),
        Lookalike(
            "base64 config values",
            "kind: ConfigMap\ndata:\n  LOG_LEVEL: aW5mbw==\n  GREETING: " + _b64("Hello, world!") + "\n"
            "  settings.json: " + _b64('{"debug": true, "workers": 4}') + "\n",
        ),
        Lookalike("k8s secret of harmless values", "kind: Secret\ndata:\n  username: " + _b64("admin") + "\n  region: " + _b64("eu-west-1") + "\n"),
        Lookalike("shell continuations", "docker run --rm \\\n  -v $PWD:/src \\\n  python:3.12 \\\n  pytest -q\n"),
        Lookalike("implicit concatenation of words", 'msg = ("sk-" "learn is a library"\n       "; see the docs")\nprefix = "gh" r"p_"\n'),
        Lookalike("age prefix in prose", "age secret keys start with age-secret-key-1 (74 characters in all)\n"),
        Lookalike("grafana names", "glsa_enabled = true\nglsa_token_name = 'ci'\n"),
        Lookalike("atlasv1 in docs", "Terraform Cloud tokens look like xxxxxx.atlasv1.yyyyyy\n"),
        Lookalike("EAA words", "EAAB_VERSION=3 EAAGLE_MODE=on EAAAAAAAAA= EAACCESS_LIST\n"),
    ]


SECRETS: list[Secret] = _secrets()
LOOKALIKES: list[Lookalike] = _lookalikes()
# issue 34's own corpus, also part of the whole one (benches/bench_secrets.py, the sink tests)
SECRETS_34: list[Secret] = _secrets_34()
LOOKALIKES_34: list[Lookalike] = _lookalikes_34()
SECRETS += SECRETS_34
LOOKALIKES += LOOKALIKES_34


def corpus_text() -> str:
    """Every secret text and look-alike, one after the other (for throughput figures)."""
    return "\n".join([s.text for s in SECRETS] + [lk.text for lk in LOOKALIKES])
