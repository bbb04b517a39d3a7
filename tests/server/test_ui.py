"""The web UI of `agentkit serve`, in a real headless browser (Debian's chromium driven by
Playwright), against a real server on loopback with the conformance provider and the
rooms extension; and the runs routes the run inspector reads.

The tests save the screenshots of docs/ui.md (docs/images/ui-*.png, a fixed viewport).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.paths import SRC
from support.served import CONFORMANCE, ROOT, Served, served

CHROMIUM = (
    os.environ.get("AGENTKIT_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
)
IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1280, "height": 800}
NARROW = {"width": 390, "height": 844}

import playwright.sync_api as playwright_sync  # noqa: E402 - the dev extra installs it

if not Path(CHROMIUM).exists():  # .ci/run installs it: a missing browser fails, not skips
    pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium", pytrace=False)

Page = playwright_sync.Page
expect = playwright_sync.expect


class Machine:
    """The served machine of this module: its members' tokens and an HTTP client."""

    def __init__(self, served_machine: Served) -> None:
        self.served = served_machine
        self.url = served_machine.url
        self.tokens = {
            "ada": served_machine.add_member("ada", "owner"),
            "bob": served_machine.add_member("bob", "editor"),
            "vic": served_machine.add_member("vic", "viewer"),
        }
        self.http = httpx.Client(base_url=self.url, timeout=30)

    def call(self, member: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[member]}"}
        return self.http.request(method, path, headers=headers, **kwargs)

    def run_to_end(self, member: str, conversation: str, prompt: str) -> str:
        answer = self.call(
            member, "POST", f"/v1/conversations/{conversation}/runs", json={"prompt": prompt}
        )
        assert answer.status_code == 202, answer.text
        run_id: str = answer.json()["runId"]
        deadline = time.monotonic() + 20
        while self.call(member, "GET", f"/v1/conversations/{conversation}").json()["isRunning"]:
            assert time.monotonic() < deadline, "the run did not end"
            time.sleep(0.05)
        return run_id

    def conversation(self, member: str, name: str, visibility: str = "private") -> str:
        answer = self.call(
            member, "POST", "/v1/conversations", json={"name": name, "visibility": visibility}
        )
        assert answer.status_code == 201, answer.text
        conversation_id: str = answer.json()["id"]
        return conversation_id


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    folder = tmp_path_factory.mktemp("ui")
    with served(folder, "--extension", "examples.rooms.extension:setup") as running:
        kit = Machine(running)
        try:
            yield kit
        finally:
            kit.http.close()


@pytest.fixture(scope="module")
def browser(machine: Machine) -> Iterator[Any]:
    with playwright_sync.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    context.set_default_timeout(10_000)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        context.close()
    assert errors == [], errors  # no script error on any page


def _sign_in(page: Page, machine: Machine, member: str, path: str = "") -> None:
    page.goto(machine.url + "/" + path)
    page.get_by_label("Member token").fill(machine.tokens[member])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who-name")).to_contain_text(member)


def _shot(page: Page, name: str) -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / f"ui-{name}.png"))


# --- the UI ------------------------------------------------------------------------------------


def test_the_page_and_its_files_are_served_without_a_token(machine: Machine) -> None:
    index = machine.http.get("/")
    assert index.status_code == 200
    assert index.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in index.headers["content-security-policy"]
    for name, media in [("app.js", "javascript"), ("style.css", "text/css")]:
        answer = machine.http.get(f"/ui/{name}")
        assert answer.status_code == 200 and media in answer.headers["content-type"], name
    assert machine.http.get("/ui/nope.js").status_code == 404
    # nothing fetched from the network: no absolute URL in any file of the UI
    ui = ROOT / "src" / "agentkit" / "server" / "ui"
    for file in ui.iterdir():
        assert not re.search(
            r"""(src|href|import|url)\s*[=(]?\s*["']https?://""", file.read_text()
        ), file


