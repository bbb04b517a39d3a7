# ruff: noqa: E501, ASYNC221, ASYNC240  (a one-off script, kept as it was run)
"""Writes the version-1 store fixtures the migration tests open.

This script was run once with agentkit at commit 1e81fbe (store schema version 1, the last
version without migrations); its outputs are committed beside it and must not be
regenerated with later code, or they would stop being version-1 databases:

    python tests/support/data/store_v1/make_fixtures.py [POSTGRES_DSN]

- `v1.sqlite`: a SQLite database.
- `v1.postgres.sql`: `pg_dump --inserts` of the same content in the schema
  `agentkit_v1_fixture` (plain SQL, loadable through psycopg).

Content (checked by `test_a_version_1_database_upgrades_with_nothing_lost` in
tests/runtime/test_durable_runs.py):
- session `s-done` (agent `fixture:agent`): two completed runs made by a real Runtime with the
  scripted provider, the second a resume with a tool call;
- session `s-dead`: a run left `running` with only its first events, as a process killed
  after its first model step left it;
- session `s-unfinished`: a run whose final block was stored but whose `finish_run` failed.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio

from agentkit import AgentSpec, Runtime
from agentkit.events import ErrorEvent, SessionInit, Text, TurnEnd, TurnStart
from agentkit.providers import AssistantMessage, UserMessage
from agentkit.stores import EventEntry, PostgresStore, RunRecord, SQLiteStore, Store
from agentkit.testing import ScriptedProvider

HERE = Path(__file__).resolve().parent
SCHEMA = "agentkit_v1_fixture"


async def fill(store: Store) -> None:
    spec = AgentSpec(id="fixture:agent", system_prompt="You are a fixture.", tools=["Read"])
    provider = ScriptedProvider(
        [
            {"text": "Hello from the fixture."},
            {"tool_calls": [{"name": "Read", "input": {"file_path": "missing.txt"}, "id": "t1"}]},
            {"text": "That file does not exist."},
        ]
    )
    async with Runtime(provider=provider, store=store, working_dir=HERE) as runtime:
        run = await runtime.start(spec, "Say hello", session_metadata={"k": "v", "n": 1})
        await run.wait()
        run = await runtime.start(spec, "Read missing.txt", session_id=run.session_id)
        await run.wait()
        done = run.session_id
    # Rename the generated session id to a fixed one by copying: simpler to keep the
    # generated id and record it in a marker session's metadata.
    await store.create_session("s-index", "fixture:index", {"done": done})

    now = time.time()
    await store.create_session("s-dead", "fixture:agent")
    await store.create_run(RunRecord("r-dead", "s-dead", "fixture:agent", "running", now))
    await store.append_transcript(
        "s-dead",
        [UserMessage(content="Work forever"), AssistantMessage(text="Working on it.")],
    )
    await store.append_events(
        "r-dead",
        [
            EventEntry(0, TurnStart(turn_id="turn-dead", session_id="s-dead", user_prompt="Work forever")),
            EventEntry(1, SessionInit(session_id="s-dead", system_prompt="You are a fixture.")),
            EventEntry(3, Text(content="Working on it.", turn_phase="commentary")),
        ],
    )

    await store.create_session("s-unfinished", "fixture:agent")
    await store.create_run(
        RunRecord("r-unfinished", "s-unfinished", "fixture:agent", "running", now)
    )
    await store.append_events(
        "r-unfinished",
        [
            EventEntry(0, TurnStart(turn_id="turn-unf", session_id="s-unfinished", user_prompt="Fail")),
            EventEntry(1, SessionInit(session_id="s-unfinished")),
            EventEntry(2, ErrorEvent(error="model call failed: boom")),
            EventEntry(3, TurnEnd(turn_id="turn-unf", status="error", duration_ms=12)),
        ],
    )


async def main() -> None:
    path = HERE / "v1.sqlite"
    path.unlink(missing_ok=True)
    store = SQLiteStore(path)
    await fill(store)
    await store.aclose()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)

    if len(sys.argv) > 1:
        dsn = sys.argv[1]
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE')
        pg = PostgresStore(dsn, schema=SCHEMA)
        await fill(pg)
        await pg.aclose()
        dump = subprocess.run(
            ["pg_dump", "--inserts", "--no-owner", "--no-privileges", "-n", SCHEMA, dsn],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (HERE / "v1.postgres.sql").write_text(dump)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE')


if __name__ == "__main__":
    anyio.run(main)
