"""The import rules of docs/architecture.md, checked on the source: every import of a clio module
(lazy ones inside functions included) goes down the layers, and no set of modules imports itself
round in a circle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import clio

SRC = Path(clio.__file__).parent

# Lower numbers are lower layers. A module may import its own package and any lower layer.
RANK = {
    "clio": 0, "lazy_re": 0, "threads": 0, "processes": 0, "messages": 0, "wording": 0, "data": 0, "prompts": 0, "actions": 0, "simple_yaml": 0,
    "safety": 1, "paths": 1,
    "store": 2, "context": 2, "llm": 2,
    "project_config": 3, "recall": 3, "export": 3,
    "memory": 4, "config": 4,
    "tools": 5, "team": 5,
    "agent": 6, "mcp": 6,
    "app": 7,
    "commands": 8,
    "ui": 9,
    "cli": 10,
}  # fmt: skip


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(("clio", *parts))
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t.startswith("clio") and t != name:
                found.add(t)
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "clio"


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_every_package_has_a_rank_and_a_readme() -> None:
    for name in _modules():
        assert _layer(name) in RANK, f"{name}: give its package a layer in RANK and docs/architecture.md"
    for pkg in SRC.iterdir():
        if pkg.is_dir() and (pkg / "__init__.py").exists() and pkg.name != "data":
            assert (pkg / "README.md").is_file(), f"clio/{pkg.name}/ has no README.md"


def test_imports_go_down_the_layers() -> None:
    wrong = []
    for src, targets in _graph().items():
        for dst in targets:
            a, b = _layer(src), _layer(dst)
            if a != b and RANK[b] >= RANK[a]:
                wrong.append(f"{src} -> {dst}")
    assert not wrong, "imports running up or across the layers:\n" + "\n".join(sorted(wrong))


def test_no_import_circle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_app_package_init_loads_nothing() -> None:
    assert (SRC / "app" / "__init__.py").read_text(encoding="utf-8").strip() == ""


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rule above can fail: a module of a low layer importing the app is reported."""
    fake = tmp_path / "m.py"
    fake.write_text("def f():\n    from clio.app.app import App\n", encoding="utf-8")
    found = _imports("clio.context.m", fake, _modules())
    assert found == {"clio.app.app"} and RANK[_layer("clio.app.app")] > RANK["context"]


def _may_import(readme: Path) -> set[str] | None:
    """What a package README's "May import:" sentence names, as module prefixes (``memory/`` ->
    clio.memory, ``store/atomic`` -> clio.store.atomic, ``config`` -> clio.config); None when the
    README has no such sentence."""
    text = readme.read_text(encoding="utf-8")
    at = text.find("May import:")
    if at < 0:
        return None
    sentence = re.split(r"\.(?:\s|$)", text[at + len("May import:") :], maxsplit=1)[0]
    names = re.findall(r"`([a-z_/]+?)/?`", sentence)
    return {"clio." + n.strip("/").replace("/", ".") for n in names}


def _allowed(target: str, allowed: set[str]) -> bool:
    return target == "clio" or any(target == a or target.startswith(a + ".") for a in allowed)


def test_each_package_imports_only_what_its_readme_says_it_may() -> None:
    """Every package README says what the package may import; the imports found in its modules
    (lazy ones included) are checked against that sentence, so the README stays true."""
    wrong: list[str] = []
    graph = _graph()
    for pkg in sorted(p for p in SRC.iterdir() if (p / "__init__.py").exists() and (p / "README.md").exists()):
        allowed = _may_import(pkg / "README.md")
        assert allowed is not None, f"clio/{pkg.name}/README.md: say what it may import in a 'May import:' sentence"
        for src, targets in graph.items():
            if _layer(src) != pkg.name:
                continue
            for dst in sorted(targets):
                if _layer(dst) != pkg.name and not _allowed(dst, allowed):
                    wrong.append(f"{src} -> {dst}: not in the 'May import:' sentence of clio/{pkg.name}/README.md")
    assert not wrong, "\n".join(wrong)


def test_the_readme_check_reads_names_and_sees_a_missing_one(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# x\nMay import: `store/atomic`, `memory/` (entries), `config`. Not `ui/`.\n", encoding="utf-8")
    allowed = _may_import(readme)
    assert allowed == {"clio.store.atomic", "clio.memory", "clio.config"}
    assert _allowed("clio.memory.ltm", allowed) and _allowed("clio.store.atomic", allowed)
    assert not _allowed("clio.store.sessions", allowed) and not _allowed("clio.ui.repl", allowed)
