"""System prompts of definitions: the shipped base coding prompt, extended or replaced."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from agentkit.defs._types import Definition

__all__ = ["base_prompt", "system_prompt"]


@lru_cache(maxsize=1)
def base_prompt() -> str:
    """The shipped base coding prompt (package data `prompts/base.md`), trimmed."""
    path = resources.files("agentkit.defs").joinpath("prompts/base.md")
    return path.read_text(encoding="utf-8").strip()


def system_prompt(definition: Definition, base: str | None = None) -> str:
    """The full system prompt of a `rho` definition.

    `extend` appends the body to the base prompt after a blank line (an empty body keeps the
    base prompt only); `replace` uses the body alone.

    ```python
    from agentkit.defs import base_prompt, parse_definition, system_prompt

    definition = parse_definition("---\\ndescription: d\\n---\\nBe brief.", path="brief.md")
    assert system_prompt(definition) == base_prompt() + "\\n\\nBe brief."
    ```
    """
    if definition.prompt_mode == "replace":
        return definition.body
    base = base_prompt() if base is None else base.strip()
    if not definition.body:
        return base
    return f"{base}\n\n{definition.body}" if base else definition.body
