"""Tools: what they are, the context they run with, and the registry that names them.

A [`Tool`][agentkit.tools.Tool] is an async function with a JSON Schema for its arguments
and an `effect` that permission modes decide by. The engine offers a spec's allowlisted
tools to the model, validates every call's arguments, and turns any failure into a tool
error the model sees.
"""

from agentkit.tools._base import (
    Effect,
    Tool,
    ToolContext,
    ToolError,
    ToolFunction,
    ToolRegistry,
    parse_tool_entry,
)

__all__ = [
    "Effect",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolRegistry",
    "parse_tool_entry",
]
