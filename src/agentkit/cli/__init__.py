"""The `agentkit` command line (also `python -m agentkit`).

[`main`][agentkit.cli.main] parses the arguments and runs one command (`run`, `validate`,
`sessions`, `runs`, `serve`, `members`, `chat`); its return value is the process's exit
status. The commands are documented in the command-line guide (`docs/cli.md`).
"""

from agentkit.cli._main import main

__all__ = ["main"]