def test_sign_in_refuses_a_wrong_token_then_accepts_a_member(page: Page, machine: Machine) -> None:
    page.goto(machine.url + "/")
    token = page.get_by_label("Member token")
    expect(token).to_be_focused()
    token.fill("not-a-token")
    token.press("Enter")  # the keyboard is enough
    expect(page.get_by_role("alert")).to_contain_text("not a member's")
    _shot(page, "sign-in")
    token.fill(machine.tokens["ada"])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who-name")).to_have_text("ada (owner)")
    assert page.evaluate("sessionStorage.getItem('agentkit.token')") == machine.tokens["ada"]
    page.reload()  # the token stays for the tab
    expect(page.locator("#who-name")).to_have_text("ada (owner)")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Member token")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('agentkit.token')") is None


def test_chat_streams_continues_after_a_reload_and_cancels(page: Page, machine: Machine) -> None:
    _sign_in(page, machine, "bob")
    page.get_by_label("Name", exact=True).fill("Greetings")
    page.get_by_label("Visibility").select_option("shared")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#chat-title")).to_have_text("Greetings")
    expect(page.locator(".conversation-list")).to_contain_text("shared")

    prompt = page.get_by_label("Prompt", exact=True)
    prompt.fill("say hello")
    page.get_by_role("button", name="Send").click()
    agent_turn = page.locator(".turn.agent").last
    expect(agent_turn).to_contain_text("hello")
    expect(page.locator(".turn.live")).to_have_count(0)  # ended: a saved turn

    # A long answer: it streams into the live region; a reload in the middle of it
    # shows the saved turns and goes on where it was, nothing repeated.
    prompt.fill("slow 150")
    prompt.press("Control+Enter")
    live = page.locator(".turn.live .live-output")
    expect(live).to_have_attribute("aria-live", "polite")
    expect(live).to_contain_text("w10 ")
    page.reload()
    expect(page.locator("#chat-title")).to_have_text("Greetings")
    expect(page.locator(".turn.user").last).to_contain_text("slow 150")
    expect(page.locator(".turn.live .live-output")).to_contain_text("w0 w1 w2")  # at once
    expect(page.locator(".turn.live")).to_contain_text("w60 ")
    _shot(page, "chat")
    expect(page.locator(".turn.live")).to_have_count(0, timeout=15_000)
    answer = page.locator(".turn.agent").last.inner_text()
    words = re.findall(r"\bw\d+\b", answer)
    assert words == [f"w{index}" for index in range(150)], words

    # Cancel a run that would never end.
    prompt.fill("hang")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".turn.live")).to_contain_text("partial answer")
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator(".turn.live")).to_have_count(0)
    expect(page.locator(".turn.agent").last).to_contain_text("cancelled")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def test_queue_prompts_while_a_run_goes_and_cancel_one(page: Page, machine: Machine) -> None:
    conversation = machine.conversation("bob", "Queue")
    started = machine.call(
        "bob", "POST", f"/v1/conversations/{conversation}/runs", json={"prompt": "hang"}
    )
    assert started.status_code == 202, started.text
    _sign_in(page, machine, "bob", f"#/conversations/{conversation}")
    expect(page.locator(".turn.live")).to_contain_text("partial answer")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    prompt = page.get_by_label("Prompt", exact=True)
    for text in ("say first", "say second"):
        prompt.fill(text)
        page.get_by_role("button", name="Queue", exact=True).click()
        expect(prompt).to_have_value("")
    items = page.locator(".queued .queued-prompt")
    expect(items).to_have_count(2)
    expect(items.first).to_contain_text("say first")
    expect(items.first).to_contain_text("bob")
    page.get_by_role("button", name="Cancel queued prompt: say first").click()
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("say second")
    # The running run ends: the queued prompt runs, and the page follows it.
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator(".turn.user").last).to_contain_text("say second", timeout=15_000)
    expect(page.locator(".turn.agent").last).to_contain_text("second")
    expect(items).to_have_count(0)
    expect(page.get_by_role("button", name="Queue", exact=True)).to_be_disabled()
    turns = machine.call("bob", "GET", f"/v1/conversations/{conversation}").json()["turns"]
    assert [turn["status"] for turn in turns] == [
        "completed",
        "cancelled",
        "completed",
        "completed",
    ]


