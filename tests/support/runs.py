"""Shared helpers for the tests that run a spec calling one tool `t`."""

from __future__ import annotations

from typing import Any

from agentkit import AgentSpec
from agentkit.testing import ScriptedProvider
from agentkit.tools import Tool, ToolRegistry

SPEC = AgentSpec(id="demo:tool-user", tools=("t",), permission_mode="bypassPermissions")
"""An agent allowed the one tool `t`, with no permission prompts."""


def one_call(name: str = "t") -> ScriptedProvider:
    """A model that calls `name` once with no arguments, then answers "done"."""
    return ScriptedProvider([{"tool_calls": [{"name": name, "input": {}}]}, "done"])


def tool_registry(function: Any, timeout: float | None = None) -> ToolRegistry:
    """A registry holding `function` as the tool `t`."""
    return ToolRegistry([Tool("t", "A tool.", {"type": "object"}, function, timeout=timeout)])
