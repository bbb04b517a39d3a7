"""Provider names and how to build them.

Built-in names map to a `module:attribute` factory imported on first use, so naming a
provider never imports a client library that is not needed.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from agentkit.providers._base import Provider

__all__ = [
    "NoProviderError",
    "ProviderFactory",
    "available_providers",
    "create_provider",
    "default_provider_name",
    "register_provider",
]

ProviderFactory = Callable[..., Provider]

_FACTORIES: dict[str, str | ProviderFactory] = {
    "test": "agentkit.testing:SchemaTestProvider",
    "scripted": "agentkit.testing:ScriptedProvider.from_file",
}


class NoProviderError(LookupError):
    """No provider was given or configured, or the name is unknown."""


def register_provider(name: str, factory: ProviderFactory | str) -> None:
    """Make `name` usable with `--provider` and `create_provider`.

    `factory` is a callable taking keyword options, or a `module:attribute` path to one.
    """
    _FACTORIES[name] = factory


def available_providers() -> list[str]:
    """The registered provider names."""
    return sorted(_FACTORIES)


def _load(path: str) -> ProviderFactory:
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def create_provider(name: str, **options: Any) -> Provider:
    """Build the provider registered as `name` with keyword options."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise NoProviderError(
            f"unknown provider {name!r}; known providers: {', '.join(available_providers())}"
        ) from None
    if isinstance(factory, str):
        factory = _load(factory)
    return factory(**options)


def default_provider_name(environ: Mapping[str, str] | None = None) -> str | None:
    """The provider chosen by the environment, or `None` when nothing is configured.

    `AGENTKIT_PROVIDER` wins; otherwise an `ANTHROPIC_API_KEY` or `OPENAI_API_KEY` picks
    that provider when its factory is registered.
    """
    env = os.environ if environ is None else environ
    if env.get("AGENTKIT_PROVIDER"):
        return env["AGENTKIT_PROVIDER"]
    for key, name in (("ANTHROPIC_API_KEY", "anthropic"), ("OPENAI_API_KEY", "openai")):
        if env.get(key) and name in _FACTORIES:
            return name
    return None


NO_PROVIDER_HELP = (
    "no model provider configured. Choose one with --provider NAME (for example "
    "'--provider test' for the offline test provider), set AGENTKIT_PROVIDER, or set "
    "ANTHROPIC_API_KEY / OPENAI_API_KEY."
)
