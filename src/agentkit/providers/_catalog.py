"""Model catalogs: which concrete model a capability tier means for each provider."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DEFAULT_CATALOGS", "ModelCatalog", "UnknownModelError"]


class UnknownModelError(LookupError):
    """The catalog cannot turn the selection into a model."""


@dataclass(frozen=True)
class ModelCatalog:
    """Maps the tiers `large`, `medium` and `small` (and optional aliases) to model ids.

    A catalog is immutable; `with_overrides` returns a changed copy, so a host can pin its
    own models without touching the shipped defaults.
    """

    tiers: Mapping[str, str]
    aliases: Mapping[str, str] = field(default_factory=dict)

    def resolve(self, tier: str | None = None, model: str | None = None) -> str:
        """The model for a pinned name (aliases applied) or else for a tier."""
        if model:
            return self.aliases.get(model, model)
        if tier is None:
            tier = "medium"
        try:
            return self.tiers[tier]
        except KeyError:
            raise UnknownModelError(f"no model for tier {tier!r} in this catalog") from None

    def with_overrides(
        self,
        tiers: Mapping[str, str] | None = None,
        aliases: Mapping[str, str] | None = None,
    ) -> ModelCatalog:
        """A copy with some tiers or aliases replaced."""
        return ModelCatalog(
            tiers={**self.tiers, **(tiers or {})}, aliases={**self.aliases, **(aliases or {})}
        )


DEFAULT_CATALOGS: Mapping[str, ModelCatalog] = {
    "anthropic": ModelCatalog(
        {"large": "claude-opus-4-5", "medium": "claude-sonnet-4-5", "small": "claude-haiku-4-5"},
        {"opus": "claude-opus-4-5", "sonnet": "claude-sonnet-4-5", "haiku": "claude-haiku-4-5"},
    ),
    "openai": ModelCatalog({"large": "gpt-5", "medium": "gpt-5-mini", "small": "gpt-5-nano"}),
    "test": ModelCatalog({"large": "test-large", "medium": "test-medium", "small": "test-small"}),
}
"""The shipped catalogs, by provider name."""
