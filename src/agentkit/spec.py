"""The provider-neutral description of an agent.

Every adapter (YAML app agents, Markdown definitions, conversations, rooms) turns its own
format into one [`AgentSpec`][agentkit.spec.AgentSpec]; the engine runs nothing else. A spec is
immutable and validated when it is built: a bad value raises
[`SpecError`][agentkit.spec.SpecError] naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentkit._internal.provider_names import provider_names
from agentkit.errors import SpecError

__all__ = [
    "AgentSpec",
    "ModelPolicy",
    "ModelSelection",
    "PermissionMode",
    "ReasoningEffort",
    "SpecError",
    "Tier",
]

Tier = Literal["large", "medium", "small"]
"""A capability tier that names no provider; a provider's catalog maps it to a model."""

ReasoningEffort = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
"""How much reasoning the model should use (the union of both formats' vocabularies)."""

PermissionMode = Literal["default", "acceptEdits", "bypassPermissions"]
"""How calls that change the world are permitted (see the permissions guide)."""

Effect = Literal["read", "edit", "execute"]
"""What a call can do to the world: the permission mode decides by this which calls need
the host's consent (see `agentkit.permissions`)."""

ModelPolicy = Literal["tier", "inherit", "prefer", "require", "select"]
"""How the model is chosen: by tier, inherited from the host, or pinned."""

_TIERS = ("large", "medium", "small")

_AGENT_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]*)?$")


