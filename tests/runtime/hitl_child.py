"""A process whose run waits for a person, for the human-in-the-loop tests.

python tests/runtime/hitl_child.py STORE_URL
    starts a run of `support.hitl.SPEC` that calls `Bash("rm -rf build")`, prints
    `<run id> <request id>` once the run is stored as waiting, and waits to be killed.
"""

from __future__ import annotations

import sys

import anyio

from agentkit import Runtime
from agentkit.events import PermissionRequestEvent
from support.hitl import SPEC, bash, provider, tools


async def main(url: str) -> None:
    async with Runtime(
        provider=provider(bash("rm -rf build"), "never reached here"),
        store=url,
        tools=tools(),
        builtin_tools=False,
        agents=[SPEC],
        heartbeat_interval=0.2,
        lease_duration=1.0,
    ) as runtime:
        run = await runtime.start(SPEC, "clean up")
        async for event in run.events():
            if isinstance(event, PermissionRequestEvent):
                # Stored as waiting just after the event is written: nothing to wait on
                # in between, so the store is read until it says so.
                while not await runtime.pending_requests(run.id):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                print(run.id, event.request_id, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
