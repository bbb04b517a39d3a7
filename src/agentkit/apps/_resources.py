"""Files shipped with `agentkit.apps`: the editor JSON Schemas and the example app.

The JSON Schemas of `app.yaml` and agent files are for editors.

They describe the same rules the loader enforces (the loader stays the authority: it also
checks what a schema cannot, such as that agent files exist or that `outputSchema` is itself
a valid JSON Schema). `agentkit schema apps` prints them.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

__all__ = ["SchemaName", "example_app_path", "json_schema", "schema_path", "schema_text"]

SchemaName = Literal["app", "agent"]

_FILES: dict[str, str] = {"app": "app.schema.json", "agent": "agent.schema.json"}


@cache
def _read(name: str) -> str:
    if name not in _FILES:
        raise ValueError(f"unknown schema {name!r}: use 'app' or 'agent'")
    return resources.files("agentkit.apps").joinpath("schema", _FILES[name]).read_text("utf-8")


def json_schema(name: SchemaName) -> dict[str, Any]:
    """The JSON Schema of `app.yaml` (`"app"`) or of an agent file (`"agent"`), parsed."""
    schema: dict[str, Any] = json.loads(_read(name))
    return schema


def schema_path(name: SchemaName) -> Path:
    """The installed file of a schema, to point an editor at (e.g. VS Code's `yaml.schemas`).

    Raises:
        ValueError: for an unknown name.
    """
    _read(name)
    return Path(str(resources.files("agentkit.apps").joinpath("schema", _FILES[name])))


def schema_text(name: Literal["all", "app", "agent"] = "all") -> str:
    """The text `agentkit schema apps [app|agent]` prints (without a final newline).

    Args:
        name: `"app"` or `"agent"` for that schema alone (ready to save as a
            `.schema.json` file); `"all"` (the default) for both in one JSON object
            `{"app": {...}, "agent": {...}}`.

    Raises:
        ValueError: for an unknown name.
    """
    if name == "all":
        both = {key: json_schema(key) for key in ("app", "agent")}
        return json.dumps(both, indent=2)
    return json.dumps(json_schema(name), indent=2)


def example_app_path() -> Path:
    """The folder of the example app `research-app` shipped with agentkit (the one of the
    apps guide, also at `examples/research-app` in the repository)."""
    return Path(str(resources.files("agentkit.apps").joinpath("examples", "research_app")))