def test_an_approval_card_and_a_questionnaire_are_decided_in_the_page(
    page: Page, machine: Machine
) -> None:
    """A run that waits shows its call (escaped, never run: an input that is markup stays
    text) with Allow / Deny / Always allow; a question is a form; both go when decided."""
    gate = {"tools": ["Bash", "AskUserQuestion"], "permissionMode": "default"}
    assert machine.call("ada", "PUT", "/v1/agents/gate", json=gate).status_code in (200, 201)
    created = machine.call(
        "ada", "POST", "/v1/conversations", json={"name": "Approvals", "agent": "gate"}
    )
    conversation = created.json()["id"]
    _sign_in(page, machine, "ada", f"#/conversations/{conversation}")
    prompt = page.get_by_label("Prompt", exact=True)
    command = "echo '<img src=x onerror=alert(1)>'"
    prompt.fill(f"bash {command}")
    page.get_by_role("button", name="Send").click()
    card = page.locator(".approval-card")
    expect(card).to_have_count(1)
    expect(card.locator("code.tool")).to_have_text("Bash")
    expect(card.locator(".call-input")).to_contain_text("<img src=x onerror=alert(1)>")
    expect(card.locator("img")).to_have_count(0)  # text, not markup
    card.get_by_role("button", name="Always allow").click()
    expect(card).to_have_count(0)
    expect(page.locator(".turn.agent").last).to_contain_text("ran", timeout=15_000)
    expect(page.locator(".turn.agent").last.locator(".permission-decision")).to_contain_text(
        "Allowed"
    )
    details = machine.call("ada", "GET", f"/v1/conversations/{conversation}").json()
    assert details["pendingRequests"] == [] and not details["isRunning"]
    # A question: a form with its options as radio buttons.
    prompt.fill("ask Ship it?")
    page.get_by_role("button", name="Send").click()
    form = page.locator(".question-card")
    expect(form).to_contain_text("Ship it?")
    form.get_by_label("no").check()
    _shot(page, "approval")
    form.get_by_role("button", name="Answer").click()
    expect(form).to_have_count(0)
    expect(page.locator(".turn.agent").last).to_contain_text('answered {"q1": "no"}')
    # Denied from the card: the model is told.
    prompt.fill("bash echo never")
    page.get_by_role("button", name="Send").click()
    page.locator(".approval-card").get_by_role("button", name="Deny").click()
    expect(page.locator(".turn.agent").last.locator(".tool-result.is-error")).to_have_count(1)


def test_upload_a_file_and_send_it_attached(page: Page, machine: Machine, tmp_path: Path) -> None:
    conversation = machine.conversation("bob", "Files")
    _sign_in(page, machine, "bob", f"#/conversations/{conversation}")
    expect(page.locator("#chat-title")).to_have_text("Files")
    local = tmp_path / "notes.txt"
    local.write_text("some notes")
    page.get_by_label("Upload files").set_input_files([str(local), str(local)])
    bob_id = machine.call("bob", "GET", "/v1/me").json()["id"]
    stored = machine.served.root / "uploads" / bob_id
    attachments = page.get_by_label("Attachments")
    expect(attachments).to_have_value(f"{stored / 'notes.txt'}, {stored / 'notes-2.txt'}")
    assert (stored / "notes-2.txt").read_text() == "some notes"
    page.get_by_label("Prompt", exact=True).fill("say read")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".turn.user").last).to_contain_text(str(stored / "notes-2.txt"))
    expect(page.locator(".turn.agent").last).to_contain_text("read")
    expect(attachments).to_have_value("")


