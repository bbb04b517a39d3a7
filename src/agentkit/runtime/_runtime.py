"""`Runtime`: the object that owns a provider, a store, tools, actions and agents, and
starts, resumes and follows their runs (see `agentkit.runtime`)."""

# Why one long module: the `Runtime` facade documents every option of its constructor, and its
# lifecycle, sessions and run start belong to that one object; the run and its ending
# (`_run`), the task-group rules (`_group`), leases (`_lease`), pricing (`_pricing`),
# sub-agents (`_subagents`) and the engine (`agentkit.engine`) live apart.

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio

from agentkit._internal import observe
from agentkit.actions import ActionRegistry, ActionResult
from agentkit.engine import (
    Driver,
    Emit,
    OfferCache,
    OutputLimits,
    Resumption,
    RetryPolicy,
    RunBudget,
    TurnOutcome,
    TurnRequest,
    TurnResources,
    check_allowlist,
    registered_driver,
    resolve_context,
    run_engine_turn,
    session_checks,
)
from agentkit.errors import AgentNotFoundError, NoDriverError, ResumeError
from agentkit.events import Accounting, AgentMessage
from agentkit.permissions import PermissionHandler
from agentkit.providers import (
    NO_PROVIDER_HELP,
    NoProviderError,
    Provider,
    create_provider,
    default_provider_name,
)
from agentkit.runtime._group import RunGroup
from agentkit.runtime._lease import (
    DEFAULT_HEARTBEAT_INTERVAL,
    DEFAULT_LEASE_DURATION,
    LeaseKeeper,
    end_expired_runs,
)
from agentkit.runtime._pricing import CostEstimator, priced
from agentkit.runtime._relay import LiveRelay, remote_entries
from agentkit.runtime._requests import PendingRequest, waiting_request
from agentkit.runtime._run import (
    Run,
    RunExecutor,
    attach_relay,
    begin,
    execute,
    new_id,
    new_uuid,
)
from agentkit.runtime._subagents import DEFAULT_SUBAGENT_TIMEOUT, run_action, run_subagent
from agentkit.runtime._telemetry import run_telemetry
from agentkit.runtime._waiting import RequestSweeper, check_answers, check_decision, resume
from agentkit.spec import AgentSpec
from agentkit.stores import (
    EventEntry,
    MemoryStore,
    Notifications,
    RunRecord,
    SessionNotFoundError,
    SessionRecord,
    Store,
    WaitingRecord,
    notifications_of,
)
from agentkit.tools import Tool, ToolRegistry

__all__ = ["Runtime"]


_logger = logging.getLogger("agentkit.runtime")


def _as_registry(
    tools: ToolRegistry | Iterable[Tool | Callable[..., Any]] | None,
) -> ToolRegistry | None:
    """`Runtime(tools=...)` as a registry: functions become tools, now (so a function
    that cannot be a tool fails where it is given)."""
    if tools is None or isinstance(tools, ToolRegistry):
        return tools
    if isinstance(tools, Tool) or callable(tools):
        raise TypeError("tools= takes a list of tools or functions (or a ToolRegistry)")
    return ToolRegistry(t if isinstance(t, Tool) else Tool.from_function(t) for t in tools)


