"""Every error agentkit raises on purpose, under one root: `AgentkitError`.

Catch [`AgentkitError`][agentkit.errors.AgentkitError] to handle anything agentkit refused
or could not do; anything else that escapes agentkit is a bug to report. Each error also
keeps the standard base its kind calls for (`ValueError` for invalid input, `LookupError`
for what was not found, `RuntimeError` for what cannot happen now), so code that catches
those keeps working. The errors are also importable from the module that raises them
(`agentkit.stores`, `agentkit.providers`, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkit.diagnostics import Diagnostic

__all__ = [
    "AccessDeniedError",
    "ActionError",
    "AgentDeletedError",
    "AgentExistsError",
    "AgentNotFoundError",
    "AgentkitError",
    "AppLoadError",
    "AttachmentError",
    "BindError",
    "ClaudeCliError",
    "ConversationBusyError",
    "ConversationError",
    "ConversationNotFoundError",
    "DefinitionError",
    "DefinitionPathError",
    "DelegationEndedError",
    "DelegationNotFoundError",
    "DelegationStateError",
    "ExtensionError",
    "ForeignAgentError",
    "InvalidPageError",
    "LoadError",
    "MachineAgentNotFoundError",
    "McpConfigError",
    "McpServerError",
    "MemberError",
    "NoDriverError",
    "NoProviderError",
    "OffsetError",
    "PromptError",
    "ProviderConfigError",
    "ProviderError",
    "QueuedPromptNotFoundError",
    "QueuedPromptStartedError",
    "RecordExistsError",
    "RecordNotFoundError",
    "RequestAlreadyDecidedError",
    "RequestDecidedError",
    "RequestError",
    "RequestNotFoundError",
    "ResumeError",
    "RoomAccessError",
    "RoomAgentError",
    "RoomError",
    "RoomExistsError",
    "RoomNotFoundError",
    "RunEndedError",
    "RunFailedError",
    "RunNotFoundError",
    "ScriptError",
    "SessionBusyError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SpecError",
    "StoreError",
    "StoreLocationError",
    "StoreUnavailableError",
    "ToolError",
    "TurnNotFoundError",
    "UnknownModelError",
    "UnknownRequestError",
    "UnknownToolError",
    "UploadError",
    "UploadQuotaError",
    "UploadTooLargeError",
    "ValidateUsageError",
]


class AgentkitError(Exception):
    """The root of every error agentkit raises on purpose."""


# --- agents and their files ----------------------------------------------------------------


class SpecError(AgentkitError, ValueError):
    """An invalid agent description. `field` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class UnknownToolError(SpecError):
    """An agent's tool allowlist names a tool its runtime does not have (raised by
    `Runtime.start` before anything is stored). `field` is `"tools"`.

    Attributes:
        agent_id: The agent whose allowlist it is.
        entries: Every allowlist entry that names no tool, as written.
        suggestions: The closest registered tool name of each entry that has one.
    """

    def __init__(self, agent_id: str, entries: Iterable[str], suggestions: dict[str, str]) -> None:
        self.agent_id = agent_id
        self.entries = tuple(entries)
        self.suggestions = dict(suggestions)
        named = "; ".join(
            f"{entry!r}"
            + (f" (did you mean {suggestions[entry]!r}?)" if entry in suggestions else "")
            for entry in self.entries
        )
        super().__init__(
            "tools",
            f"agent {agent_id} allows tools this runtime does not have: {named}. Add them "
            "with Runtime(tools=[...]), or fix the names",
        )


