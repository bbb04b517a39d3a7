"""Speaking the server's HTTP API by hand: a member's bearer header and the events of an
SSE response, so the tests check the wire format other languages rely on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


def bearer(token: str) -> dict[str, str]:
    """The `Authorization` header of a member's `token`."""
    return {"Authorization": f"Bearer {token}"}


def sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The events of an SSE response: `{"id", "event", "data"}`; comments skipped."""
    event: dict[str, Any] = {}
    data: list[str] = []
    for line in response.iter_lines():
        if line == "":
            if data or event:
                event["data"] = json.loads("\n".join(data)) if data else None
                yield event
            event, data = {}, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "id":
                event["id"] = int(value)
            else:
                event[field] = value
