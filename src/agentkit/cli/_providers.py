"""The model provider of the commands that run agents, from their options."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from agentkit.cli._exit import UsageError

if TYPE_CHECKING:
    from agentkit.providers import Provider
    from agentkit.spec import ModelSelection

__all__ = ["check_model", "make_provider"]

_TIERS = ("large", "medium", "small")
_said: list[bool] = []  # the embedded-model notice is given once per process


def make_provider(args: argparse.Namespace) -> Provider:
    """The provider `--provider`, `--script` and the timeout flags ask for, else the
    environment's (`run`, `serve`, `chat --db`)."""
    from agentkit.providers import (
        NO_PROVIDER_HELP,
        NoProviderError,
        create_provider,
        default_provider_name,
        set_default_timeouts,
    )

    try:
        set_default_timeouts(
            connect=args.provider_connect_timeout,
            first_byte=args.provider_first_byte_timeout,
            read=args.provider_read_timeout,
            total=args.provider_total_timeout,
        )
    except NoProviderError as exc:
        raise UsageError(str(exc)) from None

    name = args.provider or default_provider_name()
    if name is None:
        raise UsageError(NO_PROVIDER_HELP)
    if args.provider is None and name == "local" and not os.environ.get("AGENTKIT_PROVIDER"):
        _say_local_model_once(getattr(args, "model", None))
    options: dict[str, Any] = {}
    if args.script is not None:
        if name != "scripted":
            raise UsageError("--script goes with --provider scripted")
        options["script"] = args.script
    elif name == "scripted":
        raise UsageError("--provider scripted needs --script FILE (a JSON list of responses)")
    try:
        return create_provider(name, **options)
    except NoProviderError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None


def _say_local_model_once(model: str | None) -> None:
    """Say on stderr, once, that the embedded model runs because nothing else was chosen
    (not when `--model` named one of its names: that is a choice)."""
    if _said or (model is not None and model not in _TIERS):
        return
    _said.append(True)
    from agentkit.providers import LOCAL_MODEL

    print(
        f"agentkit: no model chosen and no API key set: using the embedded local model "
        f"{LOCAL_MODEL} (choose another with --model provider:model, for example "
        "--model openai:gpt-4.1 with OPENAI_API_KEY set)",
        file=sys.stderr,
    )


def check_model(provider: Provider, selection: ModelSelection) -> None:
    """Refuse, as a usage error, a model `provider` cannot run (`--model lcoal`,
    `--model openai/gpt-4.1` on the embedded model) before anything runs. A selection of
    another provider or of the host's model is resolved when the run starts."""
    from agentkit.providers import UnknownModelError

    if selection.policy == "inherit" or selection.provider not in (None, provider.name):
        return
    try:
        provider.resolve_model(selection.tier, selection.model)
    except UnknownModelError as exc:
        raise UsageError(f"--model: {exc}") from None