def test_rename_visibility_and_delete(page: Page, machine: Machine) -> None:
    conversation = machine.conversation("bob", "Draft")
    _sign_in(page, machine, "bob", f"#/conversations/{conversation}")
    expect(page.locator(".conversation-list")).to_contain_text("Draft")
    page.locator("#rename").fill("Final notes")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#chat-title")).to_have_text("Final notes")
    page.locator("#visibility").select_option("shared")
    expect(page.locator(".chat-head .meta")).to_contain_text("shared")
    assert (
        machine.call("bob", "GET", f"/v1/conversations/{conversation}").json()["visibility"]
        == "shared"
    )
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete").click()
    expect(page.locator(".placeholder")).to_be_visible()
    expect(page.locator(".conversation-list")).not_to_contain_text("Final notes")
    assert machine.call("bob", "GET", f"/v1/conversations/{conversation}").status_code == 404


def test_fork_a_conversation_whole_or_from_a_turn(page: Page, machine: Machine) -> None:
    conversation = machine.conversation("bob", "Branching", "shared")
    machine.run_to_end("bob", conversation, "say first answer")
    machine.run_to_end("bob", conversation, "say second answer")
    _sign_in(page, machine, "bob", f"#/conversations/{conversation}")
    expect(page.locator(".turn.agent")).to_have_count(2)
    # "Fork from here" on the first answer: a private copy of that turn, opened.
    page.locator(".turn.agent").first.get_by_role("button", name="Fork from here").click()
    expect(page.locator("#chat-title")).to_have_text("Branching (fork)")
    assert conversation not in page.url
    expect(page.locator(".chat-head .meta")).to_contain_text("private")
    expect(page.locator(".turn.agent")).to_have_count(1)
    expect(page.locator(".turn.agent")).to_contain_text("first answer")
    page.get_by_label("Prompt", exact=True).fill("history")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".turn.agent").last).to_contain_text(
        "u:say first answer | a:first answer | u:history"
    )
    # "Fork" in the header: every turn; the run inspector reads a copied run.
    page.goto(f"{machine.url}/#/conversations/{conversation}")
    expect(page.locator("#chat-title")).to_have_text("Branching")
    page.get_by_role("button", name="Fork", exact=True).click()
    expect(page.locator("#chat-title")).to_have_text("Branching (fork)")
    expect(page.locator(".turn.agent")).to_have_count(2)
    page.locator(".turn.agent").last.get_by_role("link", name="Inspect run").click()
    expect(page.locator(".timeline .type-turn_end")).to_contain_text("completed")
    original = machine.call("bob", "GET", f"/v1/conversations/{conversation}").json()
    assert len(original["turns"]) == 4  # the original is untouched
    # A viewer reads the shared conversation but has nothing to fork with.
    page.get_by_role("button", name="Sign out").click()
    _sign_in(page, machine, "vic", f"#/conversations/{conversation}")
    expect(page.locator(".turn.agent")).to_have_count(2)
    expect(page.get_by_role("button", name="Fork")).to_have_count(0)


def test_a_viewer_sees_shared_conversations_only(page: Page, machine: Machine) -> None:
    secret = machine.conversation("bob", "Bob's secret", "private")
    open_ = machine.conversation("bob", "Team notes", "shared")
    machine.run_to_end("bob", open_, "say shared words")
    _sign_in(page, machine, "vic")
    listing = page.locator(".conversation-list")
    expect(listing).to_contain_text("Team notes")
    expect(listing).not_to_contain_text("Bob's secret")
    expect(page.get_by_role("button", name="Create")).to_have_count(0)  # viewers do not create
    page.get_by_role("link", name="Team notes").click()
    expect(page.locator(".turn.agent")).to_contain_text("shared words")
    expect(page.get_by_label("Prompt", exact=True)).to_be_disabled()
    page.goto(f"{machine.url}/#/conversations/{secret}")
    expect(page.locator(".chat")).to_contain_text("Conversation not found")


