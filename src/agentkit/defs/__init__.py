"""Markdown agent definitions ("Rho"): one agent per file with a strict frontmatter.

Parse a definition with [`parse_definition`][agentkit.defs.parse_definition] or
[`load_definition`][agentkit.defs.load_definition], bind it to a host with
[`bind`][agentkit.defs.bind] to get an [`AgentSpec`][agentkit.spec.AgentSpec], and check a
resumed session with [`check_resume`][agentkit.defs.check_resume].

Importing the package registers nothing with the runtime: call
[`register_runtime_hooks`][agentkit.defs.register_runtime_hooks] to let every `Runtime` run
`claude-cli` specs and check resumed definition sessions (`agentkit run` and a `Machine`
loading definitions do it themselves). [`DefinitionFormat`][agentkit.defs.DefinitionFormat]
is the package's agent format for [`agentkit.formats`][agentkit.formats].
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.defs._auth import DEFAULT_AUTH_PROFILES, AuthKind, AuthProfile, AuthRegistry
    from agentkit.defs._binding import (
        CLAUDE_DISALLOWED,
        DELEGATION_CAPABILITIES,
        HostCapabilities,
        bind,
        claude_cli_args,
        platform_shell,
    )
    from agentkit.defs._claude_cli import (
        ClaudeCliError,
        ClaudeCliOutcome,
        claude_cli_driver,
        claude_session_id,
        find_claude,
        run_claude_cli,
    )
    from agentkit.defs._fingerprint import (
        ResumeError,
        canonical_fields,
        check_resume,
        fingerprint,
        fingerprint_record,
    )
    from agentkit.defs._format import (
        RUNTIME_DRIVERS,
        SESSION_CHECKS,
        DefinitionFormat,
        RunnableDefinition,
        register_runtime_hooks,
    )
    from agentkit.defs._models import HostModel, ModelAvailable, resolve_model
    from agentkit.defs._parser import (
        FIELDS,
        claude_entry_problem,
        frontmatter_schema,
        load_definition,
        load_definitions,
        parse_definition,
    )
    from agentkit.defs._prompt import base_prompt, system_prompt
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
    from agentkit.defs._validate import DefinitionPathError, fingerprint_lines, validate_paths

_EXPORTS: dict[str, str] = {
    "AuthKind": "agentkit.defs._auth",
    "AuthProfile": "agentkit.defs._auth",
    "AuthRegistry": "agentkit.defs._auth",
    "BindError": "agentkit.defs._types",
    "CLAUDE_DISALLOWED": "agentkit.defs._binding",
    "CLAUDE_REASONING": "agentkit.defs._types",
    "ClaudeCliError": "agentkit.defs._claude_cli",
    "ClaudeCliOutcome": "agentkit.defs._claude_cli",
    "DEFAULT_AUTH_PROFILES": "agentkit.defs._auth",
    "DELEGATION_CAPABILITIES": "agentkit.defs._binding",
    "Definition": "agentkit.defs._types",
    "DefinitionError": "agentkit.defs._types",
    "DefinitionFormat": "agentkit.defs._format",
    "DefinitionModelPolicy": "agentkit.defs._types",
    "DefinitionPathError": "agentkit.defs._validate",
    "FIELDS": "agentkit.defs._parser",
    "HostCapabilities": "agentkit.defs._binding",
    "HostModel": "agentkit.defs._models",
    "ModelAvailable": "agentkit.defs._models",
    "PromptMode": "agentkit.defs._types",
    "RHO_CAPABILITIES": "agentkit.defs._types",
    "RHO_REASONING": "agentkit.defs._types",
    "RUNTIME_DRIVERS": "agentkit.defs._format",
    "Reasoning": "agentkit.defs._types",
    "ResumeError": "agentkit.defs._fingerprint",
    "RunnableDefinition": "agentkit.defs._format",
    "RuntimeName": "agentkit.defs._types",
    "SESSION_CHECKS": "agentkit.defs._format",
    "base_prompt": "agentkit.defs._prompt",
    "bind": "agentkit.defs._binding",
    "canonical_fields": "agentkit.defs._fingerprint",
    "check_resume": "agentkit.defs._fingerprint",
    "claude_cli_args": "agentkit.defs._binding",
    "claude_cli_driver": "agentkit.defs._claude_cli",
    "claude_entry_problem": "agentkit.defs._parser",
    "claude_session_id": "agentkit.defs._claude_cli",
    "find_claude": "agentkit.defs._claude_cli",
    "fingerprint": "agentkit.defs._fingerprint",
    "fingerprint_lines": "agentkit.defs._validate",
    "fingerprint_record": "agentkit.defs._fingerprint",
    "frontmatter_schema": "agentkit.defs._parser",
    "load_definition": "agentkit.defs._parser",
    "load_definitions": "agentkit.defs._parser",
    "parse_definition": "agentkit.defs._parser",
    "platform_shell": "agentkit.defs._binding",
    "register_runtime_hooks": "agentkit.defs._format",
    "resolve_model": "agentkit.defs._models",
    "run_claude_cli": "agentkit.defs._claude_cli",
    "system_prompt": "agentkit.defs._prompt",
    "validate_paths": "agentkit.defs._validate",
}

__all__ = [
    "CLAUDE_DISALLOWED",
    "CLAUDE_REASONING",
    "DEFAULT_AUTH_PROFILES",
    "DELEGATION_CAPABILITIES",
    "FIELDS",
    "RHO_CAPABILITIES",
    "RHO_REASONING",
    "RUNTIME_DRIVERS",
    "SESSION_CHECKS",
    "AuthKind",
    "AuthProfile",
    "AuthRegistry",
    "BindError",
    "ClaudeCliError",
    "ClaudeCliOutcome",
    "Definition",
    "DefinitionError",
    "DefinitionFormat",
    "DefinitionModelPolicy",
    "DefinitionPathError",
    "HostCapabilities",
    "HostModel",
    "ModelAvailable",
    "PromptMode",
    "Reasoning",
    "ResumeError",
    "RunnableDefinition",
    "RuntimeName",
    "base_prompt",
    "bind",
    "canonical_fields",
    "check_resume",
    "claude_cli_args",
    "claude_cli_driver",
    "claude_entry_problem",
    "claude_session_id",
    "find_claude",
    "fingerprint",
    "fingerprint_lines",
    "fingerprint_record",
    "frontmatter_schema",
    "load_definition",
    "load_definitions",
    "parse_definition",
    "platform_shell",
    "register_runtime_hooks",
    "resolve_model",
    "run_claude_cli",
    "system_prompt",
    "validate_paths",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
