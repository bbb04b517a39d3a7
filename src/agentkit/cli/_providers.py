"""The model provider of the commands that run agents, from their options."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from agentkit.cli._exit import UsageError

if TYPE_CHECKING:
    from agentkit.providers import Provider

__all__ = ["make_provider"]


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
