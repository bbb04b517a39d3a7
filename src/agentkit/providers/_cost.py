"""Cost estimates from token usage, using the `genai-prices` package (extra `prices`)."""

from __future__ import annotations

import warnings
from typing import Protocol

__all__ = ["UsageCounts", "estimate_cost"]

# Our provider names -> genai-prices provider ids. Names not listed (and `None`) let
# genai-prices match the model name against every provider it knows.
_PRICE_PROVIDERS = {"anthropic": "anthropic", "openai": "openai"}


class UsageCounts(Protocol):
    """Token counts, as in [`Usage`][agentkit.providers.Usage] or an event's `ModelUsage`.

    `input_tokens` excludes cache reads and writes, which are counted apart;
    `output_tokens` includes `reasoning_tokens`.
    """

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...


def estimate_cost(model: str, usage: UsageCounts, *, provider: str | None = None) -> float | None:
    """The price in US dollars of `usage` on `model`, or `None` when it is not known.

    `None` means the `prices` extra is not installed, the model is not in genai-prices'
    price list, or the provider is an `openai-compatible` server (whose prices nobody
    knows). The embedded `local` model costs `0.0`.

    Args:
        model: The model id the provider reported (`Usage.model`).
        usage: The token counts.
        provider: The agentkit provider name, which narrows the price lookup.
    """
    if provider == "local":
        return 0.0
    if provider == "openai-compatible":
        return None
    try:
        import genai_prices
    except ImportError:
        return None
    counts = genai_prices.Usage(
        # genai-prices counts cached input inside input_tokens.
        input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        output_tokens=usage.output_tokens,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            price = genai_prices.calc_price(
                counts, model, provider_id=_PRICE_PROVIDERS.get(provider or "")
            )
    except LookupError:
        return None
    return float(price.total_price)
