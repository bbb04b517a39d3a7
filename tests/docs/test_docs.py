"""Every Python example in README.md and docs/ runs as written, and runs again.

A reader runs an example, changes something and runs it again in the same folder: each
example runs twice in one directory, so one that only works in an empty folder fails here.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.paths import ROOT

FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SH_FENCE = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for index, match in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            found.append((f"{page.relative_to(ROOT)}#{index}", match.group(1)))
    return found


def _run(where: str, code: str) -> None:
    # dont_inherit: not this module's `from __future__ import annotations` (a reader's
    # script has none: its dataclasses and pydantic models resolve their annotations).
    exec(compile(code, where, "exec", dont_inherit=True), {"__name__": "__docs__"})


@pytest.fixture
def docs_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from agentkit._internal import provider_names

    # An example may register a provider: the registry is process-wide, so it is put
    # back as it was after each example.
    monkeypatch.setattr(provider_names, "FACTORIES", dict(provider_names.FACTORIES))
    monkeypatch.chdir(tmp_path)
    for name in ("AGENTKIT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@contextlib.contextmanager
def _server_for(code: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Examples of the remote client read the server's URL and a member's token from
    `AGENTKIT_URL` and `AGENTKIT_TOKEN`, as a user's program would: they get a real
    `agentkit serve` on loopback."""
    if "AGENTKIT_URL" not in code:
        yield
        return
    from support.served import served

    with served(folder / "server", provider="test") as server:
        monkeypatch.setenv("AGENTKIT_URL", server.url)
        monkeypatch.setenv("AGENTKIT_TOKEN", server.add_member("docs", "owner"))
        yield


@pytest.mark.parametrize(("where", "code"), examples(), ids=[w for w, _ in examples()])
def test_example_runs_twice(
    where: str, code: str, docs_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _server_for(code, docs_env, monkeypatch):
        _run(where, code)
        _run(where, code)  # again, in the folder the first run left behind


# --- the apps.md streaming loop on a run whose sub-agent fails --------------------------


def _streaming_example() -> tuple[str, str]:
    """apps.md's "Running an agent" example: the loop that reads a stream's events."""
    (found,) = [
        (where, code)
        for where, code in examples()
        if where.startswith("docs/apps.md#") and "raise RuntimeError(message.error)" in code
    ]
    return found


def _failing_subagent_provider() -> Any:
    """The researcher summons the sentinel, whose model call fails; the researcher then
    answers anyway, so the turn completes with the sub-agent's `error` forwarded."""
    from agentkit.providers import ModelRequest, ProviderError
    from agentkit.providers._base import AssistantMessage
    from agentkit.testing import FunctionProvider

    def respond(request: ModelRequest) -> dict[str, Any]:
        if "triage agent" in request.system:
            raise ProviderError("the sentinel's model is down")
        if not any(isinstance(m, AssistantMessage) for m in request.messages):
            summon = {"agentName": "research-app:sentinel", "prompt": "Triage this"}
            return {"tool_calls": [{"name": "summon", "input": summon}]}
        return {"text": "Otters hold hands while they sleep."}

    return FunctionProvider(respond)


def test_the_failing_subagent_run_completes_with_a_forwarded_error() -> None:
    from agentkit.apps import AgentRunner, example_app_path, load_app

    async def main() -> list[Any]:
        app = load_app(example_app_path())
        async with AgentRunner(app, provider=_failing_subagent_provider()) as runner:
            return [
                m
                async for m in runner.run(
                    agent_name="research-app:researcher", prompt="Research otters"
                )
            ]

    events = anyio.run(main)
    errors = [e for e in events if e.type == "error"]
    assert errors and all(e.agent == "research-app:sentinel" for e in errors)
    assert events[-1].type == "turn_end" and events[-1].status == "completed"


def test_streaming_example_completes_when_a_subagent_fails(
    docs_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import agentkit.testing

    where, code = _streaming_example()
    monkeypatch.setattr(
        agentkit.testing, "SchemaTestProvider", lambda **_: _failing_subagent_provider()
    )
    _run(where, code)
    assert "Otters hold hands while they sleep." in capsys.readouterr().out


# --- the README's commands --------------------------------------------------------------


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [block.strip() for block in SH_FENCE.findall(text)]


def test_ci_runs_the_readme_test_command_exactly() -> None:
    test_command = [c for c in _readme_commands() if "pytest" in c]
    assert len(test_command) == 1 and "\n" not in test_command[0], "one copy-pasteable line"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command[0] in ci


def test_readme_test_command_shows_the_install_progress() -> None:
    (test_command,) = [c for c in _readme_commands() if "pytest" in c]
    (install,) = [step for step in test_command.split("&&") if "pip install" in step]
    # `pip -q` hid a llama-cpp-python build of several minutes behind a silent prompt
    assert not {"-q", "--quiet", "-qq"} & set(install.split()), install
