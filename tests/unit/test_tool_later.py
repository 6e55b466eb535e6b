"""Tools declared without their code (clio.tools.spec.Later): every named handler and check
exists, and the code loads at the first call, not with the declaration."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import clio.tools.builtin  # noqa: F401  (registers the tools)
from clio.tools.registry import REGISTRY
from clio.tools.spec import Later


def test_every_later_handler_and_check_names_a_function_that_exists() -> None:
    named = 0
    for name in REGISTRY.names():
        spec = REGISTRY.get(name)
        assert spec is not None
        for op in spec.ops.values():
            for fn in (op.run, op.effect):
                if isinstance(fn, Later):
                    named += 1
                    target = getattr(__import__(fn.module, fromlist=[fn.name]), fn.name)
                    assert callable(target), fn
    assert named >= 17  # file_operations' 16 operations and terminal_operations' handler and check


def test_a_later_handler_imports_its_module_on_the_first_call_only() -> None:
    probe = (
        "import sys\n"
        "import clio.tools.builtin\n"
        "from clio.tools.registry import REGISTRY\n"
        "before = 'clio.tools.terminal' in sys.modules\n"
        "op = REGISTRY.get('terminal_operations').ops['execute']\n"
        "why = op.check({'operation': 'execute', 'command': 'touch x'})\n"
        "print(before, 'clio.tools.terminal' in sys.modules, why is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True"]


def test_later_calls_through_with_the_arguments() -> None:
    later = Later("os.path", "join")
    args: list[Any] = ["a", "b"]
    assert later(*args) == "a/b" and later("c", "d") == "c/d"
    assert "os.path.join" in repr(later)
