"""Errors on the wire: every failure is `{"error": {"code", "message"[, "field"]}}` with
the status the code implies, so that clients in any language switch on `code`."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from agentkit.errors import (
    AccessDeniedError,
    AgentExistsError,
    AttachmentError,
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    MachineAgentNotFoundError,
    RunNotFoundError,
    TurnNotFoundError,
)

__all__ = ["ERROR_CODES", "HTTPError", "error_of", "error_response", "http_error_of"]

ERROR_CODES: dict[str, int] = {
    "bad_request": 400,
    "unauthorized": 401,
    "access_denied": 403,
    "not_found": 404,
    "conversation_not_found": 404,
    "run_not_found": 404,
    "turn_not_found": 404,
    "agent_not_found": 404,
    "method_not_allowed": 405,
    "conversation_busy": 409,
    "agent_exists": 409,
    "agent_protected": 409,
    "room_not_found": 404,
    "delegation_not_found": 404,
    "room_agent_not_found": 404,
    "body_too_large": 413,
    "unsupported_media_type": 415,
    "attachment_error": 422,
    "invalid": 422,
    "internal": 500,
    "unavailable": 503,
}
"""Every error code the server answers with, and its HTTP status."""

# Most specific first: the conversations errors subclass one another.
_BY_EXCEPTION: tuple[tuple[type[ConversationError], str, str | None], ...] = (
    (ConversationNotFoundError, "conversation_not_found", None),
    (RunNotFoundError, "run_not_found", None),
    (TurnNotFoundError, "turn_not_found", "replace_turn"),
    (MachineAgentNotFoundError, "agent_not_found", None),
    (AccessDeniedError, "access_denied", None),
    (ConversationBusyError, "conversation_busy", None),
    (AgentExistsError, "agent_exists", None),
    (AttachmentError, "attachment_error", "attachments"),
)


class HTTPError(Exception):
    """An error answer, raised anywhere in a handler."""

    def __init__(self, code: str, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field

    @property
    def status(self) -> int:
        return ERROR_CODES[self.code]


def error_of(exc: ConversationError) -> HTTPError:
    """The answer for an error of the conversations API."""
    for kind, code, field in _BY_EXCEPTION:
        if isinstance(exc, kind):
            return HTTPError(code, str(exc), field=field)
    return HTTPError("invalid", str(exc))


def http_error_of(exc: Exception) -> HTTPError | None:
    """The answer for an error of the conversations or rooms APIs (a caller's mistake),
    or `None` for anything else (a bug, answered 500)."""
    from agentkit.rooms import (
        DelegationNotFoundError,
        RoomAccessError,
        RoomAgentError,
        RoomError,
        RoomNotFoundError,
    )

    if isinstance(exc, ConversationError):
        return error_of(exc)
    if isinstance(exc, RoomNotFoundError):
        return HTTPError("room_not_found", str(exc))
    if isinstance(exc, DelegationNotFoundError):
        return HTTPError("delegation_not_found", str(exc))
    if isinstance(exc, RoomAccessError):
        return HTTPError("access_denied", str(exc))
    if isinstance(exc, RoomAgentError):
        return HTTPError("room_agent_not_found", str(exc))
    if isinstance(exc, RoomError):
        return HTTPError("invalid", str(exc))
    return None


def error_response(error: HTTPError, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.field is not None:
        body["field"] = error.field
    return JSONResponse({"error": body}, status_code=error.status, headers=headers)
