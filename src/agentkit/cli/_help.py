"""What the commands' help shares: the formatter, the texts of common options, and the
options several commands take."""

from __future__ import annotations

import argparse
import textwrap

__all__ = [
    "DB_HELP",
    "HELP_FORMATTER",
    "PROVIDER_HELP",
    "SCRIPT_HELP",
    "STORE_HELP",
    "TIMEOUT_FLAGS",
    "add_list_format",
    "add_provider_timeouts",
    "wrap_paragraphs",
]

HELP_FORMATTER = argparse.RawDescriptionHelpFormatter
"""Keeps the epilogs' examples and exit codes as written."""

TIMEOUT_FLAGS = (
    ("connect", "seconds to connect to the model's server", "AGENTKIT_PROVIDER_CONNECT_TIMEOUT"),
    (
        "first-byte",
        "seconds from sending a request to the answer's first byte",
        "AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT",
    ),
    ("read", "seconds of silence allowed inside an answer", "AGENTKIT_PROVIDER_READ_TIMEOUT"),
    ("total", "seconds one model request may take in all", "AGENTKIT_PROVIDER_TOTAL_TIMEOUT"),
)
"""The provider timeout flags of `run`, `serve` and `chat`: name, meaning, environment
variable."""

PROVIDER_HELP = (
    "the model provider: test (offline, canned answers), scripted (replays --script FILE), "
    "anthropic, openai, openai-compatible (the server at $AGENTKIT_BASE_URL), local (the "
    "embedded model of the local extra), a name registered with register_provider, or "
    "module:attribute naming a provider factory of your own. "
    "Without it the environment picks: $AGENTKIT_PROVIDER if set ('none' for no provider), "
    "else anthropic when ANTHROPIC_API_KEY is set, else openai when OPENAI_API_KEY is set, "
    "else openai-compatible when AGENTKIT_BASE_URL is set, else local when installed"
)

STORE_HELP = (
    "the session store: a SQLite file, ':memory:', sqlite:///PATH or postgresql://... "
    "(default: $AGENTKIT_STORE, else $XDG_STATE_HOME/agentkit/agentkit.db, else "
    "~/.local/state/agentkit/agentkit.db)"
)

DB_HELP = (
    "the machine's store: a SQLite file, sqlite:///relative.db, sqlite:////absolute.db or "
    "postgresql://... (default: $AGENTKIT_MACHINE_STORE, else "
    "$XDG_STATE_HOME/agentkit/machine.db, else ~/.local/state/agentkit/machine.db)"
)

SCRIPT_HELP = (
    'for --provider scripted: a JSON list of responses, such as {"text": "..."} '
    'or {"tool_calls": [{"name": "...", "input": {...}}]}'
)


def add_provider_timeouts(parser: argparse.ArgumentParser) -> None:
    """The `--provider-*-timeout` flags of the commands that make a provider."""
    for name, what, variable in TIMEOUT_FLAGS:
        parser.add_argument(
            f"--provider-{name}-timeout",
            metavar="SECONDS",
            help=f"{what} (default: ${variable}, else the provider's default)",
        )


def wrap_paragraphs(*paragraphs: str) -> str:
    """Paragraphs filled to the width argparse uses for help (the raw formatter, which
    keeps the epilogs' examples as written, would not wrap them)."""
    return "\n\n".join(textwrap.fill(paragraph, width=88) for paragraph in paragraphs)


def add_list_format(parser: argparse.ArgumentParser) -> None:
    """The `--format text|json` of the commands that list."""
    # Its own `dest`: `runs show` has a `--format` of its own, and argparse would let one
    # overwrite the other.
    parser.add_argument(
        "--format",
        dest="list_format",
        choices=("text", "json"),
        default="text",
        help="text: a table (default); json: a JSON list for scripts",
    )
