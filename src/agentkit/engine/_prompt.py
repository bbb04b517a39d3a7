"""The prompts a turn sends: the system prompt with the contracts of the features a spec
uses, and the user message with its shared and thread context."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentkit.engine._offers import submit_schema
from agentkit.engine._text_safety import LONE_SURROGATE
from agentkit.errors import PromptError
from agentkit.spec import AgentSpec

__all__ = [
    "STRUCTURED_OUTPUT_CONTRACT",
    "SUBMIT_REMINDER",
    "resolve_context",
    "structured_output_contract",
]


STRUCTURED_OUTPUT_CONTRACT = """\

## Structured output
When your work is complete, call the `submit_output` tool exactly once with your final
answer. Its argument must match this JSON Schema:
{schema}
If the tool reports violations, fix them and call `submit_output` again."""


SUBMIT_REMINDER = (
    "You have not called submit_output yet. Call the submit_output tool now with a payload "
    "that matches its schema; that is the only way to finish."
)


def structured_output_contract(spec: AgentSpec) -> str:
    """The system-prompt contract appended when `spec` has an output schema."""
    if spec.output_schema is None:
        return ""
    schema, _ = submit_schema(spec.output_schema)
    return STRUCTURED_OUTPUT_CONTRACT.format(schema=json.dumps(schema, indent=2))


def resolve_context(
    spec: AgentSpec,
    prompt: str,
    *,
    context_suffix: str | None,
    shared_context: str | Mapping[str, Any] | None,
    thread_context: str | Mapping[str, Any] | None,
) -> tuple[str, str]:
    """The system prompt (base + contracts of used features + context suffix) and the user
    message (with shared and thread context shown to the agent)."""
    system = (spec.system_prompt + structured_output_contract(spec)).strip("\n")
    if context_suffix:
        system = f"{system}\n\n{context_suffix}" if system else context_suffix
    parts = []
    for tag, value in (("shared_context", shared_context), ("thread_context", thread_context)):
        if value:
            body = (
                value
                if isinstance(value, str)
                else json.dumps(value, ensure_ascii=False, default=str)
            )
            parts.append(f"<{tag}>\n{body}\n</{tag}>")
    user = "\n\n".join([*parts, prompt]) if parts else prompt
    for what, text in (("the prompt and its context", user), ("the system prompt", system)):
        found = None if text.isascii() else LONE_SURROGATE.search(text)
        if found is not None:
            raise PromptError(
                f"{what} is not valid Unicode text: a lone surrogate at position {found.start()}"
            )
    return system, user
