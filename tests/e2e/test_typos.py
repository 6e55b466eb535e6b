"""Issue 12 item 7, through the installed clio: typos and impossible places get one line and a
clear exit code, never a traceback, never a folder created by mistake."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from testkit.clio_run import CLIO, clio_env, run_clio, stderr_lines
from testkit.fakeserver import FakeServer, Reply


def test_dir_that_does_not_exist_or_is_a_file(
    fake_server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "nope" / "deeper"
    r = run_clio(["--dir", str(missing), "-p", "hello"], server=fake_server, project=project, home=home)
    assert r.returncode == 2
    assert stderr_lines(r) == [f"clio: --dir {missing}: no such directory; give the project's folder."]
    assert not (tmp_path / "nope").exists()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    r = run_clio(["--dir", str(a_file), "-p", "hello"], server=fake_server, project=project, home=home)
    assert r.returncode == 2 and stderr_lines(r) == [
        f"clio: --dir {a_file}: not a directory; give the project's folder."
    ]
    assert fake_server.chat_requests == []


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) for a read-only bind mount")
def test_a_read_only_project_says_so_in_one_line_and_incognito_still_works(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    """The project is a read-only bind mount of itself (a mount namespace of the test's own)."""
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here: {probe.stderr.strip()}")

    def run_ro(*args: str) -> subprocess.CompletedProcess[str]:
        script = f'mount --bind -o ro "{project}" "{project}" && exec "{CLIO}" "$@"'
        return subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *args],
            cwd=project, env=clio_env(fake_server, home), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    r = run_ro("-p", "hello")
    assert "Traceback" not in r.stderr
    assert r.returncode == 2, r.stderr
    (line,) = stderr_lines(r)
    assert line.startswith(f"clio: cannot write {project / '.clio'} (Read-only file system)")
    assert line.endswith("Run with --incognito to use clio here without writing anything.")
    assert fake_server.chat_requests == []  # nothing sent that could not be kept

    ok = run_ro("--incognito", "-p", "hello")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == "ok\n"


def test_export_to_a_missing_folder_or_a_folder(
    fake_server: FakeServer, project: Path, home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "missing" / "x.html"
    r = run_clio(["-p", f"/session export {target}"], server=fake_server, project=project, home=home)
    assert r.returncode == 1
    assert stderr_lines(r) == [
        f"clio: No folder {target.parent}: create it first, or name a file in an existing folder."
    ]
    assert not target.parent.exists()
    r = run_clio(["-p", f"/session export {tmp_path}"], server=fake_server, project=project, home=home)
    assert r.returncode == 1 and stderr_lines(r)[0].startswith(f"clio: {tmp_path} is a folder: name the file")


@pytest.mark.parametrize(
    ("line", "usage"),
    [("/clear now", "/clear"), ("/stats all", "/stats"), ("/context --jsn", "/context [--json]")],
)
def test_unknown_arguments_to_a_command_get_its_usage(
    fake_server: FakeServer, project: Path, home: Path, line: str, usage: str
) -> None:
    r = run_clio(["-p", line], server=fake_server, project=project, home=home)
    assert r.returncode == 1
    assert stderr_lines(r) == [f"clio: Usage: {usage}"]


def test_a_config_typo_gets_a_did_you_mean(fake_server: FakeServer, project: Path, home: Path) -> None:
    (home / "config.yaml").write_text("modle: other\nredacton: strict\n", encoding="utf-8")
    r = run_clio(["-p", "/stats"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    lines = stderr_lines(r)
    assert f"clio: {home / 'config.yaml'}: unknown setting 'modle' ignored (did you mean 'model'?)" in lines
    assert (
        f"clio: {home / 'config.yaml'}: unknown setting 'redacton' ignored (did you mean 'redaction'?)"
        in lines
    )


def test_model_typo_is_refused_against_the_endpoints_list(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    r = run_clio(["-p", "/model fake-modle"], server=fake_server, project=project, home=home)
    assert r.returncode == 1
    assert stderr_lines(r) == [
        "clio: The endpoint has no model 'fake-modle'; did you mean fake-model? (/model fake-modle --force uses it anyway)."
    ]


def test_a_redaction_notice_says_a_user_message(fake_server: FakeServer, project: Path, home: Path) -> None:
    """Issue 27: it said 'from an user message'."""
    fake_server.script(Reply(text="ok"))
    token = "ghp_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"
    r = run_clio(["-p", f"my token is {token}"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert "clio: redacted 1 secret from a user message" in stderr_lines(r)


# ---------------------------------------------------------------- flags (issue 27)


def test_help_names_clio_mcp(project: Path, home: Path) -> None:
    r = run_clio(["--help"], server=None, project=project, home=home)
    assert r.returncode == 0 and "clio mcp" in r.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--resum", "-p", "hi"], "unrecognized arguments: --resum"),  # no prefix matching
        (["--exit"], "--exit needs --input TEXT"),  # started the REPL
        (["--sandbox-network", "-p", "hi"], "--sandbox-network lets sandboxed shell commands use the network"),
    ],
)
def test_flags_that_do_nothing_are_usage_errors(
    fake_server: FakeServer, project: Path, home: Path, args: list[str], says: str
) -> None:
    r = run_clio(args, server=fake_server, project=project, home=home)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr
    assert fake_server.chat_requests == []


def test_sandbox_network_with_the_sandbox_from_the_config_is_fine(
    fake_server: FakeServer, project: Path, home: Path
) -> None:
    (home / "config.yaml").write_text("sandbox: true\n", encoding="utf-8")
    r = run_clio(["--sandbox-network", "-p", "/stats"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
