"""People in the loop through a real `agentkit serve`: a run that waits for a decision
survives a SIGKILL of its server and completes after a restart when the decision arrives
through `POST .../decisions`; on PostgreSQL a decision through a second server resumes a
run started through the first; the HTTP answers of a viewer (403), a stranger (404), a
decided request (409) and an unknown one (422); `--request-timeout` ends an unanswered
request as denied; answers go to `.../answers`.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agentkit.client import RemoteMachine
from agentkit.conversations import (
    AgentDefinition,
    ConversationClient,
    FinalEvent,
    FollowEvent,
    OutputEvent,
    PermissionRequestPart,
    QuestionPart,
    ToolResultPart,
)
from support.pg import postgres_url
from support.serve_process import ServeProcess

pytestmark = pytest.mark.anyio

TIMEOUT = 30.0
FAST = ["--heartbeat-interval", "0.2", "--lease-duration", "3", "--poll-interval", "0.2"]
GATE = AgentDefinition(name="gate", tools=("Bash", "AskUserQuestion"), permission_mode="default")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _asked(
    client: ConversationClient, conversation_id: str, run_id: str
) -> PermissionRequestPart | QuestionPart:
    """The request the run waits on, from its follow (left once read)."""
    with anyio.fail_after(TIMEOUT):
        async for event in client.follow(conversation_id, run_id):
            if isinstance(event, OutputEvent) and isinstance(
                event.part, PermissionRequestPart | QuestionPart
            ):
                return event.part
    raise AssertionError("the run ended without asking")


async def _to_the_end(
    client: ConversationClient, conversation_id: str, run_id: str
) -> list[FollowEvent]:
    with anyio.fail_after(TIMEOUT):
        return [event async for event in client.follow(conversation_id, run_id)]


def _result(events: list[FollowEvent]) -> ToolResultPart:
    return next(
        e.part for e in events if isinstance(e, OutputEvent) and isinstance(e.part, ToolResultPart)
    )


@pytest.fixture
def restarted(tmp_path: Path) -> Iterator[list[ServeProcess]]:
    """Servers started one after the other on one SQLite file (stopped at the end)."""
    started: list[ServeProcess] = []
    yield started
    for server in started:
        server.stop()


async def test_a_waiting_run_survives_a_sigkill_and_completes_when_decided_after_a_restart(
    tmp_path: Path, restarted: list[ServeProcess]
) -> None:
    db = str(tmp_path / "machine.db")
    first = ServeProcess(tmp_path / "a", db=db, args=FAST)
    restarted.append(first)
    owner = await first.add_member("olga", "owner")
    viewer = await first.add_member("vic", "viewer")
    stranger = await first.add_member("sam", "editor")
    async with RemoteMachine(first.url, owner) as olga:
        await olga.create_agent(GATE)
        conversation = await olga.create_conversation(agent="gate", visibility="shared")
        private = await olga.create_conversation(agent="gate")
        accepted = await olga.prompt(conversation.id, "bash echo survived")
        request = await _asked(olga, conversation.id, accepted.run_id)
        asked_privately = await olga.prompt(private.id, "bash echo private")
        private_request = await _asked(olga, private.id, asked_privately.run_id)
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(10)

    second = ServeProcess(tmp_path / "b", db=db, args=FAST)
    restarted.append(second)
    base = f"{second.url}/v1/conversations/{conversation.id}/runs/{accepted.run_id}"
    allow = {"requestId": request.request_id, "decision": "allow"}
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        details = (
            await http.get(
                f"{second.url}/v1/conversations/{conversation.id}", headers=_bearer(owner)
            )
        ).json()
        assert details["isRunning"] is True
        (pending,) = details["pendingRequests"]
        assert pending["requestId"] == request.request_id and pending["tool"] == "Bash"
        assert pending["input"] == {"command": "echo survived"} and pending["kind"] == "permission"

        refused = await http.post(f"{base}/decisions", json=allow, headers=_bearer(viewer))
        assert refused.status_code == 403, refused.text
        hidden = (
            f"{second.url}/v1/conversations/{private.id}/runs/{asked_privately.run_id}/decisions"
        )
        foreign = await http.post(
            hidden,
            json={"requestId": private_request.request_id, "decision": "allow"},
            headers=_bearer(stranger),
        )
        assert foreign.status_code == 404, foreign.text
        assert foreign.json()["error"]["code"] == "conversation_not_found"
        unknown = await http.post(
            f"{base}/decisions",
            json={"requestId": "no-such-request", "decision": "allow"},
            headers=_bearer(owner),
        )
        assert unknown.status_code == 422, unknown.text
        assert unknown.json()["error"]["code"] == "request_not_found"
        bad = await http.post(
            f"{base}/decisions",
            json={"requestId": request.request_id, "decision": "maybe"},
            headers=_bearer(owner),
        )
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "decision", bad.text

        decided = await http.post(f"{base}/decisions", json=allow, headers=_bearer(owner))
        assert decided.status_code == 202, decided.text
        again = await http.post(f"{base}/decisions", json=allow, headers=_bearer(owner))
        assert again.status_code == 409, again.text
        assert again.json()["error"]["code"] == "request_decided"

    async with RemoteMachine(second.url, owner) as olga:
        events = await _to_the_end(olga, conversation.id, accepted.run_id)
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        assert _result(events).output == "survived\n"
        details_after = await olga.get_conversation(conversation.id)
        assert not details_after.is_running and details_after.pending_requests == ()
        # A question, answered over HTTP.
        asked = await olga.prompt(conversation.id, "ask Ship it?")
        question = await _asked(olga, conversation.id, asked.run_id)
        assert isinstance(question, QuestionPart)
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            answered = await http.post(
                f"{second.url}/v1/conversations/{conversation.id}/runs/{asked.run_id}/answers",
                json={"requestId": question.request_id, "answers": {"q1": "yes"}},
                headers=_bearer(owner),
            )
            assert answered.status_code == 202, answered.text
        events = await _to_the_end(olga, conversation.id, asked.run_id)
        text = "".join(
            e.part.text for e in events if isinstance(e, OutputEvent) and e.part.type == "text"
        )
        assert text == 'answered {"q1": "yes"}'


async def test_an_unanswered_request_is_denied_at_the_servers_request_timeout(
    tmp_path: Path, restarted: list[ServeProcess]
) -> None:
    server = ServeProcess(tmp_path / "t", args=[*FAST, "--request-timeout", "0.5"])
    restarted.append(server)
    owner = await server.add_member("olga", "owner")
    async with RemoteMachine(server.url, owner) as olga:
        await olga.create_agent(GATE)
        conversation = await olga.create_conversation(agent="gate")
        accepted = await olga.prompt(conversation.id, "bash echo late")
        request = await _asked(olga, conversation.id, accepted.run_id)
        assert isinstance(request, PermissionRequestPart) and request.deadline is not None
        events = await _to_the_end(olga, conversation.id, accepted.run_id)
        assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
        result = _result(events)
        assert result.is_error
        assert result.output == "permission denied: no decision within 0.5 seconds"


@pytest.mark.postgres
async def test_on_postgresql_a_decision_through_a_second_server_resumes_the_run(
    tmp_path: Path,
) -> None:
    with postgres_url("decisions") as database:
        first = ServeProcess(tmp_path / "a", db=database, args=FAST)
        second = ServeProcess(tmp_path / "b", db=database, args=FAST)
        try:
            owner = await first.add_member("olga", "owner")
            async with (
                RemoteMachine(first.url, owner) as via_a,
                RemoteMachine(second.url, owner) as via_b,
            ):
                await via_a.create_agent(GATE)
                conversation = await via_a.create_conversation(agent="gate")
                accepted = await via_a.prompt(conversation.id, "bash echo across")
                request = await _asked(via_a, conversation.id, accepted.run_id)
                results: dict[str, Any] = {}

                async def follow() -> None:
                    results["a"] = await _to_the_end(via_a, conversation.id, accepted.run_id)

                async with anyio.create_task_group() as group:
                    group.start_soon(follow)  # through the first server, as it waits
                    await via_b.decide(
                        conversation.id, accepted.run_id, request.request_id, allow=True
                    )
                events = results["a"]
                assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
                assert _result(events).output == "across\n"
        finally:
            first.stop()
            second.stop()
