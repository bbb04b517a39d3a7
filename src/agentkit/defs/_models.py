"""Model resolution: turning a definition's `model-policy` into a concrete selection.

`inherit` keeps the host's current provider, model and auth. `prefer`, `require` and `select`
pin the definition's model; under `rho` the model may be an `@alias` the host resolves. An
unset `auth` keeps the host's login when it fits the provider, and otherwise uses the
provider's default auth profile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agentkit.defs._auth import AuthRegistry
from agentkit.defs._types import BindError, Definition
from agentkit.spec import ModelSelection

__all__ = ["HostModel", "ModelAvailable", "resolve_model"]

ModelAvailable = Callable[[str | None, str], bool]
"""`available(provider, model) -> bool`: whether the host can run that model now."""


@dataclass(frozen=True)
class HostModel:
    """The host's current model selection (what `inherit` keeps).

    Attributes:
        provider: The provider name (`xai`, `anthropic`, `openai`, ...).
        model: The model name.
        auth: The auth profile the host is logged in with, if known.
    """

    provider: str
    model: str
    auth: str | None = None


def resolve_model(
    definition: Definition,
    host: HostModel | None = None,
    *,
    aliases: Mapping[str, HostModel | str] | None = None,
    auth_profiles: AuthRegistry | None = None,
    available: ModelAvailable | None = None,
) -> ModelSelection:
    """The model selection a definition runs with on this host.

    Args:
        definition: The parsed definition.
        host: The host's current selection. `inherit` pins it; without it the selection
            stays `inherit` and the engine uses its own current model.
        aliases: The host's alias table for `@alias` models (`rho` only), keyed by the name
            with or without `@`. A string value names a model of the pinned (or host)
            provider.
        auth_profiles: Known auth profiles (default: the shipped ones).
        available: Whether a pinned model can run now. An unavailable `prefer` model falls
            back to the host's selection; an unavailable `require` / `select` model fails.

    Raises:
        BindError: for an unknown alias, an alias of another provider, or an unavailable
            required model.

    ```python
    from agentkit.defs import HostModel, parse_definition, resolve_model

    text = "---\\ndescription: d\\nmodel: '@fast'\\n---\\n"
    definition = parse_definition(text, path="quick.md")
    host = HostModel("xai", "grok-4.5", "xai-oauth")
    selection = resolve_model(definition, host, aliases={"fast": HostModel("xai", "grok-mini")})
    assert selection.model == "grok-mini"
    assert (selection.provider, selection.auth) == ("xai", "xai-oauth")
    ```
    """
    registry = auth_profiles or AuthRegistry()
    if definition.runtime == "claude-cli":
        if definition.model is None:
            return ModelSelection(policy="inherit")
        return ModelSelection.pinned(definition.model, policy="select")
    if definition.model_policy == "inherit" or definition.model is None:
        return _inherit(host)

    model = definition.model
    provider = definition.provider
    auth = definition.auth
    if model.startswith("@"):
        table = aliases or {}
        name = model[1:]
        target = table.get(name, table.get(model))
        if target is None:
            known = ", ".join(sorted("@" + k.lstrip("@") for k in table)) or "none"
            raise BindError(definition.id, [f"unknown model alias {model!r} (known: {known})"])
        if isinstance(target, str):
            model = target
        else:
            if provider is not None and target.provider != provider:
                raise BindError(
                    definition.id,
                    [f"model alias {model!r} is a {target.provider!r} model, not {provider!r}"],
                )
            model, provider = target.model, target.provider
            auth = auth or target.auth
    if provider is None and auth is not None:
        profile = registry.get(auth)
        provider = profile.provider if profile else None
    if auth is None:
        auth = _fitting_auth(host, provider, registry)

    if available is not None and not available(provider, model):
        if definition.model_policy == "prefer":
            return _inherit(host)
        where = f" of provider {provider!r}" if provider else ""
        raise BindError(
            definition.id,
            [f"model {model!r}{where} is not available (model-policy: {definition.model_policy})"],
        )
    return ModelSelection.pinned(
        model, provider=provider, auth=auth, policy=definition.model_policy
    )


def _inherit(host: HostModel | None) -> ModelSelection:
    if host is None:
        return ModelSelection(policy="inherit")
    return ModelSelection.pinned(
        host.model, provider=host.provider, auth=host.auth, policy="select"
    )


def _fitting_auth(
    host: HostModel | None, provider: str | None, registry: AuthRegistry
) -> str | None:
    if host is not None and host.auth is not None:
        if provider is None or host.provider == provider:
            return host.auth
        profile = registry.get(host.auth)
        if profile is not None and profile.provider == provider:
            return host.auth
    if provider is None:
        return None
    default = registry.default_for(provider)
    return default.id if default else None