def test_publish_in_the_lobby_and_see_the_derived_event(page: Page, machine: Machine) -> None:
    _sign_in(page, machine, "bob", "#/rooms")
    page.get_by_role("link", name="Lobby").click()
    expect(page.locator("table.workers")).to_contain_text("message-statistics")
    page.get_by_label("Type", exact=True).fill("chat.message")
    page.get_by_label("Payload (JSON)").fill('{"text": "four words in here"}')
    page.get_by_role("button", name="Publish").click()
    log = page.locator(".log")
    expect(log.locator(".room-event", has_text="chat.message")).to_contain_text(
        "four words in here"
    )
    derived = log.locator(".room-event", has_text="measurements.word_count")
    expect(derived).to_contain_text('"words": 4')
    expect(derived).to_contain_text("agent:message-statistics")
    # A publication outside the member's grants is refused, and says so.
    page.get_by_label("Type", exact=True).fill("secret.plans")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#publish-error")).to_contain_text("access")
    # The filter: only the measurements.
    page.get_by_label("Type patterns").fill("measurements.*")
    page.get_by_role("button", name="Filter").click()
    expect(log.locator(".room-event")).to_have_count(1)
    expect(log).not_to_contain_text("chat.message")
    worker = page.locator("table.workers tr[data-agent='message-statistics']")
    expect(worker.locator("td").nth(0)).to_have_text("running")  # its state
    expect(worker.locator("td").nth(2)).to_have_text(re.compile(r"^[12] / 2$"))  # cursor / head
    page.get_by_label("Type patterns").fill("")
    page.get_by_role("button", name="Filter").click()
    expect(log.locator(".room-event")).to_have_count(2)
    _shot(page, "rooms")
    # An owner delegates a task; the delegation's status comes from the log.
    page.get_by_role("button", name="Sign out").click()
    _sign_in(page, machine, "ada", "#/rooms/lobby")
    page.get_by_label("Agent", exact=True).fill("answerer")
    page.get_by_label("Task", exact=True).fill("say delegated")
    page.get_by_role("button", name="Delegate").click()
    row = page.locator("table.delegations tbody tr")
    expect(row).to_contain_text("completed")
    expect(row).to_contain_text("delegated")


def test_the_run_inspector_shows_a_tool_call(page: Page, machine: Machine) -> None:
    conversation = machine.conversation("bob", "Tools")
    run_id = machine.run_to_end("bob", conversation, "bash echo inspected")
    _sign_in(page, machine, "bob", f"#/conversations/{conversation}")
    page.locator(".turn.agent").last.get_by_role("link", name="Inspect run").click()
    timeline = page.locator(".timeline")
    call = timeline.locator(".type-tool_use")
    expect(call).to_contain_text("Bash")
    expect(call).to_contain_text("echo inspected")
    expect(timeline.locator(".type-tool_result")).to_contain_text("Bash")
    expect(timeline.locator(".type-turn_end")).to_contain_text("completed")
    summary = page.locator(".run-summary")
    expect(summary).to_contain_text("Tool calls")
    expect(summary.locator("table.usage")).to_contain_text("conformance-medium")
    assert run_id in page.url
    _shot(page, "run")
    # The runs list has it; a member who cannot see the conversation cannot read it.
    page.goto(f"{machine.url}/#/runs")
    expect(page.locator("table.runs")).to_contain_text(run_id)
    page.get_by_role("button", name="Sign out").click()
    _sign_in(page, machine, "vic", f"#/runs/{run_id}")
    expect(page.locator(".run")).to_contain_text("run_not_found")


def test_agents_and_a_narrow_screen(page: Page, machine: Machine) -> None:
    _sign_in(page, machine, "ada", "#/agents")
    expect(page.locator("table.agents")).to_contain_text("rool")
    expect(page.locator("table.agents")).to_contain_text("built-in")
    _shot(page, "agents")
    page.set_viewport_size(NARROW)
    page.goto(f"{machine.url}/#/conversations")
    sidebar = page.locator(".sidebar").bounding_box()
    chat = page.locator(".chat").bounding_box()
    assert sidebar and chat
    assert chat["y"] >= sidebar["y"] + sidebar["height"]  # one column: the chat below
    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    # Keyboard: from the top, Tab reaches the skip link, then the views; focus is visible.
    page.reload()
    expect(page.locator(".sidebar")).to_be_visible()
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Conversations"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    page.screenshot(path=str(IMAGES / "ui-narrow.png"))


