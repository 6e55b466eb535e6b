"""Redaction of issue 34's shapes: SendGrid, Sentry DSN keys, .pgpass entries in sentences,
secrets wrapped in base64 (Kubernetes Secrets, .dockerconfigjson, auth fields), keys split by a
shell line continuation or by Python's implicit concatenation, and loosely matched prefixed
shapes (age, Grafana, Terraform, Facebook). Each shape: the secret goes, its surroundings stay,
one label, idempotent; each look-alike stays byte for byte."""

from __future__ import annotations

import base64
import json

import pytest
import yaml

from clio.safety.redact import Redactor
from testkit.secrets_corpus import LOOKALIKES, LOOKALIKES_34, SECRETS, SECRETS_34

RND = "Qx7bN2mLp9ZrT4vW8yKc3HdF6gJs1AeU"  # 32 mixed characters (fake)
HEX32 = "9f86d081884c7d659a2feaa0c55ad015"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def one(text: str, level: str = "standard") -> tuple[str, list[str]]:
    out, labels = Redactor(level).redact(text)
    assert Redactor(level).redact(out) == (out, [])  # idempotent
    return out, labels


@pytest.mark.parametrize("level", ["standard", "strict"])
def test_the_issue_34_corpus_is_caught_and_its_lookalikes_kept(level: str) -> None:
    red = Redactor(level)
    missed = [s.label for s in SECRETS_34 if s.secret in red.redact(s.text)[0]]
    assert missed == []
    damaged = [lk.name for lk in LOOKALIKES_34 if red.redact(lk.text)[0] != lk.text]
    assert damaged == []


@pytest.mark.parametrize("level", ["standard", "strict"])
def test_the_earlier_corpus_is_unchanged(level: str) -> None:
    red = Redactor(level)
    earlier = [s for s in SECRETS if s not in SECRETS_34]
    assert [s.label for s in earlier if s.clio and s.secret in red.redact(s.text)[0]] == []
    assert [lk.name for lk in LOOKALIKES if lk not in LOOKALIKES_34 and red.redact(lk.text)[0] != lk.text] == []


