"""Public names of a package, imported from their modules on first use.

`import agentkit` (or `agentkit.tools`, ...) must not import everything the package can
offer: each package lists where its names live, and this builds the module `__getattr__`
and `__dir__` that import a name's module when the name is first asked for.
"""

from __future__ import annotations

import importlib
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

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
