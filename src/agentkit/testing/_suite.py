"""What every conformance suite of `agentkit.testing` shares: its checks as one pytest test
each (under asyncio and trio), and a runner for use outside pytest. This module does not
import pytest."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio

__all__ = ["add_tests", "run_checks"]

Check = Callable[[Any], Awaitable[None]]


async def run_checks(
    suite: str,
    checks: Mapping[str, Check],
    subject: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
    *,
    limit: float | None,
    where: Callable[[Any], str] = lambda _: "",
) -> None:
    """Run every check, each on a fresh subject from `subject()` (a host, a store),
    within `limit` seconds (`None`: no limit).

    Raises:
        ExceptionGroup: One exception per failed check, each with a note naming it.
    """
    failures: list[Exception] = []
    for name, check in checks.items():
        label = ""
        try:
            async with subject() as given:
                label = where(given)
                with anyio.fail_after(limit):
                    await check(given)
        except Exception as exc:
            exc.add_note(f"{suite} conformance check {name!r} failed{label}")
            failures.append(exc)
    if failures:
        raise ExceptionGroup(
            f"{len(failures)} of {len(checks)} {suite} conformance checks failed", failures
        )


def add_tests(
    mixin: type, checks: Mapping[str, Check], fixture: str, *, limit: float | None
) -> None:
    """Give `mixin` one `test_<name>` method per check, taking anyio's `anyio_backend`
    and the suite's `fixture` (what a subclass defines: the host or store under test)."""
    for name, check in checks.items():
        setattr(mixin, f"test_{name}", _as_test(mixin, name, check, fixture, limit))


def _as_test(
    mixin: type, name: str, check: Check, fixture: str, limit: float | None
) -> Callable[..., Awaitable[None]]:
    async def test(self: Any, anyio_backend: Any, **fixtures: Any) -> None:
        with anyio.fail_after(limit):
            await check(fixtures[fixture])

    # pytest finds the fixtures a test takes in its signature: this one names the suite's.
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    test.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, kind) for p in ("self", "anyio_backend", fixture)]
    )
    test.__name__ = f"test_{name}"
    test.__qualname__ = f"{mixin.__name__}.test_{name}"
    test.__doc__ = check.__doc__
    return test
