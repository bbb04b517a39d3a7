"""Calling a user's callback that may be a plain function or a coroutine function."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["call_logged"]

T = TypeVar("T")


async def call_logged(
    callback: Callable[[T], Awaitable[None] | None],
    value: T,
    logger: logging.Logger,
    message: str,
    *args: object,
) -> None:
    """Give `value` to `callback`, awaiting it when it returns an awaitable. A failing
    callback is its author's bug, not the caller's end: it is logged (`message % args`, with
    the traceback) and the caller goes on."""
    try:
        result = callback(value)
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.exception(message, *args)