class LoadError(AgentkitError, ValueError):
    """A file (or a set of files) is invalid. `diagnostics` lists every problem found,
    warnings included."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics = sorted(diagnostics)
        errors = [d for d in self.diagnostics if d.severity == "error"]
        super().__init__("\n".join(str(d) for d in (errors or self.diagnostics)))

    @property
    def errors(self) -> list[Diagnostic]:
        """Only the errors."""
        return [d for d in self.diagnostics if d.severity == "error"]


class AppLoadError(LoadError):
    """An app or agent file is invalid. `diagnostics` lists every problem of every file
    (warnings included), sorted by file and position."""


class DefinitionError(LoadError):
    """A definition file (or several) is invalid; `diagnostics` lists every problem with its
    file, line, column and field."""


class BindError(AgentkitError, ValueError):
    """A valid definition cannot run on this host (a capability it lists is not supplied, an
    `@alias` is unknown, ...). `problems` lists every reason."""

    def __init__(self, definition_id: str, problems: list[str]) -> None:
        self.definition_id = definition_id
        self.problems = problems
        super().__init__(f"cannot bind agent {definition_id!r}: " + "; ".join(problems))


class ResumeError(AgentkitError, ValueError):
    """A session cannot resume with this agent: it belongs to another agent, or to a
    definition that has changed since. `changed` names the fields that differ (empty when
    they cannot be told)."""

    def __init__(self, message: str, changed: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.changed = changed


class DefinitionPathError(AgentkitError, ValueError):
    """The paths given to `validate_paths` cannot be validated at all: a missing path, a
    file that is not `.md`, or a folder without definitions. `agentkit validate` exits
    with 2 (a usage error), as for an app folder without `app.yaml`.

    Attributes:
        paths: The offending paths, as given.
    """

    def __init__(self, message: str, paths: Iterable[str]) -> None:
        super().__init__(message)
        self.paths = list(paths)


class ValidateUsageError(AgentkitError, ValueError):
    """The paths given to `validate_paths` cannot be validated at all (a missing path, a
    folder without `app.yaml`, a file that is not YAML). `agentkit validate` exits with 2.

    Attributes:
        paths: The offending paths, as given.
    """

    def __init__(self, message: str, paths: Iterable[str]) -> None:
        super().__init__(message)
        self.paths = list(paths)


class PromptError(AgentkitError, ValueError):
    """A prompt (or its context, or a system prompt) cannot be sent to any model: it is not
    valid Unicode text."""


class NoDriverError(AgentkitError, LookupError):
    """No driver runs specs of this `runtime` (the adapter that brings it is not imported)."""


class AgentNotFoundError(AgentkitError, LookupError):
    """No agent with this canonical id is registered with the runtime."""


class ForeignAgentError(AgentkitError, LookupError):
    """`AgentRunner.run` was asked for an agent its app does not declare.

    Attributes:
        agent_name: The name that was asked for.
    """

    def __init__(self, agent_name: str, message: str) -> None:
        super().__init__(message)
        self.agent_name = agent_name


# --- models --------------------------------------------------------------------------------


class RunFailedError(AgentkitError, RuntimeError):
    """A run did not complete (raised by [`Agent.run`][agentkit.agent.Agent.run]; `Runtime`
    returns the outcome instead).

    Attributes:
        outcome: The run's outcome: `status` (`error` or `interrupted`), `error`,
            `accounting`, `run_id`, `session_id`.
    """

    def __init__(self, outcome: Any) -> None:
        super().__init__(f"run {outcome.run_id} ended {outcome.status}: {outcome.error}")
        self.outcome = outcome

    @property
    def status(self) -> str:
        return str(self.outcome.status)

    @property
    def error(self) -> str | None:
        return self.outcome.error  # type: ignore[no-any-return]


class ProviderError(AgentkitError):
    """A failed model call.

    `retryable` marks rate limits, overload and timeouts, which the engine retries with
    bounded backoff (honouring `retry_after` seconds when the provider sent one).
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        kind: str = "error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.kind = kind


class NoProviderError(AgentkitError, LookupError):
    """No provider was given or configured, or the name is unknown."""


class ProviderConfigError(NoProviderError):
    """A provider cannot be built as configured: its API key or server URL is missing, its
    client library is not installed, or an option is wrong. The message says what to set.
    """


class UnknownModelError(AgentkitError, LookupError):
    """The catalog cannot turn the selection into a model."""


class ClaudeCliError(AgentkitError, RuntimeError):
    """The `claude` command cannot be run (not installed, not executable)."""


# --- people in the loop --------------------------------------------------------------------


class RequestError(AgentkitError):
    """A decision or an answer for a waiting run's request could not be given (see
    docs/human-in-the-loop.md)."""


class RequestDecidedError(RequestError, RuntimeError):
    """The request was decided (or answered, or ended by its deadline) already, through
    this or another runtime: the first decision won, nothing of this one was written."""


class UnknownRequestError(RequestError, LookupError):
    """No run has this id, or the run never made a request of this id."""


# --- stores --------------------------------------------------------------------------------


class StoreError(AgentkitError):
    """A store could not do what was asked."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached or cannot write now: full disk, I/O error, lost
    connection; retrying later may succeed. Nothing of the failed call was written."""


