"""End to end, failures: retries, endpoint errors, stream_options fallback, context-length rejections.

The installed ``clio -p`` against the fake server. Every run also checks (in ``run_clio``)
that no traceback reached stderr.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from testkit.clio_run import all_archived, run_clio, run_parallel, stderr_lines, tool_results, user_texts
from testkit.fakeserver import Fail, FakeServer, Reply


def new_project(tmp_path: Path, name: str, config: str | None = None) -> Path:
    p = tmp_path / name
    p.mkdir()
    if config is not None:
        (p / ".clio").mkdir()
        (p / ".clio" / "config.yaml").write_text(config, encoding="utf-8")
    return p


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def error_line(result: Any) -> str:
    """The last line of a failed run, its reason; every line before it must be a retry notice, and
    every line starts with ``clio: `` (issue 35: the retry lines lacked it)."""
    lines = stderr_lines(result)
    assert lines and all(ln.startswith("clio: ") for ln in lines), result.stderr
    assert all("retrying in" in ln for ln in lines[:-1]), result.stderr
    assert "retrying in" not in lines[-1], result.stderr
    return lines[-1]


# ---------------------------------------------------------------- retries


def test_transient_failures_are_retried(
    fake_server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    fake_server.script(Fail.rate_limit(retry_after=0), Fail.server_error(500), Reply(text="Finally."))
    cut = FakeServer().start()
    cut_project = new_project(tmp_path, "cut")
    try:
        partial = "This first attempt will break off somewhere in the middle of the answer."
        cut.script(Reply(text=partial, chunk_chars=5, cut_after=4), Reply(text="The whole answer."))
        retried, resumed = run_parallel(
            {"args": ["-p", "Hello"], "server": fake_server, "project": project, "home": home},
            {"args": ["-p", "Hello"], "server": cut, "project": cut_project, "home": home},
        )
        assert retried.returncode == 0, retried.stderr
        assert retried.stdout == "Finally.\n"
        assert len(fake_server.chat_requests) == 3
        assert fake_server.chat_requests[0] == fake_server.chat_requests[2]  # the same request, resent
        notices = stderr_lines(retried)
        assert len(notices) == 2 and "rate limited" in notices[0] and "500" in notices[1], retried.stderr

        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "The whole answer.\n"  # once, and nothing of the broken attempt
        assert len(cut.chat_requests) == 2
        assert [(m["role"], m["content"]) for m in all_archived(cut_project)] == [
            ("user", "Hello"),
            ("assistant", "The whole answer."),
        ]
    finally:
        cut.stop()


def test_stream_options_refused_falls_back(project: Path, home: Path) -> None:
    with FakeServer(accept_stream_options=False) as server:
        server.script(Reply(text="Works without usage."))
        r = run_clio(["-p", "Hello"], server=server, project=project, home=home)
        assert r.returncode == 0, r.stderr
        assert r.stdout == "Works without usage.\n"
        first, second = server.chat_requests
        assert first["stream_options"] == {"include_usage": True}
        assert "stream_options" not in second
        assert second["stream"] is True and second["messages"] == first["messages"]


# ---------------------------------------------------------------- failures the user must act on


def test_endpoint_failures_are_one_clear_line(home: Path, tmp_path: Path) -> None:
    port = closed_port()
    with FakeServer(api_key="the-right-key") as auth, FakeServer() as missing, FakeServer() as broken:
        missing.script(Fail.not_found_model("no-such-model"))
        broken.responder = lambda body: Fail.server_error(500)
        bad_key, no_model, unreachable, no_key, down = run_parallel(
            {"args": ["-p", "Hi"], "server": auth, "project": new_project(tmp_path, "p401"), "home": home},
            {
                "args": ["--model", "no-such-model", "-p", "Hi"],
                "server": missing,
                "project": new_project(tmp_path, "p404"),
                "home": home,
            },
            {
                "args": ["-p", "Hi"],
                "server": None,
                "project": new_project(tmp_path, "pconn", "max_retries: 1\n"),
                "home": home,
                "env_extra": {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "k"},
            },
            {
                "args": ["-p", "Hi"],
                "server": None,
                "project": new_project(tmp_path, "pkey"),
                "home": tmp_path / "empty",
            },
            {
                "args": ["-p", "Hi"],
                "server": broken,
                "project": new_project(tmp_path, "p500", "max_retries: 1\n"),
                "home": home,
            },
        )
        for r in (bad_key, no_model, unreachable, no_key, down):
            assert r.returncode != 0 and r.stdout == "", r.stderr
        for r in (bad_key, no_model, unreachable, down):  # the endpoint could not be used (was 1)
            assert r.returncode == 6, r.stderr

        line = error_line(bad_key)
        assert "401" in line and "OPENAI_API_KEY" in line
        assert len(auth.chat_requests) == 1  # an auth failure is not retried

        line = error_line(no_model)
        assert "'no-such-model'" in line and "--model" in line
        assert len(missing.chat_requests) == 1

        line = error_line(unreachable)
        assert f"127.0.0.1:{port}" in line and "OPENAI_BASE_URL" in line
        assert len(stderr_lines(unreachable)) == 2  # one retry notice, then the reason

        assert no_key.returncode == 2
        assert stderr_lines(no_key) == [error_line(no_key)]
        assert "OPENAI_API_KEY" in error_line(no_key)

        line = error_line(down)
        assert "500" in line
        assert len(broken.chat_requests) == 2  # the first try and max_retries=1 retry


def test_a_refused_connection_fails_fast_after_one_quick_retry(home: Path, tmp_path: Path) -> None:
    """Issue 27: a refused connection was retried 4 times with backoff (~18 s) before the message."""
    port = closed_port()
    r = run_clio(  # the default max_retries (4): a refusal still gets a single quick retry
        ["-p", "Hi"],
        server=None,
        project=new_project(tmp_path, "refused"),
        home=home,
        env_extra={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "k"},
    )
    assert r.returncode == 6, r.stderr
    lines = stderr_lines(r)
    assert lines[:-1] == ["clio: could not reach the endpoint; retrying in 0.5s"], r.stderr
    assert "connection was refused" in error_line(r) and f"127.0.0.1:{port}" in error_line(r)


# ---------------------------------------------------------------- context-length rejections


DIALECTS = ("openai", "llamacpp", "vllm", "ollama")


def test_context_length_rejection_in_every_dialect_trims_and_retries(home: Path, tmp_path: Path) -> None:
    # 6,960 chars: under the storing limit of an 8,192-token window (7,168), so the result reaches
    # the window whole and only the retried request's copy is cut
    big = "".join(f"line {i:04d} of a long file that fills the context window\n" for i in range(120))
    servers = {d: FakeServer().start() for d in DIALECTS}
    projects = {d: new_project(tmp_path, d) for d in DIALECTS}
    try:
        for dialect, server in servers.items():
            (projects[dialect] / "big.txt").write_text(big, encoding="utf-8")
            server.script(
                Reply(
                    tool_calls=[
                        {
                            "name": "file_operations",
                            "arguments": {"operation": "read_file", "path": "big.txt"},
                            "id": "call_big",
                        }
                    ]
                ),
                Fail.context_length(dialect, n_ctx=4000, n_prompt=4100),
                Reply(text=f"Read it ({dialect})."),
            )
        results = run_parallel(
            *(
                {
                    "args": ["--context-window", "8192", "-p", "Read big.txt"],
                    "server": servers[d],
                    "project": projects[d],
                    "home": home,
                }
                for d in DIALECTS
            )
        )
        for dialect, r in zip(DIALECTS, results, strict=True):
            server = servers[dialect]
            assert r.returncode == 0, f"{dialect}: {r.stderr}"
            assert r.stdout == f"Read it ({dialect}).\n", dialect
            reqs = server.chat_requests
            assert len(reqs) == 3, dialect
            rejected, retried = reqs[1], reqs[2]
            assert server.prompt_tokens(retried) < server.prompt_tokens(rejected), dialect
            # still a well-formed turn: the task and one result for the call, now shortened
            assert user_texts(retried) == ["Read big.txt"], dialect
            assert set(tool_results(retried)) == {"call_big"}, dialect
            assert len(tool_results(retried)["call_big"]) < len(tool_results(rejected)["call_big"]), dialect
            # the archive keeps the full result
            archived = [m for m in all_archived(projects[dialect]) if m["role"] == "tool"]
            assert len(archived) == 1 and big in archived[0]["content"], dialect
    finally:
        for server in servers.values():
            server.stop()


def test_a_socks_proxy_in_the_environment_is_one_line_without_its_password(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    proxies = {k: None for k in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy")}
    result = run_clio(
        ["-p", "Hello"],
        server=fake_server,
        project=project,
        home=home,
        env_extra={**proxies, "ALL_PROXY": "socks5://someone:hunter2secret@127.0.0.1:9"},
    )
    assert result.returncode == 6 and result.stdout == ""
    line = error_line(result)
    assert "http:// and https:// proxies only" in line and "hunter2secret" not in result.stderr
    assert fake_server.chat_requests == []
    assert [m["content"] for m in all_archived(project) if m["role"] == "user"] == ["Hello"]  # on disk first
