"""Markdown agent definitions ("Rho"): one agent per file with a strict frontmatter.

Parse a definition with [`parse_definition`][agentkit.defs.parse_definition] or
[`load_definition`][agentkit.defs.load_definition], bind it to a host with
[`bind`][agentkit.defs.bind] to get an [`AgentSpec`][agentkit.spec.AgentSpec], and check a
resumed session with [`check_resume`][agentkit.defs.check_resume].
"""

from agentkit.defs._auth import DEFAULT_AUTH_PROFILES, AuthKind, AuthProfile, AuthRegistry
from agentkit.defs._parser import (
    FIELDS,
    claude_entry_problem,
    frontmatter_schema,
    load_definition,
    load_definitions,
    parse_definition,
)
from agentkit.defs._types import (
    CLAUDE_REASONING,
    RHO_CAPABILITIES,
    RHO_REASONING,
    BindError,
    Definition,
    DefinitionError,
    DefinitionModelPolicy,
    PromptMode,
    Reasoning,
    RuntimeName,
)

__all__ = [
    "CLAUDE_REASONING",
    "DEFAULT_AUTH_PROFILES",
    "FIELDS",
    "RHO_CAPABILITIES",
    "RHO_REASONING",
    "AuthKind",
    "AuthProfile",
    "AuthRegistry",
    "BindError",
    "Definition",
    "DefinitionError",
    "DefinitionModelPolicy",
    "PromptMode",
    "Reasoning",
    "RuntimeName",
    "claude_entry_problem",
    "frontmatter_schema",
    "load_definition",
    "load_definitions",
    "parse_definition",
]
