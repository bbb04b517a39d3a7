"""Auth profiles: named ways of authenticating with a provider.

A definition may name an `auth` profile (for example `xai-oauth`). The profile must be known
and, when the definition also names a `provider`, belong to that provider. Definitions never
contain credentials; a profile only says which login the host should use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_AUTH_PROFILES", "AuthKind", "AuthProfile", "AuthRegistry"]

AuthKind = Literal["api-key", "oauth"]


@dataclass(frozen=True)
class AuthProfile:
    """A named way to authenticate with one provider.

    Attributes:
        id: The name definitions use in `auth:`.
        provider: The provider the profile logs in to (`xai`, `anthropic`, `openai`, ...).
        kind: `api-key` or `oauth` (informative; the host decides how to log in).
        default: Whether this is the provider's default auth, used when a definition pins
            a provider without `auth` and the host's own login does not fit it.
    """

    id: str
    provider: str
    kind: AuthKind = "api-key"
    default: bool = False


DEFAULT_AUTH_PROFILES: tuple[AuthProfile, ...] = (
    AuthProfile("xai-api-key", "xai", "api-key", default=True),
    AuthProfile("xai-oauth", "xai", "oauth"),
    AuthProfile("anthropic-api-key", "anthropic", "api-key", default=True),
    AuthProfile("anthropic-oauth", "anthropic", "oauth"),
    AuthProfile("openai-api-key", "openai", "api-key", default=True),
)
"""The profiles every registry starts with. API keys are each provider's default."""


class AuthRegistry:
    """Known auth profiles by id. Starts with `DEFAULT_AUTH_PROFILES`; hosts add their own.

    ```python
    from agentkit.defs import AuthProfile, AuthRegistry

    registry = AuthRegistry()
    registry.add(AuthProfile("corp-sso", "openai", "oauth"))
    assert registry.get("corp-sso").provider == "openai"
    assert registry.default_for("xai").id == "xai-api-key"
    ```
    """

    def __init__(self, profiles: Iterable[AuthProfile] = DEFAULT_AUTH_PROFILES) -> None:
        self._profiles: dict[str, AuthProfile] = {}
        for profile in profiles:
            self.add(profile)

    def add(self, profile: AuthProfile) -> None:
        """Register `profile`, replacing one with the same id."""
        self._profiles[profile.id] = profile

    def get(self, profile_id: str) -> AuthProfile | None:
        """The profile called `profile_id`, if known."""
        return self._profiles.get(profile_id)

    def ids(self) -> list[str]:
        """Every known profile id, sorted."""
        return sorted(self._profiles)

    def for_provider(self, provider: str) -> list[AuthProfile]:
        """The profiles of `provider`, sorted by id."""
        return sorted(
            (p for p in self._profiles.values() if p.provider == provider), key=lambda p: p.id
        )

    def default_for(self, provider: str) -> AuthProfile | None:
        """The provider's default profile (the last registered default wins), if any."""
        defaults = [p for p in self._profiles.values() if p.provider == provider and p.default]
        return defaults[-1] if defaults else None

    def copy(self) -> AuthRegistry:
        """An independent copy."""
        return AuthRegistry(self._profiles.values())
