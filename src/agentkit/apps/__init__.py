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
from agentkit.apps._runner import (
    AgentRunner,
    ForeignAgentError,
    RunStream,
    load_app_actions,
)
from agentkit.apps._validate import ValidateUsageError, validate_paths

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
