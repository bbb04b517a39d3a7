"""Agent formats: the kinds of agent files agentkit loads, and the one place that picks
the format for a path or a command-line target.

A format ([`AgentFormat`][agentkit.formats.AgentFormat]) tells its paths and targets
(`claims_path`, `claims_target`), loads agents (`load_path` for a machine's configured
agents, `load_target` for `agentkit run`), validates files, and names the drivers and
session checks its agents need. agentkit brings two, registered here and nowhere else:
apps ([`AppFormat`][agentkit.apps.AppFormat]) and Markdown definitions
([`DefinitionFormat`][agentkit.defs.DefinitionFormat]);
[`register_format`][agentkit.formats.register_format] adds another.

```python
from pathlib import Path

from agentkit.apps import example_app_path
from agentkit.formats import load_agents, validate_paths

specs = load_agents(example_app_path())  # the apps format claims an app folder
assert "research-app:researcher" in [spec.id for spec in specs]
assert [d for d in validate_paths([Path(example_app_path())]) if d.severity == "error"] == []
```
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.formats._format import AgentFormat, RunnableAgent
    from agentkit.formats._registry import (
        BUILTIN_FORMATS,
        claiming_format,
        format_named,
        install_runtime_hooks,
        load_agents,
        load_target,
        register_format,
        registered_formats,
        validate_paths,
    )

_EXPORTS: dict[str, str] = {
    "AgentFormat": "agentkit.formats._format",
    "BUILTIN_FORMATS": "agentkit.formats._registry",
    "claiming_format": "agentkit.formats._registry",
    "RunnableAgent": "agentkit.formats._format",
    "format_named": "agentkit.formats._registry",
    "install_runtime_hooks": "agentkit.formats._registry",
    "load_agents": "agentkit.formats._registry",
    "load_target": "agentkit.formats._registry",
    "register_format": "agentkit.formats._registry",
    "registered_formats": "agentkit.formats._registry",
    "validate_paths": "agentkit.formats._registry",
}

__all__ = [
    "BUILTIN_FORMATS",
    "AgentFormat",
    "RunnableAgent",
    "claiming_format",
    "format_named",
    "install_runtime_hooks",
    "load_agents",
    "load_target",
    "register_format",
    "registered_formats",
    "validate_paths",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