class ModelSelection(BaseModel):
    """Which model runs an agent.

    Either a `tier` (`policy="tier"`), the host's current selection (`policy="inherit"`),
    or a pinned `model` with optional `provider` and `auth` profile
    (`policy` one of `prefer`, `require`, `select`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    policy: ModelPolicy = "tier"
    tier: Tier | None = None
    model: str | None = None
    provider: str | None = None
    auth: str | None = None

    @model_validator(mode="after")
    def _check(self) -> ModelSelection:
        if self.policy == "tier":
            if self.tier is None:
                raise ValueError("policy 'tier' needs a tier (large, medium or small)")
            if self.model is not None:
                raise ValueError("a tier selection cannot also pin a model")
        elif self.policy == "inherit":
            if self.model or self.provider or self.auth or self.tier:
                raise ValueError("policy 'inherit' takes no tier, model, provider or auth")
        elif not self.model:
            raise ValueError(f"policy {self.policy!r} needs a model")
        for name in ("model", "provider", "auth"):
            value = getattr(self, name)
            if value is not None and (not value or any(c.isspace() for c in value)):
                raise ValueError(f"{name} must be non-empty and contain no whitespace")
        return self

    @classmethod
    def parse(cls, text: str) -> ModelSelection:
        """A selection from a model string, the form every Python and command-line place
        that chooses a model accepts:

        - a tier: `"large"`, `"medium"`, `"small"`;
        - a provider alone, with its `medium` model: `"test"`, `"local"`, `"openai"`;
        - `"provider:model"`, a pinned model of that provider (`"openai:gpt-4.1"`,
          `"anthropic:claude-sonnet-4-5"`, `"openai-compatible:llama3"`), or
          `"provider:tier"` (`"anthropic:small"`);
        - any other word: a pinned model of the runtime's provider (`"gpt-4.1"`).

        Raises:
            ValueError: An empty string, or one with whitespace.
        """
        if not isinstance(text, str) or not text or any(c.isspace() for c in text):
            raise ValueError(f"model {text!r} is not a model string such as 'openai:gpt-4.1'")
        if text in _TIERS:
            return cls.of_tier(text)  # type: ignore[arg-type]
        provider, sep, model = text.partition(":")
        if not sep:
            if text in provider_names():
                return cls(policy="tier", tier="medium", provider=text)
            return cls.pinned(text)
        if not provider or not model:
            raise ValueError(f"model {text!r} is not 'provider:model'")
        if model in _TIERS:
            return cls(policy="tier", tier=model, provider=provider)
        return cls.pinned(model, provider=provider, policy="require")

    @classmethod
    def of_tier(cls, tier: Tier) -> ModelSelection:
        """A selection by capability tier."""
        return cls(policy="tier", tier=tier)

    @classmethod
    def pinned(
        cls,
        model: str,
        *,
        provider: str | None = None,
        auth: str | None = None,
        policy: Literal["prefer", "require", "select"] = "select",
    ) -> ModelSelection:
        """A selection that pins a concrete model."""
        return cls(policy=policy, model=model, provider=provider, auth=auth)


class AgentSpec(BaseModel):
    """An agent, as the engine runs it.

    Attributes:
        id: Canonical id: `<app-id>:<name>` for app agents, the definition id for Markdown
            definitions.
        description: What the agent does.
        system_prompt: The complete, resolved base system prompt. The engine appends only
            the contracts of features the spec uses (structured output, a context suffix).
        model: The model selection; a tier by default (`medium`).
        reasoning_effort: Passed to the provider; `None` keeps the provider's default.
        tools: Tool allowlist entries, e.g. `Read`, `Bash(git *)`, `read_file`.
        actions: Action allowlist of canonical `<app-id>:<name>` ids; `"*"` allows all.
        permission_mode: How calls that change the world are permitted.
        max_turns: Cap on model calls in one user turn (one model call is one turn).
        allowed_subagents: Canonical ids of agents this one may summon.
        output_schema: JSON Schema for structured output via the `submit_output` tool.
        runtime: `engine` (agentkit's own engine) or `claude-cli` (the `claude` command).
        metadata: Adapter-specific values the engine does not interpret.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    id: str
    description: str = ""
    system_prompt: str = ""
    model: ModelSelection = Field(default_factory=lambda: ModelSelection.of_tier("medium"))
    reasoning_effort: ReasoningEffort | None = None
    tools: tuple[str, ...] = ()
    actions: tuple[str, ...] = ()
    permission_mode: PermissionMode = "default"
    max_turns: int | None = Field(default=None, ge=1)
    allowed_subagents: tuple[str, ...] = ()
    output_schema: dict[str, Any] | None = None
    runtime: Literal["engine", "claude-cli"] = "engine"
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "spec"
            message = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = unknown_field_message(field, type(self).model_fields)
            raise SpecError(field, message) from None

    @field_validator("model", mode="before")
    @classmethod
    def _model_string(cls, value: Any) -> Any:
        return ModelSelection.parse(value) if isinstance(value, str) else value

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not _AGENT_ID.match(value):
            raise ValueError(
                "must be lowercase letters, digits and single hyphens, optionally "
                "followed by ':<name>'"
            )
        return value

    @field_validator("tools")
    @classmethod
    def _check_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            name, has_specifier, rest = entry.partition("(")
            if not name.strip() or (has_specifier and not rest.endswith(")")):
                raise ValueError(f"tool entry {entry!r} is not 'Name' or 'Name(specifier)'")
        return value

    @field_validator("actions")
    @classmethod
    def _check_actions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for action in value:
            if action != "*" and ":" not in action:
                raise ValueError(f"action {action!r} is not a canonical '<app-id>:<name>' id")
        return value

    @field_validator("allowed_subagents")
    @classmethod
    def _check_subagents(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for agent in value:
            if not agent or any(c.isspace() for c in agent):
                raise ValueError(f"sub-agent id {agent!r} is not valid")
        return value

    @field_validator("output_schema")
    @classmethod
    def _check_output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from agentkit._internal.schema import check_schema

            check_schema(value)
        return value

    @property
    def allows_all_actions(self) -> bool:
        """Whether the action allowlist is `"*"`."""
        return "*" in self.actions

    def allows_action(self, action_id: str) -> bool:
        """Whether this spec may call the action with this canonical id."""
        return self.allows_all_actions or action_id in self.actions


def unknown_field_message(name: str, known: Iterable[str]) -> str:
    """`is not a field (did you mean 'x'?)`: for a misspelt keyword."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"is not a field{hint}"
