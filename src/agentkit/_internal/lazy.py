"""Public names of a package, imported from their modules on first use.

`import agentkit` (or `agentkit.tools`, ...) must not import everything the package can
offer: each package lists where its names live, and this builds the module `__getattr__`
and `__dir__` that import a name's module when the name is first asked for.

A class or function defined in one of the package's private modules is given the package
as its `__module__` when it is first asked for, so its reprs, tracebacks and pickles name
where users import it from (`agentkit.runtime.Runtime`, not `agentkit.runtime._runtime`).
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, str], public: Sequence[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`: `exports` maps each lazy name to the
    module defining it; `public` is what `dir()` lists (the package's `__all__`).

    Bind the `__getattr__` only when not type checking: type checkers read a module
    `__getattr__` as "any name exists", which would hide every misspelt import.
    """
    namespace = sys.modules[package].__dict__
    home = package + "."

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if (isinstance(value, type) or inspect.isfunction(value)) and _private_inside(
            getattr(value, "__module__", ""), home
        ):
            value.__module__ = package  # its home is this package (see above)
        namespace[name] = value  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__


def _private_inside(module: str, home: str) -> bool:
    """Whether `module` is a private module of the package whose name is `home` less its
    final dot (`agentkit.stores._rooms` of `agentkit.stores.`)."""
    return module.startswith(home) and any(
        part.startswith("_") for part in module[len(home) :].split(".")
    )
