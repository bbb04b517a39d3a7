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

from agentkit.formats._format import AgentFormat, RunnableAgent
from agentkit.formats._registry import (
    BUILTIN_FORMATS,
    format_named,
    install_runtime_hooks,
    load_agents,
    load_target,
    register_format,
    registered_formats,
    validate_paths,
)

__all__ = [
    "BUILTIN_FORMATS",
    "AgentFormat",
    "RunnableAgent",
    "format_named",
    "install_runtime_hooks",
    "load_agents",
    "load_target",
    "register_format",
    "registered_formats",
    "validate_paths",
]
