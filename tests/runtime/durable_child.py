"""A process that runs one agent on a shared store, for the durable-runs tests.

python tests/runtime/durable_child.py STORE_URL hang PROMPT
    starts a run whose model call never answers, prints `<run id> <session id>` once
    `start` has returned, and waits to be killed.

python tests/runtime/durable_child.py STORE_URL race SESSION_ID GO_FILE
    waits until GO_FILE exists, starts a run on SESSION_ID whose model call takes a
    second, and prints `started` and then `completed`, or `busy` when the store refused
    it because the session had a run going.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import anyio

from agentkit import AgentSpec, Runtime, SessionBusyError
from agentkit.testing import FunctionProvider

SPEC = AgentSpec(id="demo:durable", system_prompt="You are durable.")


async def hang(url: str, prompt: str) -> None:
    async def never(request: Any) -> str:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with Runtime(
        provider=FunctionProvider(never), store=url, heartbeat_interval=0.2, lease_duration=1.5
    ) as runtime:
        run = await runtime.start(SPEC, prompt)
        print(run.id, run.session_id, flush=True)
        await anyio.sleep_forever()


async def race(url: str, session_id: str, go: str) -> None:
    async def slow(request: Any) -> str:
        await anyio.sleep(1)
        return "done"

    async with Runtime(provider=FunctionProvider(slow), store=url) as runtime:
        deadline = time.monotonic() + 30
        # Both processes start together when the test says so (a file, across processes).
        while not os.path.exists(go) and time.monotonic() < deadline:  # noqa: ASYNC110, ASYNC240
            await anyio.sleep(0.001)
        try:
            run = await runtime.start(SPEC, "race", session_id=session_id)
        except SessionBusyError:
            print("busy", flush=True)
            return
        print("started", flush=True)
        print((await run.wait()).status, flush=True)


if __name__ == "__main__":
    url, mode, *args = sys.argv[1:]
    if mode == "hang":
        anyio.run(hang, url, *args)
    else:
        anyio.run(race, url, *args)
