"""Noticing a model that repeats the same rejected call: a small model told its arguments
break the schema may send them again and again until the turn cap or its context ends."""

from __future__ import annotations

import json
from typing import Any

from agentkit.messages import ToolCall

__all__ = ["REPEAT_LIMIT", "Repeats"]

REPEAT_LIMIT = 3
"""How many times in a row the same call (name and arguments) may be rejected before the
run ends with an error."""

_SHOWN_ARGUMENTS = 200
_SHOWN_REASON = 300


def _shown(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class Repeats:
    """The last rejected call and how many times in a row it was made."""

    __slots__ = ("count", "key")

    def __init__(self) -> None:
        self.key: tuple[str, str] | None = None
        self.count = 0

    def accepted(self) -> None:
        """A call that was not rejected breaks the row."""
        self.key = None
        self.count = 0

    def rejected(self, call: ToolCall, reason: Any) -> str | None:
        """Count a rejected call; returns the run's error once it is the
        `REPEAT_LIMIT`-th identical one in a row."""
        arguments = call.arguments
        if isinstance(arguments, str):
            text = arguments
        else:
            try:
                text = json.dumps(arguments, sort_keys=True, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError):
                text = repr(arguments)
        key = (call.name, text)
        if key == self.key:
            self.count += 1
        else:
            self.key, self.count = key, 1
        if self.count < REPEAT_LIMIT:
            return None
        return (
            f"the model repeated the same rejected call {self.count} times: {call.name} "
            f"{_shown(text, _SHOWN_ARGUMENTS)}: {_shown(str(reason), _SHOWN_REASON)}"
        )
