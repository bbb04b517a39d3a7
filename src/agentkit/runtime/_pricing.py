"""Pricing a run's accounting (`cost_usd`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from agentkit.events import Accounting
from agentkit.providers import Provider

__all__ = ["PRICED_PROVIDERS", "CostEstimator", "priced"]

CostEstimator = Callable[[str, Any], float | None]
"""`(model, ModelUsage) -> USD or None` (unknown)."""

PRICED_PROVIDERS = frozenset({"anthropic", "openai", "local"})
"""Providers whose runs are priced by default (through genai-prices, the `prices` extra)."""


def priced(
    accounting: Accounting, estimator: CostEstimator | None, provider: Provider | None
) -> Accounting:
    """`accounting` with `cost_usd` filled by `estimator` (`(model, usage) -> USD or None`),
    or by genai-prices for the providers in `PRICED_PROVIDERS`; unchanged when any model's
    price is unknown."""
    if not accounting.models:
        return accounting
    if estimator is None:
        if provider is None or provider.name not in PRICED_PROVIDERS:
            return accounting
        from agentkit.providers import estimate_cost

        estimator = functools.partial(estimate_cost, provider=provider.name)
    total = 0.0
    for model, usage in accounting.models.items():
        cost = estimator(model, usage)
        if cost is None:
            return accounting
        total += cost
    return accounting.model_copy(update={"cost_usd": total})
