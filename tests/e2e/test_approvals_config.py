"""``approvals: allow`` as the README writes it (issue 27), through the installed clio.

Only the mapping shape (``approvals: {shell: allow}``) worked: the scalar was an "unknown setting"
in the user's config and silently useless in a trusted project's; ``aprovals`` got no did-you-mean.
"""

from __future__ import annotations

from pathlib import Path

from testkit.clio_run import run_clio, stderr_lines, tool_results
from testkit.fakeserver import FakeServer, Reply

TOUCH = {
    "id": "sh",
    "name": "terminal_operations",
    "arguments": {"operation": "execute", "command": "touch made.txt"},
}


def _script(server: FakeServer) -> None:
    server.script(Reply(tool_calls=[TOUCH]), Reply(text="Done."))


def test_approvals_allow_in_the_user_config_allows_every_kind(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    (home / "config.yaml").write_text("approvals: allow\n", encoding="utf-8")
    _script(fake_server)
    r = run_clio(["-p", "make the file"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "unknown setting" not in r.stderr
    assert (project / "made.txt").exists()
    assert not tool_results(fake_server.chat_requests[-1])["sh"].startswith("Error")


def test_approvals_allow_in_a_project_config_needs_trust_then_works(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    (project / ".clio").mkdir()
    (project / ".clio" / "config.yaml").write_text("approvals: allow\n", encoding="utf-8")
    _script(fake_server)
    r = run_clio(["-p", "make the file"], server=fake_server, project=project, home=home)
    assert r.returncode == 4, r.stderr  # untrusted: refused, nobody to ask
    assert not (project / "made.txt").exists()
    ignored = [ln for ln in stderr_lines(r) if "ignored settings of this untrusted project" in ln]
    assert len(ignored) == 1 and "approvals.shell" in ignored[0], r.stderr

    _script(fake_server)
    r = run_clio(["--trust", "-p", "make the file"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert (project / "made.txt").exists()


def test_a_misspelt_approvals_gets_a_did_you_mean(fake_server: FakeServer, project: Path, home: Path) -> None:
    (home / "config.yaml").write_text("aprovals: allow\napprovals:\n  wrte: allow\n", encoding="utf-8")
    r = run_clio(["-p", "/stats"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    lines = stderr_lines(r)
    config = home / "config.yaml"
    assert f"clio: {config}: unknown setting 'aprovals' ignored (did you mean 'approvals'?)" in lines
    assert (
        f"clio: {config}: unknown approval kind 'wrte' ignored (did you mean 'write'?)"
        " (kinds: write, shell, git, mcp)" in lines
    )