class DelegationStateError(StoreError):
    """A delegation's change was refused because the stored delegation is not in a state
    it may change from (it ended already, another process moved it first, or it is
    missing); nothing was written.

    Attributes:
        status: The stored delegation's status, or `None` when there is none.
    """

    def __init__(self, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.status = status


class SessionNotFoundError(StoreError, LookupError):
    """No session has this id."""


class SessionExistsError(StoreError):
    """A session with this id already exists."""


class SessionBusyError(StoreError, RuntimeError):
    """The session already has a run going: one run at a time per session, across every
    process that shares the store."""


class RunEndedError(StoreError):
    """The run has already ended, so nothing more can be written to it (for example, its
    lease expired and another runtime ended it as interrupted)."""


class RoomNotFoundError(StoreError, LookupError):
    """No room has this id."""


class RoomExistsError(StoreError):
    """A room with this id already exists."""


class RecordExistsError(StoreError):
    """A live member or agent record already has this name (or a record this id)."""


class RecordNotFoundError(StoreError, LookupError):
    """No live member, agent or conversation record has this id."""


class StoreLocationError(StoreError, ValueError):
    """A store location (a path or URL given to `open_store`) names no store."""


class OffsetError(StoreError, ValueError):
    """Events whose offsets do not grow past the ones stored (or within their batch);
    nothing of the batch is written."""


# --- tools and actions ---------------------------------------------------------------------


class ToolError(AgentkitError):
    """A tool failed in a way the model should be told about. The run goes on."""


class McpConfigError(AgentkitError, ValueError):
    """An `mcpServers` entry is malformed; the message names the server and field."""


class McpServerError(AgentkitError, RuntimeError):
    """An MCP server could not be started or listed."""


class ActionError(AgentkitError, ValueError):
    """An invalid action definition or an unknown action id."""


# --- testing -------------------------------------------------------------------------------


class ScriptError(AgentkitError, ValueError):
    """A script file or entry is malformed."""


# --- conversations ------------------------------------------------------------------------


class ConversationError(AgentkitError):
    """Base class of every error the conversations API raises for a caller's request."""


class ConversationNotFoundError(ConversationError, LookupError):
    """No conversation with this id is visible to the member.

    Raised identically for an id that does not exist and for another member's private
    conversation, on every path, so that an id never reveals whether it exists.
    """

    def __init__(self, conversation_id: str) -> None:
        super().__init__(f"no conversation {conversation_id!r}")
        self.conversation_id = conversation_id


class ConversationBusyError(ConversationError, RuntimeError):
    """The conversation already has a run going: one run at a time per conversation."""


class AccessDeniedError(ConversationError, PermissionError):
    """The member's role does not allow this (a viewer prompting, an editor creating an
    agent, ...)."""


class AttachmentError(ConversationError, ValueError):
    """An attachment was refused (missing, not a file, or outside the attachment roots);
    nothing was started."""


class MachineAgentNotFoundError(ConversationError, LookupError):
    """The machine has no agent with this name."""


class AgentExistsError(ConversationError, ValueError):
    """An agent with this name exists already (use `replace_agent`)."""


class RunNotFoundError(ConversationError, LookupError):
    """The conversation has no run with this id."""


class RequestAlreadyDecidedError(ConversationError, RequestDecidedError):
    """The run's request was decided (or answered, or ended by its deadline) already:
    the first decision won (the conversations API's `RequestDecidedError`)."""


class RequestNotFoundError(ConversationError, UnknownRequestError):
    """The run waits on no request of this id (never asked, or of the other kind: a
    question is answered, a permission decided): the conversations API's
    `UnknownRequestError`."""


class QueuedPromptNotFoundError(ConversationError, LookupError):
    """The conversation has no queued prompt with this id."""


class QueuedPromptStartedError(ConversationError):
    """The queued prompt has started already: it is a run now (cancel the run)."""


class TurnNotFoundError(ConversationError, LookupError):
    """The conversation has no user turn with this id (for `replace_turn`)."""


class AgentDeletedError(ConversationError):
    """The conversation's agent was deleted: its turns stay readable, it takes no prompt
    (whatever agent is created later under the same name)."""


class MemberError(ConversationError, ValueError):
    """A member cannot be added, found or authenticated."""


class UploadError(ConversationError, ValueError):
    """An upload was refused (a bad file name, a malformed body, no attachment root to
    store it in); nothing was stored."""


class UploadTooLargeError(UploadError):
    """The uploaded file is over the machine's size limit (`max_upload_bytes`); nothing
    was stored."""


class UploadQuotaError(UploadError):
    """The upload would take the member's folder over its quota (`upload_quota_bytes`);
    nothing was stored."""


# --- rooms and the server ----------------------------------------------------------------


class RoomError(AgentkitError, ValueError):
    """A caller's mistake with a room: an invalid type, pattern, payload or batch."""


class InvalidPageError(ConversationError, RoomError):
    """A list was asked for a `limit` outside 1..1000, or with a cursor it did not give."""


class RoomAccessError(RoomError, PermissionError):
    """Outside the caller's grants, or not a room owner for what only owners may do."""


class RoomAgentError(RoomError):
    """An agent that cannot be registered (a duplicate id, a bad descriptor) or that the
    room does not have."""


class DelegationNotFoundError(RoomError, LookupError):
    """No such delegation in the room (or not visible to the caller)."""


class DelegationEndedError(RoomError):
    """The delegation has ended already (`completed`, `failed`, `cancelled` or
    `expired`): it cannot be cancelled."""


class ExtensionError(AgentkitError, ValueError):
    """A server extension (`agentkit serve --extension`) that cannot be loaded or fails
    to start; the server does not start."""
