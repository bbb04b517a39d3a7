"""The conversation client conformance suite against the in-process client, on SQLite
and on PostgreSQL, under asyncio and trio."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agentkit.conversations import ConversationClient, Role
from agentkit.testing import (
    CONVERSATION_CHECKS,
    ConversationConformance,
    MachineHost,
    conversation_conformance,
)
from support.pg import postgres_url as pg_schema_url


class TestLocalClient(ConversationConformance):
    @pytest.fixture
    async def conversation_host(self, tmp_path: Path) -> AsyncIterator[MachineHost]:
        async with MachineHost.open(tmp_path) as host:
            yield host


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL schema of its own, as a store URL."""
    with pg_schema_url("conv") as url:
        yield url


@pytest.mark.postgres
class TestLocalClientOnPostgres(ConversationConformance):
    @pytest.fixture
    async def conversation_host(
        self, tmp_path: Path, postgres_url: str
    ) -> AsyncIterator[MachineHost]:
        async with MachineHost.open(tmp_path, store=postgres_url) as host:
            yield host


class _NoClients(MachineHost):
    async def client(self, name: str, role: Role) -> ConversationClient:
        raise RuntimeError("this host makes no clients")


@pytest.mark.anyio
async def test_conversation_conformance_function_names_failing_checks(tmp_path: Path) -> None:
    """Outside pytest classes: every check runs on a fresh host, and each one that fails
    is named."""
    passing = {"count": 0}

    @contextlib.asynccontextmanager
    async def broken() -> AsyncIterator[MachineHost]:
        passing["count"] += 1
        async with MachineHost.open(tmp_path) as host:
            yield _NoClients(host.machine, host.attachment_root)

    with pytest.raises(ExceptionGroup) as info:
        await conversation_conformance(broken)
    assert passing["count"] == len(CONVERSATION_CHECKS)
    notes = "\n".join(n for e in info.value.exceptions for n in getattr(e, "__notes__", []))
    assert "'prompt_follow_turns' failed" in notes
    assert f"{len(CONVERSATION_CHECKS)} of {len(CONVERSATION_CHECKS)} conversation" in str(
        info.value
    )


@pytest.mark.anyio
async def test_conversation_conformance_function_passes_for_the_local_client(
    tmp_path: Path,
) -> None:
    await conversation_conformance(lambda: MachineHost.open(tmp_path))
