"""Tool timeouts: a deadline that still lets a tool's shielded cleanup finish."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentkit import Runtime
from agentkit.tools import ToolContext
from support.runs import SPEC, one_call, tool_registry

pytestmark = pytest.mark.anyio



async def test_a_tool_timeout_respects_a_shielded_section() -> None:
    finished: list[str] = []

    async def cleanup(arguments: dict[str, Any], context: ToolContext) -> str:
        with anyio.CancelScope(shield=True):  # e.g. reaping a child process
            await anyio.sleep(0.2)
            finished.append("cleanup")
        return "ok"

    async with Runtime(provider=one_call(), tools=tool_registry(cleanup, timeout=0.05)) as runtime:
        run = await runtime.start(SPEC, "go")
        await run.wait()
    assert finished == ["cleanup"]  # the timer cancelled the shielded sleep on asyncio
