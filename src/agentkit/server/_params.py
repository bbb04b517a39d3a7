"""What a request says, read one way on every route: integers (offsets, positions,
limits) from query parameters and headers, and text free of lone surrogates in path and
query parameters and JSON bodies.

A bad value is a caller's mistake, answered 422 `invalid` naming the parameter, never a
500: `?after=²` (a digit to `str.isdigit`, not to `int`), a 20-digit offset (more than a
database integer holds), a 5,000-digit limit (more than `int()` converts) and a
`"\\ud800"` escape in a JSON string (which `json.loads` accepts and nothing can encode
later) are all refused here, before a handler sees them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

from starlette.datastructures import QueryParams

from agentkit.server._errors import HTTPError

__all__ = [
    "MAX_INTEGER",
    "BadNumber",
    "check_text",
    "integer_param",
    "lone_surrogate_at",
    "optional_integer_param",
    "parse_json_float",
    "parse_json_int",
    "query_param",
]

MAX_INTEGER = 2**63 - 1
"""The largest integer a request may carry, in a parameter or a JSON body: what a 64-bit
database integer (SQLite's, PostgreSQL's `bigint`) holds."""

_MAX_DIGITS = len(str(MAX_INTEGER))


class BadNumber(ValueError):
    """A number of a JSON body that no store can hold (raised while it is parsed)."""


def integer_param(
    raw: str | None,
    name: str,
    *,
    default: int,
    minimum: int = 0,
    maximum: int = MAX_INTEGER,
) -> int:
    """The integer a query parameter or header gives, `default` when it is absent (see
    `optional_integer_param`).

    Raises:
        HTTPError: `invalid` (422) naming `name`.
    """
    value = optional_integer_param(raw, name, minimum=minimum, maximum=maximum)
    return default if value is None else value


def optional_integer_param(
    raw: str | None, name: str, *, minimum: int = 0, maximum: int = MAX_INTEGER
) -> int | None:
    """The integer a query parameter or header gives, `None` when it is absent (an empty
    value is not an integer).

    Only ASCII digits (with a leading `-` when `minimum` is negative) of at most 19 of
    them are read, so no input reaches `int()` that it cannot convert or a store cannot
    hold.

    Raises:
        HTTPError: `invalid` (422) naming `name`, for anything else or a value out of
            `minimum`..`maximum`.
    """
    if raw is None:
        return None
    text = raw
    digits = text[1:] if text.startswith("-") and minimum < 0 else text
    if not (digits.isascii() and digits.isdigit() and len(digits) <= _MAX_DIGITS):
        raise _not_in_range(name, minimum, maximum)
    value = int(text)
    if not minimum <= value <= maximum:
        raise _not_in_range(name, minimum, maximum)
    return value


def query_param(query: QueryParams, name: str) -> str | None:
    """The value of a query parameter given at most once (`None` when it is not given).

    Raises:
        HTTPError: `invalid` (422) naming `name`, when it is given more than once.
    """
    values = query.getlist(name)
    if len(values) > 1:
        raise HTTPError("invalid", f"{name} is given {len(values)} times: give it once", field=name)
    return values[0] if values else None


def _not_in_range(name: str, minimum: int, maximum: int) -> HTTPError:
    return HTTPError(
        "invalid", f"{name} must be an integer from {minimum} to {maximum}", field=name
    )


def check_text(values: Iterable[tuple[str, str]], kind: str) -> None:
    """Refuse a path or query parameter (`(name, value)` pairs) with a lone surrogate in
    it.

    Raises:
        HTTPError: `invalid` (422) naming the parameter.
    """
    for name, value in values:
        if not value.isascii() and _has_lone_surrogate(value):
            raise HTTPError("invalid", f"the {kind} parameter {name} is not valid text", field=name)


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate_at(value: Any) -> str | None:
    """Where a parsed JSON value holds a string (or a key) with a lone surrogate: its
    dotted path (`""` for the value itself), or `None` when it holds none."""
    for path, text in _strings(value, ()):
        if not text.isascii() and _has_lone_surrogate(text):
            return ".".join(path)
    return None


def _strings(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    stack: list[tuple[tuple[str, ...], Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, child in item.items():
                yield (*where, key), key
                stack.append(((*where, key), child))
        elif isinstance(item, list):
            stack.extend(((*where, str(index)), child) for index, child in enumerate(item))


def parse_json_int(text: str) -> int:
    """`json.loads`' `parse_int`: an integer a store can hold.

    Raises:
        BadNumber: It has more digits than `MAX_INTEGER`, or is out of its range.
    """
    digits = text.lstrip("-")
    if len(digits) > _MAX_DIGITS or not -MAX_INTEGER - 1 <= (value := int(text)) <= MAX_INTEGER:
        raise BadNumber(f"the integer {text[:24]}{'...' if len(text) > 24 else ''} is out of range")
    return value


def parse_json_float(text: str) -> float:
    """`json.loads`' `parse_float`: a finite number (`1e400` is not one).

    Raises:
        BadNumber: The number overflows a double.
    """
    value = float(text)
    if not math.isfinite(value):
        raise BadNumber(f"the number {text[:24]}{'...' if len(text) > 24 else ''} is out of range")
    return value


def page_params(query: QueryParams) -> tuple[int | None, str | None]:
    """A list route's `limit` (1..1000) and `cursor` query parameters, each given at most
    once (`invalid_page`, 422, naming the parameter, when one is not valid)."""
    raw = query_param(query, "limit")
    limit = None
    if raw is not None:
        if not (0 < len(raw) <= 4 and raw.isascii() and raw.isdigit()) or not (
            1 <= int(raw) <= 1000
        ):
            message = "limit must be an integer from 1 to 1000"
            raise HTTPError("invalid_page", message, field="limit")
        limit = int(raw)
    cursor = query_param(query, "cursor")
    if cursor is not None and not (0 < len(cursor) <= 2048 and cursor.isascii()):
        raise HTTPError("invalid_page", "cursor is not one this list gave", field="cursor")
    return limit, cursor
