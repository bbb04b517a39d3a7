"""agentkit: one typed SDK for app agents, Markdown definitions, conversations and rooms.

The public names below are imported on first use, so `import agentkit` stays fast (no
pydantic, no client library, no database driver until something needs it).

```python
from agentkit import AgentSpec, Runtime
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentkit._lazy import lazy_exports
from agentkit._version import __version__

if TYPE_CHECKING:
    from agentkit.actions import Action, ActionContext, ActionRegistry, ActionResult
    from agentkit.diagnostics import Diagnostic, LoadError
    from agentkit.events import AgentMessage
    from agentkit.permissions import Allow, Deny, PermissionHandler, PermissionRequest
    from agentkit.providers import Provider, ProviderError
    from agentkit.runtime import (
        AgentNotFoundError,
        RetryPolicy,
        Run,
        RunOutcome,
        Runtime,
        SessionBusyError,
    )
    from agentkit.spec import AgentSpec, ModelSelection, SpecError
    from agentkit.stores import MemoryStore, SessionNotFoundError, Store
    from agentkit.tools import Tool, ToolContext, ToolError, ToolRegistry

_EXPORTS: dict[str, str] = {
    "Action": "agentkit.actions",
    "ActionContext": "agentkit.actions",
    "ActionRegistry": "agentkit.actions",
    "ActionResult": "agentkit.actions",
    "AgentMessage": "agentkit.events",
    "AgentNotFoundError": "agentkit.runtime",
    "AgentSpec": "agentkit.spec",
    "Allow": "agentkit.permissions",
    "Deny": "agentkit.permissions",
    "Diagnostic": "agentkit.diagnostics",
    "LoadError": "agentkit.diagnostics",
    "MemoryStore": "agentkit.stores",
    "ModelSelection": "agentkit.spec",
    "PermissionHandler": "agentkit.permissions",
    "PermissionRequest": "agentkit.permissions",
    "Provider": "agentkit.providers",
    "ProviderError": "agentkit.providers",
    "RetryPolicy": "agentkit.runtime",
    "Run": "agentkit.runtime",
    "RunOutcome": "agentkit.runtime",
    "Runtime": "agentkit.runtime",
    "SessionBusyError": "agentkit.runtime",
    "SessionNotFoundError": "agentkit.stores",
    "SpecError": "agentkit.spec",
    "Store": "agentkit.stores",
    "Tool": "agentkit.tools",
    "ToolContext": "agentkit.tools",
    "ToolError": "agentkit.tools",
    "ToolRegistry": "agentkit.tools",
}

__all__ = [
    "Action",
    "ActionContext",
    "ActionRegistry",
    "ActionResult",
    "AgentMessage",
    "AgentNotFoundError",
    "AgentSpec",
    "Allow",
    "Deny",
    "Diagnostic",
    "LoadError",
    "MemoryStore",
    "ModelSelection",
    "PermissionHandler",
    "PermissionRequest",
    "Provider",
    "ProviderError",
    "RetryPolicy",
    "Run",
    "RunOutcome",
    "Runtime",
    "SessionBusyError",
    "SessionNotFoundError",
    "SpecError",
    "Store",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolRegistry",
    "__version__",
]


# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
