"""`agentkit run`: one turn of an agent on a prompt, its events printed as they come.

The agent is an agent file of a registered format, or an `Agent` or `AgentSpec` in Python
(see `_targets`); the run is stored in the session store, and Ctrl-C or SIGTERM ends it as
interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit._internal.signals import watch_stop_signals
from agentkit.cli._budget import add_budget_flags, budget_of
from agentkit.cli._consent import PERMISSION_MODES, attach_consent
from agentkit.cli._exit import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_USAGE,
    UsageError,
)
from agentkit.cli._help import (
    HELP_FORMATTER,
    PROVIDER_HELP,
    SCRIPT_HELP,
    STORE_HELP,
    add_provider_timeouts,
    wrap_paragraphs,
)
from agentkit.cli._log import library_log
from agentkit.cli._output import EventPrinter
from agentkit.cli._providers import check_model, make_provider
from agentkit.cli._store import open_cli_store
from agentkit.cli._targets import TARGET_FORMS, PythonSpec, load_run_target

if TYPE_CHECKING:
    from agentkit.runtime import Run
    from agentkit.stores import Store

__all__ = ["add_run_parser", "run_command"]

_EXIT_CODES_RUN = """\
exit codes:
  0    the turn completed
  1    the turn ended with an error (printed on stderr)
  2    usage or environment error: bad arguments, unreadable or invalid agent files,
       no provider configured, a store that cannot be opened or fails
  130  interrupted by Ctrl-C: the run ends as interrupted (its error and turn_end are
       printed and stored); a second Ctrl-C stops at once
  143  stopped by SIGTERM (kill, timeout, docker stop, systemd), handled like Ctrl-C"""


def add_run_parser(sub: Any) -> None:
    """The `run` command's arguments and help."""
    run = sub.add_parser(
        "run",
        help="run an agent on a prompt",
        description=wrap_paragraphs(
            "Run one turn of an agent on a prompt and print its events as they come.",
            TARGET_FORMS + ".",
        ),
        formatter_class=HELP_FORMATTER,
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
    run.add_argument("--provider", metavar="NAME", help=PROVIDER_HELP)
    run.add_argument(
        "--model",
        metavar="MODEL",
        help="the model instead of the agent's own choice: a model string such as "
        "openai:gpt-4.1, anthropic:claude-sonnet-4-5, local, test, or a tier (large, "
        "medium, small)",
    )
    run.add_argument("--script", metavar="FILE", help=SCRIPT_HELP)
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
    run.add_argument("--store", metavar="LOCATION", help=STORE_HELP)
    run.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="the agent's permission mode instead of its own: acceptEdits lets it edit "
        "files, bypassPermissions also run commands, without asking. Calls that need "
        "permission are denied when nobody can be asked (standard input is not a terminal)",
    )
    add_provider_timeouts(run)
    add_budget_flags(run)


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


def _make_store(location: str | None) -> Store:
    store = open_cli_store(location, create=True)
    assert store is not None  # only a store that may stay uncreated is ever None
    return store


def run_command(args: argparse.Namespace) -> int:
    """Run `agentkit run` with parsed arguments; returns the exit code."""
    import anyio

    prompt = _read_prompt(args.prompt)
    runnable = load_run_target(args.target, args.app)
    spec = runnable.spec
    if args.model is not None:
        from agentkit.spec import ModelSelection

        try:
            spec = spec.model_copy(update={"model": ModelSelection.parse(args.model)})
        except ValueError as exc:
            raise UsageError(f"--model: {exc}") from None
        if args.provider is None and spec.model.provider is not None:
            args.provider = spec.model.provider  # the model string names its provider
        if isinstance(runnable, PythonSpec):
            runnable = replace(runnable, spec=spec)  # its runtime holds the spec as run
    if args.permission_mode is not None:
        spec = spec.model_copy(update={"permission_mode": args.permission_mode})
        if isinstance(runnable, PythonSpec):
            runnable = replace(runnable, spec=spec)
    budget = budget_of(args)
    provider = make_provider(args)
    if args.model is not None:
        check_model(provider, spec.model)
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

            runtime = runnable.make_runtime(provider=provider, store=store, working_dir=working_dir)
            runtime.budget = budget
            attach_consent(runtime)  # no run of this command waits on nobody
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

    with library_log() as log:
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
