"""Turning client-library failures into [`ProviderError`][agentkit.providers.ProviderError].

The official `anthropic` and `openai` clients share one exception shape (`APIStatusError`
with `status_code`, `response` and `body`; `APITimeoutError`; `APIConnectionError`), so one
duck-typed mapping serves both without importing either library.
"""

from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Mapping
from typing import Any

from agentkit.providers._base import ProviderError

__all__ = ["excerpt", "map_error", "parse_retry_after"]

_RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
_STATUS_KINDS = {429: "rate_limit", 529: "overloaded", 503: "overloaded", 408: "timeout"}
_RETRYABLE_KINDS = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "rate_limit_exceeded": "rate_limit",
    "api_error": "server_error",
    "server_error": "server_error",
    "timeout_error": "timeout",
}


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            return max(float(ms) / 1000, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
    if parsed is None:
        return None
    return max(parsed.timestamp() - time.time(), 0.0)


_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_HIDDEN = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]{0,2000}>")
_BLANKS = re.compile(r"\s+")


def excerpt(text: str | None, limit: int = 200) -> str:
    """A short, one-line quote of what a server sent: a web page's title and text without
    its markup, anything else with its runs of blanks made one space; `limit` characters
    at most."""
    if not text:
        return "(an empty body)"
    text = text[: limit * 20]
    if "<" in text and ">" in text and re.search(r"<(!doctype|html|head|body|title)\b",
                                                  text[:2000], re.IGNORECASE):
        title = _TITLE.search(text)
        body = _TAG.sub(" ", _HIDDEN.sub(" ", text))
        if title is not None:
            heading = _BLANKS.sub(" ", title.group(1)).strip()
            body = f"page titled {heading!r}: {body.replace(title.group(1), ' ', 1)}"
        text = body
    text = _BLANKS.sub(" ", text).strip()
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)


def _error_body(body: Any) -> tuple[str | None, str | None, str | None]:
    """(type, code, message) from an error body of either API; no message for a body
    that is not JSON (a proxy's error page, say), which `map_error` quotes instead."""
    if isinstance(body, str):
        return None, None, None
    if not isinstance(body, Mapping):
        return None, None, (str(body) if body else None)
    err = body.get("error", body)
    if not isinstance(err, Mapping):
        return None, None, str(err)
    kind = err.get("type")
    code = err.get("code")
    message = err.get("message")
    return (
        str(kind) if kind is not None else None,
        str(code) if code is not None else None,
        str(message) if message is not None else None,
    )


def map_error(
    exc: BaseException, *, provider: str, model: str, key_env: str | None
) -> ProviderError:
    """The `ProviderError` for an exception raised by an official client or by httpx."""
    if isinstance(exc, ProviderError):
        return exc
    cls = type(exc).__name__
    module = type(exc).__module__
    if cls == "APITimeoutError" or (module.startswith("httpx") and "Timeout" in cls):
        return ProviderError(
            f"{provider}: request to model {model!r} timed out{_timeout_phase(exc)}",
            retryable=True, kind="timeout",
        )
    status: int | None = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    body = getattr(exc, "body", None)
    kind, code, message = _error_body(body)
    if message is None and isinstance(body, str) and status is not None:
        # Not the API's JSON: say what was there instead of pasting a whole page.
        content_type = headers.get("content-type") if headers is not None else None
        detail = f"the server sent {content_type or 'no content type'}: {excerpt(body)}"
    else:
        detail = _cut(message or str(exc), 500)
    if status is None:
        if cls == "APIConnectionError" or module.startswith(("httpx", "httpcore")):
            return ProviderError(
                f"{provider}: connection failed{_where_and_why(exc)}",
                retryable=True, kind="connection",
            )
        if kind or code:
            # An error event inside a stream (OpenAI raises APIError without a status).
            retry_kind = _RETRYABLE_KINDS.get(kind or "") or _RETRYABLE_KINDS.get(code or "")
            return ProviderError(
                f"{provider}: {detail}", retryable=retry_kind is not None,
                kind=retry_kind or kind or code or "error",
            )
        return ProviderError(f"{provider}: {detail}", kind="error")
    retry_after = parse_retry_after(headers)
    # Anthropic reports an error event inside a 200 stream as a status error with the
    # stream's own status, so the body's error type decides.
    if status < 400:
        retry_kind = _RETRYABLE_KINDS.get(kind or "") or _RETRYABLE_KINDS.get(code or "")
        return ProviderError(
            f"{provider}: error during the response stream: {detail}",
            retryable=retry_kind is not None, retry_after=retry_after, status=status,
            kind=retry_kind or kind or "stream_error",
        )
    if status in _RETRYABLE_STATUS:
        label = _STATUS_KINDS.get(status, "server_error")
        return ProviderError(
            f"{provider}: {label.replace('_', ' ')} (HTTP {status}): {detail}",
            retryable=True, retry_after=retry_after, status=status, kind=label,
        )
    if status == 404 or code == "model_not_found":
        return ProviderError(
            f"{provider}: model {model!r} was not found (HTTP {status}): {detail}. Check the "
            "model name or the catalog (catalog= option).",
            status=status, kind="model_not_found",
        )
    if status in (401, 403):
        hint = f" Check {key_env}." if key_env else ""
        return ProviderError(
            f"{provider}: authentication failed (HTTP {status}): {detail}.{hint}",
            status=status, kind="authentication",
        )
    return ProviderError(
        f"{provider}: request rejected (HTTP {status}): {detail}",
        status=status, kind=kind or "invalid_request",
    )


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TIMEOUT_PHASES = {
    "ConnectTimeout": " (could not connect in time: the connect timeout, "
    "AGENTKIT_PROVIDER_CONNECT_TIMEOUT)",
    "ReadTimeout": " (the server went silent: the read timeout, AGENTKIT_PROVIDER_READ_TIMEOUT)",
    "WriteTimeout": " (sending the request stalled: the read timeout, "
    "AGENTKIT_PROVIDER_READ_TIMEOUT)",
    "PoolTimeout": " (no free connection: the connect timeout, AGENTKIT_PROVIDER_CONNECT_TIMEOUT)",
}


def _timeout_phase(exc: BaseException) -> str:
    """Which of the client's timeouts ran out, from the httpx exception behind `exc`."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            break
        phase = _TIMEOUT_PHASES.get(type(seen).__name__)
        if phase is not None:
            return phase
        seen = seen.__cause__ or seen.__context__
    return ""


def _where_and_why(exc: BaseException) -> str:
    """` to <url>: <the low-level reason>` for a connection failure, as far as known (the
    client libraries' own message is only "Connection error.")."""
    request: Any = getattr(exc, "request", None)
    try:
        # Scheme, host, port and path only: a URL's user info or query may hold a secret.
        parsed = request.url
        port = f":{parsed.port}" if parsed.port else ""
        url = f"{parsed.scheme}://{parsed.host}{port}{parsed.path}"
    except Exception:  # no request, or one without a URL
        url = ""
    reason, seen = str(exc), exc.__cause__ or exc.__context__
    for _ in range(6):
        if seen is None:
            break
        if isinstance(seen, BaseExceptionGroup):  # trio's "all attempts to connect failed"
            seen = seen.exceptions[0]
            continue
        if str(seen):
            reason = f"{seen!s} ({type(seen).__name__})"
        seen = seen.__cause__ or seen.__context__
    return f"{f' to {url}' if url else ''}: {_cut(reason, 300)}"
