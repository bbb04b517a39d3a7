"""A machine in its own process, for the restart tests.

python tests/conversations/conversations_child.py STORE_URL ROOT
    adds the owner `ada` (first time), creates a conversation, completes one run
    (`say first`), starts a second one that never finishes (`hang`), prints
    `<conversation id> <run id>` once it is accepted, and waits to be killed.
"""

from __future__ import annotations

import sys

import anyio

from agentkit.conversations import Machine
from agentkit.testing import conformance_provider


async def main(url: str, root: str) -> None:
    async with Machine(
        store=url,
        provider=conformance_provider(),
        attachment_roots=[root],
        heartbeat_interval=0.2,
        lease_duration=1.5,
    ) as machine:
        if await machine.get_member("ada") is None:
            await machine.add_member("ada", "owner")
        client = machine.client(await machine.member("ada"))
        conversation = await client.create_conversation(name="survives", visibility="shared")
        first = await conversation.prompt("say first")
        async for _ in conversation.follow(first.run_id):
            pass
        accepted = await conversation.prompt("hang")
        async for event in conversation.follow(accepted.run_id):
            if event.type == "output":  # it is streaming: the process dies mid-answer
                break
        print(conversation.id, accepted.run_id, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:])
