"""agentkit: one typed SDK for app agents, Markdown definitions, conversations and rooms.

The public names below are imported on first use, so `import agentkit` stays fast (no
pydantic, no client library, no database driver until something needs it).

```python
from agentkit import AgentSpec, Runtime
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports
from agentkit._version import __version__

if TYPE_CHECKING:
    from agentkit.actions import Action, ActionContext, ActionRegistry, ActionResult
    from agentkit.agent import Agent
    from agentkit.client import RemoteMachine, RemoteRoomsClient
    from agentkit.diagnostics import Diagnostic
    from agentkit.errors import (
        AgentkitError,
        AgentNotFoundError,
        LoadError,
        ProviderError,
        RunFailedError,
        SessionBusyError,
        SessionNotFoundError,
        SpecError,
        StoreError,
        StoreUnavailableError,
        ToolError,
    )
    from agentkit.events import AgentMessage
    from agentkit.permissions import Allow, Ask, Deny, PermissionHandler, PermissionRequest
    from agentkit.providers import Provider
    from agentkit.runtime import PendingRequest, RetryPolicy, Run, RunBudget, RunOutcome, Runtime
    from agentkit.spec import AgentSpec, ModelSelection
    from agentkit.stores import MemoryStore, Store
    from agentkit.tools import Tool, ToolContext, ToolRegistry, tool

_EXPORTS: dict[str, str] = {
    "Action": "agentkit.actions",
    "ActionContext": "agentkit.actions",
    "ActionRegistry": "agentkit.actions",
    "ActionResult": "agentkit.actions",
    "Agent": "agentkit.agent",
    "AgentMessage": "agentkit.events",
    "AgentNotFoundError": "agentkit.errors",
    "AgentSpec": "agentkit.spec",
    "AgentkitError": "agentkit.errors",
    "Allow": "agentkit.permissions",
    "Ask": "agentkit.permissions",
    "Deny": "agentkit.permissions",
    "Diagnostic": "agentkit.diagnostics",
    "LoadError": "agentkit.errors",
    "MemoryStore": "agentkit.stores",
    "ModelSelection": "agentkit.spec",
    "Page": "agentkit.paging",
    "PermissionHandler": "agentkit.permissions",
    "PermissionRequest": "agentkit.permissions",
    "PendingRequest": "agentkit.runtime",
    "Provider": "agentkit.providers",
    "ProviderError": "agentkit.errors",
    "RemoteMachine": "agentkit.client",
    "RemoteRoomsClient": "agentkit.client",
    "RetryPolicy": "agentkit.runtime",
    "RunBudget": "agentkit.runtime",
    "RunFailedError": "agentkit.errors",
    "Run": "agentkit.runtime",
    "RunOutcome": "agentkit.runtime",
    "Runtime": "agentkit.runtime",
    "SessionBusyError": "agentkit.errors",
    "SessionNotFoundError": "agentkit.errors",
    "SpecError": "agentkit.errors",
    "Store": "agentkit.stores",
    "StoreError": "agentkit.errors",
    "StoreUnavailableError": "agentkit.errors",
    "Tool": "agentkit.tools",
    "ToolContext": "agentkit.tools",
    "ToolError": "agentkit.errors",
    "ToolRegistry": "agentkit.tools",
    "tool": "agentkit.tools",
}

__all__ = [
    "Action",
    "ActionContext",
    "ActionRegistry",
    "ActionResult",
    "Agent",
    "AgentMessage",
    "AgentNotFoundError",
    "AgentSpec",
    "AgentkitError",
    "Allow",
    "Ask",
    "Deny",
    "Diagnostic",
    "LoadError",
    "MemoryStore",
    "ModelSelection",
    "Page",
    "PendingRequest",
    "PermissionHandler",
    "PermissionRequest",
    "Provider",
    "ProviderError",
    "RemoteMachine",
    "RemoteRoomsClient",
    "RetryPolicy",
    "Run",
    "RunBudget",
    "RunFailedError",
    "RunOutcome",
    "Runtime",
    "SessionBusyError",
    "SessionNotFoundError",
    "SpecError",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "__version__",
    "tool",
]


# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
