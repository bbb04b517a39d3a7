"""Model strings that cannot be right: the errors that name what was meant.

A misspelt provider (`lcoal`), a provider joined to its model with `/` instead of `:`
(`openai/gpt-4.1`) or a model the provider does not run (`gpt4` on the embedded model)
is an error that lists the valid forms and the closest match, never a silent run on
another model.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping

from agentkit._internal.provider_names import provider_names
from agentkit.errors import UnknownModelError

__all__ = [
    "KEY_ENV",
    "check_pinned_model",
    "closest",
    "key_hint",
    "unknown_local_model",
    "unknown_provider_message",
    "valid_forms",
]

TIERS = ("large", "medium", "small")

KEY_ENV: Mapping[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-compatible": "AGENTKIT_BASE_URL",
}
"""The environment variable each provider needs before it can run."""

# The providers whose model families a bare model name reveals, by the name's start.
_FAMILIES: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"),
    ("opus", "anthropic"),
    ("sonnet", "anthropic"),
    ("haiku", "anthropic"),
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
)


def valid_forms() -> str:
    """The model string forms, for error messages."""
    return (
        f"valid forms: a tier ({', '.join(TIERS)}); a provider ({', '.join(provider_names())}); "
        "'provider:model' ('openai:gpt-4.1', 'anthropic:claude-sonnet-4-5'); "
        "'provider:tier' ('anthropic:small'); or a model of the provider in use"
    )


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The candidate most like `word` (case-insensitively), if any is close enough."""
    options = {c.lower(): c for c in candidates}
    found = difflib.get_close_matches(word.lower(), list(options), n=1, cutoff=cutoff)
    return options[found[0]] if found else None


def key_hint(provider: str, environ: Mapping[str, str] | None = None) -> str:
    """`' (set OPENAI_API_KEY)'` when `provider` needs a variable that is not set, else ''."""
    env = os.environ if environ is None else environ
    variable = KEY_ENV.get(provider)
    return f" (set {variable})" if variable and not env.get(variable) else ""


def unknown_provider_message(name: str) -> str:
    """The error for a provider name nobody registered, with the closest one."""
    match = closest(name, provider_names())
    hint = f": did you mean {match!r}?" if match else ";"
    return (
        f"unknown provider {name!r}{hint} {valid_forms()}"
        " (a provider may also be a module:attribute path to a factory)"
    )


def _slash_form(model: str) -> str | None:
    """`'openai:gpt-4.1'` for `'openai/gpt-4.1'` (a provider name before a `/`)."""
    head, sep, tail = model.partition("/")
    if sep and tail and head.lower() in provider_names():
        return f"{head.lower()}:{tail}"
    return None


def check_pinned_model(provider: str, model: str, known: Iterable[str] = ()) -> None:
    """Refuse a pinned `model` of `provider` that is surely a mistake: a provider written
    with `/` (`openai/gpt-4.1`) or a misspelt provider (`lcoal`). `known` are the
    provider's own names, which are never refused; nor is any model of `openai-compatible`
    (its servers name their models as they like, `/` included).

    Raises:
        UnknownModelError: The message says what was probably meant.
    """
    if model in known or provider == "openai-compatible":
        return
    if meant := _slash_form(model):
        raise UnknownModelError(
            f"model {model!r}: a provider and its model are joined with ':', not '/': "
            f"did you mean {meant!r}?{key_hint(meant.partition(':')[0])} {valid_forms()}"
        )
    if ":" not in model and "/" not in model and (match := closest(model, provider_names())):
        raise UnknownModelError(
            f"unknown provider {model!r}: did you mean {match!r}? ({model!r} is no model of "
            f"the {provider} provider either) {valid_forms()}"
        )


def unknown_local_model(model: str, runs: str, known: Iterable[str]) -> UnknownModelError:
    """The error for a model the embedded provider does not run: it runs one model, so
    any other name is a mistake (a misspelt provider, or another provider's model)."""
    check_pinned_model("local", model)  # raises for the clearer cases
    names = ", ".join(sorted(set(known) - {runs}, key=str.lower))
    family = next((p for prefix, p in _FAMILIES if model.lower().startswith(prefix)), None)
    if family:
        hint = f"to run it, name its provider: '{family}:{model}'{key_hint(family)}"
    else:
        hint = "to run another model, name its provider ('openai:gpt-4.1') and set its key"
    return UnknownModelError(
        f"unknown model {model!r} for the embedded local provider, which runs only {runs} "
        f"(also named {names}); {hint}. {valid_forms()}"
    )
