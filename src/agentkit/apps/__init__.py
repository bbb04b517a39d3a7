"""App agents: `app.yaml` and agent YAML files, loaded strictly into AgentSpecs.

```python
from agentkit.apps import load_app

app = load_app("examples/research-app")
spec = app.agent("researcher").spec
assert spec.id == "research-app:researcher"
```

See the apps guide (`docs/apps.md`) for the file format, validation and running agents.
"""

from agentkit.apps._loader import App, AppAgent, AppLoadError, load_agent_file, load_app

__all__ = ["App", "AppAgent", "AppLoadError", "load_agent_file", "load_app"]
