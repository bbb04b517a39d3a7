"""The machine: one `Runtime` and one store hosting agents and durable conversations.

A conversation is a session of the core and a conversation run is a run of the core. The
machine owns the runtime, the store and their lifecycle; what members do goes through its
services, one per concern, each checking the acting member once: `machine.members`,
`machine.agents`, `machine.conversations` and `machine.runs`. `machine.client(member)` is
those services bound to a member.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from types import TracebackType

import anyio

from agentkit.conversations._access import Access
from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._agents import ROOL, with_machine_context, working_dir
from agentkit.conversations._attachments import DEFAULT_ATTACHMENT_ROOTS, normalise_roots
from agentkit.conversations._context import MachineContext
from agentkit.conversations._conversation_service import ConversationService
from agentkit.conversations._decisions import conversation_spec
from agentkit.conversations._errors import MemberError
from agentkit.conversations._local import LocalClient
from agentkit.conversations._members import Members
from agentkit.conversations._models import FollowEvent, Member, Role
from agentkit.conversations._run_service import RunService
from agentkit.conversations._uploads import (
    DEFAULT_MAX_UPLOAD_BYTES,
    DEFAULT_UPLOAD_QUOTA_BYTES,
    UploadService,
)
from agentkit.paging import Page
from agentkit.permissions import PermissionHandler
from agentkit.providers import Provider
from agentkit.rooms import LocalRoomsClient, Rooms
from agentkit.runtime import RunBudget, Runtime
from agentkit.spec import AgentSpec
from agentkit.stores import Store
from agentkit.tools import ToolRegistry

__all__ = ["Machine", "default_attachment_roots", "default_machine_store"]


def _state_folder() -> Path:
    """agentkit's state folder (`$XDG_STATE_HOME/agentkit`), made if needed."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    folder = Path(state) / "agentkit"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def default_machine_store() -> str:
    """Where a machine keeps its data without a `store`: `$AGENTKIT_MACHINE_STORE`, else
    `machine.db` in agentkit's state folder (`$XDG_STATE_HOME/agentkit`)."""
    configured = os.environ.get("AGENTKIT_MACHINE_STORE")
    if configured:
        return configured
    return str(_state_folder() / "machine.db")


def default_attachment_roots(store: str | os.PathLike[str]) -> tuple[str, ...]:
    """The attachment roots of a machine on `store` that is given none: `/space` and
    `/rool-drive` when either exists; else one folder, made if needed, beside the store
    (what `agentkit serve` and `agentkit chat --db` use):

    - `attachments` in the folder of a SQLite file (`machine.db` -> `attachments/`);
    - `attachments` in agentkit's state folder (`$XDG_STATE_HOME/agentkit`) for any other
      store (PostgreSQL, in memory).

    Raises:
        OSError: The folder cannot be made.
    """
    if any(os.path.isdir(root) for root in DEFAULT_ATTACHMENT_ROOTS):
        return DEFAULT_ATTACHMENT_ROOTS
    location = os.fspath(store)
    if location.startswith("sqlite:///"):
        location = location.removeprefix("sqlite:///")
    if "://" in location or location in ("", ":memory:"):
        folder = _state_folder() / "attachments"
    else:
        folder = Path(os.path.abspath(os.path.expanduser(location))).parent / "attachments"
    folder.mkdir(parents=True, exist_ok=True)
    return (str(folder),)


