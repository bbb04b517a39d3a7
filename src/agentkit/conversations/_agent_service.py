"""`machine.agents`: the agents a machine offers, listed for any member and managed by
owners; and the spec each one runs with.

The built-in `rool` and the configured agents (definition files, app folders) are read-only;
owners create, replace and delete the others, each kept as a session of a reserved agent id
(its definition in the metadata).
"""

from __future__ import annotations

from collections.abc import Mapping

from agentkit.conversations._access import Access, require_owner
from agentkit.conversations._agents import (
    ROOL,
    agent_definition,
    agent_info,
    check_agent_name,
    machine_spec,
)
from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import (
    AgentExistsError,
    ConversationError,
    MachineAgentNotFoundError,
)
from agentkit.conversations._models import AgentDefinition, AgentInfo, Member
from agentkit.spec import AgentSpec, SpecError
from agentkit.stores import SessionExistsError

__all__ = ["AGENT_SESSIONS", "AgentService"]

AGENT_SESSIONS = "agentkit-machine:agent"
"""The reserved agent id of the sessions that hold machine agents."""

_AGENT_KEY = "agentkit.agent"
_CACHED_SPECS = 256  # specs kept for reuse, at most (the runtime caches per spec)


def _session_id(name: str) -> str:
    return f"agentkit-agent:{name}"


class AgentService:
    """The agents of a machine: `machine.agents`.

    Every method taking a `member` checks it once against the machine's members (its
    current role): any member lists the agents, only owners change them.
    """

    def __init__(
        self,
        context: MachineContext,
        access: Access,
        configured: Mapping[str, AgentSpec],
        rool_instructions: str = "",
    ) -> None:
        self._context = context
        self._access = access
        self._configured = configured
        self._rool = AgentDefinition(
            name=ROOL,
            description="The machine's general agent.",
            instructions=rool_instructions,
        )
        self._specs: dict[str, tuple[AgentDefinition, AgentSpec]] = {}

    async def spec(self, name: str) -> AgentSpec:
        """The spec agent `name` runs with as it is now (`MachineAgentNotFoundError` when
        the machine has no such agent). Specs are reused while the agent is unchanged, so
        the runtime's per-spec caches keep working across runs."""
        if name in self._configured:
            return self._configured[name]
        if name == ROOL:
            definition = self._rool
        else:
            stored = await self._stored(name)
            if stored is None:
                raise MachineAgentNotFoundError(f"the machine has no agent {name!r}")
            definition = stored
        cached = self._specs.get(name)
        if cached is None or cached[0] != definition:
            if len(self._specs) >= _CACHED_SPECS:
                self._specs.clear()
            spec = machine_spec(definition, self._context.attachment_roots)
            cached = self._specs[name] = (definition, spec)
        return cached[1]

    async def create(self, member: Member, definition: AgentDefinition) -> AgentInfo:
        """Create a machine agent as `member` (an owner); `AgentExistsError` when one has
        this name already."""
        return await self._put(member, definition, replace=False)

    async def replace(self, member: Member, definition: AgentDefinition) -> AgentInfo:
        """Replace a machine agent as `member` (an owner); `MachineAgentNotFoundError`
        when there is none of this name."""
        return await self._put(member, definition, replace=True)

    async def delete(self, member: Member, name: str) -> None:
        """Delete a machine agent as `member` (an owner)."""
        require_owner(await self._access.member(member), "manage agents")
        self._check_editable(name)
        if not isinstance(name, str) or await self._stored(name) is None:
            raise MachineAgentNotFoundError(f"the machine has no agent {name!r}")
        await self._context.store.delete_session(_session_id(name))

    async def _stored(self, name: str) -> AgentDefinition | None:
        session = await self._context.store.get_session(_session_id(name))
        if session is None or session.agent_id != AGENT_SESSIONS:
            return None
        return agent_definition(session.metadata[_AGENT_KEY])

    def _check_editable(self, name: str) -> None:
        if name == ROOL:
            raise ConversationError("the agent 'rool' is built in: it cannot be changed")
        if name in self._configured:
            raise ConversationError(
                f"the agent {name!r} is configured (a definition file or an app): change it there"
            )

    async def _put(self, member: Member, definition: AgentDefinition, replace: bool) -> AgentInfo:
        require_owner(await self._access.member(member), "manage agents")
        check_agent_name(definition.name)
        self._check_editable(definition.name)
        roots = self._context.attachment_roots
        try:
            machine_spec(definition, roots)  # refuse what could not run
        except SpecError as exc:
            raise ConversationError(f"agent {definition.name!r}: {exc}") from None
        store = self._context.store
        record = {_AGENT_KEY: {"definition": definition.model_dump(mode="json")}}
        session_id = _session_id(definition.name)
        if replace:
            if await self._stored(definition.name) is None:
                raise MachineAgentNotFoundError(f"the machine has no agent {definition.name!r}")
            session = await store.update_session(session_id, record)
        else:
            try:
                session = await store.create_session(session_id, AGENT_SESSIONS, record)
            except SessionExistsError:
                raise AgentExistsError(
                    f"the agent {definition.name!r} exists already: replace it instead"
                ) from None
        return agent_info(definition, roots, "machine", session.updated_at)

    async def list(self, member: Member) -> list[AgentInfo]:
        """Every agent the machine offers, as `member`: `rool`, the configured ones, then
        the machine agents."""
        await self._access.member(member)
        roots = self._context.attachment_roots
        found = [agent_info(self._rool, roots, "builtin", None)]
        for spec in self._configured.values():
            found.append(
                AgentInfo(
                    name=spec.id,
                    description=spec.description,
                    tools=spec.tools,
                    source="configured",
                )
            )
        for session in await self._context.store.list_sessions(AGENT_SESSIONS):
            definition = agent_definition(session.metadata[_AGENT_KEY])
            found.append(agent_info(definition, roots, "machine", session.updated_at))
        return found
