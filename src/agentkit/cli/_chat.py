"""`agentkit chat`: a terminal chat with a machine, as one of its members.

The client is a `ConversationClient`: `RemoteMachine` for `--url`, or the in-process
client of a local `Machine` on `--db`; the rest does not know which. Prompts are lines of
standard input (a terminal or a pipe); answers stream to stdout, and everything around
them (the conversation list, the `> ` prompt, errors) goes to stderr, so that
`agentkit chat ... < prompts.txt > answers.txt` keeps only the answers.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agentkit.cli._exit import EXIT_FAILED, EXIT_OK, EXIT_SIGINT, UsageError
from agentkit.cli._help import (
    DB_HELP,
    HELP_FORMATTER,
    PROVIDER_HELP,
    SCRIPT_HELP,
    add_provider_timeouts,
    wrap_paragraphs,
)
from agentkit.cli._members import machine_store_location, open_machine_store
from agentkit.cli._providers import make_provider

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from agentkit.conversations import ConversationClient, FollowEvent

__all__ = ["ChatPrinter", "add_chat_parser", "chat_command"]

OpenClient = Callable[[], AbstractAsyncContextManager["ConversationClient"]]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_FOLD = 200
"""Longest tool line printed, in characters: a line is a glance at what happened."""


def add_chat_parser(sub: Any) -> None:
    """The `chat` command's arguments and help."""
    chat = sub.add_parser(
        "chat",
        help="chat with a machine's agents in the terminal",
        description=wrap_paragraphs(
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
            "/attach FILE uploads a local file to the machine (into your upload folder) "
            "and attaches it to your next prompt; repeat it for several.",
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit chat --url http://127.0.0.1:8400 --token $TOKEN --new "Notes"
  AGENTKIT_URL=http://127.0.0.1:8400 AGENTKIT_TOKEN=$TOKEN agentkit chat
  echo "Summarise /space/report.md" | agentkit chat --db machine.db --token $TOKEN \\
      --new report --agent reviewer
  printf '/attach report.pdf\\nSummarise it\\n' | agentkit chat --url $URL --token $TOKEN --new r
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
        + DB_HELP.removeprefix("the machine's store: "),
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
        help="with a local machine (--db): " + PROVIDER_HELP,
    )
    chat.add_argument("--script", metavar="FILE", help=SCRIPT_HELP)
    add_provider_timeouts(chat)


def chat_command(args: argparse.Namespace) -> int:
    """Run `agentkit chat` with parsed arguments; returns the exit code."""
    import anyio

    if args.url and args.db:
        raise UsageError("give --url (a server) or --db (a local machine), not both")
    if args.new is not None and args.conversation:
        raise UsageError("give --conversation ID or --new NAME, not both")
    token = args.token or os.environ.get("AGENTKIT_TOKEN")
    if not token:
        raise UsageError("chat needs a member's token: --token TOKEN or $AGENTKIT_TOKEN")
    # An explicit --db wins over a server named in the environment.
    url = args.url or (None if args.db else os.environ.get("AGENTKIT_URL"))
    if url:
        if args.provider or args.script:
            raise UsageError("--provider and --script are for a local machine (--db), not --url")
        open_client: OpenClient = functools.partial(_remote_client, url, token)
    else:
        open_client = _local_opener(args, token)
    chat = _Chat(args, ChatPrinter(sys.stdout, color=_wants_color()))
    code: int = anyio.run(chat.main, open_client)
    if chat.reading:
        # A line is still being read in a worker thread (Ctrl-C at the prompt): a normal
        # exit would wait for that line forever. Everything is closed and flushed already.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    return code


def _wants_color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


# --- the client: remote or local --------------------------------------------------------


@contextlib.asynccontextmanager
async def _remote_client(url: str, token: str) -> AsyncIterator[ConversationClient]:
    from agentkit.client import RemoteMachine
    from agentkit.conversations import ConversationError

    try:
        async with RemoteMachine(url, token) as client:
            yield client
    except ConversationError as exc:
        # On entering: an unknown token, a server that cannot be reached (the message
        # names the URL). The chat handles the errors of its own calls.
        raise UsageError(str(exc)) from None


def _local_opener(args: argparse.Namespace, token: str) -> OpenClient:
    # Checked before anything runs: a bad store or provider is a usage error, said at once.
    store = open_machine_store(args.db, create=False)
    if store is None:
        raise UsageError(
            f"no machine store at {machine_store_location(args.db)!r}: add a member first "
            "('agentkit members add NAME --role owner')"
        )
    provider = make_provider(args)
    from agentkit.conversations import default_attachment_roots

    try:
        # As `agentkit serve` on the same store: /space and /rool-drive, else the folder
        # beside the store, so that /attach has somewhere to store files.
        roots = default_attachment_roots(machine_store_location(args.db))
    except OSError as exc:
        raise UsageError(f"cannot make the attachment folder beside the store: {exc}") from None

    @contextlib.asynccontextmanager
    async def open_local() -> AsyncIterator[ConversationClient]:
        import anyio

        from agentkit.conversations import Machine, MemberError
        from agentkit.stores import StoreError

        try:
            async with Machine(store=store, provider=provider, attachment_roots=roots) as machine:
                try:
                    member = await machine.authenticate(token)
                except MemberError:
                    raise UsageError("no member of this machine has this token") from None
                yield machine.client(member)
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(StoreError):
                await store.aclose()

    return open_local


# --- the chat ---------------------------------------------------------------------------


class _Chat:
    """Picks a conversation, then sends each line as a prompt and streams the answer.

    Ctrl-C while an answer streams cancels that run (the prompt comes back); Ctrl-C at
    the prompt, or while a run is being cancelled, quits with exit code 130.
    """

    def __init__(self, args: argparse.Namespace, printer: ChatPrinter) -> None:
        self.args = args
        self.out = printer
        self.reading = False  # a worker thread is blocked reading stdin
        self.following: tuple[ConversationClient, str] | None = None
        self.cancelling = False

    async def main(self, open_client: OpenClient) -> int:
        import anyio

        code = EXIT_SIGINT  # kept when Ctrl-C quits
        failure: Exception | None = None
        async with open_client() as client:
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_interrupts, group)
                try:
                    code = await self._converse(client)
                except Exception as exc:  # raised below as itself, not in a group
                    failure = exc
                group.cancel_scope.cancel()
            if failure is not None:
                raise failure
        return code

    async def _converse(self, client: ConversationClient) -> int:
        from agentkit.conversations import ConversationError, ConversationNotFoundError

        try:
            conversation_id = await self._choose(client)
            if conversation_id is None:
                return EXIT_OK
            details = await client.get_conversation(conversation_id)
        except ConversationNotFoundError as exc:
            _error(f"no conversation {str(exc)!r} (or it is not visible to you)")
            return EXIT_FAILED
        except ConversationError as exc:
            raise UsageError(str(exc)) from None
        _note(f"conversation {details.id} ({details.name or 'unnamed'}, agent {details.agent})")
        if details.active_run_id is not None:
            # Reconnect first: the run that is still going (started by another chat, or by
            # this one before it stopped) is part of the conversation.
            _note("following the run still going")
            await self._follow(client, details.id, details.active_run_id)
        attachments: list[str] = []  # uploaded by /attach, for the next prompt
        while (line := await self._read_line("> ")) is not None:
            text = line.strip()
            if text == "/quit":
                break
            if not text:
                continue
            if text == "/attach" or text.startswith("/attach "):
                stored = await self._attach(client, text.removeprefix("/attach").strip())
                if stored is not None:
                    attachments.append(stored)
                continue
            try:
                # The run's stream on create (one request to a server): every delta of
                # the answer, however fast the model.
                stream = await client.stream(details.id, text, attachments=attachments)
            except ConversationError as exc:  # busy, a viewer prompting, ...: not fatal
                _error(str(exc))
                continue
            attachments = []
            async with stream:
                await self._show(client, details.id, stream)
        return EXIT_OK

    async def _attach(self, client: ConversationClient, argument: str) -> str | None:
        """`/attach FILE`: upload the local file; its path on the machine, or `None`
        (the error said)."""
        from agentkit.conversations import ConversationError

        if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "'\"":
            argument = argument[1:-1]  # a path a terminal quoted when it was dropped in
        if not argument:
            _error("/attach FILE: give the path of a file on this computer")
            return None
        try:
            stored = await client.upload(Path(argument))  # the client expands '~'
        except ConversationError as exc:  # no such file, over the limit, a viewer, ...
            _error(f"/attach {argument}: {exc}")
            return None
        _note(f"attached {stored.path} ({stored.size} bytes): it goes with your next prompt")
        return stored.path

    async def _choose(self, client: ConversationClient) -> str | None:
        """The conversation to chat in: --conversation, --new, or picked from a list."""
        if self.args.conversation:
            return str(self.args.conversation)
        if self.args.new is not None:
            return await self._create(client, self.args.new)
        conversations = await client.list_conversations()
        if conversations:
            for number, row in enumerate(conversations, 1):
                running = ", running" if row.is_running else ""
                _note(
                    f"{number:3}  {row.name or '(unnamed)'}  [{row.agent}, "
                    f"{row.visibility}{running}]  {row.id}"
                )
        else:
            _note("no conversations yet")
        while (line := await self._read_line("number, or n [NAME] for a new one: ")) is not None:
            choice = line.strip()
            if choice == "n" or choice.startswith("n "):
                return await self._create(client, choice[1:].strip())
            if choice.isdigit() and 1 <= int(choice) <= len(conversations):
                return conversations[int(choice) - 1].id
            if choice:
                _error(f"{choice!r} is not a number from the list or 'n'")
        return None

    async def _create(self, client: ConversationClient, name: str) -> str:
        conversation = await client.create_conversation(agent=self.args.agent, name=name)
        return conversation.id

    async def _follow(self, client: ConversationClient, conversation_id: str, run_id: str) -> None:
        await self._show(client, conversation_id, client.follow(conversation_id, run_id))

    async def _show(
        self,
        client: ConversationClient,
        conversation_id: str,
        events: AsyncIterator[FollowEvent],
    ) -> None:
        """Print a run's events as they come (Ctrl-C meanwhile cancels the run)."""
        from agentkit.conversations import ConversationError

        self.following = (client, conversation_id)
        self.cancelling = False
        try:
            async for event in events:
                self.out.event(event)
                await self._answer_request(client, conversation_id, event)
        except ConversationError as exc:
            self.out.end_line()
            _error(str(exc))
        finally:
            self.following = None

    async def _answer_request(
        self, client: ConversationClient, conversation_id: str, event: FollowEvent
    ) -> None:
        """Ask the person at the terminal when the run asks (a permission: allow, deny
        or always; a question: its answers), and give the run the answer."""
        from agentkit.cli._ask import ask_answers, ask_permission
        from agentkit.conversations import (
            ConversationError,
            OutputEvent,
            PermissionRequestPart,
            QuestionPart,
        )

        if not isinstance(event, OutputEvent):
            return
        part = event.part
        if not isinstance(part, PermissionRequestPart | QuestionPart):
            return
        self.out.end_line()
        details = await client.get_conversation(conversation_id)
        run_id = next(
            (p.run_id for p in details.pending_requests if p.request_id == part.request_id), None
        )
        if run_id is None:
            return  # decided meanwhile (another member, its deadline)
        try:
            if isinstance(part, PermissionRequestPart):
                allow, remember, message = await ask_permission(
                    self._ask_line, part.tool, part.input
                )
                await client.decide(
                    conversation_id,
                    run_id,
                    part.request_id,
                    allow=allow,
                    message=message,
                    remember=remember,
                )
            else:
                answers = await ask_answers(self._ask_line, part.questions, _note)
                if answers is None:
                    _note("no answers (the input ended): the run waits for someone to answer")
                    return
                await client.answer(conversation_id, run_id, part.request_id, answers)
        except ConversationError as exc:  # decided by someone else first, say
            _error(str(exc))

    async def _ask_line(self, prompt: str) -> str | None:
        """A question's line: its prompt always shown (on standard error), then a line."""
        print(
            prompt,
            end="" if sys.stdin is not None and sys.stdin.isatty() else "\n",
            file=sys.stderr,
            flush=True,
        )
        return await self._read_line("")

    async def _read_line(self, prompt: str) -> str | None:
        """The next line of stdin (`None` at its end), read in a worker thread so that
        Ctrl-C is handled meanwhile."""
        import anyio

        if sys.stdin is None:
            return None
        if sys.stdin.isatty():
            print(prompt, end="", file=sys.stderr, flush=True)
        self.reading = True
        try:
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        except UnicodeDecodeError:
            raise UsageError("standard input is not valid UTF-8 text") from None
        self.reading = False
        return line or None

    async def _watch_interrupts(self, group: TaskGroup) -> None:
        import anyio

        try:
            receiver = anyio.open_signal_receiver(signal.SIGINT)
        except NotImplementedError:  # Windows: Ctrl-C stops the chat at once, as usual there
            return
        with receiver as signals:
            async for _ in signals:
                if self.following is None or self.cancelling:
                    self.out.end_line()
                    if sys.stdin is not None and sys.stdin.isatty():
                        print(file=sys.stderr)  # off the line of the '> ' prompt and '^C'
                    group.cancel_scope.cancel()  # quit: main() returns 130
                    return
                self.cancelling = True
                group.start_soon(self._cancel, *self.following)

    async def _cancel(self, client: ConversationClient, conversation_id: str) -> None:
        try:
            # Returns once the run has ended; the follow then ends with its final event.
            await client.cancel(conversation_id)
        except Exception as exc:  # the chat goes on: a second Ctrl-C still quits
            _error(f"cannot cancel the run: {exc}")


