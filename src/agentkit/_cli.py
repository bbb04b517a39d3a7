"""The `agentkit` command line.

```
agentkit run TARGET PROMPT [--provider NAME] [--script FILE] [--session ID]
                           [--format text|jsonl] [--working-dir DIR] [--app DIR] [--store PATH]
agentkit validate PATH... [--format text|json]
agentkit schema apps
agentkit fingerprint FILE
agentkit --version
```

Exit codes: 0 success, 1 the turn did not complete or a file is invalid, 2 usage errors
(bad arguments, missing files, no provider configured).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agentkit._version import __version__

if TYPE_CHECKING:
    from agentkit.events import AgentMessage
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec
    from agentkit.stores import Store

__all__ = ["main"]


class UsageError(Exception):
    """A mistake in how the command was called (exit 2)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentkit", description="Run and check agents: app agents, definitions, specs."
    )
    parser.add_argument("--version", action="version", version=f"agentkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run an agent on a prompt")
    run.add_argument(
        "target",
        metavar="TARGET",
        help="module:attribute naming an AgentSpec, <app-id>:<name> with --app, or agent.md",
    )
    run.add_argument("prompt", metavar="PROMPT", help="the user prompt")
    run.add_argument("--provider", help="provider name (test, scripted, anthropic, openai, ...)")
    run.add_argument("--script", help="JSON list of responses for --provider scripted")
    run.add_argument("--session", help="resume this session id")
    run.add_argument("--format", choices=("text", "jsonl"), default="text")
    run.add_argument("--working-dir", help="the run's working directory (default: .)")
    run.add_argument("--app", help="app folder for <app-id>:<name> targets (default: .)")
    run.add_argument(
        "--store",
        help="session store: a SQLite file, ':memory:' or postgresql://... "
        "(default: $AGENTKIT_STORE or ~/.local/state/agentkit/agentkit.db)",
    )

    validate = sub.add_parser("validate", help="check app folders, agent YAML and .md files")
    validate.add_argument("paths", nargs="+", metavar="PATH")
    validate.add_argument("--format", choices=("text", "json"), default="text")

    schema = sub.add_parser("schema", help="print the JSON Schemas for editor support")
    schema.add_argument("kind", choices=("apps",))
    schema.add_argument(
        "which",
        nargs="?",
        choices=("all", "app", "agent"),
        default="all",
        help="both schemas as one object (default), or only app.yaml's or an agent file's",
    )

    fingerprint = sub.add_parser("fingerprint", help="print a definition's fingerprints")
    fingerprint.add_argument("file", metavar="FILE")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `agentkit` console script; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "run":
            return _run_command(args)
        if args.command == "validate":
            return _validate_command(args)
        if args.command == "schema":
            return _schema_command(args)
        return _fingerprint_command(args)
    except UsageError as exc:
        print(f"agentkit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`agentkit run ... | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


# --- run ------------------------------------------------------------------------------


def _load_spec(target: str, app_dir: str | None) -> tuple[AgentSpec, Any]:
    """The spec named by TARGET, plus an adapter object (the loaded app, if any)."""
    if target.endswith(".md"):
        return _load_definition(target)
    module_name, sep, attribute = target.partition(":")
    app_root = Path(app_dir) if app_dir is not None else Path.cwd()
    if app_dir is not None or (sep and (app_root / "app.yaml").is_file()):
        return _load_app_agent(app_root, target)
    if not sep or not module_name or not attribute:
        raise UsageError(
            f"TARGET {target!r} must be module:attribute, <app-id>:<name> with --app, "
            "or a path to an agent .md file"
        )
    sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module failed while importing
        raise UsageError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"module {module_name!r} has no attribute {attribute!r}") from None
    from agentkit.spec import AgentSpec

    if not isinstance(obj, AgentSpec):
        raise UsageError(f"{target} is a {type(obj).__name__}, not an AgentSpec")
    return obj, None


