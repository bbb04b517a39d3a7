"""The `agentkit` command line (also `python -m agentkit`).

[`main`][agentkit.cli.main] parses the arguments and runs one command (`run`, `validate`,
`sessions`, `runs`, `serve`, `members`, `chat`); its return value is the process's exit
status. The commands are documented in the command-line guide (`docs/cli.md`).
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.cli._main import main

_EXPORTS: dict[str, str] = {
    "main": "agentkit.cli._main",
}

__all__ = [
    "main",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
