"""A person's decisions in a conversation: a waiting run's permission requests decided,
its questions answered, and what the views show of what it waits for.

A member who may prompt the conversation may decide. The decision is the runtime's
(`Runtime.decide` / `Runtime.answer`: one conditional store transaction, so of two deciders
in any processes exactly one wins) with the conversation's agent spec, since a machine's
agents are read from the store, not registered in its runtime. The run then goes on in
this machine's runtime, kept with the runs it executes (cancel, wait, the queue behind it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentkit.conversations._access import Access
from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import (
    ConversationError,
    RequestAlreadyDecidedError,
    RequestNotFoundError,
    RunNotFoundError,
)
from agentkit.conversations._meta import ConversationMeta
from agentkit.conversations._models import Member, PendingRequestInfo
from agentkit.errors import RequestDecidedError, UnknownRequestError
from agentkit.runtime import PendingRequest, Run, Runtime
from agentkit.spec import AgentSpec
from agentkit.stores import Store, WaitingRecord

__all__ = ["Decisions", "conversation_spec", "pending_info", "pending_requests"]

_WITHDRAWN = "the run was cancelled"


def pending_info(request: PendingRequest) -> PendingRequestInfo:
    """The wire form of a runtime's pending request."""
    return PendingRequestInfo(
        request_id=request.request_id,
        run_id=request.run_id,
        kind=request.kind,
        tool=request.tool_name,
        tool_call_id=request.tool_use_id,
        input=request.input,
        effect=request.effect,
        questions=None if request.questions is None else tuple(request.questions),
        deadline=request.deadline,
    )


async def pending_requests(runtime: Runtime, run_id: str | None) -> tuple[PendingRequestInfo, ...]:
    """What run `run_id` (a conversation's going run, read by a member who sees it, its
    access checked by the caller) waits on a person for, read from the store."""
    if run_id is None:
        return ()
    return tuple(pending_info(request) for request in await runtime.pending_requests(run_id))


async def conversation_spec(
    store: Store, agents: AgentService, record: WaitingRecord
) -> AgentSpec | None:
    """The spec a waiting run of a conversation goes on with when nobody gives one (its
    request's deadline passed): its conversation's agent as it is now; `None` for a run
    that is not a conversation's."""
    conversation = await store.get_conversation(record.session_id)
    if conversation is None:
        return None
    return await agents.spec_of(conversation.agent_id)


class Decisions:
    """Decide and answer the requests of a machine's conversations' runs, as a member.

    Args:
        context: The machine's runtime and settings.
        access: Who may see and change which conversation.
        agents: The machine's agents (the spec a resumed run goes on with).
        live_run: The run of that id this machine holds, if any (its spec is the one it
            started with: the prompt's options included).
        resumed: Called with a run that goes on here after a decision (kept with the
            machine's runs; what is queued behind it starts when it ends).
    """

    def __init__(
        self,
        context: MachineContext,
        access: Access,
        agents: AgentService,
        live_run: Callable[[str], Run | None],
        resumed: Callable[[Run], None],
    ) -> None:
        self._context = context
        self._access = access
        self._agents = agents
        self._live_run = live_run
        self._resumed = resumed

    async def decide(
        self,
        member: Member,
        conversation_id: str,
        run_id: str,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
    ) -> None:
        """Decide run `run_id`'s permission request as `member` (see
        `ConversationClient.decide`); returns once the decision is stored."""
        spec = await self._checked(member, conversation_id, run_id)
        try:
            run = await self._context.runtime.decide(
                run_id,
                request_id,
                allow=allow,
                message=message,
                updated_input=updated_input,
                remember=remember,
                agent=spec,
            )
        except Exception as exc:
            raise _conversation_error(exc) from None
        self._went_on(conversation_id, run)

    async def answer(
        self, member: Member, conversation_id: str, run_id: str, request_id: str, answers: Any
    ) -> None:
        """Answer run `run_id`'s question as `member` (see `ConversationClient.answer`)."""
        spec = await self._checked(member, conversation_id, run_id)
        try:
            run = await self._context.runtime.answer(run_id, request_id, answers, agent=spec)
        except Exception as exc:
            raise _conversation_error(exc) from None
        self._went_on(conversation_id, run)

    async def withdraw(self, conversation_id: str, run_id: str) -> Run | None:
        """Make waiting run `run_id` (its cancel was checked) a run of this machine that
        a cancel ends: its request is denied (a question: answered with an error), "the
        run was cancelled", and it is cancelled as it goes on. `None` when it was decided
        elsewhere meanwhile (it runs there)."""
        live = self._live_run(run_id)
        if live is not None and live.waiting:
            return live  # its cancel withdraws the request (`Run.cancel`)
        runtime = self._context.runtime
        record = await self._context.store.get_conversation(conversation_id)
        if record is None:
            return None
        spec = await self._agents.spec_of(record.agent_id)
        for request in await runtime.pending_requests(run_id):
            try:
                if request.kind == "question":
                    run = await runtime.answer(
                        run_id, request.request_id, {"error": _WITHDRAWN}, agent=spec
                    )
                else:
                    run = await runtime.decide(
                        run_id, request.request_id, allow=False, message=_WITHDRAWN, agent=spec
                    )
            except (RequestDecidedError, UnknownRequestError):
                return runtime.get_run(run_id)
            run.cancel()  # before its task starts: it ends `interrupted`
            self._went_on(conversation_id, run)
            return run
        return runtime.get_run(run_id)

    async def _checked(self, member: Member, conversation_id: str, run_id: str) -> AgentSpec:
        """The spec the run goes on with, once `member` may decide in the conversation
        (403 for a viewer, 404 for one it cannot see) and the run is one of its own."""
        _, _, record, meta = await self._access.writable(member, conversation_id, "decide")
        live = self._live_run(run_id) if isinstance(run_id, str) else None
        if live is not None:
            if live.session_id != conversation_id or run_id in meta.dropped:
                raise _no_run(conversation_id, run_id)
            return live.spec
        await self._of_conversation(conversation_id, meta, run_id)
        return await self._agents.spec_of(record.agent_id)

    async def _of_conversation(
        self, conversation_id: str, meta: ConversationMeta, run_id: str
    ) -> None:
        found = await self._context.store.get_run(run_id) if isinstance(run_id, str) else None
        if found is None or found.session_id != conversation_id or run_id in meta.dropped:
            raise _no_run(conversation_id, run_id)

    def _went_on(self, conversation_id: str, run: Run) -> None:
        self._resumed(run)
        self._context.changes.changed(conversation_id)


def _no_run(conversation_id: str, run_id: object) -> RunNotFoundError:
    return RunNotFoundError(f"conversation {conversation_id!r} has no run {str(run_id)[:200]!r}")


def _conversation_error(exc: Exception) -> Exception:
    """The conversations API's error for what the runtime raised (others as they are)."""
    if isinstance(exc, RequestDecidedError):
        return RequestAlreadyDecidedError(str(exc))
    if isinstance(exc, UnknownRequestError):
        return RequestNotFoundError(str(exc))
    if isinstance(exc, ValueError):  # a field a person cannot give: it is named
        return ConversationError(str(exc)[:1000])
    return exc
