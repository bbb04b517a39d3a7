"""The `--max-model-calls` and `--max-tokens` flags of `run` and `serve`: a run's budget."""

from __future__ import annotations

import argparse

from agentkit.cli._exit import UsageError
from agentkit.engine import RunBudget

__all__ = ["add_budget_flags", "budget_of"]

_LARGEST = 10**12


def add_budget_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of a run's budget (see `RunBudget`)."""
    defaults = RunBudget()
    parser.add_argument(
        "--max-model-calls",
        metavar="N",
        help=f"the most model calls one run may make (default: {defaults.model_calls}; "
        "'none': no limit); a run that reaches it ends with an error",
    )
    parser.add_argument(
        "--max-tokens",
        metavar="N",
        help=f"the most input and output tokens one run may use (default: "
        f"{defaults.tokens}; 'none': no limit); a run that reaches it ends with an error",
    )


def _limit(flag: str, raw: str | None, default: int | None) -> int | None:
    if raw is None:
        return default
    text = raw.strip().lower().replace("_", "")
    if text == "none":
        return None
    if not text.isdigit() or not 1 <= int(text) <= _LARGEST:
        raise UsageError(f"{flag} {raw[:40]!r} is not a positive whole number or 'none'")
    return int(text)


def budget_of(args: argparse.Namespace) -> RunBudget:
    """The budget the flags give (the defaults for those not given)."""
    defaults = RunBudget()
    return RunBudget(
        model_calls=_limit("--max-model-calls", args.max_model_calls, defaults.model_calls),
        tokens=_limit("--max-tokens", args.max_tokens, defaults.tokens),
    )
