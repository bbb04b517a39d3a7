"""Asking a person at the command line: a permission request (allow / deny / always) and a
questionnaire (options by number, or free text), for `agentkit chat` and `agentkit run`.

Each question is a line written to standard error and a line read with the given reader
(the chat's, which reads standard input in a worker thread); an ended input denies.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = [
    "ask_answers",
    "ask_permission",
    "permission_question",
    "read_permission",
]

ReadLine = Callable[[str], Awaitable[str | None]]
"""Writes a prompt and reads a line (`None` at the end of the input)."""

_SHOWN_INPUT = 300  # characters of a call's input shown in the question
_TRIES = 5  # unreadable answers before the request is denied


def permission_question(tool: str, arguments: dict[str, Any]) -> str:
    """`Allow Bash {"command": "ls"}? [y]es / [n]o / [a]lways `: one line (the input's
    JSON cut short; control characters are escaped by JSON)."""
    shown = json.dumps(arguments, ensure_ascii=False)
    if len(shown) > _SHOWN_INPUT:
        shown = shown[: _SHOWN_INPUT - 3] + "..."
    return f"Allow {tool} {shown}? [y]es / [n]o / [a]lways "


def read_permission(line: str) -> tuple[bool, bool] | None:
    """`(allow, remember)` for an answer (`y`, `yes`, `n`, `no`, `a`, `always`, any case),
    `None` for anything else."""
    word = line.strip().lower()
    if word in ("y", "yes"):
        return True, False
    if word in ("a", "always"):
        return True, True
    if word in ("n", "no"):
        return False, False
    return None


async def ask_permission(
    read_line: ReadLine, tool: str, arguments: dict[str, Any]
) -> tuple[bool, bool, str | None]:
    """Ask until a readable answer: `(allow, remember, message)`; the input's end (or
    answers that cannot be read, again and again) denies, saying so."""
    question = permission_question(tool, arguments)
    for _ in range(_TRIES):
        line = await read_line(question)
        if line is None:
            return False, False, "nobody answered (the input ended)"
        answer = read_permission(line)
        if answer is not None:
            return answer[0], answer[1], None if answer[0] else "denied by the user"
    return False, False, "no readable answer"


def _chosen(line: str, options: Sequence[str], multiple: bool) -> Any:
    """An answer as typed: option numbers (`2`, or `1,3` when several may be chosen) are
    the options; anything else is the text itself."""
    text = line.strip()
    if options:
        picks = [part.strip() for part in text.split(",")] if multiple else [text]
        if all(pick.isdigit() and 1 <= int(pick) <= len(options) for pick in picks):
            chosen = [options[int(pick) - 1] for pick in picks]
            return chosen if multiple else chosen[0]
    return [text] if multiple and text else text


async def ask_answers(
    read_line: ReadLine, questions: Sequence[dict[str, Any]], say: Callable[[str], None]
) -> dict[str, Any] | None:
    """Each question, its options numbered, and its answer read: `{question id: answer}`,
    or `None` when the input ended before every answer."""
    answers: dict[str, Any] = {}
    for index, question in enumerate(questions, start=1):
        options = [str(option) for option in question.get("options") or ()]
        multiple = bool(question.get("multiple"))
        say(f"? {question.get('question', '')}")
        for number, option in enumerate(options, start=1):
            say(f"  {number}. {option}")
        hint = "numbers, commas between" if multiple else "a number"
        line = await read_line(f"answer ({hint} or text): " if options else "answer: ")
        if line is None:
            return None
        answers[str(question.get("id") or f"q{index}")] = _chosen(line, options, multiple)
    return answers
