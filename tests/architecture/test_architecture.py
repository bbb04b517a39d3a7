"""The architecture, checked: the layers contract of `pyproject.toml` holds and refuses a
lower layer importing a higher one; no import cycle between files; no module imports
another module's `_underscore` name or its own package's `__init__`."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import ROOT, SRC

grimp = pytest.importorskip("grimp", reason="the dev extra installs import-linter")

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(config)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layers_hold() -> None:
    done = lint_imports(SRC, ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "The layers of agentkit KEPT" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "refusal"),
    [
        ("engine/_loop.py", "import agentkit.cli", "agentkit.engine is not allowed to import"),
        ("agent.py", "import agentkit.testing", "agentkit.agent is not allowed to import"),
        ("stores/_sqlite.py", "from agentkit.runtime import Runtime", "not allowed to import"),
        ("_stray.py", "X = 1", "_stray"),  # a new top-level module has no layer yet
        ("runtime/_run.py", "import agentkit.engine._loop", "private modules"),
    ],
)
def test_the_contract_refuses_what_breaks_the_layers(
    tmp_path: Path, module: str, line: str, refusal: str
) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "agentkit", copy / "agentkit", ignore=shutil.ignore_patterns("*.pyc"))
    target = copy / "agentkit" / module
    text = target.read_text() if target.exists() else ""
    target.write_text(text + "\n" + line + "\n")
    done = lint_imports(copy, ROOT / "pyproject.toml")
    assert done.returncode != 0, done.stdout[-2000:]
    assert "BROKEN" in done.stdout and refusal in done.stdout, done.stdout[-3000:]


def _graph() -> dict[str, set[str]]:
    graph = grimp.build_graph("agentkit", cache_dir=None, exclude_type_checking_imports=False)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_files() -> None:
    assert _cycles(_graph()) == []


def test_no_submodule_imports_its_own_package() -> None:
    edges = _graph()
    offenders = [
        module
        for module, imported in edges.items()
        if not (SRC / module.replace(".", "/") / "__init__.py").exists()  # a module, not a package
        and module.rpartition(".")[0] in imported
        and module.rpartition(".")[0] != "agentkit"
    ]
    assert offenders == []


def _private_names_imported() -> list[str]:
    found = []
    for path in sorted((SRC / "agentkit").rglob("*.py")):
        module = ".".join(path.relative_to(SRC).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            for alias in node.names:
                name = alias.name
                target = f"{node.module}.{name}"
                is_module = (SRC / target.replace(".", "/")).with_suffix(".py").exists() or (
                    SRC / target.replace(".", "/") / "__init__.py"
                ).exists()
                if name.startswith("_") and not name.startswith("__") and not is_module:
                    found.append(f"{module}: from {node.module} import {name}")
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    assert _private_names_imported() == []
