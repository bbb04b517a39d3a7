"""Extensions: code of the user's that a served machine runs at start-up
(`agentkit serve --extension module:function`, or `path/to/file.py:function`), where it
creates rooms, sets grants and registers room agents, and whose cleanup runs at shutdown.

The function is called with the open machine. What it returns decides the cleanup:
nothing (the machine removes its room agents when it closes), an awaitable (awaited,
then as for nothing), or an async context manager (entered now, exited at shutdown, so
`@contextlib.asynccontextmanager` functions work as written).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from agentkit.conversations import Machine
from agentkit.errors import ExtensionError

__all__ = ["ExtensionError", "load_extension", "running_extensions"]


def load_extension(path: str) -> Callable[[Machine], Any]:
    """The function named by `module:function` (`module:object.attribute` works too; the
    module is imported with the current folder on the import path) or
    `path/to/file.py:function` (the file imported as a module)."""
    from agentkit._internal.pytargets import PythonTargetError, import_target, is_python_target

    if not is_python_target(path):
        raise ExtensionError(
            f"--extension {path!r} is not 'module:function' nor 'path/to/file.py:function'"
        )
    try:
        found = import_target(path)
    except PythonTargetError as exc:
        raise ExtensionError(f"--extension {path}: {exc}") from None
    if not callable(found):
        attribute = path.rpartition(":")[2]
        raise ExtensionError(f"--extension {path}: {attribute!r} is not a function")
    return found  # type: ignore[no-any-return]


@contextlib.asynccontextmanager
async def running_extensions(machine: Machine, paths: Sequence[str]) -> AsyncIterator[None]:
    """Start every extension in order; clean them up in reverse order on the way out."""
    functions = [(path, load_extension(path)) for path in paths]
    async with contextlib.AsyncExitStack() as stack:
        for path, function in functions:
            try:
                result = function(machine)
                if hasattr(result, "__aenter__") and hasattr(result, "__aexit__"):
                    await stack.enter_async_context(result)
                elif inspect.isawaitable(result):
                    await result
            except ExtensionError:
                raise
            except Exception as exc:
                raise ExtensionError(
                    f"--extension {path} failed to start: {type(exc).__name__}: {exc}"
                ) from exc
        yield
