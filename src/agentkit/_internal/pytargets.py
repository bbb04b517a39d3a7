"""Python objects named on the command line: `module:attribute` (the module imported with
the current folder on the import path, as uvicorn's `--app-dir .` does) or
`path/to/file.py:attribute` (the file imported as a module, with its own folder on the
import path so that it finds its sibling modules). `attribute` may be dotted."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["PythonTargetError", "import_target", "is_python_target"]


class PythonTargetError(ValueError):
    """A target that names no object; `missing` when its module or file is not there (a
    caller may then say which forms it takes)."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def is_python_target(target: str) -> bool:
    """Whether `target` has the shape of `module:attribute` or `file.py:attribute`."""
    head, sep, attribute = target.rpartition(":")
    if not sep or not head or not attribute:
        return False
    if head.endswith(".py"):
        return True
    return all(part.isidentifier() for part in head.split("."))


def import_target(target: str) -> Any:
    """The object `target` names.

    Raises:
        PythonTargetError: with a message naming the target and what is wrong (the file or
            module missing, the module failing to import, with its own message, or the
            attribute missing).
    """
    head, sep, attribute = target.rpartition(":")
    if sep and head.endswith(".py"):
        if not attribute:
            raise PythonTargetError(f"{target!r} names no attribute after ':'")
        module = _import_file(Path(head))
        where = repr(head)
    else:
        module_name, sep, attribute = target.partition(":")
        if not sep or not module_name or not attribute:
            raise PythonTargetError(f"{target!r} is not 'module:attribute'", missing=True)
        module = _import_module(module_name)
        where = f"module {module_name!r}"
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise PythonTargetError(f"{where} has no attribute {attribute!r}") from None
    return found


def _import_module(module_name: str) -> ModuleType:
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        # Missing only when the target's own module (or a package of its path) is: a
        # module that fails on one of its own imports needs that package instead.
        name = getattr(exc, "name", None) or ""
        missing = module_name == name or module_name.startswith(f"{name}.")
        raise PythonTargetError(
            f"cannot import module {module_name!r}: {exc}", missing=missing
        ) from None
    except Exception as exc:  # the user's module failed while importing
        raise PythonTargetError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise PythonTargetError(f"{path}: no such file", missing=True)
    resolved = path.resolve()
    # The file's stem as module name, unless that would shadow another module (a file
    # called json.py, say); the same file imported twice is the same module.
    name = path.stem if path.stem.isidentifier() else "_agentkit_target"
    known = sys.modules.get(name)
    if known is not None and getattr(known, "__file__", None) == str(resolved):
        return known
    if known is not None:
        digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
        name = f"_agentkit_target_{digest}"
        if name in sys.modules:
            return sys.modules[name]
    loader_spec = importlib.util.spec_from_file_location(name, resolved)
    if loader_spec is None or loader_spec.loader is None:
        raise PythonTargetError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    # Registered before running it: pydantic and dataclasses look a class's module up.
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file failed while importing
        sys.modules.pop(name, None)
        raise PythonTargetError(
            f"cannot import {str(path)!r}: {type(exc).__name__}: {exc}"
        ) from None
    return module
