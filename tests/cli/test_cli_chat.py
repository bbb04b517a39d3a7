"""`agentkit chat`, run as a real subprocess: over a local machine's store (`--db`) and
over `agentkit serve` (`--url`), prompts piped on stdin."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import anyio
import pytest

from agentkit.conversations import AgentDefinition, Machine
from support.cli import agentkit

SLEEP = {"tool_calls": [{"name": "Bash", "input": {"command": "sleep 30"}}]}
"""A scripted response whose run lasts until it is cancelled."""


@pytest.fixture
def env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    env = {**cli_env, "AGENTKIT_MACHINE_STORE": str(tmp_path / "default-machine.db")}
    for name in ("AGENTKIT_URL", "AGENTKIT_TOKEN", "NO_COLOR"):
        env.pop(name, None)
    return env


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "machine.db")


def _add(python: str, env: dict[str, str], db: str, name: str, role: str = "owner") -> str:
    done = agentkit(python, env, "members", "add", name, "--role", role, "--db", db)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _script(tmp_path: Path, *responses: object) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(responses)))
    return str(path)


def _chat(
    python: str, env: dict[str, str], *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "agentkit", "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def _scripted(db: str, token: str, script: str) -> tuple[str, ...]:
    """The options of a chat on the local machine `db` as `token`, its model `script`."""
    return ("--db", db, "--token", token, "--provider", "scripted", "--script", script)


def _add_sleeper_agent(db: str) -> None:
    """A machine agent that may run Bash, so that a scripted `sleep 30` makes a slow run."""

    async def go() -> None:
        async with Machine(store=db, provider="test") as machine:
            owner = (await machine.list_members())[0]
            await machine.client(owner).create_agent(
                AgentDefinition(
                    name="sleeper", tools=("Bash",), permission_mode="bypassPermissions"
                )
            )

    anyio.run(go)


# --- over --db ------------------------------------------------------------------------------


def test_two_turns_stream_over_a_local_machine(
    python: str, env: dict[str, str], db: str, tmp_path: Path
) -> None:
    token = _add(python, env, db, "ada")
    script = _script(
        tmp_path,
        {"text": "Hello there, Ada.", "deltas": 4},
        {"tool_calls": [{"name": "LS", "input": {"path": "."}}]},
        {"text": "second answer"},
    )
    done = _chat(
        python,
        env,
        *_scripted(db, token, script),
        "--new",
        "notes",
        stdin="hello\n\nlist the files\n",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Hello there, Ada."
    assert lines[1] == '[tool] LS {"path": "."}'
    assert lines[2].startswith(("[result] ", "[tool error] "))
    assert lines[3:] == ["second answer"]
    assert "\x1b[" not in done.stdout  # no terminal: no colours
    assert "conversation " in done.stderr and "(notes, agent rool)" in done.stderr
    assert "Traceback" not in done.stderr


def test_picking_a_conversation_by_number_continues_it(
    python: str, env: dict[str, str], db: str, tmp_path: Path
) -> None:
    token = _add(python, env, db, "ada")
    first = _chat(
        python,
        env,
        "--db",
        db,
        "--token",
        token,
        "--provider",
        "test",
        "--new",
        "kept",
        stdin="hi\n",
    )
    assert first.returncode == 0, first.stderr
    script = _script(tmp_path, {"text": "welcome back"})
    picked = _chat(
        python,
        env,
        *_scripted(db, token, script),
        stdin="1\nagain\n/quit\nnot sent\n",
    )
    assert picked.returncode == 0, picked.stderr
    assert picked.stdout == "welcome back\n"
    assert "  1  kept  [rool, private]" in picked.stderr
    # `n` makes a new conversation; a choice that is not in the list is asked again.
    new = _chat(
        python,
        env,
        "--db",
        db,
        "--token",
        token,
        "--provider",
        "test",
        stdin="7\nn second one\n",
    )
    assert new.returncode == 0, new.stderr
    assert "'7' is not a number from the list" in new.stderr
    assert "(second one, agent rool)" in new.stderr
    # The end of the input before a choice quits quietly.
    empty = _chat(python, env, "--db", db, "--token", token, "--provider", "test")
    assert empty.returncode == 0 and empty.stdout == "", empty.stderr


def test_the_run_error_is_shown_and_the_chat_goes_on(
    python: str, env: dict[str, str], db: str, tmp_path: Path
) -> None:
    token = _add(python, env, db, "ada")
    script = _script(tmp_path, {"error": "the model is down"}, {"text": "back"})
    done = _chat(
        python,
        env,
        *_scripted(db, token, script),
        "--new",
        "x",
        stdin="one\ntwo\n",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("[error] ") and "the model is down" in lines[0]
    assert lines[-1] == "back"


def test_a_viewer_cannot_prompt_and_the_chat_goes_on(
    python: str, env: dict[str, str], db: str
) -> None:
    _add(python, env, db, "ada")
    viewer = _add(python, env, db, "vic", "viewer")
    done = _chat(
        python,
        env,
        "--db",
        db,
        "--token",
        viewer,
        "--provider",
        "test",
        "--new",
        "x",
    )
    # Creating a conversation is refused before any prompt: one error line, exit 2.
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith("agentkit: error: ")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (("--token", "nobody's"), 2, "no member of this machine has this token"),
        ((), 2, "needs a member's token"),
        (("--token", "T", "--url", "http://x", "--db", "y.db"), 2, "not both"),
        (("--token", "T", "--new", "a", "--conversation", "b"), 2, "not both"),
        (("--token", "T", "--url", "http://x", "--provider", "test"), 2, "local machine"),
        (("--token", "TOKEN", "--conversation", "nope"), 1, "no conversation 'nope'"),
        (("--token", "T", "--db", "mysql://x/y"), 2, "cannot open the store"),
    ],
)
def test_usage_errors_are_one_line(
    python: str,
    env: dict[str, str],
    db: str,
    args: tuple[str, ...],
    code: int,
    says: str,
) -> None:
    token = _add(python, env, db, "ada")
    args = tuple(token if arg == "TOKEN" else arg for arg in args)
    if "--db" not in args and "--url" not in args:
        args = (*args, "--db", db)
    done = (
        _chat(python, env, *args, "--provider", "test")
        if "--url" not in args
        else _chat(python, env, *args)
    )
    assert done.returncode == code, done.stderr
    assert says in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith("agentkit: error: ")


def test_no_store_at_all_says_so(python: str, env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    done = _chat(python, env, "--db", str(missing), "--token", "T", "--provider", "test")
    assert done.returncode == 2 and "agentkit members add" in done.stderr
    assert not missing.exists()


# --- Ctrl-C ------------------------------------------------------------------------------------


class _Lines:
    """A process's output lines, read in a thread so that a test can wait with a limit."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def rest(self) -> str:
        """Every line seen, and the rest until the stream ends."""
        while (line := self._queue.get(timeout=10)) is not None:
            self.seen.append(line)
        return "".join(self.seen)

    def until(self, text: str, seconds: float = 30.0) -> str:
        deadline = time.monotonic() + seconds
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {text!r} in {self.seen}") from None
            if line is None:
                raise AssertionError(f"the output ended without {text!r}: {self.seen}")
            self.seen.append(line)
            if text in line:
                return line


