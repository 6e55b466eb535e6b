"""What start-up imports: the heavy libraries stay off the way to the prompt and the first request.

Timings are benches' business (benches/bench_shell.py, docs/benchmarks.md); these tests check the
behaviour behind them, in fresh interpreters and through the installed clio: which modules a
REPL start and a one-shot run load, and that lazily compiled patterns act like compiled ones.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clio import lazy_re
from testkit.clio_run import CLIO, clio_env
from testkit.fakeserver import FakeServer, Reply

PINNED = Path(__file__).with_name("startup_modules.txt")
ONE_SHOT_MODULES = frozenset(
    line.strip() for line in PINNED.read_text(encoding="utf-8").splitlines() if line.strip() and not line.startswith("#")
)
NEVER_AT_START = ("openai", "git", "yaml", "numpy", "tokenizers", "tiktoken", "mcp", "httpx", "pydantic", "psycopg")


def loaded_after(code: str) -> set[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_repl_module_and_the_app_load_no_heavy_library() -> None:
    loaded = loaded_after("import clio.cli, clio.ui.repl, clio.app.app")
    assert "clio.app.app" in loaded and "prompt_toolkit" in loaded  # the probe did import them
    heavy = sorted(m for m in loaded if m.split(".")[0] in NEVER_AT_START)
    assert heavy == []
    # the model client's HTTP library and the markdown renderer come with the first answer
    assert "urllib3" not in loaded
    assert "rich.markdown" not in loaded and "markdown_it" not in loaded


def test_a_one_shot_answer_loads_the_http_library_but_not_git_yaml_or_openai(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    fake_server.script(Reply(text="the answer"))
    project = tmp_path / "proj"
    project.mkdir()
    env = clio_env(fake_server, tmp_path / "home")
    env["PYTHONPROFILEIMPORTTIME"] = "1"  # every import is listed on stderr
    env["CLIO_MODEL"] = "fake-model"  # (an OpenAI model name would load tiktoken, rightly)
    done = subprocess.run(
        [str(CLIO), "-p", "hello"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "the answer"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "urllib3" in imported  # the request went through it
    assert sorted(m for m in imported if m.split(".")[0] in NEVER_AT_START) == []
    assert not any(m.startswith("clio.team") for m in imported)  # no shared memory configured
    assert "rich.markdown" not in imported  # the answer went to a pipe: printed as it is
    # the set is pinned: a new module of clio's or rich's on this path fails here, named
    new = sorted(m for m in imported if m.split(".")[0] in ("clio", "rich") and m not in ONE_SHOT_MODULES)
    assert new == [], f"new on every one-shot run (make lazy, or add to {PINNED.name}): {new}"
    for lazy in ("rich.live", "rich.spinner", "rich.table", "rich._emoji_codes"):
        assert lazy not in imported  # a spinner, a table, emoji codes: not here
    assert not any(m.startswith("clio.commands") for m in imported)  # only a slash run needs them
    # the tools' code comes with their first call (clio.tools.spec.Later), the specs alone with the request
    tools_code = ("clio.tools.terminal", "clio.tools.file_edit", "clio.tools.file_read", "clio.tools.search",
                  "clio.tools.shell_undo", "clio.safety.launch", "clio.safety.wrapper", "clio.safety.git_plant", "difflib")  # fmt: skip
    assert sorted(m for m in tools_code if m in imported) == []
    third_party = {m.split(".")[0] for m in imported} & {"rich", "urllib3", "prompt_toolkit", "pexpect", "certifi"}
    assert third_party == {"rich", "urllib3"}


def test_a_plain_config_file_is_read_without_pyyaml(fake_server: FakeServer, tmp_path: Path) -> None:
    """Turning automatic recall off takes a config file; a flat one costs no PyYAML import."""
    fake_server.script(Reply(text="the answer"))
    project, home = tmp_path / "proj", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (home / "config.yaml").write_text("# mine\nauto_recall: false\ntemperature: 0.3\nmax_output_tokens: 321\n", encoding="utf-8")
    env = clio_env(fake_server, home, {"PYTHONPROFILEIMPORTTIME": "1", "CLIO_MODEL": "fake-model"})
    done = subprocess.run(
        [str(CLIO), "-p", "hello"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "the answer", done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "clio.simple_yaml" in imported and "yaml" not in imported
    sent = fake_server.chat_requests[0]  # the settings did apply
    assert sent.get("temperature") == 0.3 and 321 in (sent.get("max_tokens"), sent.get("max_completion_tokens"))
    assert "unknown setting" not in done.stderr


def test_a_slash_command_only_run_never_loads_the_model_client(fake_server: FakeServer, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = clio_env(fake_server, tmp_path / "home")
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    env["CLIO_MODEL"] = "fake-model"  # (tiktoken, for an OpenAI model name, brings requests and urllib3)
    done = subprocess.run(
        [str(CLIO), "--input", "/todo", "--exit"], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "clio.commands.core" in imported  # the command did run
    assert "urllib3" not in imported  # (clio.llm.http itself is a few classes; it imports urllib3 on use)
    assert fake_server.chat_requests == []


# ---------------------------------------------------------------- lazily compiled patterns


def test_a_lazy_pattern_compiles_on_first_use_and_acts_like_the_compiled_one() -> None:
    source = r"(?P<word>[a-z]+)-(?P<num>\d+)"
    pattern = lazy_re.lazy(source, re.I)
    holder = pattern  # the stand-in itself
    assert holder._compiled is None  # type: ignore[attr-defined]
    compiled = re.compile(source, re.I)
    text = "Alpha-1, beta-22 and GAMMA-333"
    assert [m.groupdict() for m in pattern.finditer(text)] == [m.groupdict() for m in compiled.finditer(text)]
    assert pattern.sub("<\\g<num>>", text) == compiled.sub("<\\g<num>>", text)
    assert pattern.split(text) == compiled.split(text)
    assert pattern.pattern == source and pattern.flags == compiled.flags
    assert holder._compiled is not None  # type: ignore[attr-defined]


def test_warm_compiles_every_pattern_made_so_far() -> None:
    fresh = [lazy_re.lazy(rf"warm-{i}\d") for i in range(3)]
    lazy_re.warm()
    assert all(p._compiled is not None for p in fresh)  # type: ignore[attr-defined]


def test_a_bad_lazy_pattern_fails_when_used() -> None:
    broken = lazy_re.lazy("(unclosed")
    with pytest.raises(re.error):
        broken.search("x")


def test_model_names_tiktoken_knows_keep_their_encoding_without_importing_it_for_others() -> None:
    from clio.llm.encoding import encoding_name

    tiktoken_model = pytest.importorskip("tiktoken.model")
    for model in [*tiktoken_model.MODEL_TO_ENCODING, *(p + "x" for p in tiktoken_model.MODEL_PREFIX_TO_ENCODING)]:
        assert encoding_name(model) is not None, model
        assert encoding_name("openai/" + model) is not None, model
    for model in ("qwen2.5-coder:7b", "llama3.1", "fake-model", "mistral-large", "deepseek/deepseek-chat"):
        assert encoding_name(model) is None


def test_clio_mcp_over_stdio_loads_neither_the_mcp_sdk_nor_pydantic(tmp_path: Path) -> None:
    """clio/mcp/stdio.py answers the protocol itself: the SDK's import alone took 1.3-2.7 s."""
    project = tmp_path / "proj"
    project.mkdir()
    env = clio_env(None, tmp_path / "home")
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "note_list", "arguments": {}}},
    ]  # fmt: skip
    done = subprocess.run(
        [str(CLIO), "mcp", "--dir", str(project)],
        input="".join(json.dumps(m) + "\n" for m in lines), env=env, cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["id"] for r in replies] == [1, 2] and replies[1]["result"]["content"][0]["text"] == "No notes."
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "clio.mcp.stdio" in imported  # the probe saw the server's imports
    sdk = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio", "httpx", "starlette", "uvicorn")
    heavy = sorted(m for m in imported if m.split(".")[0] in sdk)
    assert heavy == []
