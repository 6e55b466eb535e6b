"""End to end, configuration: layered settings, a damaged config file, project instructions, --dir.

The installed ``clio -p`` against the fake server; the ``model`` field of each recorded
request shows which layer won.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from testkit.clio_run import (
    all_archived,
    run_clio,
    run_parallel,
    session_dirs,
    stderr_lines,
    system_text,
    tool_results,
    user_texts,
)
from testkit.fakeserver import FakeServer, Reply


def make_dir(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {}).items():
        f = path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")
    return path


def test_model_setting_layers(fake_server: FakeServer, tmp_path: Path) -> None:
    """$CLIO_HOME/config.yaml < .clio/config.yaml < CLIO_MODEL < --model."""
    home = make_dir(tmp_path / "home", {"config.yaml": "model: home-model\n"})
    bare = make_dir(tmp_path / "bare")
    configured = {".clio/config.yaml": "model: project-model\n"}
    runs: dict[str, dict[str, Any]] = {
        "home": {"project": bare},
        "project": {"project": make_dir(tmp_path / "p2", configured)},
        "env": {"project": make_dir(tmp_path / "p3", configured), "env_extra": {"CLIO_MODEL": "env-model"}},
        "flag": {
            "project": make_dir(tmp_path / "p4", configured),
            "env_extra": {"CLIO_MODEL": "env-model"},
            "args": ["--model", "flag-model"],
        },
    }
    results = run_parallel(
        *(
            {
                "args": [*spec.get("args", []), "-p", f"which layer: {layer}"],
                "server": fake_server,
                "project": spec["project"],
                "home": home,
                "env_extra": spec.get("env_extra"),
            }
            for layer, spec in runs.items()
        )
    )
    for r in results:
        assert r.returncode == 0, r.stderr
    models = {user_texts(body)[-1]: body["model"] for body in fake_server.chat_requests}
    assert models == {
        "which layer: home": "home-model",
        "which layer: project": "project-model",
        "which layer: env": "env-model",
        "which layer: flag": "flag-model",
    }


def test_damaged_project_config_is_moved_aside_and_the_run_goes_on(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    home = make_dir(tmp_path / "home", {"config.yaml": "model: home-model\n"})
    damaged = "model: [project-model\nmax_iterations: 3\n"
    project = make_dir(tmp_path / "proj", {".clio/config.yaml": damaged})
    fake_server.script(Reply(text="Still working."))
    r = run_clio(["-p", "Hello"], server=fake_server, project=project, home=home)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Still working.\n"
    assert fake_server.chat_requests[0]["model"] == "home-model"  # the other layers still apply
    clio_dir = project / ".clio"
    assert not (clio_dir / "config.yaml").exists()
    (moved,) = clio_dir.glob("config.damaged-*.yaml")
    assert moved.read_text(encoding="utf-8") == damaged  # nothing lost
    lines = stderr_lines(r)
    assert len(lines) == 1, r.stderr
    assert "config.yaml" in lines[0] and moved.name in lines[0] and "damaged" in lines[0]


def test_project_instructions_in_system_prompt_unless_disabled(
    fake_server: FakeServer, tmp_path: Path
) -> None:
    """.clio/instructions.md and the nearest AGENTS.md (from the working directory up to the git root)."""
    home = make_dir(tmp_path / "home")
    files = {
        ".clio/instructions.md": "Always write tests first. MARKER-INSTRUCTIONS-41\n",
        "AGENTS.md": "Root agents file. MARKER-ROOT-AGENTS-42\n",
        "pkg/AGENTS.md": "Package agents file. MARKER-PKG-AGENTS-43\n",
    }
    with_inst = make_dir(tmp_path / "with", files)
    without = make_dir(tmp_path / "without", files)
    for root in (with_inst, without):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    on, off = run_parallel(
        {
            "args": ["-p", "instructions on"],
            "server": fake_server,
            "project": with_inst / "pkg",
            "home": home,
        },
        {
            "args": ["--no-custom-instructions", "-p", "instructions off"],
            "server": fake_server,
            "project": without / "pkg",
            "home": home,
        },
    )
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    systems = {user_texts(body)[-1]: system_text(body) for body in fake_server.chat_requests}
    system_on, system_off = systems["instructions on"], systems["instructions off"]
    assert "MARKER-INSTRUCTIONS-41" in system_on
    assert "MARKER-PKG-AGENTS-43" in system_on  # the nearest AGENTS.md ...
    assert "MARKER-ROOT-AGENTS-42" not in system_on  # ... only
    for marker in ("MARKER-INSTRUCTIONS-41", "MARKER-PKG-AGENTS-43", "MARKER-ROOT-AGENTS-42"):
        assert marker not in system_off
    assert "You are clio" in system_off
    # started in pkg/, both runs used the git root as the project
    assert len(session_dirs(with_inst)) == 1 and len(session_dirs(without)) == 1
    assert not (with_inst / "pkg" / ".clio").exists()


def test_dir_selects_another_project(fake_server: FakeServer, tmp_path: Path) -> None:
    home = make_dir(tmp_path / "home")
    project = make_dir(
        tmp_path / "project",
        {".clio/config.yaml": "model: dir-model\n", "inside.txt": "text inside the project\n"},
    )
    elsewhere = make_dir(tmp_path / "elsewhere", {"inside.txt": "the wrong file\n"})
    fake_server.script(
        Reply(
            tool_calls=[
                {
                    "name": "file_operations",
                    "arguments": {"operation": "read_file", "path": "inside.txt"},
                    "id": "c1",
                }
            ]
        ),
        Reply(text="Read."),
    )
    r = run_clio(
        ["--dir", str(project), "-p", "Read inside.txt"], server=fake_server, project=elsewhere, home=home
    )
    assert r.returncode == 0, r.stderr
    first, second = fake_server.chat_requests
    assert first["model"] == "dir-model"  # the project's config
    assert str(project.resolve()) in system_text(first)
    assert "text inside the project" in tool_results(second)["c1"]
    assert [m["role"] for m in all_archived(project)] == ["user", "assistant", "tool", "assistant"]
    assert not (elsewhere / ".clio").exists()
