"""App agents: `app.yaml` and agent YAML files, loaded strictly into AgentSpecs.

```python
from agentkit.apps import example_app_path, load_app

app = load_app(example_app_path())  # the example app, also at examples/research-app
spec = app.agent("researcher").spec
assert spec.id == "research-app:researcher"
```

See the apps guide (`docs/apps.md`) for the file format, validation and running agents.
[`AppFormat`][agentkit.apps.AppFormat] is the package's agent format for
[`agentkit.formats`][agentkit.formats].
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.apps._agent import load_agent_file
    from agentkit.apps._format import AppFormat, RunnableAppAgent
    from agentkit.apps._loader import load_app
    from agentkit.apps._model import STANDALONE_APP_ID, App, AppAgent, AppLoadError
    from agentkit.apps._resources import (
        SchemaName,
        example_app_path,
        json_schema,
        schema_path,
        schema_text,
    )
    from agentkit.apps._runner import AgentRunner, ForeignAgentError, RunStream, load_app_actions
    from agentkit.apps._validate import ValidateUsageError, validate_paths

_EXPORTS: dict[str, str] = {
    "AgentRunner": "agentkit.apps._runner",
    "App": "agentkit.apps._model",
    "AppAgent": "agentkit.apps._model",
    "AppFormat": "agentkit.apps._format",
    "AppLoadError": "agentkit.apps._model",
    "ForeignAgentError": "agentkit.apps._runner",
    "RunStream": "agentkit.apps._runner",
    "RunnableAppAgent": "agentkit.apps._format",
    "STANDALONE_APP_ID": "agentkit.apps._model",
    "SchemaName": "agentkit.apps._resources",
    "ValidateUsageError": "agentkit.apps._validate",
    "example_app_path": "agentkit.apps._resources",
    "json_schema": "agentkit.apps._resources",
    "load_agent_file": "agentkit.apps._agent",
    "load_app": "agentkit.apps._loader",
    "load_app_actions": "agentkit.apps._runner",
    "schema_path": "agentkit.apps._resources",
    "schema_text": "agentkit.apps._resources",
    "validate_paths": "agentkit.apps._validate",
}

__all__ = [
    "STANDALONE_APP_ID",
    "AgentRunner",
    "App",
    "AppAgent",
    "AppFormat",
    "AppLoadError",
    "ForeignAgentError",
    "RunStream",
    "RunnableAppAgent",
    "SchemaName",
    "ValidateUsageError",
    "example_app_path",
    "json_schema",
    "load_agent_file",
    "load_app",
    "load_app_actions",
    "schema_path",
    "schema_text",
    "validate_paths",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
