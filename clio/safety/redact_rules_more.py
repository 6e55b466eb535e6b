"""More secret shapes for clio.safety.redact (issue 25): credential files (.netrc over several
lines, .pgpass, kubeconfig, PuTTY keys, age, Terraform) and services (Mailgun, Square, Algolia,
Firebase Cloud Messaging, Linear, Databricks, New Relic, Postman, Atlassian, Grafana).

Several regexes follow gitleaks' default rules (config/gitleaks.toml, MIT licence, Copyright (c)
2019 Zachary Rice; see NOTICE), measured against clio's corpus (benches/bench_secrets.py) and
adopted where they caught more without damaging a look-alike; where gitleaks needs a keyword
nearby (Mailgun, Algolia, New Relic), clio uses the key's own prefix and word boundaries instead,
or the call that takes it (``algoliasearch(appId, key)``).
"""

from __future__ import annotations

from clio.safety.redact_rules import Rule, _rule

__all__ = ["MORE_RULES"]

_END = r"(?![A-Za-z0-9_-])"
_HOST = r"(?:[A-Za-z0-9-]+\.[A-Za-z0-9.-]+|localhost|\*|\[[0-9a-fA-F:]+\])"

_PGPASS = _HOST + r":(?:\d{1,5}|\*):[A-Za-z0-9_.*-]+:[A-Za-z0-9_.@*-]+:"  # up to the password


def _password_like(value: str) -> bool:
    """A .pgpass password, not the last field of a log line (``localhost:8080:api:GET:200``)."""
    return len(value) >= 6 and not value.isdigit()


MORE_RULES: tuple[Rule, ...] = (
    # .netrc, also over several lines: machine HOST login USER password PASS (the password goes)
    *(
        _rule(
            "password",
            head + r"\s+login[ \t]+\S+(?:\s+account[ \t]+\S+)?\s+password[ \t]+(?P<s>\S+)",
            (needle,),
            bounded="",
        )
        for head, needle in ((r"machine[ \t]+\S+", "machine"), ("default", "default"))
    ),
    # .pgpass: host:port:database:user:password, one per line
    _rule(
        "password",
        r"(?m)^" + _HOST + r":(?:\d{1,5}|\*):[A-Za-z0-9_.*-]+:[A-Za-z0-9_.@*-]+:(?P<s>[^\s:][^\n]*?)[ \t]*$",
        (":",),
        check=_password_like,
    ),
    # kubeconfig: the client's private key (the certificate next to it is public and stays)
    _rule("private_key", r"client-key-data:[ \t]*[\"']?(?P<s>[A-Za-z0-9+/]{20,}={0,2})", ("client-key-data",)),
    # PuTTY .ppk: the private lines and their MAC (the header and the public lines stay)
    _rule(
        "private_key",
        r"Private-Lines:[ \t]*\d+\r?\n(?P<s>(?:[A-Za-z0-9+/]+={0,2}\r?\n?)+(?:Private-MAC:[ \t]*[0-9a-fA-F]+)?)",
        ("Private-Lines",),
    ),
    # age: 58 bech32 characters; any case and length 40-100 (issue 34: the prefix is distinctive)
    _rule("age_secret_key", r"(?i)age-secret-key-1[0-9a-z]{40,100}(?![0-9a-z])", ("age-secret-key-1",)),
    # Terraform Cloud / Enterprise API token (in credentials "app.terraform.io" { token = "..." }):
    # <14>.atlasv1.<60-70>, lengths loosely
    _rule("terraform_token", r"[A-Za-z0-9]{6,32}\.atlasv1\.[A-Za-z0-9_=-]{30,120}" + _END, (".atlasv1.",)),
    _rule("mailgun_key", r"key-[a-f0-9]{32}" + _END, ("key-",), bounded="-"),  # (pubkey-: public)
    _rule("square_token", r"(?:EAAA[A-Za-z0-9_-]{56,60}|sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43})" + _END,
          ("EAAA", "sq0atp-", "sq0csp-"), 3, bounded=""),  # fmt: skip
    # Algolia: the key named as such, or the second argument of algoliasearch(appId, apiKey)
    _rule(
        "algolia_key",
        r"(?i)algolia[a-z_.-]{0,30}[\"']?[ \t]*(?:=>|[:=(,])[ \t]*[\"']?(?:[a-z0-9]{10}[\"']?[ \t]*,[ \t]*[\"']?)?"
        r"(?P<s>[a-f0-9]{32})(?![a-z0-9])",
        ("algolia",),
    ),
    # Firebase Cloud Messaging legacy server key
    _rule("fcm_server_key", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,200}" + _END, (":APA91b",), bounded=""),
    _rule("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40,64}" + _END, ("lin_api_", "lin_oauth_"), 2, bounded=""),
    _rule("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?" + _END, ("dapi",), bounded=""),
    _rule("newrelic_key", r"(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9-]{32}|NRJS-[a-f0-9]{19})" + _END,
          ("NRAK-", "NRII-", "NRJS-"), bounded=""),  # fmt: skip
    _rule("postman_key", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}" + _END, ("PMAK-",), bounded=""),
    _rule("atlassian_token", r"ATATT3[A-Za-z0-9_=-]{186}" + _END, ("ATATT3",), bounded=""),
    _rule("grafana_token", r"(?:glsa_[A-Za-z0-9_]{28,64}|glc_[A-Za-z0-9+/]{32,400}={0,2})" + _END,
          ("glsa_", "glc_"), 3, bounded=""),  # fmt: skip
    # Facebook / Meta access tokens: EAA + a long alphanumeric run (after Square's EAAA + 56-60)
    _rule("facebook_token", r"EAA[A-Za-z0-9]{30,400}" + _END, ("EAA",), 3, bounded=""),
    # Sentry DSN: the key is the URL's user (https://<32 hex>@o1.ingest.sentry.io/2); the host
    # names sentry, or the path ends in a numeric project id (self-hosted)
    _rule(
        "sentry_dsn",
        r"://(?P<s>[0-9a-f]{32})(?::[^\s@/]*)?@(?=[A-Za-z0-9.-]*sentry|[A-Za-z0-9.:-]+/(?:[\w.-]+/)*\d+(?![\w/.-]))",
        ("://",),
    ),
    # a .pgpass entry inside a sentence: quoted ("host:port:db:user:password"), or on a line that
    # names pgpass (the line-anchored rule above takes the file itself)
    _rule(
        "password",
        r"(?P<q>[\"'`])" + _PGPASS + r"(?P<s>[^\s\"'`:][^\"'`\n]*?)(?P=q)",
        (":",),
        check=_password_like,
    ),
    _rule(
        "password",
        r"(?i)pgpass[^\n]*?(?<![\w.:@-])" + _PGPASS + r"(?P<s>[^\s:]+?)(?=[.,;)]?(?:\s|$))",
        ("pgpass",),
        check=_password_like,
    ),
    _rule(
        "password",
        r"(?i)(?<![\w.:@-])" + _PGPASS + r"(?P<s>[^\s:]+?)(?=[.,;)]?\s[^\n]*pgpass)",
        ("pgpass",),
        check=_password_like,
    ),
)
