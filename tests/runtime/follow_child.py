"""A process that executes one run on a shared store, streaming as its parent says.

python tests/runtime/follow_child.py STORE_URL

starts a run and prints `run <run id>`; then, for each line `piece TEXT` on its input,
the model streams TEXT as one text delta and the process prints `emitted N` (N pieces so
far) once the delta is in the run's log; the line `end` ends the model's answer, and the
process prints `ended` once the run has ended.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio

from agentkit import AgentSpec, Runtime
from agentkit.testing import FunctionProvider

SPEC = AgentSpec(id="demo:follow", system_prompt="You stream.")


async def main(url: str) -> None:
    emitted = 0

    async def model(request: Any) -> AsyncIterator[str]:
        nonlocal emitted
        while True:
            line = (await anyio.to_thread.run_sync(sys.stdin.readline)).rstrip("\n")
            if not line or line == "end":
                return
            yield line.removeprefix("piece ")
            emitted += 1
            # The engine takes the next piece only once this one is in the log: printed
            # from here, "emitted" means a reader could have it.
            print("emitted", emitted, flush=True)

    async with Runtime(provider=FunctionProvider(model), store=url) as runtime:
        run = await runtime.start(SPEC, "stream as told")
        print("run", run.id, flush=True)
        await run.wait()
        print("ended", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
