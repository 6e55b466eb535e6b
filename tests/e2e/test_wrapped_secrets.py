"""End to end: issue 34's secret shapes (base64-wrapped, split by a shell continuation or Python's
implicit concatenation, Sentry DSN keys, .pgpass entries in sentences, loosely matched prefixes)
are redacted at the sinks, through the installed clio and the fake server.

The scripted model reads a file of the project holding every secret of the issue 34 corpus
(testkit/secrets_corpus.py) and another holding its look-alikes. No secret reaches the requests
sent to the server nor the session archive; every look-alike reaches the model as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

from testkit.clio_run import all_archived, run_scripted, tool_results
from testkit.fakeserver import Reply
from testkit.secrets_corpus import LOOKALIKES_34, SECRETS_34


def test_wrapped_and_split_secrets_never_reach_the_server_or_the_archive(tmp_path: Path, home: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "secrets.txt").write_text("\n\n".join(s.text for s in SECRETS_34))
    (proj / "lookalikes.txt").write_text("\n".join(lk.text for lk in LOOKALIKES_34))
    read = [
        {"name": "file_operations", "id": cid, "arguments": {"operation": "read_file", "path": path}}
        for cid, path in (("c_sec", "secrets.txt"), ("c_look", "lookalikes.txt"))
    ]
    r, server = run_scripted(["-p", "review the config"], Reply(tool_calls=read), Reply(text="Reviewed."),
                             project=proj, home=home)  # fmt: skip
    assert r.returncode == 0, r.stderr
    bodies = "\n".join(json.dumps(b, ensure_ascii=False) for b in server.chat_requests)
    archived = json.dumps(all_archived(proj), ensure_ascii=False)
    for s in SECRETS_34:
        assert s.secret not in bodies and json.dumps(s.secret)[1:-1] not in bodies, s.label
        assert s.secret not in archived and json.dumps(s.secret)[1:-1] not in archived, s.label
    results = tool_results(server.chat_requests[1])
    for label in ("base64_url_password", "base64_docker_auth", "sentry_dsn", "github_token", "facebook_token"):
        assert f"[REDACTED:{label}]" in results["c_sec"], label
    for lk in LOOKALIKES_34:  # the file as read, line by line (read_file numbers nothing): unchanged
        assert lk.text.rstrip("\n") in results["c_look"], lk.name