class Machine:
    """Hosts agents and durable conversations over one `Runtime` and one store.

    Use it as an async context manager; `client(member)` gives the API acting as a
    member:

    ```python
    async with Machine(store="machine.db", provider=provider) as machine:
        token = await machine.add_member("ada", "owner")
        client = machine.client(await machine.authenticate(token))
        conversation = await client.create_conversation(name="Notes")
        accepted = await conversation.prompt("Hello")
    ```

    The same calls, each taking the acting member, are the machine's services:
    `members`, `agents`, `conversations` and `runs`.

    Args:
        store: A `Store`, or a location [`open_store`][agentkit.stores.open_store] accepts
            (a SQLite file path, `postgresql://...`); by default a SQLite file (see
            [`default_machine_store`][agentkit.conversations.default_machine_store]).
        provider: The model provider (a provider, a registered name, or `None` for the
            environment's).
        attachment_roots: The folders attachments must be under (default `/space` and
            `/rool-drive`); machine agents' default file tools are confined to them.
            Uploads go to the first that exists (see
            [`default_attachment_roots`][agentkit.conversations.default_attachment_roots]
            for a machine where neither default does).
        max_upload_bytes: The largest file an upload may store (default 100 MiB).
        upload_quota_bytes: What a member's upload folder may hold in all (default 1 GiB).
        agents: Configured agents (specs from Markdown definitions or app folders, see
            `definitions` and `apps`), usable in conversations by their id; read-only.
        definitions: Markdown definition files to load as configured agents.
        apps: App folders whose agents to load as configured agents.
        agent_files: Agent files of any registered format (see `agentkit.formats`): a
            definition, a folder of them, an app folder; the format that claims each path
            loads it.
        rool_instructions: Instructions appended to the built-in context of `rool`.
        tools: Tools added to the built-in ones (see `Runtime`'s `tools`).
        permission_handler: Decides calls that need consent.
        heartbeat_interval: Seconds between two renewals of the leases of running runs.
        lease_duration: Seconds a run's lease lasts: a run whose process died is ended as
            interrupted once it expires (when the machine reopens, or by another machine
            sharing the store).
        poll_interval: Seconds between two reads of the store when following or watching
            work this process does not execute (a run of a process that died or of
            another process sharing the store).
        budget: The most model calls and tokens one run may use (see `Runtime`'s
            `budget`; by default 100 model calls and 2,000,000 tokens).
        request_timeout: Seconds a run's request to a person (a permission to decide, a
            question to answer) waits before it is ended as denied; `None` (the
            default): until someone decides (see docs/human-in-the-loop.md).

    Leaving the `async with` block stops the watches and cancels the runs still going
    (they end `cancelled`, with what they had produced).
    """

    def __init__(
        self,
        *,
        store: Store | str | os.PathLike[str] | None = None,
        provider: Provider | str | None = None,
        attachment_roots: Sequence[str | os.PathLike[str]] = DEFAULT_ATTACHMENT_ROOTS,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
        upload_quota_bytes: int = DEFAULT_UPLOAD_QUOTA_BYTES,
        agents: Iterable[AgentSpec] = (),
        definitions: Iterable[str | os.PathLike[str]] = (),
        apps: Iterable[str | os.PathLike[str]] = (),
        agent_files: Iterable[str | os.PathLike[str]] = (),
        rool_instructions: str = "",
        tools: ToolRegistry | None = None,
        permission_handler: PermissionHandler | None = None,
        heartbeat_interval: float = 5.0,
        lease_duration: float = 30.0,
        poll_interval: float = 1.0,
        budget: RunBudget | None = None,
        request_timeout: float | None = None,
    ) -> None:
        roots = normalise_roots(attachment_roots)
        self._configured: dict[str, AgentSpec] = {}
        loaded = [
            *_load_agent_files(definitions, tools, "defs"),
            *_load_agent_files(apps, tools, "apps"),
            *_load_agent_files(agent_files, tools, None),
        ]
        for spec in [*agents, *loaded]:
            if spec.id == ROOL or spec.id in self._configured:
                raise ValueError(f"two configured agents are named {spec.id!r}")
            self._configured[spec.id] = with_machine_context(spec, roots)
        if store is None:
            store = default_machine_store()
        self.runtime = Runtime(
            provider=provider,
            store=os.fspath(store) if isinstance(store, os.PathLike) else store,
            tools=tools,
            permission_handler=permission_handler,
            working_dir=working_dir(roots),
            heartbeat_interval=heartbeat_interval,
            lease_duration=lease_duration,
            budget=budget,
            request_timeout=request_timeout,
        )
        """The runtime every conversation run runs in."""
        self._context = MachineContext(self.runtime, roots, poll_interval)
        self.members = Members(self.runtime.store)
        """The machine's members (no acting member: whoever holds the machine manages
        them, as `agentkit members` does on the store)."""
        access = self._access = Access(self._context, self.members)
        self.agents = AgentService(self._context, access, self._configured, rool_instructions)
        """The agents: listed by any member, managed by owners."""
        self.conversations = ConversationService(self._context, access, self.agents)
        """The conversations: created, read, changed, deleted and watched by members."""
        self.runs = RunService(self._context, access, self.agents)
        """The conversations' runs: prompted, followed and cancelled by members."""
        # A waiting run resumed with no member deciding (its deadline passed) goes on
        # with its conversation's agent, which the runtime does not register.
        self.runtime.agent_resolver = functools.partial(
            conversation_spec, self.runtime.store, self.agents
        )
        self.uploads = UploadService(
            access,
            [Path(os.path.abspath(os.fspath(root))) for root in attachment_roots],
            max_bytes=max_upload_bytes,
            quota_bytes=upload_quota_bytes,
        )
        """The members' uploads: files stored under an attachment root, to attach."""
        self.rooms = Rooms(
            runtime=self.runtime,
            poll_interval=poll_interval,
            role_of=self._role_of,
            member_id_of=self._member_id_of,
        )
        """The machine's rooms: same store, runtime and members (`rooms_client`)."""

    @property
    def store(self) -> Store:
        """The store everything is kept in."""
        return self.runtime.store

    @property
    def attachment_roots(self) -> tuple[Path, ...]:
        """The attachment roots, absolute (each also by its real path)."""
        return self._context.attachment_roots

    @property
    def poll_interval(self) -> float:
        """Seconds between two reads of the store when following or watching work this
        process does not execute."""
        return self._context.poll_interval

    # --- lifecycle --------------------------------------------------------------------

    async def __aenter__(self) -> Machine:
        await self.runtime.__aenter__()
        try:
            group = anyio.create_task_group()
            await group.__aenter__()
            self._context.open(group)
            await self.agents.record_builtins()
            if self.runtime.notifications.shared:
                group.start_soon(self.runs.serve_cancel_requests)
            # What was queued behind runs that ended while no process drained it (killed)
            # starts now, then at every heartbeat (after the lease sweep's ends).
            group.start_soon(self.runs.queue.serve, self.runtime.heartbeat_interval)
            await self.rooms.__aenter__()
        except BaseException as exc:
            await self.runtime.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        group = self._context.close()
        try:
            if group is not None:
                # Room agents first: their handlers in flight end (bounded) while the
                # runtime their LLM runs need is still open.
                await self.rooms.__aexit__(None, None, None)
                group.cancel_scope.cancel()  # the watches
                await group.__aexit__(None, None, None)
            # The runs still going are stopped (they end `cancelled`), not awaited: a
            # machine that closes does not wait for a model that may never answer.
            self.runs.cancel_executing()
        finally:
            handled = await self.runtime.__aexit__(exc_type, exc, tb)
        return handled

    async def interrupt_runs(self) -> None:
        """End every run this machine executes as a crash would, but at once: `error`
        with the reason `INTERRUPTED_REASON` (their turns show `interrupted`), what they
        had streamed kept. For a host that shuts down (`agentkit serve` on SIGTERM);
        returns once every one has ended and been stored."""
        await self.runs.interrupt_executing()

    # --- members ----------------------------------------------------------------------

    async def add_member(self, name: str, role: Role) -> str:
        """Add a member; returns its secret token (only its SHA-256 hash is stored).

        Raises:
            MemberError: The name is taken or not valid, or the role is unknown.
        """
        return await self.members.add(name, role)

    async def get_member(self, name: str) -> Member | None:
        """The member with this name, or `None`."""
        return await self.members.get(name)

    async def member(self, name: str) -> Member:
        """The member with this name, with its id (`MemberError` when there is none):
        what `client(...)` takes."""
        found = await self.members.get(name)
        if found is None:
            raise MemberError(f"no member {name!r}")
        return found

    async def list_members(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Member]:
        """A page of the members, oldest first (see `agentkit.paging`)."""
        return await self.members.list(limit=limit, cursor=cursor)

    async def rotate_member(self, name: str) -> str:
        """Give a member a new token and return it; the old one is refused at once (see
        `Members.rotate`)."""
        return await self.members.rotate(name)

    async def set_role(self, name: str, role: Role) -> Member:
        """Change a member's role; it applies to the member's next call."""
        return await self.members.set_role(name, role)

    async def remove_member(self, name: str) -> None:
        """Remove a member: its clients are refused from their next call (its
        conversations stay, private ones visible to nobody)."""
        await self.members.remove(name)

    async def authenticate(self, token: str, *, conversation_id: str | None = None) -> Member:
        """The member a token belongs to (`MemberError` when none). A server passes the
        `conversation_id` a request names: on PostgreSQL the conversation is read with
        the member, in one statement, and the request's access check uses that read."""
        return await self._access.authenticate(token, conversation_id)

    async def _role_of(self, member_id: str) -> Role | None:
        current = await self.members.get_by_id(member_id)
        return None if current is None else current.role

    async def _member_id_of(self, name: str) -> str | None:
        """The id of the member a room grant names, by its name or by its id."""
        current = await self.members.get(name) or await self.members.get_by_id(name)
        return None if current is None else current.id

    # --- clients ----------------------------------------------------------------------

    def client(self, member: Member) -> LocalClient:
        """The client API acting as `member` (authorised by its current role)."""
        return LocalClient(
            member,
            agents=self.agents,
            conversations=self.conversations,
            runs=self.runs,
            uploads=self.uploads,
        )

    def rooms_client(self, member: Member) -> LocalRoomsClient:
        """The rooms API acting as `member` (its current role checked on every call)."""
        return self.rooms.client(member.id, role=member.role)

    async def follow_checked(
        self, member: Member, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        """`client(member).follow(...)`, with the access and the run checked before it
        returns (a server answers 404 before it starts a stream, not inside it): the
        same as `runs.follow`."""
        return await self.runs.follow(member, conversation_id, run_id, after=after)

    async def cancel_run(self, member: Member, conversation_id: str, run_id: str) -> bool:
        """Cancel run `run_id` of a conversation as `member`, if it is the running one;
        returns once it has ended (`False` when it was not running)."""
        return await self.runs.cancel(member, conversation_id, run_id)


def _load_agent_files(
    paths: Iterable[str | os.PathLike[str]], tools: ToolRegistry | None, format_name: str | None
) -> list[AgentSpec]:
    """The agents of `paths`, loaded through the formats seam by the format `format_name`
    (else the one that claims each path) and bound to the tools the machine's runtime
    offers (an app's own Python actions are not loaded)."""
    paths = list(paths)
    if not paths:
        return []
    from agentkit.formats import load_agents
    from agentkit.tools import builtin_tools

    # The machine's runtime has the built-in tools, and `tools`.
    names = [*builtin_tools().names(), *(tools.names() if tools is not None else ())]
    return [
        spec for path in paths for spec in load_agents(path, format_name=format_name, tools=names)
    ]
