"""Pages of a list: every list of the machine (conversations, turns, runs, members, agents,
rooms, room events, delegations) is read a page at a time, the same in process and over
HTTP.

A call takes `limit` (1 to 1000) and `cursor`, the `next` of the page before; it answers a
[`Page`][agentkit.paging.Page]: a list of at most `limit` items whose `next` is the cursor
of the following page, `None` on the last one. Cursors are opaque strings: they hold the
position after the page's last item (never an offset), so items created while you page
never shift a page's boundary: no item is skipped or repeated.

```python
page = await client.list_conversations(limit=50)
while True:
    for summary in page:
        print(summary.name)
    if page.next is None:
        break
    page = await client.list_conversations(limit=50, cursor=page.next)
```
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from agentkit.errors import InvalidPageError

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "Page",
    "check_limit",
    "decode_cursor",
    "decode_key",
    "encode_cursor",
    "page_of",
    "record_key",
]

T = TypeVar("T")
U = TypeVar("U")

DEFAULT_LIMIT = 100
"""How many items a page holds when the call gives no `limit`."""
MAX_LIMIT = 1000
"""The most items one page holds."""
_MAX_CURSOR = 2048


class Page(list[T], Generic[T]):
    """One page of a list: its items (it is a `list`), and `next`.

    Attributes:
        next: The cursor of the next page; `None` when this is the last page.
    """

    def __init__(self, items: Iterable[T] = (), next: str | None = None) -> None:
        super().__init__(items)
        self.next = next

    def __repr__(self) -> str:
        return f"Page({list.__repr__(self)}, next={self.next!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Page):
            return list.__eq__(self, other) and self.next == other.next
        return list.__eq__(self, other)



def check_limit(limit: int | None) -> int:
    """The page size to use: `limit`, or `DEFAULT_LIMIT` when `None`
    (`InvalidPageError` outside 1..1000)."""
    if limit is None:
        return DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidPageError(f"limit must be an integer from 1 to {MAX_LIMIT}, not {limit!r}")
    return limit


def encode_cursor(kind: str, *position: Any) -> str:
    """An opaque cursor for the position after an item of list `kind`."""
    raw = json.dumps([kind, *position], separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, kind: str, *types: type) -> tuple[Any, ...]:
    """The position a cursor of list `kind` holds, its parts of these `types`
    (`InvalidPageError` for a cursor that this list did not give)."""
    if not isinstance(cursor, str) or not cursor or len(cursor) > _MAX_CURSOR:
        raise InvalidPageError("cursor is not one this list gave")
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise InvalidPageError("cursor is not one this list gave") from None
    if not isinstance(value, list) or len(value) != len(types) + 1 or value[0] != kind:
        raise InvalidPageError("cursor is not one this list gave")
    parts = value[1:]
    for part, expected in zip(parts, types, strict=True):
        if expected is float and isinstance(part, int) and not isinstance(part, bool):
            continue
        if not isinstance(part, expected) or isinstance(part, bool):
            raise InvalidPageError("cursor is not one this list gave")
        if isinstance(part, float) and not math.isfinite(part):
            raise InvalidPageError("cursor is not one this list gave")
    return tuple(float(p) if t is float else p for p, t in zip(parts, types, strict=True))


def page_of(
    items: Sequence[T],
    size: int,
    kind: str,
    position: Callable[[T], tuple[Any, ...]],
    convert: Callable[[T], U],
) -> Page[U]:
    """The page of `size` items out of `items`, read as `size + 1` so that whether a
    next page exists is known; its cursor holds the `position` of the last item shown."""
    shown = items[:size]
    following = encode_cursor(kind, *position(shown[-1])) if len(items) > size else None
    return Page([convert(item) for item in shown], following)


def decode_key(cursor: str | None, kind: str) -> tuple[float, str] | None:
    """The `(created_at, id)` a cursor of list `kind` holds (`None` for no cursor)."""
    if cursor is None:
        return None
    created, key = decode_cursor(cursor, kind, float, str)
    return (float(created), str(key))


def record_key(record: Any) -> tuple[float, str]:
    """The `(created_at, id)` position of a record (what store pages are keyed by)."""
    return (float(record.created_at), str(record.id))
