"""`machine.agents`: the agents a machine offers, listed for any member and managed by
owners; and the spec each one runs with.

Every agent is a record with an id that is never reused (see
[`AgentRecord`][agentkit.stores.AgentRecord]): the built-in `rool` and the configured
agents (definition files, app folders) are recorded when the machine opens; owners create,
replace and delete the others. A conversation is bound to its agent's id: replacing the
agent keeps the id (new runs use the new definition), deleting it ends the conversation's
prompts (`AgentDeletedError`) whatever is created later under the same name.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping

from agentkit.conversations._access import Access, require_owner
from agentkit.conversations._agents import (
    ROOL,
    agent_info,
    check_agent_name,
    configured_info,
    machine_spec,
)
from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import (
    AgentExistsError,
    ConversationError,
    MachineAgentNotFoundError,
)
from agentkit.conversations._members import FRESH_SECONDS
from agentkit.conversations._models import AgentDefinition, AgentInfo, Member
from agentkit.errors import AgentDeletedError
from agentkit.paging import Page, check_limit, decode_key, page_of, record_key
from agentkit.spec import AgentSpec, SpecError
from agentkit.stores import AgentRecord, RecordExistsError, RecordNotFoundError

__all__ = ["AgentService"]

_CACHED_SPECS = 256  # specs kept for reuse, at most (the runtime caches per spec)
_PAGES = "agents"


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
        self._specs: dict[tuple[str, int], AgentSpec] = {}
        self._records: dict[str, tuple[AgentRecord, float]] = {}
        self._changes = 0

    async def record_builtins(self) -> None:
        """Record `rool` and the configured agents, each under the id it already has in
        the store (a first start gives them one). The machine calls this when it opens."""
        await self._ensure(ROOL, "builtin")
        for name in self._configured:
            await self._ensure(name, "configured")

    async def _ensure(self, name: str, source: str) -> AgentRecord:
        store = self._context.store
        for _ in range(3):  # another process may record it meanwhile
            found = await store.find_agent(name)
            if found is not None:
                if found.source != source:
                    raise ConversationError(
                        f"the agent {name!r} is configured here but the machine has an "
                        f"agent of that name already ({found.source}): delete one of them"
                    )
                return found
            now = time.time()
            record = AgentRecord(secrets.token_hex(16), name, 1, source, now, now)  # type: ignore[arg-type]
            try:
                await store.create_agent(record)
                return record
            except RecordExistsError:
                continue
        raise ConversationError(f"could not record the agent {name!r}")

    async def find(self, name: str) -> AgentRecord:
        """The live agent called `name` (`MachineAgentNotFoundError` when none)."""
        found = await self._context.store.find_agent(name) if isinstance(name, str) else None
        if found is None or not self._offered(found):
            raise MachineAgentNotFoundError(f"the machine has no agent {name!r}")
        return found

    def _offered(self, record: AgentRecord) -> bool:
        """Whether this machine runs the agent (a configured agent of another process's
        configuration is not offered here)."""
        return record.source != "configured" or record.name in self._configured

    async def spec_of(self, agent_id: str) -> AgentSpec:
        """The spec the agent of id `agent_id` runs with as it is now.

        Raises:
            AgentDeletedError: It was deleted.
            MachineAgentNotFoundError: The machine has no such agent, or it is a
                configured agent this machine does not load.
        """
        record = await self._record(agent_id)
        if record is None:
            raise MachineAgentNotFoundError(f"the machine has no agent {agent_id!r}")
        if record.deleted_at is not None:
            raise AgentDeletedError(
                f"the agent {record.name!r} of this conversation was deleted: "
                "its turns stay readable, it takes no prompt"
            )
        if record.source == "configured":
            spec = self._configured.get(record.name)
            if spec is None:
                raise MachineAgentNotFoundError(
                    f"the agent {record.name!r} is not configured on this machine"
                )
            return spec
        key = (record.id, record.version)
        cached = self._specs.get(key)
        if cached is None:
            if len(self._specs) >= _CACHED_SPECS:
                self._specs.clear()
            definition = self._definition(record)
            cached = self._specs[key] = machine_spec(definition, self._context.attachment_roots)
        return cached

    async def _record(self, agent_id: str) -> AgentRecord | None:
        """The agent's record: read from the store, or as read less than
        `FRESH_SECONDS` ago when no agent changed in this process since (an agent
        replaced or deleted by another process applies to prompts within that time)."""
        found = self._records.get(agent_id)
        if found is not None and time.monotonic() - found[1] <= FRESH_SECONDS:
            return found[0]
        changes = self._changes
        record = await self._context.store.get_agent(agent_id)
        if record is not None and changes == self._changes:
            if len(self._records) >= _CACHED_SPECS:
                self._records.clear()
            self._records[agent_id] = (record, time.monotonic())
        return record

    def _changed(self) -> None:
        """An agent is being changed here: what was read no longer stands (called before
        and after the change, so that no read in between is kept)."""
        self._changes += 1
        self._records.clear()

    def _definition(self, record: AgentRecord) -> AgentDefinition:
        if record.source == "builtin":
            return self._rool
        return AgentDefinition.model_validate(record.definition)

    async def create(self, member: Member, definition: AgentDefinition) -> AgentInfo:
        """Create a machine agent as `member` (an owner); `AgentExistsError` when one has
        this name already."""
        await self._check_put(member, definition)
        now = time.time()
        record = AgentRecord(
            secrets.token_hex(16),
            definition.name,
            1,
            "machine",
            now,
            now,
            definition.model_dump(mode="json"),
        )
        try:
            await self._context.store.create_agent(record)
        except RecordExistsError:
            raise AgentExistsError(
                f"the agent {definition.name!r} exists already: replace it instead"
            ) from None
        return self._info(record)

    async def replace(self, member: Member, definition: AgentDefinition) -> AgentInfo:
        """Replace a machine agent as `member` (an owner): it keeps its id, new runs use
        the new definition; `MachineAgentNotFoundError` when there is none of this name."""
        await self._check_put(member, definition)
        found = await self.find(definition.name)
        self._changed()
        try:
            record = await self._context.store.replace_agent(
                found.id, definition.model_dump(mode="json"), time.time()
            )
        except RecordNotFoundError:
            raise MachineAgentNotFoundError(
                f"the machine has no agent {definition.name!r}"
            ) from None
        finally:
            self._changed()
        return self._info(record)

    async def delete(self, member: Member, name: str) -> None:
        """Delete a machine agent as `member` (an owner). Its conversations stay readable
        and take no prompt, whatever is created later under its name."""
        require_owner(await self._access.member(member), "manage agents")
        self._check_editable(name)
        found = await self.find(name)
        self._changed()
        try:
            await self._context.store.delete_agent(found.id, time.time())
        except RecordNotFoundError:
            raise MachineAgentNotFoundError(f"the machine has no agent {name!r}") from None
        finally:
            self._changed()

    def is_configured(self, name: str) -> bool:
        """Whether `name` is a configured agent of this machine (read-only)."""
        return name in self._configured

    def _check_editable(self, name: str) -> None:
        if name == ROOL:
            raise ConversationError("the agent 'rool' is built in: it cannot be changed")
        if name in self._configured:
            raise ConversationError(
                f"the agent {name!r} is configured (a definition file or an app): change it there"
            )

    async def _check_put(self, member: Member, definition: AgentDefinition) -> None:
        require_owner(await self._access.member(member), "manage agents")
        check_agent_name(definition.name)
        self._check_editable(definition.name)
        try:
            machine_spec(definition, self._context.attachment_roots)  # refuse what could not run
        except SpecError as exc:
            raise ConversationError(f"agent {definition.name!r}: {exc}") from None

    def _info(self, record: AgentRecord) -> AgentInfo:
        roots = self._context.attachment_roots
        if record.source == "configured":
            return configured_info(record, self._configured[record.name])
        source = "builtin" if record.source == "builtin" else "machine"
        updated = None if record.source == "builtin" else record.updated_at
        return agent_info(record, self._definition(record), roots, source, updated)

    async def list(
        self, member: Member, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[AgentInfo]:
        """A page of the agents the machine offers, as `member`, oldest first (`rool`
        and the configured ones come first on a new machine)."""
        await self._access.member(member)
        size = check_limit(limit)
        records = await self._context.store.list_agents(decode_key(cursor, _PAGES), size + 1)
        page = page_of(records, size, _PAGES, record_key, lambda record: record)
        return Page([self._info(r) for r in page if self._offered(r)], page.next)
