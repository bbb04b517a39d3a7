"""Turning client-library failures into [`ProviderError`][agentkit.providers.ProviderError].

The official `anthropic` and `openai` clients share one exception shape (`APIStatusError`
with `status_code`, `response` and `body`; `APITimeoutError`; `APIConnectionError`), so one
duck-typed mapping serves both without importing either library.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

from agentkit.providers._base import ProviderError

__all__ = ["map_error", "parse_retry_after"]

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


def _error_body(body: Any) -> tuple[str | None, str | None, str | None]:
    """(type, code, message) from an error body of either API."""
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
            f"{provider}: request to model {model!r} timed out", retryable=True, kind="timeout"
        )
    status: int | None = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    kind, code, message = _error_body(getattr(exc, "body", None))
    detail = message or str(exc)
    if status is None:
        if cls == "APIConnectionError" or module.startswith(("httpx", "httpcore")):
            return ProviderError(
                f"{provider}: connection failed: {exc}", retryable=True, kind="connection"
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