@pytest.mark.parametrize(
    ("text", "secret", "label"),
    [
        # SendGrid, the usual lengths and others
        (f"SENDGRID_KEY_ID=SG.{RND[:22]}.{RND}{RND[:11]}\n", f"SG.{RND[:22]}", "sendgrid_api_key"),
        (f"key SG.{RND[:18]}.{RND}{RND[:16]} in use", f"SG.{RND[:18]}", "sendgrid_api_key"),
        # Sentry DSN: the key, not the host nor the project
        (f"SENTRY_DSN=https://{HEX32}@o4505.ingest.sentry.io/4505123\n", HEX32, "sentry_dsn"),
        (f"dsn = 'https://{HEX32}@sentry.example.com/12'", HEX32, "sentry_dsn"),
        (f"https://{HEX32}@errors.example.com/api/7", HEX32, "sentry_dsn"),
        # .pgpass entries inside sentences
        ('Put "db.example.com:5432:app:me:Zq8vR2pLmX" in ~/.pgpass', "Zq8vR2pLmX", "password"),
        ("the pgpass line is 10.1.2.3:5432:*:app:Zq8vR2pLmX, then chmod 600", "Zq8vR2pLmX", "password"),
        ("`*:*:app:me:Zq8vR2pLmX` goes into .pgpass", "Zq8vR2pLmX", "password"),
        # loosely matched prefixes
        ("AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2, "AGE-SECRET-KEY-1QPZRY9X8", "age_secret_key"),
        ("age-secret-key-1" + "qpzry9x8gf2tvdw0s3jn54khce6mua7l" * 2, "qpzry9x8gf2tvdw0", "age_secret_key"),
        (f"GRAFANA=glsa_{RND[:30]}_{HEX32[:6]}", f"glsa_{RND[:30]}", "grafana_token"),
        (f'token = "{RND[:16]}.atlasv1.{RND}{RND}{RND[:20]}"', "atlasv1", "terraform_token"),
        (f"fb=EAAB{RND}{RND}{RND}", f"EAAB{RND}", "facebook_token"),
        (f"page token EAAA{RND}{RND}{RND}{RND}{RND}", f"EAAA{RND}", "facebook_token"),
        (f"DOCKER_PAT=dckr_pat_{RND[:27]}", f"dckr_pat_{RND[:27]}", "docker_pat"),
    ],
)
def test_new_shapes(text: str, secret: str, label: str) -> None:
    out, labels = one(text)
    assert secret not in out, out
    assert labels == [label], (labels, out)


def test_sentry_keeps_the_host_and_project() -> None:
    out, _ = one(f"SENTRY_DSN=https://{HEX32}@o4505.ingest.sentry.io/4505123\n")
    assert out == "SENTRY_DSN=https://[REDACTED:sentry_dsn]@o4505.ingest.sentry.io/4505123\n"


def test_a_kubernetes_secret_keeps_its_harmless_values_and_stays_yaml() -> None:
    url, stripe = "postgres://app:Tr0ub4dor&3x@db:5432/app", "sk_" + "live_" + RND[:24]
    doc = (
        "apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n"
        f"  LOG_LEVEL: {b64('info')}\n  DATABASE_URL: {b64(url)}\n  PAYMENTS: \"{b64(stripe)}\"\n"
    )
    out, labels = one(doc)
    assert labels == ["base64_url_password", "base64_stripe_key"]
    assert f"LOG_LEVEL: {b64('info')}" in out  # decodes to harmless text: kept
    assert b64(url) not in out and b64(stripe) not in out
    assert yaml.safe_load(out)["data"]["DATABASE_URL"] == "[REDACTED:base64_url_password]"


def test_a_dockerconfigjson_is_decoded_twice() -> None:
    cfg = json.dumps({"auths": {"ghcr.io": {"auth": b64("deploy:Hunter2Hunter2")}}})
    doc = f"kind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {b64(cfg)}\n"
    out, labels = one(doc)
    assert labels == ["base64_docker_auth"] and b64(cfg) not in out


def test_base64_in_json_and_env_lines() -> None:
    aws = "aws_secret_access_key = " + RND + "ab12CD34"
    text = json.dumps({"kind": "Secret", "data": {"credentials": b64(aws), "region": b64("eu-west-1")}})
    out, labels = one(text)
    assert labels == ["base64_aws_secret_key"]
    assert json.loads(out)["data"] == {"credentials": "[REDACTED:base64_aws_secret_key]", "region": b64("eu-west-1")}
    out, labels = one(f"export DOCKER_AUTH_CONFIG={b64(json.dumps({'auths': {'r': {'auth': b64('u:pAssw0rd99')}}}))}\n")
    assert labels == ["base64_docker_auth"], out


def test_a_yaml_auth_field_is_a_user_and_password() -> None:
    out, labels = one(f"registry:\n  auth: {b64('ci-bot:S3cretPassw0rd')}\n")
    assert out == "registry:\n  auth: '[REDACTED:docker_auth]'\n" and labels == ["docker_auth"]
    assert one(f"registry:\n  auth: {b64('just some words')}\n")[1] == []  # no user:password inside


@pytest.mark.parametrize(
    "text",
    [
        f"  GREETING: {b64('Hello, world! How are you today?')}\n",
        f'{{"payload": "{b64("{}")}{b64("a harmless sentence here")}"}}',
        f"CONFIG={b64('debug=true workers=4')}\n",
        f"image: {base64.b64encode(bytes(range(48))).decode()}\n",  # binary: not text
        f"x = {b64('password=hunter2hunter2')}  # in code, not a value line: left\n",
    ],
)
def test_base64_lookalikes_are_kept(text: str) -> None:
    assert Redactor("standard").redact(text) == (text, [])


def test_a_key_split_by_a_shell_line_continuation() -> None:
    gh = "ghp_" + RND + "9aB4"
    text = f"./deploy.sh --region eu \\\n  --token {gh[:14]}\\\n{gh[14:]} --yes\necho done\n"
    out, labels = one(text)
    assert out == "./deploy.sh --region eu \\\n  --token [REDACTED:github_token] --yes\necho done\n"
    assert labels == ["github_token"]
    crlf = f"curl -H 'x: y' \\\r\n  -d k={gh[:9]}\\\r\n{gh[9:20]}\\\r\n{gh[20:]}\r\n"
    out, labels = one(crlf)
    assert gh[9:20] not in out and gh[20:] not in out and labels == ["github_token"], out


def test_continuations_between_words_are_left_alone() -> None:
    text = "docker run --rm \\\n  -v $PWD:/src \\\n  python:3.12 \\\n  pytest -q\nsha256sum a\\\nb\n"
    assert Redactor("strict").redact(text) == (text, [])


@pytest.mark.parametrize(
    "template",
    [
        'KEY = (\n    "{a}"  # the first part\n    "{b}"\n)\n',
        'KEY = "{a}" r"{b}"\n',
        "KEY = ('{a}'  # first\n       u'{b}')\n",
        'client = OpenAI(api_key="{a}"\n                "{b}")\n',
    ],
)
def test_implicit_concatenation_with_comments_and_prefixes(template: str) -> None:
    key = "sk-proj-" + RND + RND
    text = template.format(a=key[:12], b=key[12:])
    out, labels = one(text)
    assert key[12:] not in out and key[:12] not in out, out
    assert labels == ["openai_api_key"]
    compile(out, "<redacted>", "exec")  # still Python


@pytest.mark.parametrize(
    "text",
    [
        "SG.prototype.init = init\nnew SG.Transport(opts)\n",
        "https://o4505.ingest.sentry.io/api/4505/envelope/ and https://bob@example.com/42\n",
        f"commit https://github.com/org/repo/commit/{HEX32}12345678\n",
        "The ~/.pgpass format is hostname:port:database:username:password.\n",
        "pgpass: see localhost:8080:api:GET:200\n",
        'msg = ("sk-" "learn"  # a library\n       "is nice")\n',
        "AGE-SECRET-KEY-1 starts every age key\nglsa_enabled = true\nEAAB_VERSION=3\n",
        "tokens look like xxxxxx.atlasv1.yyyyyy\n",
    ],
)
def test_lookalikes_of_the_new_shapes(text: str) -> None:
    for level in ("standard", "strict"):
        assert Redactor(level).redact(text) == (text, []), level