def _note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _error(message: str) -> None:
    print(f"agentkit: error: {message}", file=sys.stderr, flush=True)


# --- printing an answer -----------------------------------------------------------------


class ChatPrinter:
    """Writes a followed run: text as it streams, one dim line per tool call and result,
    structured output as indented JSON, and how the run ended unless it completed."""

    def __init__(self, out: IO[str], *, color: bool) -> None:
        self.out = out
        self.color = color
        self.streamed = False  # text deltas were written since the last complete text
        self.mid_line = False  # the cursor is not at the start of a line

    def event(self, event: FollowEvent) -> None:
        """Print one event of the followed run."""
        from agentkit.conversations import (
            FinalEvent,
            JsonPart,
            TextDeltaPart,
            TextPart,
            ToolCallPart,
            ToolResultPart,
        )

        if isinstance(event, FinalEvent):
            self.end_line()
            # A run that stops mid-text sends no complete text: the next run starts afresh.
            self.streamed = False
            if event.status == "cancelled":
                self._line("[cancelled]", "33")
            elif event.status == "error":
                self._line(f"[error] {_fold(event.error or 'the run failed')}", "31")
            return
        part = event.part
        if isinstance(part, TextDeltaPart):
            self._write(part.text)
            self.streamed = True
        elif isinstance(part, TextPart):
            # The complete text replaces the deltas before it: printed only if none were.
            if not self.streamed:
                self._write(part.text)
            self.streamed = False
            self.end_line()
        elif isinstance(part, ToolCallPart):
            self._line(f"[tool] {part.tool} {_fold(json.dumps(part.input, ensure_ascii=False))}")
        elif isinstance(part, ToolResultPart):
            output = part.output if isinstance(part.output, str) else json.dumps(part.output)
            label = "[tool error]" if part.is_error else "[result]"
            self._line(f"{label} {_fold(output)}")
        elif isinstance(part, JsonPart):
            self._line(json.dumps(part.value, ensure_ascii=False, indent=2), None)

    def end_line(self) -> None:
        """End the line the cursor is on, if it is not at the start of one."""
        if self.mid_line:
            self._write("\n")

    def _line(self, text: str, style: str | None = "2") -> None:
        """A line of its own; `style` an ANSI SGR code (2 dim), used on a terminal only."""
        self.end_line()
        if self.color and style is not None:
            text = f"\x1b[{style}m{text}\x1b[0m"
        self._write(text + "\n")

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.mid_line = not text.endswith("\n")


def _fold(text: str) -> str:
    """`text` on one line: control characters and runs of blanks as one space, cut short."""
    one_line = " ".join(_CONTROL.sub(" ", text).split())
    return one_line if len(one_line) <= _FOLD else one_line[: _FOLD - 3] + "..."