def _load_app_agent(root: Path, target: str) -> tuple[AgentSpec, Any]:
    from agentkit.apps import load_app_for_cli

    try:
        spec, app = load_app_for_cli(root, target)
    except (LookupError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return spec, app


def _load_definition(path: str) -> tuple[AgentSpec, Any]:
    from agentkit.defs import load_definition_for_cli

    try:
        spec, definition = load_definition_for_cli(Path(path))
    except (LookupError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    return spec, definition


def _make_provider(args: argparse.Namespace) -> Provider:
    from agentkit.providers import (
        NO_PROVIDER_HELP,
        NoProviderError,
        create_provider,
        default_provider_name,
    )

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


def _default_store_location() -> str:
    configured = os.environ.get("AGENTKIT_STORE")
    if configured:
        return configured
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return str(Path(state) / "agentkit" / "agentkit.db")


def _make_store(location: str | None) -> Store:
    from agentkit import stores

    location = location or _default_store_location()
    opener = getattr(stores, "open_store", None)
    if opener is None:
        return stores.MemoryStore()
    try:
        if location not in (":memory:",) and "://" not in location:
            Path(location).expanduser().parent.mkdir(parents=True, exist_ok=True)
        store: Store = opener(location)
    except (ValueError, OSError) as exc:
        raise UsageError(f"cannot open the store {location!r}: {exc}") from None
    return store


def _run_command(args: argparse.Namespace) -> int:
    import anyio

    try:
        args.prompt.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("PROMPT is not valid UTF-8 text") from None

    spec, adapter = _load_spec(args.target, args.app)
    provider = _make_provider(args)
    working_dir = Path(args.working_dir or ".").resolve()
    if not working_dir.is_dir():
        raise UsageError(f"--working-dir {args.working_dir!r} is not a folder")
    store = _make_store(args.store)
    out = _Printer(args.format, sys.stdout, sys.stderr)

    async def go() -> int:
        from agentkit.stores import SessionNotFoundError, StoreError

        try:
            runtime = _make_runtime(spec, adapter, provider, store, working_dir)
            async with runtime:
                try:
                    run = await runtime.start(spec, args.prompt, session_id=args.session)
                except (SessionNotFoundError, ValueError) as exc:
                    raise UsageError(str(exc)) from None
                interrupted = False

                def interrupt() -> None:
                    nonlocal interrupted
                    interrupted = True
                    run.cancel()

                failure: Exception | None = None
                async with anyio.create_task_group() as group:
                    group.start_soon(_on_ctrl_c, interrupt)
                    try:
                        async for event in run.events():
                            out.event(event)
                    except Exception as exc:  # raised below as itself, not in a group
                        failure = exc
                    group.cancel_scope.cancel()
                if failure is not None:
                    raise failure
                outcome = await run.wait()
                out.finish(outcome.session_id)
                if interrupted:
                    return 130
                return 0 if outcome.ok else 1
        except StoreError as exc:
            raise UsageError(f"the session store failed: {exc}") from None
        finally:
            with anyio.CancelScope(shield=True):
                with contextlib.suppress(StoreError):
                    await store.aclose()

    code: int = anyio.run(go)
    unused = getattr(provider, "unused", None)
    if unused:
        print(
            f"agentkit: warning: {len(unused)} scripted response(s) were not used",
            file=sys.stderr,
        )
    return code


async def _on_ctrl_c(interrupt: Callable[[], None]) -> None:
    """The first Ctrl-C calls `interrupt` (the run then ends with its `error` and
    `turn_end` printed like any other end); after it, Ctrl-C stops at once again."""
    import signal

    import anyio

    try:
        receiver = anyio.open_signal_receiver(signal.SIGINT)
    except NotImplementedError:  # Windows: Ctrl-C stops at once, as it always does there
        return
    with receiver as signals:
        interrupted = False
        async for _ in signals:
            if interrupted:  # a second Ctrl-C: stop now
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(130)
            interrupted = True
            interrupt()


def _make_runtime(
    spec: AgentSpec, adapter: Any, provider: Provider, store: Store, working_dir: Path
) -> Runtime:
    from agentkit.runtime import Runtime

    make = getattr(adapter, "make_runtime", None)
    if make is not None:
        runtime: Runtime = make(provider=provider, store=store, working_dir=working_dir)
        return runtime
    return Runtime(provider=provider, store=store, agents=[spec], working_dir=working_dir)


class _Printer:
    """Writes events as text (live answer, status lines for tools) or as JSON lines."""

    def __init__(self, fmt: str, out: IO[str], err: IO[str]) -> None:
        self.fmt = fmt
        self.out = out
        self.err = err
        self.streamed = False
        self.console: Any = None
        if fmt == "text":
            try:
                from rich.console import Console
            except ImportError:  # the `cli` extra is optional: plain status lines then
                pass
            else:
                self.console = Console(file=err, highlight=False)

    def _status(self, line: str) -> None:
        if self.console is not None:
            if self.streamed:
                self.out.write("\n")
                self.out.flush()
                self.streamed = False
            from rich.text import Text

            self.console.print(Text(f"· {line}", style="dim"), soft_wrap=True)
        else:
            print(f"· {line}", file=self.err, flush=True)

    def event(self, event: AgentMessage) -> None:
        if self.fmt == "jsonl":
            from agentkit.events import to_wire

            self.out.write(json.dumps(to_wire(event), ensure_ascii=False) + "\n")
            self.out.flush()
            return
        who = f"[{event.agent}] " if event.agent else ""
        kind = event.type
        if kind == "text_delta":
            self.out.write(event.content)  # type: ignore[union-attr]
            self.out.flush()
            self.streamed = True
        elif kind == "text":
            if not self.streamed:
                self.out.write(who + event.content)  # type: ignore[union-attr]
            self.out.write("\n")
            self.out.flush()
            self.streamed = False
        elif kind == "tool_use":
            args = json.dumps(event.input, ensure_ascii=False)  # type: ignore[union-attr]
            if len(args) > 120:
                args = args[:117] + "..."
            self._status(f"{who}{event.tool} {args}")  # type: ignore[union-attr]
        elif kind == "tool_result" and event.is_error:  # type: ignore[union-attr]
            output = str(event.output)  # type: ignore[union-attr]
            self._status(f"{who}{event.tool} failed: {output[:200]}")  # type: ignore[union-attr]
        elif kind == "structured_output" and not event.agent:
            payload = event.payload  # type: ignore[union-attr]
            self.out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        elif kind == "error" and not event.agent:
            print(f"agentkit: error: {event.error}", file=self.err)  # type: ignore[union-attr]

    def finish(self, session_id: str) -> None:
        if self.fmt == "text":
            print(f"session: {session_id}", file=self.err)


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
        return 1
    return 0
