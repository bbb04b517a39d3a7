"""Writes `machine.sqlite` and `tokens.json` with agentkit's version 3 code (store layout
3: members and machine agents as sessions, conversations' records in session metadata).

Run from a checkout of that version (before migration 4), e.g.:

    git archive <v3 commit> src | tar -x -C /tmp/v3
    PYTHONPATH=/tmp/v3/src python tests/support/data/store_v3/make_v3.py tests/support/data/store_v3

`tests/stores/test_records_migration.py` opens a copy with today's code.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import anyio

from agentkit.conversations import AgentDefinition, Machine, Member
from agentkit.stores import SQLiteStore
from agentkit.stores._migrations import SCHEMA_VERSION
from agentkit.testing import ScriptedProvider


async def main(folder: Path) -> None:
    assert SCHEMA_VERSION == 3, "run this with version 3's code"
    path = folder / "machine.sqlite"
    path.unlink(missing_ok=True)
    replies = ["Noted.", "Looks good.", "Kept secret.", "Research done."]
    with tempfile.TemporaryDirectory() as root:
        machine = Machine(
            store=str(path), provider=ScriptedProvider(replies), attachment_roots=[root]
        )
        async with machine:
            tokens = {
                name: await machine.members.add(name, role)
                for name, role in (("ada", "owner"), ("bob", "editor"), ("gone", "editor"))
            }
            ada = Member(name="ada", role="owner")
            bob = Member(name="bob", role="editor")
            gone = Member(name="gone", role="editor")
            await machine.agents.create(
                ada,
                AgentDefinition(
                    name="helper", description="Reviews changes.", instructions="Be thorough. ✓"
                ),
            )
            made = [
                (
                    ada,
                    await machine.conversations.create(
                        ada, name="Plans", instructions="Answer in French."
                    ),
                ),
                (
                    bob,
                    await machine.conversations.create(
                        bob, agent="helper", name="Review", visibility="shared"
                    ),
                ),
                (gone, await machine.conversations.create(gone, name="Secrets")),
                (gone, await machine.conversations.create(gone, name="Notes", visibility="shared")),
            ]
            ids = {}
            for (member, conversation_id), label in zip(
                made, ["plans", "review", "secrets", "notes"], strict=True
            ):
                accepted = await machine.runs.prompt(
                    member, conversation_id, f"Hello from {member.name}"
                )
                with anyio.fail_after(30):
                    [
                        _
                        async for _ in await machine.runs.follow(
                            member, conversation_id, accepted.run_id
                        )
                    ]
                ids[label] = conversation_id
            await machine.members.remove("gone")
    # Checkpoint the WAL into the file: the fixture is the one file.
    store = SQLiteStore(path)
    await store.list_sessions()
    await store.aclose()
    (folder / "tokens.json").write_text(
        json.dumps({"tokens": tokens, "conversations": ids}, indent=2) + "\n"
    )


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]))