# --- the runs routes the inspector reads ---------------------------------------------------------


def test_runs_routes_follow_conversation_access(machine: Machine) -> None:
    private = machine.conversation("bob", "Mine")
    run_id = machine.run_to_end("bob", private, "say mine")
    own = machine.call("bob", "GET", f"/v1/runs/{run_id}")
    assert own.status_code == 200
    details = own.json()
    assert details["run"]["id"] == run_id and details["run"]["sessionId"] == private
    types = [entry["event"]["type"] for entry in details["events"]]
    assert types[0] == "turn_start" and types[-1] == "turn_end" and "result" in types
    offsets = [entry["offset"] for entry in details["events"]]
    assert offsets == sorted(offsets)
    # Private means private, owners included: a run of bob's private conversation is
    # missing to the owner ada as to the viewer vic, by id, by session and in the list.
    for other in ("ada", "vic"):
        hidden = machine.call(other, "GET", f"/v1/runs/{run_id}")
        assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "run_not_found"
        no_runs = {"runs": [], "next": None}
        assert machine.call(other, "GET", f"/v1/runs?session={private}").json() == no_runs
        listed = machine.call(other, "GET", "/v1/runs").json()["runs"]
        assert run_id not in [r["id"] for r in listed]
    missing = machine.call("bob", "GET", "/v1/runs/nope")
    assert missing.json() == {"error": {"code": "run_not_found", "message": "no run 'nope'"}}
    empty = {"runs": [], "next": None}
    assert machine.call("vic", "GET", f"/v1/runs?session={private}").json() == empty
    assert run_id in [r["id"] for r in machine.call("bob", "GET", "/v1/runs").json()["runs"]]
    assert run_id not in [r["id"] for r in machine.call("vic", "GET", "/v1/runs").json()["runs"]]
    assert machine.call("bob", "GET", "/v1/runs?limit=0").status_code == 422


def test_runs_of_room_agents_and_of_agentkit_run_are_for_owners(
    machine: Machine, tmp_path: Path
) -> None:
    # A room agent's run: the answerer answers a question in the lobby.
    asked = machine.call(
        "bob",
        "POST",
        "/v1/rooms/lobby/events",
        json={"type": "chat.question", "payload": {"text": "say answered"}},
    )
    assert asked.status_code == 201, asked.text
    session = "room-agent:lobby:answerer"
    deadline = time.monotonic() + 20
    while not (runs := machine.call("ada", "GET", f"/v1/runs?session={session}").json()["runs"]):
        assert time.monotonic() < deadline, "the answerer did not run"
        time.sleep(0.05)
    room_run = runs[0]["id"]
    assert machine.call("ada", "GET", f"/v1/runs/{room_run}").status_code == 200
    assert machine.call("bob", "GET", f"/v1/runs/{room_run}").status_code == 404

    # A run of `agentkit run` on the same database.
    definition = tmp_path / "helper.md"
    definition.write_text("---\nid: helper\ndescription: Helps.\n---\nYou help.\n")
    path = os.pathsep.join([str(SRC), str(ROOT)])  # this checkout's agentkit
    done = subprocess.run(
        [
            sys.executable, "-m", "agentkit", "run", str(definition), "say from the command line",
            "--provider", CONFORMANCE, "--store", str(machine.served.db), "--format", "jsonl",
        ],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout.splitlines()[0])["sessionId"]
    runs = machine.call("ada", "GET", f"/v1/runs?session={session}").json()["runs"]
    assert len(runs) == 1
    cli_run = machine.call("ada", "GET", f"/v1/runs/{runs[0]['id']}").json()
    assert any(e["event"].get("content") == "from the command line" for e in cli_run["events"])
    assert machine.call("bob", "GET", f"/v1/runs/{runs[0]['id']}").status_code == 404
