"""Error answers: an `HTTPError` raised anywhere in a handler, or an error of the
conversations or rooms APIs, becomes `{"error": {"code", "message"[, "field"]}}` with the
status its code implies (the codes are the contract's, `agentkit.client.contract`)."""

from __future__ import annotations

from starlette.responses import JSONResponse

from agentkit.client.contract import ERROR_CODES, code_for_exception, error_body

__all__ = ["ERROR_CODES", "HTTPError", "error_response", "http_error_of"]


class HTTPError(Exception):
    """An error answer, raised anywhere in a handler."""

    def __init__(self, code: str, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field

    @property
    def status(self) -> int:
        """The HTTP status the code implies."""
        return ERROR_CODES[self.code]


def http_error_of(exc: Exception) -> HTTPError | None:
    """The answer for an error of the conversations or rooms APIs (a caller's mistake),
    or `None` for anything else (a bug, answered 500)."""
    error = code_for_exception(exc)
    if error is None:
        return None
    field = error.field or getattr(exc, "field", None)  # an error naming the field at fault
    return HTTPError(error.code, str(exc), field=field if isinstance(field, str) else None)


def error_response(error: HTTPError, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON answer of an error (a lone surrogate a message quotes is escaped: the
    answer is UTF-8)."""
    field = None if error.field is None else _text(error.field)
    body = error_body(error.code, _text(error.message), field)
    return JSONResponse(body, status_code=error.status, headers=headers)


def _text(text: str) -> str:
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
