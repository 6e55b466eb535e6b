"""Pure: the short forms developers write, written out, for the judge to read.

"users keep getting logged out in prod" asks what the session "session logins get dropped randomly
in production" settled; the helper's judge (:mod:`clio.recall.judge`) reads that pair at -0.1,
and at +2.9 once "prod" reads "production": it learnt each word's meaning from full words, and
a short form is another token to it. So the judge reads the message and each unit with the short
forms below written out (:func:`written_out`), on both sides, which then agree whichever form each
used. A short form inside a name is kept: ``prod-db-1``, ``prod.example.com``, ``config/app.yaml``,
``db_url``. The search and the decision's own features read the texts as written.

The list is general usage, written once from no data set and frozen before it was read
(benches/recall_dev/README.md, "Stop 84's second change"); docs/memory.md, "Short forms written
out for the judge". No I/O; the pattern is compiled on first use.
"""

from __future__ import annotations

import re

from clio.lazy_re import lazy

SHORT_FORMS: dict[str, str] = {
    "prod": "production", "stg": "staging", "dev": "development", "env": "environment",
    "envs": "environments", "db": "database", "dbs": "databases", "repo": "repository",
    "repos": "repositories", "config": "configuration", "configs": "configurations",
    "cfg": "configuration", "auth": "authentication", "authn": "authentication",
    "authz": "authorization", "dep": "dependency", "deps": "dependencies", "k8s": "kubernetes",
    "perf": "performance", "msg": "message", "msgs": "messages", "req": "request",
    "reqs": "requests", "resp": "response", "dir": "directory", "dirs": "directories",
    "docs": "documentation", "admin": "administrator", "app": "application",
    "apps": "applications", "infra": "infrastructure", "pkg": "package", "pkgs": "packages",
    "lib": "library", "libs": "libraries", "func": "function", "param": "parameter",
    "params": "parameters", "arg": "argument", "args": "arguments", "var": "variable",
    "vars": "variables", "tmp": "temporary", "img": "image", "imgs": "images", "pw": "password",
    "passwd": "password", "creds": "credentials", "cert": "certificate", "certs": "certificates",
    "mgmt": "management", "svc": "service", "svcs": "services", "ns": "namespace",
    "info": "information", "stats": "statistics", "impl": "implementation", "conn": "connection",
    "conns": "connections", "ctx": "context", "addr": "address",
}  # fmt: skip

# a word standing alone: not inside a path, a host, a file or an identifier ("prod." ends a sentence)
_SHORT = lazy(r"(?<![\w./-])(" + "|".join(sorted(SHORT_FORMS, key=len, reverse=True)) + r")(?![\w/-]|\.\w)", re.I)


def written_out(text: str) -> str:
    """``text`` with each short form of :data:`SHORT_FORMS` that stands alone written out."""
    return _SHORT.sub(lambda m: SHORT_FORMS[m.group(1).lower()], text)
