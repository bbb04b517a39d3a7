"""What the providers built on an official client library (anthropic, openai) share.

Building the client (imported lazily, with an install hint when missing, and with the
library's own retries off because the engine retries) and relaying its event stream as
chunks, with failures mapped to [`ProviderError`][agentkit.providers.ProviderError].
"""

from __future__ import annotations

import importlib
import os
from collections.abc import AsyncGenerator, Callable
from typing import Any

from agentkit.providers._base import Chunk, ProviderError
from agentkit.providers._registry import ProviderConfigError

__all__ = ["relay", "sdk_client"]


def sdk_client(
    package: str,
    client_class: str,
    *,
    provider: str,
    api_key: str,
    base_url: str | None,
    base_url_env: str,
    timeout: float,
) -> Any:
    """An async client of `package` (extra of the same name): `package.client_class(...)`.

    `base_url` falls back to the environment variable `base_url_env`, then to the
    library's default endpoint.
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
        timeout=timeout,
        max_retries=0,  # the engine retries, honouring Retry-After
    )


async def relay(
    events: Any,
    feed: Callable[[Any], list[Chunk]],
    error: Callable[[BaseException], ProviderError],
) -> AsyncGenerator[Chunk, None]:
    """The chunks `feed` makes of each event of the client's stream `events`.

    The stream is closed when this generator ends or is closed; a failure other than a
    `ProviderError` raises `error(exc)` instead.
    """
    try:
        async with events:
            async for event in events:
                for chunk in feed(event):
                    yield chunk
    except ProviderError:
        raise
    except Exception as exc:
        raise error(exc) from exc
