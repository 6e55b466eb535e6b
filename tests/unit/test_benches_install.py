"""The benches run against a regular install of clio, not only an editable one (issue 27).

Benches that put the repository's root FIRST on sys.path (for testkit/) imported the source tree's
clio instead of the installed one (when the prompts were a folder mapped into the package, that
failed on ``clio.prompts``). Here a regular install is laid out as setuptools lays it out on
PYTHONPATH, and each bench with a command line is started with --help: its imports must come from
that install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHES = sorted(p for p in (ROOT / "benches").glob("*.py") if "argparse" in p.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def regular_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    shutil.copytree(ROOT / "clio", site / "clio", ignore=shutil.ignore_patterns("__pycache__"))
    return site


@pytest.mark.parametrize("bench", BENCHES, ids=lambda p: p.stem)
def test_a_bench_imports_the_installed_clio(bench: Path, regular_install: Path) -> None:
    # -S: no site processing, so the editable install's finder (a .pth) is not loaded; the
    # dependencies come from site-packages named on PYTHONPATH, after the "installed" clio
    paths = dict.fromkeys([str(regular_install), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run(
        [sys.executable, "-S", str(bench), "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage:" in r.stdout