class Runtime:
    """Owns runs: provider, store, tools, actions, agents and the task group runs live in.

    Args:
        provider: A provider, a registered provider name, or `None` to choose from the
            environment (`AGENTKIT_PROVIDER`, API keys). See `agentkit.providers`.
        store: Where sessions and events are kept: a `Store`, or a location for
            [`open_store`][agentkit.stores.open_store] (a SQLite file path,
            `postgresql://...`), which the runtime then also closes. Without one, an
            in-memory store: nothing survives the process.
        tools: Tools to add to the built-in ones: `Tool`s, plain Python functions (made
            tools with `Tool.from_function`), or a `ToolRegistry` (every name it holds). A
            tool named like a built-in one replaces it. Agents are offered only what their
            allowlist names.
        builtin_tools: Whether the runtime has every built-in tool
            (`agentkit.tools.builtin_tools`, whose background processes are stopped when
            the runtime closes); `False` leaves only `tools` (and MCP servers' tools).
        tool_vocabulary: Register the built-in tools only under the Claude names
            (`"claude"`: `Read`, `Bash`, ...) or the Rho names (`"rho"`: `read_file`,
            `bash`, ...); `None` registers both.
        mcp_servers: An `mcpServers` mapping; the servers start when the runtime is
            entered and stop when it closes, and their tools join `tools` as
            `mcp__<server>__<tool>`.
        actions: The actions agents may be allowed (by canonical id).
        agents: Agents that can be started by id and summoned.
        permission_handler: Decides calls that need consent (see `agentkit.permissions`).
        services: Host services handed to tools and actions by name.
        working_dir: Default working directory of runs (the current directory).
        retry: Retry policy for retryable provider errors.
        default_max_turns: Turn cap for specs that set none.
        drivers: Extra drivers by `AgentSpec.runtime` name (the engine is built in).
        cost_estimator: `(model, ModelUsage) -> USD or None`, to fill `cost_usd`; by default
            runs on `anthropic`, `openai` and `local` are priced with
            `agentkit.providers.estimate_cost`.
        max_subagent_depth: How deep summons may nest.
        subagent_timeout: Seconds a sub-agent's run (a `summon`, `system:summon`) may take
            before it is cancelled and its caller gets the error "sub-agent '<id>' timed out
            after N seconds" (ten minutes by default; `None`: no limit). Actions have
            their own `Action.timeout`.
        budget: The most model calls and tokens one run may use (`RunBudget`: 100 model
            calls and 2,000,000 tokens by default); past it the run ends with an error
            naming the budget.
        limits: Caps on a turn's tool results and model replies (`OutputLimits`); by
            default read from the environment when the first turn starts.
        heartbeat_interval: Seconds between two renewals of the leases of the runs this
            runtime executes (and two sweeps for runs whose lease expired).
        lease_duration: Seconds a run's lease lasts without renewal. When it expires (the
            process died, or lost its store that long), any runtime sharing the store ends
            the run with `status == "error"` and the reason "interrupted: its process
            stopped". Leases are kept in every store but the in-memory one, which no other
            process can share.
        tracer_provider: An OpenTelemetry `TracerProvider` for this runtime's spans; by
            default the global one, when one is set (see docs/telemetry.md). Without a
            provider, runs are not traced and `opentelemetry` is not imported.
        meter_provider: An OpenTelemetry `MeterProvider` for the `gen_ai.client.*`
            metrics; by default the global one, when one is set.
        capture_content: Whether spans record prompts, completions and tool arguments and
            results (`gen_ai.input.messages`, ...). By default they do not, unless
            `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
        request_timeout: Seconds a request to a person (a `permission_request` or a
            `question`) waits before it is ended as denied ("no decision within N
            seconds") by the heartbeat's sweep of whichever runtime sharing the store
            sweeps first; `None` (the default): it waits until someone decides.

    Every run is durable from acceptance: `start` returns once the run's record, its
    `turn_start` (with the prompt) and `session_init` are stored, and the store itself
    refuses a second running run on a session, so `SessionBusyError` holds across
    processes. A run whose call needs a person waits (status `waiting`, holding no task)
    until [`decide`][agentkit.runtime.Runtime.decide] or
    [`answer`][agentkit.runtime.Runtime.answer] is called through any runtime sharing the
    store (docs/human-in-the-loop.md); its session stays busy meanwhile. Each later event
    is stored no later than the end of the model step that produced it (text deltas never
    are), and the run's ending is stored with its final events in one transaction, retried
    when the store fails.
    """

    _executor: RunExecutor  # what its runs borrow from it, from `__aenter__` on

    def __init__(
        self,
        *,
        provider: Provider | str | None = None,
        store: Store | str | None = None,
        tools: ToolRegistry | Iterable[Tool | Callable[..., Any]] | None = None,
        builtin_tools: bool = True,
        tool_vocabulary: Literal["claude", "rho"] | None = None,
        mcp_servers: Mapping[str, Any] | None = None,
        actions: ActionRegistry | None = None,
        agents: Iterable[AgentSpec] = (),
        permission_handler: PermissionHandler | None = None,
        services: Mapping[str, Any] | None = None,
        working_dir: str | Path | None = None,
        retry: RetryPolicy | None = None,
        default_max_turns: int = 100,
        drivers: Mapping[str, Driver] | None = None,
        cost_estimator: CostEstimator | None = None,
        max_subagent_depth: int = 4,
        limits: OutputLimits | None = None,
        heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
        lease_duration: float = DEFAULT_LEASE_DURATION,
        tracer_provider: Any = None,
        meter_provider: Any = None,
        capture_content: bool | None = None,
        request_timeout: float | None = None,
        subagent_timeout: float | None = DEFAULT_SUBAGENT_TIMEOUT,
        budget: RunBudget | None = None,
    ) -> None:
        if request_timeout is not None and not (
            isinstance(request_timeout, int | float) and 0 < request_timeout < float("inf")
        ):
            raise ValueError(
                f"request_timeout must be a positive number of seconds or None, not "
                f"{request_timeout!r}"
            )
        if subagent_timeout is not None and (
            isinstance(subagent_timeout, bool)
            or not isinstance(subagent_timeout, int | float)
            or not 0 < subagent_timeout < float("inf")
        ):
            raise ValueError(
                f"subagent_timeout must be a positive number of seconds or None, not "
                f"{subagent_timeout!r}"
            )
        if not 0 < heartbeat_interval < lease_duration:
            raise ValueError(
                "heartbeat_interval must be positive and shorter than lease_duration "
                f"(got {heartbeat_interval!r} and {lease_duration!r})"
            )
        self._provider_arg = provider
        self._provider: Provider | None = provider if not isinstance(provider, str) else None
        self._providers: dict[str, Provider] = {}  # other providers agents name, by name
        self._owns_store = store is None or isinstance(store, str)
        if isinstance(store, str):
            from agentkit.stores import open_store

            store = open_store(store)
        self.store: Store = store if store is not None else MemoryStore()
        self._added_tools = _as_registry(tools)
        self._builtin_tools = builtin_tools
        self._tools: ToolRegistry | None = None
        self._tool_vocabulary = tool_vocabulary
        self._processes: Any = None
        self._mcp_servers = dict(mcp_servers or {})
        self._exit_stack: contextlib.AsyncExitStack | None = None
        self.actions = actions if actions is not None else ActionRegistry()
        self._agents: dict[str, AgentSpec] = {}
        for spec in agents:
            self.register_agent(spec)
        self.permission_handler = permission_handler
        self.services: Mapping[str, Any] = dict(services or {})
        self.working_dir = Path(working_dir) if working_dir is not None else Path.cwd()
        self.retry = retry or RetryPolicy()
        self.default_max_turns = default_max_turns
        self.drivers: dict[str, Driver] = dict(drivers or {})
        self.cost_estimator = cost_estimator
        self.max_subagent_depth = max_subagent_depth
        self.subagent_timeout = subagent_timeout
        if budget is not None and not isinstance(budget, RunBudget):
            raise TypeError(
                f"budget must be a RunBudget(model_calls=..., tokens=...) or None, not "
                f"{type(budget).__name__}"
            )
        self.budget = budget if budget is not None else RunBudget()
        self.limits = limits
        """The caps of this runtime's turns (`None` until the first turn reads them)."""
        self._running = False
        self._runs: dict[str, Run] = {}
        # Runs started or resumed here that now wait for a person: kept (without a task)
        # so that their callers' `Run` objects go on when they are decided here.
        self._suspended: dict[str, Run] = {}
        self.request_timeout = request_timeout
        self.agent_resolver: Callable[[WaitingRecord], Awaitable[AgentSpec | None]] | None = None
        """How a host whose agents are not registered here (a machine's conversations)
        finds the spec of a waiting run to resume when no `agent=` is given (its request's
        deadline passed, say): given the stored waiting run, its spec or `None`."""
        self._group = RunGroup(self._runs)
        self.instance_id = new_id()
        """This runtime's id, recorded as the owner of the runs it executes."""
        self.heartbeat_interval = heartbeat_interval
        self.lease_duration = lease_duration
        self._leases: LeaseKeeper | None = None
        self._relay: LiveRelay | None = None
        self._offers = OfferCache()  # what each spec is offered, kept between turns
        self._resources: TurnResources | None = None  # see _turn_resources
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.capture_content = capture_content

    # --- lifecycle --------------------------------------------------------------------

    @property
    def tools(self) -> ToolRegistry:
        """The tools agents may be allowed, by name: the built-in ones (unless
        `builtin_tools=False`), those given as `tools` and those of the MCP servers."""
        if self._tools is None:
            added = self._added_tools
            if not self._builtin_tools:
                self._tools = added if added is not None else ToolRegistry()
            else:
                from agentkit.tools import ProcessTable, builtin_tools

                self._processes = ProcessTable()
                registry = builtin_tools(self._tool_vocabulary, processes=self._processes)
                if added is not None:
                    registry.update(added)
                self._tools = registry
        return self._tools

    async def __aenter__(self) -> Runtime:
        if self._running:
            raise RuntimeError("this Runtime is already running")
        if not isinstance(self.store, MemoryStore):
            try:
                # What a process that died left `running` ends now (once its lease is over),
                # before this runtime starts anything.
                await end_expired_runs(self.store, time.time())
            except BaseException:
                if self._owns_store:
                    with anyio.CancelScope(shield=True):
                        await self.store.aclose()
                raise
            self._leases = LeaseKeeper(
                self.store,
                self.instance_id,
                self.heartbeat_interval,
                self.lease_duration,
                self._runs.keys,
                self._lease_lost,
            )
        if self._mcp_servers:
            from agentkit.tools import mcp_tools

            stack = contextlib.AsyncExitStack()
            try:
                started = await stack.enter_async_context(mcp_tools(self._mcp_servers))
            except BaseException:
                await stack.aclose()
                raise
            self._exit_stack = stack
            registry = self.tools.copy()
            for tool in started:
                registry.add(tool)
            self._tools = registry
        # The leases are kept beside the runs until the last one has ended; so are the
        # store's notifications when other processes share them, and the relay of live
        # events to those processes' readers.
        services = [] if self._leases is None else [self._leases.run]
        if self._leases is not None or self.request_timeout is not None:
            # Requests past their deadline end as denied (any runtime's deadline: a store
            # another process shares is swept here too).
            services.append(RequestSweeper(self, self.heartbeat_interval).run)
        notifications = self.notifications
        if notifications.shared:
            self._relay = LiveRelay(notifications)
            services += [notifications.run, self._relay.run]
        await self._group.enter(services)
        runs, group = self._runs, self._group

        def release(run_id: str) -> None:
            runs.pop(run_id, None)
            group.release(run_id)

        self._executor = RunExecutor(
            store=self.store,
            owner=self.instance_id,
            group=self._group,
            driver_for=self._driver_for,
            resources=self._turn_resources,
            price=self._priced,
            stop_processes=self._stop_processes,
            release=release,
            suspended=self._suspended_run,
            request_timeout=self.request_timeout,
        )
        self._running = True
        return self

    @property
    def notifications(self) -> Notifications:
        """The store's notifications: what readers of runs and rooms wait on (shared
        with other processes on PostgreSQL, else this process's own)."""
        return notifications_of(self.store)

    def _lease_lost(self, run_id: str) -> None:
        run = self._runs.get(run_id)
        if run is not None and not run.done:
            _logger.warning(
                "run %s was ended by another runtime (its lease had expired); stopping it", run_id
            )
            run.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._running
        try:
            return await self._group.exit(exc)
        finally:
            self._running = False
            self._leases = None
            self._relay = None
            if self._processes is not None:
                with anyio.CancelScope(shield=True):
                    await self._processes.stop_all()
            if self._exit_stack is not None:
                # Not under a shield: the MCP clients' own cancel scopes must unwind in
                # the order they were entered.
                stack, self._exit_stack = self._exit_stack, None
                await stack.aclose()
            if self._owns_store:
                with anyio.CancelScope(shield=True):
                    await self.store.aclose()

    # --- agents -----------------------------------------------------------------------

    @property
    def agents(self) -> Mapping[str, AgentSpec]:
        """Registered agents by canonical id."""
        return self._agents

    def register_agent(self, spec: AgentSpec) -> None:
        """Make `spec` startable by id and summonable (replaces one with the same id)."""
        self._agents[spec.id] = spec

    def _resolve_agent(self, agent: AgentSpec | str) -> AgentSpec:
        if isinstance(agent, AgentSpec):
            return agent
        try:
            return self._agents[agent]
        except KeyError:
            raise AgentNotFoundError(f"no agent {agent!r} is registered") from None

    @property
    def provider(self) -> Provider:
        """The default provider (created on first use when given by name or environment)."""
        if self._provider is None:
            name = self._provider_arg if isinstance(self._provider_arg, str) else None
            name = name or default_provider_name()
            if name is None:
                raise NoProviderError(NO_PROVIDER_HELP)
            self._provider = create_provider(name)
        return self._provider

    def provider_named(self, name: str) -> Provider:
        """The provider registered as `name`: the runtime's own when it is that one, else
        one created on first use and kept (agents on different providers share one
        runtime: an agent's model string `"openai:gpt-4.1"` names its provider).

        Raises:
            NoProviderError: No provider has that name, or it is not configured.
        """
        own = self._provider
        if own is None and self._provider_arg == name:
            own = self.provider
        if own is not None and own.name == name:
            return own
        found = self._providers.get(name)
        if found is None:
            found = self._providers[name] = create_provider(name)
        return found

    # --- sessions and runs ------------------------------------------------------------

    async def create_session(
        self,
        agent: AgentSpec | str,
        *,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> SessionRecord:
        """Create an empty session for an agent (an id is generated when none is given)."""
        spec = self._resolve_agent(agent)
        return await self.store.create_session(session_id or new_uuid(), spec.id, metadata)

    async def start(
        self,
        agent: AgentSpec | str,
        prompt: str,
        *,
        session_id: str | None = None,
        working_dir: str | Path | None = None,
        context_suffix: str | None = None,
        shared_context: str | Mapping[str, Any] | None = None,
        thread_context: str | Mapping[str, Any] | None = None,
        session_metadata: dict[str, Any] | None = None,
        run_id: str | None = None,
        _depth: int = 0,
    ) -> Run:
        """Start a run of `agent` (a spec or a registered id) and return it at once.

        `session_id` resumes that session's transcript (`SessionNotFoundError` when it does
        not exist, `SessionBusyError` while it has a run going); without it a new session is
        created with `session_metadata`. `run_id` gives the run its id (a new one by
        default); the store refuses an id that is taken (`StoreError`): a caller that
        names the run (a queued prompt) starts it once, whoever else tries.
        """
        if not self._running:
            raise RuntimeError("start runs inside 'async with Runtime(...) as runtime:'")
        spec = self._resolve_agent(agent)
        # Everything that can fail on the caller's input fails before any state changes.
        if (
            spec.tools
            and spec.runtime == "engine"
            and self._driver_for(spec) == self._engine_driver  # not a host's own driver
        ):
            check_allowlist(spec, self._turn_resources())  # a misspelt tool raises
        system, user = resolve_context(
            spec,
            prompt,
            context_suffix=context_suffix,
            shared_context=shared_context,
            thread_context=thread_context,
        )
        resumed = session_id is not None
        checks = session_checks()
        if session_id is None:
            metadata = dict(session_metadata or {})
            for key in checks.keys() & spec.metadata.keys() if checks else ():
                # What an adapter checks on resume (a Markdown definition's fingerprint
                # record, say) is remembered with the session.
                metadata.setdefault(key, spec.metadata[key])
            session = await self.create_session(spec, metadata=metadata)
        else:
            found = await self.store.get_session(session_id)
            if found is None:
                raise SessionNotFoundError(f"no session {session_id!r} to resume")
            if found.agent_id != spec.id:
                raise ResumeError(
                    f"session {session_id!r} belongs to agent {found.agent_id!r}, not {spec.id!r}"
                )
            session = found
            for key in checks.keys() & session.metadata.keys() if checks else ():
                checks[key](session.metadata[key], spec)
        run = Run(
            run_id=run_id or new_id(),
            turn_id=new_id(),
            session_id=session.id,
            spec=spec,
            prompt=prompt,
            working_dir=Path(working_dir) if working_dir is not None else self.working_dir,
            native=self._group.native,
        )
        # Traced (a child of the caller's current span) only when a provider is set; the
        # span's context is stored with the run, in its `turn_start`.
        telemetry = run_telemetry(self, run)
        trace_parent = telemetry.traceparent if telemetry is not None else None
        accepted = begin(run, system or None, trace_parent)
        now = time.time()
        # Accepted once stored: the record (owned by this runtime, under a lease) with the
        # prompt's `turn_start`, in one transaction that also refuses a second running run
        # on the session, in any process.
        try:
            await self.store.create_run(
                RunRecord(
                    run.id,
                    session.id,
                    spec.id,
                    "running",
                    now,
                    None,
                    self.instance_id,
                    now,
                    now + self.lease_duration,
                ),
                accepted,
            )
        except BaseException:
            if telemetry is not None:
                telemetry.end(None)  # not accepted: its span ends as an error
            raise
        self._runs[run.id] = run
        run._decider = self
        observe.run_started(spec.id)
        if self._relay is not None:
            attach_relay(run, self._relay.add)
        # The turn's request is built when the run takes its first step: a run waiting for
        # its turn holds as little as it can (ten thousand may be waiting at once).
        self._group.start(
            run.id, execute, run, self._executor, system, user, resumed, _depth, telemetry
        )
        return run

    def stream(
        self, agent: AgentSpec | str, prompt: str, **options: Any
    ) -> AsyncIterator[AgentMessage]:
        """Start a run and iterate over its events (leaving early does not stop it)."""

        async def follow() -> AsyncIterator[AgentMessage]:
            run = await self.start(agent, prompt, **options)
            async for event in run.events():
                yield event

        return follow()

    def get_run(self, run_id: str) -> Run | None:
        """A run that is still going in this runtime, by id (not one that waits for a
        person: it has no task here, and may be resumed by another runtime)."""
        return self._runs.get(run_id)

    async def replay(self, run_id: str, after: int = -1) -> AsyncIterator[EventEntry]:
        """A run's events after `after`: followed live while it runs, else read from the
        store (where `text_delta` events are not kept)."""
        run = self._runs.get(run_id)
        if run is not None:
            async for entry in run.entries(after):
                yield entry
            return
        for entry in await self.store.read_events(run_id, after):
            yield entry

    def follow(
        self, run_id: str, after: int = -1, *, poll_interval: float = 1.0
    ) -> AsyncIterator[EventEntry]:
        """A cursor over a run's log wherever the run executes, until its `turn_end`.

        A run this runtime executes is read from its log in memory, text deltas
        included. Any other (another process executes it, or executed it) is read from
        the store as it is stored; when the store's notifications are shared
        (PostgreSQL), its text deltas and the events not stored yet come relayed live
        from the process executing it, in order. A reader that misses relayed deltas
        still gets every stored event. The store is read again every `poll_interval`
        seconds in any case. A run that has ended gives its events after `after`. A run
        that waits for a person has not ended: its reader waits, then gets the events of
        its resumed turn, wherever it was decided.
        """
        run = self._runs.get(run_id)
        if run is not None:
            return run.entries(after)
        return remote_entries(self.store, self.notifications, run_id, after, poll_interval)

    # --- people in the loop -----------------------------------------------------------

    async def pending_requests(self, run_id: str) -> list[PendingRequest]:
        """What run `run_id` waits on a person for, read from the store (so any process
        sees it): at most one request; empty unless the run is `waiting`."""
        record = await self.store.get_waiting(run_id)
        return [] if record is None else [waiting_request(record)]

    async def decide(
        self,
        run_id: str,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
        agent: AgentSpec | None = None,
    ) -> Run:
        """Decide a waiting run's `permission_request`; the run goes on in this runtime.

        The decision is stored as a `permission_decision` event in the same conditional
        transaction that moves the run from `waiting` back to `running` under this
        runtime's lease, so of two deciders (in any processes) exactly one wins. The run
        then continues in the same run id and turn: the call runs (allowed, with
        `updated_input` when given, checked like the model's input) or the model gets
        `permission denied: <message>`; then the rest of that model step and the model
        loop. Returns the resumed run once the decision is stored (not when the run ends:
        `await run.wait()`, or follow it).

        Args:
            run_id: The waiting run.
            request_id: Its pending request (`pending_requests`, or the
                `permission_request` event's `request_id`).
            allow: Whether the call may run.
            message: Why it is denied: what the model is told.
            updated_input: The input the call runs with instead (only with `allow`).
            remember: With `allow`, also allow later calls matching this one in the same
                session without asking (a rule kept in the session's metadata; see
                docs/human-in-the-loop.md for the rule format).
            agent: The run's agent, for a host whose agents are not registered in this
                runtime (by default the spec of the run when this runtime started it, else
                the registered agent of the run's agent id).

        Raises:
            ValueError: A field is not what it must be (the message names it).
            UnknownRequestError: No run has this id, or it never asked `request_id`, or
                that request is a question (answer it instead).
            RequestDecidedError: It was decided already, here or elsewhere.
            AgentNotFoundError: The run's agent is not registered and `agent` is missing.
        """
        check_decision(request_id, allow, message, updated_input, remember)
        self._check_running()

        def decision(record: Any) -> Resumption:
            return Resumption(
                record.state,
                "permission",
                allow=allow,
                message=message,
                updated_input=updated_input,
            )

        return await resume(self, run_id, request_id, decision, agent=agent, remember=remember)

    async def answer(
        self, run_id: str, request_id: str, answers: Any, *, agent: AgentSpec | None = None
    ) -> Run:
        """Answer a waiting run's `question`: the answers (any JSON, usually
        `{question id: answer}`) are stored as an `answer` event and become the
        questionnaire tool's result; the run goes on in this runtime. Errors and
        arguments as [`decide`][agentkit.runtime.Runtime.decide]."""
        check_answers(request_id, answers)
        self._check_running()

        def answered(record: Any) -> Resumption:
            return Resumption(record.state, "question", answers=answers)

        return await resume(self, run_id, request_id, answered, agent=agent)

    def withdraw(self, run: Run) -> None:
        """End run `run`, which waits for a person and was cancelled: its request is
        withdrawn (recorded as denied, "the run was cancelled") and it ends as
        `interrupted` (or as an error, when cancelled with a reason), in the background."""
        pending = run._pending
        if pending is None or not self._running:
            return
        key = f"{run.id}:withdraw"

        async def withdraw() -> None:
            def cancelled(record: Any) -> Resumption:
                kind = record.state.get("kind")
                if kind == "question":
                    return Resumption(record.state, "question", error="the run was cancelled")
                return Resumption(
                    record.state, "permission", allow=False, message="the run was cancelled"
                )

            try:
                await resume(self, run.id, pending.request_id, cancelled, agent=run.spec)
            except Exception as exc:  # decided meanwhile (it goes on, cancelled), or gone
                _logger.info("could not withdraw the request of run %s: %s", run.id, exc)
            finally:
                self._group.release(key)

        self._group.start(key, withdraw)

    def _check_running(self) -> None:
        if not self._running:
            raise RuntimeError("decide and answer run inside 'async with Runtime(...) as runtime:'")

    def _suspended_run(self, run: Run) -> None:
        self._suspended[run.id] = run
        if self._relay is not None:
            self._relay.forget(run.id)

    def _continue(self, run: Run, system: str, resumption: Resumption, elapsed: int) -> None:
        """Start the task of a run whose waiting turn goes on here (see `_waiting.resume`)."""
        self._runs[run.id] = run
        run._decider = self
        if self._relay is not None:
            attach_relay(run, self._relay.add)
        self._group.start(
            run.id,
            execute,
            run,
            self._executor,
            system,
            "",
            True,
            0,
            None,
            resumption,
            elapsed,
        )

    # --- the run task -----------------------------------------------------------------

    def _turn_resources(self) -> TurnResources:
        """What a turn of this runtime may use, as it is configured now: one object shared
        by its turns until an attribute it holds is given another value."""
        limits = self.limits
        if limits is None:
            # The environment's, read once per runtime (`os.environ` lookups that miss cost
            # an exception each), when its first turn starts.
            limits = self.limits = OutputLimits.from_env()
        kept = self._resources
        if (
            kept is not None
            and kept.tools is self.tools
            and kept.actions is self.actions
            and kept.permission_handler is self.permission_handler
            and kept.services is self.services
            and kept.limits is limits
            and kept.retry is self.retry
            and kept.default_max_turns == self.default_max_turns
            and kept.budget is self.budget
        ):
            return kept
        kept = self._resources = TurnResources(
            tools=self.tools,
            actions=self.actions,
            host=self,
            permission_handler=self.permission_handler,
            services=self.services,
            limits=limits,
            retry=self.retry,
            default_max_turns=self.default_max_turns,
            offers=self._offers,
            budget=self.budget,
        )
        return kept

    def _driver_for(self, spec: AgentSpec) -> Driver:
        driver = self.drivers.get(spec.runtime) or registered_driver(spec.runtime)
        if driver is not None:
            return driver
        if spec.runtime == "engine":
            return self._engine_driver
        raise NoDriverError(
            f"no driver for runtime {spec.runtime!r}: pass one in Runtime(drivers=...) or "
            "register it (agentkit.defs.register_runtime_hooks(), for claude-cli)"
        )

    async def _engine_driver(self, request: TurnRequest) -> TurnOutcome:
        provider, model = self._select_model(request.spec)
        return await run_engine_turn(request, provider, model)

    def _select_model(self, spec: AgentSpec) -> tuple[Provider, str]:
        selection = spec.model
        if selection.provider and selection.policy == "prefer":
            provider = self.provider
            if selection.provider != provider.name:  # preferred, not required: fall back
                return provider, provider.resolve_model("medium", None)
        elif selection.provider:
            provider = self.provider_named(selection.provider)
        else:
            provider = self.provider
        if selection.policy == "inherit":
            return provider, provider.resolve_model(None, None)
        return provider, provider.resolve_model(selection.tier, selection.model)

    def _stop_processes(self, run_id: str) -> Awaitable[None] | None:
        """Stop the processes a run started (the `process` tool's jobs), if it has any."""
        if self._processes is None or not self._processes.list(run_id):
            return None
        stopping: Awaitable[None] = self._processes.stop_all(run_id)
        return stopping

    def _priced(self, accounting: Accounting) -> Accounting:
        return priced(accounting, self.cost_estimator, self._provider)

    # --- actions and sub-agents -------------------------------------------------------

    async def run_action(
        self,
        action_id: str,
        args: dict[str, Any],
        *,
        caller: str | None = None,
        depth: int = 0,
    ) -> ActionResult:
        """Run an action by canonical id; `system:summon` runs any registered agent.

        `depth` is the calling agent's nesting depth (0 for code outside any run), so a
        summon made from inside a run's action still counts towards the depth limit.
        """
        return await run_action(self, action_id, args, caller=caller, depth=depth)

    async def run_subagent(
        self,
        agent_id: str,
        prompt: str,
        *,
        session_id: str | None = None,
        forward: Emit | None = None,
        depth: int = 1,
        working_dir: Path | None = None,
    ) -> ActionResult:
        """Run an agent to the end and return its answer as an `ActionResult`.

        With `forward`, the sub-agent's `session_init` and content events are passed on,
        tagged with its id in `agent`; its `turn_start`/`turn_end` and deltas never are.
        """
        return await run_subagent(
            self,
            agent_id,
            prompt,
            session_id=session_id,
            forward=forward,
            depth=depth,
            working_dir=working_dir,
        )
