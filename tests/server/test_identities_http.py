"""Identities, privacy and pages against a real `agentkit serve`: ids no name recycles,
rotated tokens, deleted agents, and every list paged with `limit` and an opaque `next`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.http_api import bearer, sse_events
from support.paths import ROOT, SRC
from support.served import served


def _key(body: dict[str, Any], camel: str) -> Any:
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return body[camel] if camel in body else body[snake]


def _finish(http: httpx.Client, token: str, conversation_id: str, prompt: str) -> str:
    answer = http.post(
        f"/v1/conversations/{conversation_id}/runs", json={"prompt": prompt}, headers=bearer(token)
    )
    assert answer.status_code == 202, answer.text
    run_id: str = _key(answer.json(), "runId")
    url = f"/v1/conversations/{conversation_id}/runs/{run_id}/events"
    with http.stream("GET", url, headers=bearer(token)) as response:
        events = list(sse_events(response))
    assert events[-1]["event"] == "completed", events[-1]
    return run_id


def _members_cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentkit", "members", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(SRC)},  # this checkout's agentkit, as the server's
    )


def test_a_member_added_under_a_removed_name_inherits_nothing(tmp_path: Path) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        old = server.add_member("zed", "owner")
        old_id = http.get("/v1/me", headers=bearer(old)).json()["id"]
        private = http.post(
            "/v1/conversations", json={"name": "zed's"}, headers=bearer(old)
        ).json()["id"]
        run_id = _finish(http, old, private, "say secret")
        room = http.post("/v1/rooms", json={"name": "zed's room"}, headers=bearer(old)).json()

        assert _members_cli(server.db, "remove", "zed").returncode == 0
        added = _members_cli(server.db, "add", "zed", "--role", "viewer")
        assert added.returncode == 0, added.stderr
        new = added.stdout.strip()

        me = http.get("/v1/me", headers=bearer(new)).json()
        assert me["name"] == "zed" and me["id"] != old_id
        assert http.get("/v1/conversations", headers=bearer(new)).json()["conversations"] == []
        assert http.get(f"/v1/conversations/{private}", headers=bearer(new)).status_code == 404
        assert http.get(f"/v1/runs/{run_id}", headers=bearer(new)).status_code == 404
        assert http.get("/v1/runs", headers=bearer(new)).json()["runs"] == []
        assert http.get("/v1/rooms", headers=bearer(new)).json()["rooms"] == []
        assert http.get(f"/v1/rooms/{room['id']}", headers=bearer(new)).status_code == 404
        assert http.get("/v1/me", headers=bearer(old)).status_code == 401


def test_rotate_refuses_the_old_token_at_once_and_keeps_the_identity(tmp_path: Path) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        owner = server.add_member("olga", "owner")
        editor = server.add_member("ada", "editor")
        ada_id = http.get("/v1/me", headers=bearer(editor)).json()["id"]
        mine = http.post("/v1/conversations", json={}, headers=bearer(editor)).json()["id"]

        rotated = _members_cli(server.db, "rotate", "ada")
        assert rotated.returncode == 0, rotated.stderr
        token = rotated.stdout.strip()
        assert rotated.stdout.count("\n") == 1 and token.startswith("ak_")
        assert http.get("/v1/me", headers=bearer(editor)).status_code == 401
        assert http.get("/v1/me", headers=bearer(token)).json()["id"] == ada_id
        rows = http.get("/v1/conversations", headers=bearer(token)).json()["conversations"]
        assert [row["id"] for row in rows] == [mine]
        missing = _members_cli(server.db, "rotate", "nobody")
        assert missing.returncode == 1 and "no member 'nobody'" in missing.stderr

        # The owner route does the same; only owners may.
        assert http.post("/v1/members/ada/token", headers=bearer(token)).status_code == 403
        answer = http.post("/v1/members/ada/token", headers=bearer(owner))
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["member"]["id"] == ada_id and body["token"] != token
        assert http.get("/v1/me", headers=bearer(token)).status_code == 401
        assert http.get("/v1/me", headers=bearer(body["token"])).status_code == 200
        nobody = http.post("/v1/members/nobody/token", headers=bearer(owner))
        assert nobody.status_code == 404 and nobody.json()["error"]["code"] == "member_not_found"
        listed = http.get("/v1/members", headers=bearer(owner)).json()
        assert [m["name"] for m in listed["members"]] == ["olga", "ada"] and listed["next"] is None
        assert http.get("/v1/members", headers=bearer(token)).status_code in (401, 403)


def test_a_deleted_agent_s_conversation_answers_409_whatever_comes_later(
    tmp_path: Path,
) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        owner = server.add_member("olga", "owner")
        body = {"description": "helps", "instructions": "MARK-OLD"}
        created = http.put("/v1/agents/helper", json=body, headers=bearer(owner)).json()
        replaced = http.put(
            "/v1/agents/helper", json={**body, "instructions": "MARK-NEW"}, headers=bearer(owner)
        ).json()
        assert replaced["id"] == created["id"] and replaced["version"] == 2
        conversation = http.post(
            "/v1/conversations", json={"agent": "helper"}, headers=bearer(owner)
        ).json()["id"]
        _finish(http, owner, conversation, "say hi")
        assert http.delete("/v1/agents/helper", headers=bearer(owner)).status_code == 204
        newcomer = http.put(
            "/v1/agents/helper", json={"tools": ["Bash"]}, headers=bearer(owner)
        ).json()
        assert newcomer["id"] != created["id"]

        answer = http.post(
            f"/v1/conversations/{conversation}/runs", json={"prompt": "x"}, headers=bearer(owner)
        )
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "agent_deleted"
        details = http.get(f"/v1/conversations/{conversation}", headers=bearer(owner)).json()
        assert _key(details, "agentDeleted") is True and len(details["turns"]) == 2


@pytest.mark.parametrize(
    "limit", ["0", "1001", "-1", "abc", "²", "1" * 5000, "99999999999999999999", ""]
)
def test_bad_limits_answer_422(tmp_path: Path, limit: str) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        owner = server.add_member("olga", "owner")
        for path in ("/v1/conversations", "/v1/agents", "/v1/runs", "/v1/members"):
            answer = http.get(path, params={"limit": limit}, headers=bearer(owner))
            assert answer.status_code == 422, (path, limit, answer.text)
            assert answer.json()["error"]["code"] == "invalid_page"
        made_up = http.get("/v1/conversations", params={"cursor": "x"}, headers=bearer(owner))
        assert made_up.status_code == 422


def test_pages_hold_under_concurrent_inserts(tmp_path: Path) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        editor = server.add_member("ada", "editor")
        made = [
            http.post("/v1/conversations", json={"name": f"n{i}"}, headers=bearer(editor)).json()[
                "id"
            ]
            for i in range(7)
        ]
        seen: list[str] = []
        page = http.get("/v1/conversations?limit=3", headers=bearer(editor)).json()
        while True:
            seen.extend(row["id"] for row in page["conversations"])
            http.post("/v1/conversations", json={"name": "late"}, headers=bearer(editor))
            if page["next"] is None:
                break
            page = http.get(
                "/v1/conversations",
                params={"limit": 3, "cursor": page["next"]},
                headers=bearer(editor),
            ).json()
        assert seen == made[::-1]


def test_a_definition_run_records_its_fingerprint_and_gets_the_machine_context(
    tmp_path: Path,
) -> None:
    definition = tmp_path / "marker.md"
    definition.write_text(
        "---\nid: marker\ndescription: Says what it was told\ntools: []\n---\nMARK-DEF\n"
    )
    printed = subprocess.run(
        [sys.executable, "-m", "agentkit", "fingerprint", str(definition)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert printed.returncode == 0, printed.stderr
    v2 = printed.stdout.split()[0]
    assert v2.startswith("v2:")
    with (
        served(tmp_path, "--agents", str(definition)) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        owner = server.add_member("olga", "owner")
        conversation = http.post(
            "/v1/conversations", json={"agent": "marker"}, headers=bearer(owner)
        ).json()["id"]
        run_id = _finish(http, owner, conversation, "system")
        details = http.get(f"/v1/runs/{run_id}", headers=bearer(owner)).json()
        assert details["fingerprint"] == v2
        turns = http.get(f"/v1/conversations/{conversation}", headers=bearer(owner)).json()
        assert turns["turns"][-1]["parts"][0]["text"] == "MARK-DEF"
        system = next(
            e["event"].get("systemPrompt", "")
            for e in details["events"]
            if e["event"]["type"] == "session_init"
        )
        assert system.startswith("You are an agent on a machine")
