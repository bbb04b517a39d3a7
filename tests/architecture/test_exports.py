"""The public API's shape: every package exports its names one way (a table of lazy
exports), each public name once, and each class or function has one public home: the public
module its `__module__` is, or the public package its private `__module__` is inside, which
exports it.

(`__module__` itself keeps naming the private module: pydantic and `typing` resolve a class's
string annotations in `sys.modules[cls.__module__]`, so a class whose `__module__` named its
package could not build its schema.)"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import agentkit

SRC = Path(agentkit.__file__).resolve().parent


def public_modules() -> list[str]:
    """agentkit and every module or package under it with no `_` in its dotted name."""
    found = ["agentkit"]
    for info in pkgutil.walk_packages([str(SRC)], prefix="agentkit."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


def public_home(module: str) -> str:
    """The public module or package `module` is, or is inside (`agentkit.runtime` for
    `agentkit.runtime._runtime`)."""
    parts = module.split(".")
    while any(part.startswith("_") for part in parts):
        parts.pop()
    return ".".join(parts)


def test_a_private_modules_home_is_its_public_package() -> None:
    assert public_home("agentkit.runtime._runtime") == "agentkit.runtime"
    assert public_home("agentkit.client.contract._routes") == "agentkit.client.contract"
    assert public_home("agentkit.events") == "agentkit.events"


def public_packages() -> list[str]:
    return [
        name
        for name in public_modules()
        if (SRC.parent / name.replace(".", "/") / "__init__.py").exists()
    ]


@pytest.mark.parametrize("package", public_packages())
def test_every_package_exports_lazily_from_one_table(package: str) -> None:
    path = SRC.parent / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    eager = [
        ast.unparse(node)
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and node.module not in ("__future__", "typing", "agentkit._internal.lazy")
        and node.module != "agentkit._version"
    ]
    assert eager == [], f"{package} imports eagerly: {eager}"
    module = importlib.import_module(package)
    table = module._EXPORTS
    assert set(module.__all__) - {"__version__"} <= set(table), package


@pytest.mark.parametrize("module_name", public_modules())
def test_every_public_name_is_exported_once_from_a_public_home(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = list(getattr(module, "__all__", []))
    assert len(names) == len(set(names)), f"{module_name} lists a name twice"
    for name in names:
        value = getattr(module, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        home = public_home(value.__module__)
        assert home.startswith("agentkit"), f"{module_name}.{name} is not agentkit's"
        assert name in importlib.import_module(home).__all__, (
            f"{module_name}.{name}: its home {home} does not export it"
        )
