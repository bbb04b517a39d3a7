"""Text that every JSON store and model API can carry.

A lone surrogate is what a file name that is not UTF-8 becomes in Python; no JSON encoder
of a store or a model API accepts one. Everything the engine keeps or shows passes through
here: lone surrogates become U+FFFD, and a result over its limit is cut with a note."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic_core import to_jsonable_python

from agentkit.messages import (
    ToolCall,
)

__all__: list[str] = []


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def text_safe(text: str) -> str:
    """`text` with each lone surrogate (what a file name that is not UTF-8 becomes in
    Python) replaced by U+FFFD: JSON, the stores and the model APIs cannot carry them."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return LONE_SURROGATE.sub("\ufffd", text)
    return text


def texts_safe(value: Any) -> Any:
    """`text_safe` through JSON-like data; `value` itself when nothing needed replacing."""
    if type(value) is str:
        return text_safe(value)
    if type(value) is dict:
        for key, item in value.items():
            if texts_safe(key) is not key or texts_safe(item) is not item:
                return {texts_safe(k): texts_safe(v) for k, v in value.items()}
        return value
    if type(value) is list:
        for item in value:
            if texts_safe(item) is not item:
                return [texts_safe(i) for i in value]
        return value
    return value


def json_safe(output: Any) -> Any:
    """A tool's output as JSON can hold it (what it cannot encode becomes its `str`, a lone
    surrogate U+FFFD), so every store, and the model, get the event the live readers saw."""
    if type(output) is str:
        return text_safe(output)
    return texts_safe(to_jsonable_python(output, fallback=str))


def call_safe(call: ToolCall) -> ToolCall:
    """`call` with any lone surrogate in its name or arguments replaced by U+FFFD: a model
    copying a file name it was shown as a `repr` (`'caf\\udce9'`) sends one as a JSON
    escape, and the `tool_use` event and the transcript could then not be stored."""
    arguments = call.arguments
    safe = texts_safe(arguments)
    name = text_safe(call.name)
    if safe is arguments and name is call.name:
        return call
    return call.model_copy(update={"arguments": safe, "name": name})


def as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def cut_output(text: str, limit: int) -> str:
    """The head of a result that is over `limit` characters, with a note of what was cut
    (for the model, which cannot see the rest)."""
    return (
        f"{text[:limit]}\n\n[output truncated by agentkit: the first {limit:,} of "
        f"{len(text):,} characters are shown]"
    )
