"""A run's budget of model calls and tokens, which stops a runaway loop before it costs
much on a paid API."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agentkit.events import ModelUsage

__all__ = ["RunBudget", "budget_spent"]


def _check(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"RunBudget: {name} must be a positive integer or None, not {value!r}")


@dataclass(frozen=True)
class RunBudget:
    """The most one run of the engine may use: past it, the run ends with an error naming
    the budget, before its next model call. Accounting keeps what was used.

    Attributes:
        model_calls: The most model calls of one run (100 by default). An agent's own
            `maxTurns` caps its turns too; this one is the host's, for every agent alike.
        tokens: The most tokens of one run: input plus output tokens as the provider
            reports them, over every model call (2,000,000 by default).

    `None` means no limit. A sub-agent's run has a budget of its own. The `claude` command
    line driver keeps its own limits and ignores this one.
    """

    model_calls: int | None = 100
    tokens: int | None = 2_000_000

    def __post_init__(self) -> None:
        _check("model_calls", self.model_calls)
        _check("tokens", self.tokens)


def budget_spent(
    budget: RunBudget, model_calls: int, usage: Mapping[str, ModelUsage]
) -> str | None:
    """Why the run may not make another model call, or `None` while it may."""
    if budget.model_calls is not None and model_calls >= budget.model_calls:
        return (
            f"the run used its budget of {budget.model_calls:,} model calls; raise it with "
            "RunBudget(model_calls=...) (budget= of Runtime, Agent or Machine) or "
            "--max-model-calls, or set it to None for no limit"
        )
    if budget.tokens is not None:
        used = sum(u.input_tokens + u.output_tokens for u in usage.values())
        if used >= budget.tokens:
            return (
                f"the run used its budget of {budget.tokens:,} tokens ({used:,} used); raise "
                "it with RunBudget(tokens=...) (budget= of Runtime, Agent or Machine) or "
                "--max-tokens, or set it to None for no limit"
            )
    return None
