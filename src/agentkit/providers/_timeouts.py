"""How long a provider waits for a model server.

Four limits, each in seconds:

| setting      | default | environment variable                   | bounds                     |
|--------------|--------:|----------------------------------------|----------------------------|
| `connect`    |      10 | `AGENTKIT_PROVIDER_CONNECT_TIMEOUT`    | opening the connection     |
| `first_byte` |      60 | `AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT` | request sent to headers in |
| `read`       |     120 | `AGENTKIT_PROVIDER_READ_TIMEOUT`       | any silence in the stream  |
| `total`      |     600 | `AGENTKIT_PROVIDER_TOTAL_TIMEOUT`      | one request, start to end  |

Each is one attempt's: the engine retries a timed-out call (it is retryable) under its
`RetryPolicy`, so a server that never answers costs `max_attempts` (4) first-byte
timeouts plus backoff, about four minutes with the defaults, and seconds with smaller ones.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from agentkit.providers._registry import ProviderConfigError

__all__ = ["TIMEOUT_ENV", "ProviderTimeouts", "set_default_timeouts"]

TIMEOUT_ENV: Mapping[str, str] = {
    "connect": "AGENTKIT_PROVIDER_CONNECT_TIMEOUT",
    "first_byte": "AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT",
    "read": "AGENTKIT_PROVIDER_READ_TIMEOUT",
    "total": "AGENTKIT_PROVIDER_TOTAL_TIMEOUT",
}
"""The environment variable of each setting of `ProviderTimeouts`."""

_MAX_SECONDS = 7 * 24 * 3600.0  # past this a value is a typo (or milliseconds)


@dataclass(frozen=True)
class ProviderTimeouts:
    """Seconds a provider waits, per request (see the module's table).

    Attributes:
        connect: To open the connection.
        first_byte: From sending the request to the response's headers (model APIs send
            them at once, before the model has produced anything).
        read: The longest silence inside a response, between two pieces of the stream.
        total: One request from start to end, however steadily the server trickles.
    """

    connect: float = 10.0
    first_byte: float = 60.0
    read: float = 120.0
    total: float = 600.0

    @classmethod
    def resolve(
        cls,
        *,
        connect: float | None = None,
        first_byte: float | None = None,
        read: float | None = None,
        total: float | None = None,
        timeout: float | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ProviderTimeouts:
        """The timeouts a provider built with these options uses.

        Each setting comes from its argument, else from `timeout` (the older single
        option, for `connect`, `first_byte` and `read`), else from its environment variable,
        else from the default. Raises `ProviderConfigError` for a value that is not a
        positive number of seconds.
        """
        env = os.environ if environ is None else environ
        given = {"connect": connect, "first_byte": first_byte, "read": read, "total": total}
        values: dict[str, float] = {}
        for item in fields(cls):
            name = item.name
            value = given[name]
            if value is not None:
                values[name] = _seconds(value, f"{name}_timeout")
            elif timeout is not None and name != "total":
                values[name] = _seconds(timeout, "timeout")
            elif (raw := env.get(TIMEOUT_ENV[name], "").strip()):
                values[name] = _seconds(raw, TIMEOUT_ENV[name])
        return cls(**values)

    def client_timeout(self, timeout_class: type) -> object:
        """The client library's `Timeout` (httpx's) for these settings."""
        return timeout_class(
            self.read, connect=self.connect, read=self.read, write=self.read, pool=self.connect
        )


def _seconds(value: object, what: str) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if not (0 < seconds <= _MAX_SECONDS):  # also false for NaN
        raise ProviderConfigError(
            f"{what} must be a positive number of seconds (at most {_MAX_SECONDS:g}), "
            f"not {str(value)[:40]!r}"
        )
    return seconds


def set_default_timeouts(
    *,
    connect: float | str | None = None,
    first_byte: float | str | None = None,
    read: float | str | None = None,
    total: float | str | None = None,
) -> None:
    """Make these the timeouts of every provider built afterwards in this process (and in
    the processes it starts), by setting their environment variables.

    For command lines: call it with the parsed flags before building a provider; `None`
    leaves a setting as it is. Raises `ProviderConfigError` (a `NoProviderError`) for a
    value that is not a positive number of seconds, before changing anything.
    """
    given = {"connect": connect, "first_byte": first_byte, "read": read, "total": total}
    checked = {
        name: _seconds(value, TIMEOUT_ENV[name])
        for name, value in given.items()
        if value is not None
    }
    for name, seconds in checked.items():
        os.environ[TIMEOUT_ENV[name]] = repr(seconds)
