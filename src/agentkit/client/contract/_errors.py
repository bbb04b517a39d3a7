"""Errors on the wire: every failure is `{"error": {"code", "message"[, "field"]}}` with
the status its code implies. One table says, for each code, its status, the exceptions
the server answers it for and the exceptions the remote clients raise for it, so that
both directions are read from the same rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentkit.errors import (
    AccessDeniedError,
    AgentDeletedError,
    AgentExistsError,
    AttachmentError,
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    DelegationEndedError,
    DelegationNotFoundError,
    InvalidPageError,
    MachineAgentNotFoundError,
    MemberError,
    QueuedPromptNotFoundError,
    QueuedPromptStartedError,
    RequestAlreadyDecidedError,
    RequestNotFoundError,
    RoomAccessError,
    RoomAgentError,
    RoomError,
    RoomNotFoundError,
    RunNotFoundError,
    StoreUnavailableError,
    TurnNotFoundError,
    UploadError,
    UploadQuotaError,
    UploadTooLargeError,
)

__all__ = [
    "ERRORS",
    "ERROR_CODES",
    "ErrorCode",
    "carried_error",
    "code_for_exception",
    "conversations_exception",
    "error_body",
    "read_error",
    "rooms_exception",
]


@dataclass(frozen=True)
class ErrorCode:
    """One error code of the API.

    Attributes:
        code: What an error answer's `code` says (`conversation_not_found`).
        status: The HTTP status it is answered with.
        conversations: The exception of the conversations API it stands for: the server
            answers this code for it (and its subclasses without a row of their own), and
            the remote conversations client raises it for this code.
        rooms: The same for the rooms API.
        store: The store's exception it stands for in both APIs (the remote clients
            raise it as the in-process ones do).
        field: The request field the answer names, when the code always names one.
        for_exceptions: Whether the server answers the code for the exceptions above;
            `False` for a code it answers for the request itself (no token, no route),
            which a client still reads as its exception.
    """

    code: str
    status: int
    conversations: type[ConversationError] | None = None
    rooms: type[RoomError] | type[RoomNotFoundError] | None = None
    store: type[StoreUnavailableError] | None = None
    field: str | None = None
    for_exceptions: bool = True


ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode("bad_request", 400),
    ErrorCode("unauthorized", 401, AccessDeniedError, RoomAccessError, for_exceptions=False),
    ErrorCode("access_denied", 403, AccessDeniedError, RoomAccessError),
    # No route for an id (one with a '/' in it): the rooms client's missing room.
    ErrorCode("not_found", 404, rooms=RoomNotFoundError, for_exceptions=False),
    ErrorCode("conversation_not_found", 404, ConversationNotFoundError),
    ErrorCode("run_not_found", 404, RunNotFoundError),
    ErrorCode("turn_not_found", 404, TurnNotFoundError, field="replace_turn"),
    ErrorCode("agent_not_found", 404, MachineAgentNotFoundError),
    ErrorCode("member_not_found", 404, MemberError, for_exceptions=False),
    ErrorCode("method_not_allowed", 405),
    ErrorCode("conversation_busy", 409, ConversationBusyError),
    ErrorCode("queued_prompt_not_found", 404, QueuedPromptNotFoundError),
    ErrorCode("queued_prompt_started", 409, QueuedPromptStartedError),
    ErrorCode("request_decided", 409, RequestAlreadyDecidedError),
    ErrorCode("agent_exists", 409, AgentExistsError),
    ErrorCode("agent_deleted", 409, AgentDeletedError),
    ErrorCode("agent_protected", 409),
    ErrorCode("room_not_found", 404, rooms=RoomNotFoundError),
    ErrorCode("delegation_not_found", 404, rooms=DelegationNotFoundError),
    ErrorCode("room_agent_not_found", 404, rooms=RoomAgentError),
    ErrorCode("delegation_ended", 409, rooms=DelegationEndedError),
    ErrorCode("body_too_large", 413),
    ErrorCode("upload_too_large", 413, UploadTooLargeError),
    ErrorCode("upload_quota_exceeded", 507, UploadQuotaError),
    ErrorCode("unsupported_media_type", 415),
    ErrorCode("attachment_error", 422, AttachmentError, field="attachments"),
    ErrorCode("invalid_page", 422, InvalidPageError, InvalidPageError),
    ErrorCode("upload_error", 422, UploadError, field="filename"),
    ErrorCode("request_not_found", 422, RequestNotFoundError, field="requestId"),
    # Any other mistake of a caller's; a client raises its API's base class for it.
    ErrorCode("invalid", 422, ConversationError, RoomError),
    ErrorCode("internal", 500),
    ErrorCode("unavailable", 503),
    # The store cannot write or be reached now (a full disk, a lost connection):
    # nothing was done, and the same request may succeed later.
    ErrorCode("store_unavailable", 503, store=StoreUnavailableError),
)
"""Every error code the server answers with."""

ERROR_CODES: dict[str, int] = {error.code: error.status for error in ERRORS}
"""Every error code the server answers with, and its HTTP status."""

_BY_CODE = {error.code: error for error in ERRORS}
_BY_EXCEPTION: dict[type[Exception], ErrorCode] = {
    kind: error
    for error in ERRORS
    if error.for_exceptions
    for kind in (error.conversations, error.rooms, error.store)
    if kind is not None
}


def code_for_exception(exc: BaseException) -> ErrorCode | None:
    """The code the server answers for an error of the conversations or rooms APIs (the
    row of its nearest class), or `None` for any other exception (a bug)."""
    for kind in type(exc).__mro__:
        found = _BY_EXCEPTION.get(kind)
        if found is not None:
            return found
    return None


def conversations_exception(
    code: str,
) -> type[ConversationError] | type[StoreUnavailableError]:
    """The exception the remote conversations client raises for `code`
    (`ConversationError` for a code of another API, or one it does not know)."""
    error = _BY_CODE.get(code)
    if error is not None and error.store is not None:
        return error.store
    if error is None or error.conversations is None:
        return ConversationError
    return error.conversations


def rooms_exception(
    code: str,
) -> type[RoomError] | type[RoomNotFoundError] | type[StoreUnavailableError]:
    """The exception the remote rooms client raises for `code` (`RoomError` for a code
    of another API, or one it does not know)."""
    error = _BY_CODE.get(code)
    if error is not None and error.store is not None:
        return error.store
    if error is None or error.rooms is None:
        return RoomError
    return error.rooms


def error_body(code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """An error answer's JSON body."""
    body: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        body["field"] = field
    return {"error": body}


def read_error(content: bytes) -> tuple[str, str] | None:
    """The code and message of an error answer's body; `None` when it is not one (a
    proxy's page, say)."""
    try:
        error = json.loads(content)["error"]
        return str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        return None


def carried_error(payload: dict[str, Any]) -> tuple[str, str] | None:
    """The code and message of an error sent inside an event stream
    (`{"error": {"code", "message"}}`); `None` for any other event."""
    error = payload.get("error")
    if isinstance(error, dict) and "code" in error:
        return str(error["code"]), str(error.get("message", ""))
    return None
