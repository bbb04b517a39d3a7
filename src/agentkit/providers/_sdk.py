"""What the providers built on an official client library (anthropic, openai) share.

Building the client (imported lazily, with an install hint when missing, and with the
library's own retries off because the engine retries), opening a stream within the
first-byte timeout, relaying its events as chunks with failures mapped to
[`ProviderError`][agentkit.providers.ProviderError] that say what the server sent, and
holding the whole stream to the total timeout.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from agentkit.providers._base import Chunk, ProviderError
from agentkit.providers._catalog import ModelCatalog
from agentkit.providers._errors import excerpt
from agentkit.providers._model_strings import check_pinned_model
from agentkit.providers._registry import ProviderConfigError
from agentkit.providers._timeouts import TIMEOUT_ENV, ProviderTimeouts

__all__ = ["SDKProvider", "StreamSeen", "WithinTotal", "open_stream", "relay", "sdk_client"]


def sdk_client(
    package: str,
    client_class: str,
    *,
    provider: str,
    api_key: str,
    base_url: str | None,
    base_url_env: str,
    timeouts: ProviderTimeouts,
) -> Any:
    """An async client of `package` (extra of the same name): `package.client_class(...)`.

    `base_url` falls back to the environment variable `base_url_env`, then to the
    library's default endpoint. The client's own timeouts are `timeouts.connect` to
    connect and `timeouts.read` for any read; the first-byte and total timeouts are kept
    by `open_stream` and `WithinTotal`.
    """
    try:
        module = importlib.import_module(package)
    except ImportError:
        raise ProviderConfigError(
            f"the {provider} provider needs the '{package}' package: "
            f"pip install 'typed-agentkit[{package}]'"
        ) from None
    return getattr(module, client_class)(
        api_key=api_key,
        base_url=base_url or os.environ.get(base_url_env) or None,
        timeout=timeouts.client_timeout(module.Timeout),
        max_retries=0,  # the engine retries, honouring Retry-After
    )


async def open_stream(
    create: Awaitable[Any],
    timeouts: ProviderTimeouts,
    provider: str,
    error: Callable[[BaseException], ProviderError],
) -> Any:
    """Await `create` (a client's `create(..., stream=True)`, which returns once the
    response's headers are in) within the first-byte timeout."""
    with anyio.CancelScope(deadline=anyio.current_time() + timeouts.first_byte):
        try:
            return await create
        except Exception as exc:
            raise error(exc) from exc
    raise ProviderError(
        f"{provider}: no response within {timeouts.first_byte:g} s of sending the request "
        f"(first-byte timeout; set it with first_byte_timeout= or "
        f"{TIMEOUT_ENV['first_byte']})",
        retryable=True, kind="timeout",
    )



class SDKProvider:
    """What the providers built on an official client library have alike: a model
    catalog, their timeouts and the client, which `aclose` closes."""

    name: str
    catalog: ModelCatalog
    timeouts: ProviderTimeouts
    _client: Any

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        """The concrete model for a tier or a pinned name; an `UnknownModelError` for a
        pinned name that is surely a mistake (`openai/gpt-4.1`, a misspelt provider)."""
        if model:
            check_pinned_model(self.name, model, self.catalog.aliases)
        return self.catalog.resolve(tier, model)

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()


class WithinTotal:
    """`chunks`, each awaited within what is left of `timeouts.total` from the first.

    A plain async iterator, not an async generator, so that each step's cancel scope
    opens and closes within the consumer's one `await` and never spans a `yield`.
    """

    def __init__(
        self, chunks: AsyncGenerator[Chunk, None], timeouts: ProviderTimeouts, provider: str
    ) -> None:
        self._chunks = chunks
        self._seconds = timeouts.total
        self._provider = provider
        self._deadline: float | None = None

    def __aiter__(self) -> WithinTotal:
        return self

    async def __anext__(self) -> Chunk:
        if self._deadline is None:
            self._deadline = anyio.current_time() + self._seconds
        with anyio.CancelScope(deadline=self._deadline):
            return await self._chunks.__anext__()
        raise ProviderError(
            f"{self._provider}: the response took longer than {self._seconds:g} s in all "
            f"(total timeout; set it with total_timeout= or {TIMEOUT_ENV['total']})",
            retryable=True, kind="timeout",
        )

    async def aclose(self) -> None:
        """Close the underlying stream (and its HTTP response)."""
        await self._chunks.aclose()


@dataclass
class StreamSeen:
    """What the server sent on a stream, for error messages that say so."""

    status: int | None = None
    content_type: str | None = None
    events: int = 0

    def head(self) -> str:
        """`HTTP 200, text/html`."""
        status = f"HTTP {self.status}" if self.status is not None else "no status"
        return f"{status}, {self.content_type or 'no content type'}"

    def describe(self) -> str:
        """`HTTP 200, text/event-stream, 3 events`."""
        return f"{self.head()}, {self.events} event{'' if self.events == 1 else 's'}"


# What a model API never streams in: an error page, a JSON answer to a non-streaming
# request, plain text. Other types (none, octet-stream, ...) are given the benefit of the
# doubt: some compatible servers label their event streams loosely.
_NOT_A_STREAM = ("text/html", "application/xhtml", "application/json", "text/plain",
                 "text/xml", "application/xml")
_EXCERPT_BYTES = 4096


async def relay(
    events: Any,
    feed: Callable[[Any], list[Chunk]],
    error: Callable[[BaseException], ProviderError],
    *,
    provider: str,
    seen: StreamSeen,
) -> AsyncGenerator[Chunk, None]:
    """The chunks `feed` makes of each event of the client's stream `events`.

    The stream is closed when this generator ends or is closed. What cannot be read as the
    API's stream (a web page, an event that is not JSON, an event of the wrong shape) is a
    non-retryable `ProviderError` quoting what the server sent; any other failure raises
    `error(exc)`. `seen` is filled as the stream goes, for the caller's own messages.
    """
    response = getattr(events, "response", None)
    seen.status = getattr(response, "status_code", None)
    headers = getattr(response, "headers", None)
    seen.content_type = headers.get("content-type") if headers is not None else None
    try:
        async with events:
            media_type = (seen.content_type or "").partition(";")[0].strip().lower()
            if media_type.startswith(_NOT_A_STREAM):
                body = await _read_some(response)
                raise ProviderError(
                    f"{provider}: the server answered {seen.head()} instead of an event "
                    f"stream (is the base URL right?): {excerpt(body)}",
                    status=seen.status, kind="bad_response",
                )
            async for event in events:
                seen.events += 1
                try:
                    chunks = feed(event)
                except ProviderError:
                    raise
                except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
                    raise ProviderError(
                        f"{provider}: the server sent an event of an unexpected shape "
                        f"({type(exc).__name__}: {excerpt(str(exc), 120)}; {seen.describe()}): "
                        f"{excerpt(_event_text(event))}",
                        status=seen.status, kind="bad_response",
                    ) from exc
                for chunk in chunks:
                    yield chunk
    except ProviderError:
        raise
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"{provider}: the server sent a stream event that is not JSON "
            f"({seen.describe()}): {excerpt(exc.doc)}",
            status=seen.status, kind="bad_response",
        ) from exc
    except Exception as exc:
        raise error(exc) from exc


async def _read_some(response: Any) -> str:
    """The start of a streamed response's body, as text."""
    data = b""
    try:
        async for piece in response.aiter_bytes():
            data += piece
            if len(data) >= _EXCERPT_BYTES:
                break
    except Exception:  # what could be read is enough for a message
        pass
    return data[:_EXCERPT_BYTES].decode("utf-8", "replace")


def _event_text(event: Any) -> str:
    """An event as the JSON it most likely came from."""
    if isinstance(event, str | int | float | bool | list | dict) or event is None:
        return json.dumps(event, ensure_ascii=False, default=str)
    to_dict = getattr(event, "to_dict", None) or getattr(event, "model_dump", None)
    if to_dict is not None:
        try:
            return json.dumps(to_dict(warnings=False), ensure_ascii=False, default=str)
        except Exception:
            pass
    return repr(event)