@pytest.fixture
def sleeper_chat(
    python: str, env: dict[str, str], db: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], _Lines]]:
    token = _add(python, env, db, "ada")
    _add_sleeper_agent(db)
    script = _script(tmp_path, SLEEP, {"text": "after the cancel"})
    process = subprocess.Popen(
        [
            python,
            "-m",
            "agentkit",
            "chat",
            *_scripted(db, token, script),
            "--new",
            "slow",
            "--agent",
            "sleeper",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        bufsize=1,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        yield process, _Lines(process.stdout)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_ctrl_c_cancels_the_run_and_the_chat_goes_on(
    sleeper_chat: tuple[subprocess.Popen[str], _Lines],
) -> None:
    process, out = sleeper_chat
    assert process.stdin is not None
    process.stdin.write("take your time\n")
    process.stdin.flush()
    out.until("[tool] Bash")
    time.sleep(0.3)  # the tool's process is running
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    out.until("[cancelled]", seconds=20)
    assert time.monotonic() - started < 20
    process.stdin.write("and now?\n")
    process.stdin.flush()
    out.until("after the cancel")
    process.stdin.close()
    assert process.wait(timeout=20) == 0
    assert process.stderr is not None
    assert "Traceback" not in process.stderr.read()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_ctrl_c_at_the_prompt_quits_with_130(
    sleeper_chat: tuple[subprocess.Popen[str], _Lines],
) -> None:
    process, _ = sleeper_chat
    assert process.stderr is not None
    errors = _Lines(process.stderr)
    errors.until("conversation ")  # chosen: the chat now waits for a prompt line
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=20) == 130, errors.rest()
    assert not any("Traceback" in line for line in errors.seen)


def test_tokens_never_start_with_a_dash(python: str, env: dict[str, str], db: str) -> None:
    # A token is given on the command line (`--token TOKEN`): one that started with '-'
    # would be taken for an option.
    async def tokens() -> list[str]:
        from agentkit.conversations import Members
        from agentkit.stores import open_store

        store = open_store(db)
        try:
            return [await Members(store).add(f"m{number}", "owner") for number in range(300)]
        finally:
            await store.aclose()

    made = anyio.run(tokens)
    assert all(token.startswith("ak_") and len(token) >= 3 + 43 for token in made)
    assert len(set(made)) == len(made)
    done = _chat(python, env, "--db", db, "--token", made[0], "--provider", "test", "--new", "x")
    assert done.returncode == 0, done.stderr


# --- over --url: a real `agentkit serve` ---------------------------------------------------


@pytest.fixture
def server(python: str, env: dict[str, str], db: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A served machine whose model answers as the conversation conformance provider
    does (`say TEXT`, `hang`, ...); its URL and an owner's token."""
    token = _add(python, env, db, "ada")
    with (tmp_path / "serve-stderr.txt").open("w") as errors:
        process = subprocess.Popen(
            [
                python,
                "-m",
                "agentkit",
                "serve",
                "--db",
                db,
                "--port",
                "0",
                "--provider",
                "agentkit.testing:conformance_provider",
                "--attachment-root",
                str(tmp_path),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
            start_new_session=True,  # a Ctrl-C of pytest is not sent to it too
        )
    assert process.stdout is not None
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://"), (tmp_path / "serve-stderr.txt").read_text()
        yield url, token
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_two_turns_over_a_server(env: dict[str, str], python: str, server: tuple[str, str]) -> None:
    url, token = server
    done = _chat(
        python,
        {**env, "AGENTKIT_URL": url, "AGENTKIT_TOKEN": token},
        "--new",
        "remote",
        stdin="say first answer\nsay second answer\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "first answer\nsecond answer\n"
    assert "(remote, agent rool)" in done.stderr


def test_server_errors_are_one_line(
    env: dict[str, str], python: str, server: tuple[str, str]
) -> None:
    url, _ = server
    for args, says in (
        (("--url", url, "--token", "not-a-token"), "does not accept this token"),
        (("--url", "http://127.0.0.1:9", "--token", "t"), "could not be reached"),
    ):
        done = _chat(python, env, *args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [done.stderr.strip()]
        assert done.stderr.startswith("agentkit: error: ") and says in done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
def test_a_new_chat_follows_the_run_still_going_and_ctrl_c_cancels_it(
    env: dict[str, str], python: str, server: tuple[str, str]
) -> None:
    url, token = server
    remote = {**env, "AGENTKIT_URL": url, "AGENTKIT_TOKEN": token}
    first = subprocess.Popen(
        [python, "-m", "agentkit", "chat", "--new", "long"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=remote,
    )
    assert first.stdin is not None and first.stderr is not None
    chosen = _Lines(first.stderr).until("conversation ")
    conversation_id = chosen.split()[1]
    first.stdin.write("hang\n")
    first.stdin.flush()
    time.sleep(1.0)  # the run is going on the server
    first.kill()  # the chat dies; the run is the server's and goes on
    first.wait(timeout=10)

    second = subprocess.Popen(
        [python, "-m", "agentkit", "chat", "--conversation", conversation_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=remote,
    )
    try:
        assert second.stdout is not None and second.stderr is not None
        out = _Lines(second.stdout)
        errors = _Lines(second.stderr)
        errors.until("following the run still going")
        time.sleep(0.5)
        second.send_signal(signal.SIGINT)
        out.until("[cancelled]", seconds=20)
        assert "partial answer\n" in out.seen
        assert second.stdin is not None
        second.stdin.write("say after\n")
        second.stdin.close()
        assert second.wait(timeout=20) == 0, errors.rest()
        rest = out.rest()
        assert rest.endswith("[cancelled]\nafter\n"), (rest, errors.rest())
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(timeout=10)


# --- how an answer is printed (in process) --------------------------------------------------


def test_the_printer_folds_tools_and_shows_structured_output_and_colours_on_a_terminal() -> None:
    import io

    from agentkit.cli._chat import ChatPrinter
    from agentkit.conversations import (
        FinalEvent,
        JsonPart,
        OutputEvent,
        TextDeltaPart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
    )

    parts = [
        TextDeltaPart(text="Look"),
        TextDeltaPart(text="ing"),
        TextPart(text="Looking"),
        ToolCallPart(id="c1", tool="Read", input={"file_path": "a.txt"}),
        ToolResultPart(tool_call_id="c1", tool="Read", output="line one\n\tline two\x1b[31m"),
        ToolResultPart(tool_call_id="c2", tool="Bash", output={"x": "y" * 500}, is_error=True),
        JsonPart(value={"answer": 42}),
    ]
    events = [OutputEvent(offset=i, part=part) for i, part in enumerate(parts)]
    plain = io.StringIO()
    printer = ChatPrinter(plain, color=False)
    for event in [*events, FinalEvent(offset=9, status="error", error="model\ndown")]:
        printer.event(event)
    lines = plain.getvalue().splitlines()
    assert lines[:4] == [
        "Looking",
        '[tool] Read {"file_path": "a.txt"}',
        "[result] line one line two [31m",
        lines[3],
    ]
    assert (
        lines[3].startswith('[tool error] {"x": "yyy')
        and len(lines[3]) == len("[tool error] ") + 200
    )
    assert lines[3].endswith("...")
    assert json.loads("\n".join(lines[4:-1])) == {"answer": 42}
    assert lines[-1] == "[error] model down"
    assert "\x1b" not in plain.getvalue()

    coloured = io.StringIO()
    printer = ChatPrinter(coloured, color=True)
    for event in [events[3], FinalEvent(offset=9, status="cancelled")]:
        printer.event(event)
    assert coloured.getvalue() == (
        '\x1b[2m[tool] Read {"file_path": "a.txt"}\x1b[0m\n\x1b[33m[cancelled]\x1b[0m\n'
    )


def test_attach_uploads_a_file_and_attaches_it_to_the_next_prompt(
    env: dict[str, str], python: str, server: tuple[str, str], db: str, tmp_path: Path
) -> None:
    url, token = server
    local = tmp_path / "here" / "report.txt"
    local.parent.mkdir()
    local.write_text("the report")
    done = _chat(
        python,
        {**env, "AGENTKIT_URL": url, "AGENTKIT_TOKEN": token},
        "--new",
        "files",
        stdin=f"/attach {tmp_path / 'missing.txt'}\n/attach '{local}'\n/attach\n"
        "say read it\nsay no attachment now\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "read it\nno attachment now\n"
    # The server's root is tmp_path; the member's folder is named by its id.
    [stored] = (tmp_path / "uploads").glob("*/report.txt")
    assert stored.read_text() == "the report"
    assert f"attached {stored} (10 bytes)" in done.stderr
    assert "agentkit: error: /attach " in done.stderr and "missing.txt" in done.stderr
    assert "/attach FILE: give the path" in done.stderr

    async def turns() -> list[list[str]]:
        async with Machine(store=db, provider="test", attachment_roots=[tmp_path]) as machine:
            ada = (await machine.list_members())[0]
            client = machine.client(ada)
            (row,) = await client.list_conversations()
            return [
                [part.model_dump()["path"] for part in turn.parts if part.type == "attachment"]
                for turn in await client.list_turns(row.id)
                if turn.role == "user"
            ]

    assert anyio.run(turns) == [[str(stored)], []]


# --- a person in the loop -------------------------------------------------------------------


def _add_gate_agent(db: str) -> None:
    """A machine agent whose Bash calls need consent (the `default` permission mode)."""

    async def go() -> None:
        async with Machine(store=db, provider="test") as machine:
            owner = (await machine.list_members())[0]
            await machine.client(owner).create_agent(
                AgentDefinition(name="gate", tools=("Bash", "AskUserQuestion"))
            )

    anyio.run(go)


def test_a_permission_request_is_asked_inline_and_always_is_remembered(
    python: str, env: dict[str, str], db: str, tmp_path: Path
) -> None:
    token = _add(python, env, db, "ada")
    _add_gate_agent(db)
    echo = {"tool_calls": [{"name": "Bash", "input": {"command": "echo inline"}}]}
    question = {"question": "Which day?", "options": ["Monday", "Friday"]}
    ask = {"tool_calls": [{"name": "AskUserQuestion", "input": {"questions": [question]}}]}
    script = _script(
        tmp_path,
        echo,
        {"text": "denied"},
        echo,
        {"text": "ran"},
        echo,
        {"text": "again"},
        ask,
        {"text": "booked"},
    )
    done = _chat(
        python,
        env,
        *_scripted(db, token, script),
        "--agent",
        "gate",
        "--new",
        "approvals",
        # no, then always (after an answer it cannot read), then nobody is asked, then 2.
        stdin="one\nn\ntwo\nmaybe\na\nthree\nfour\n2\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count('Allow Bash {"command": "echo inline"}? [y]es / [n]o / [a]lways') == 3
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        '[tool] Bash {"command": "echo inline"}',
        "[tool error] permission denied: denied by the user",
        "denied",
    ]
    assert lines[3:6] == ['[tool] Bash {"command": "echo inline"}', "[result] inline", "ran"]
    assert lines[6:9] == ['[tool] Bash {"command": "echo inline"}', "[result] inline", "again"]
    assert "? Which day?" in done.stderr and "  2. Friday" in done.stderr
    assert lines[-2:] == ['[result] {"q1": "Friday"}', "booked"]
    assert "Traceback" not in done.stderr
