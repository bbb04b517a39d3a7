"""The Python agent adapter: model strings, typed output, one-call runs, raised failures,
misspelt keywords, and agents on different providers sharing one runtime."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from agentkit import Agent, AgentSpec, RunFailedError, Runtime, SpecError
from agentkit.errors import NoProviderError
from agentkit.providers import register_provider
from agentkit.spec import ModelSelection
from agentkit.stores import MemoryStore
from agentkit.testing import ScriptedProvider
from support.paths import ROOT

pytestmark = pytest.mark.anyio


class Forecast(BaseModel):
    city: str
    summary: str


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


# --- model strings ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("large", ModelSelection.of_tier("large")),
        ("test", ModelSelection(policy="tier", tier="medium", provider="test")),
        ("local", ModelSelection(policy="tier", tier="medium", provider="local")),
        ("openai:gpt-4.1", ModelSelection.pinned("gpt-4.1", provider="openai", policy="require")),
        (
            "openai-compatible:llama3",
            ModelSelection.pinned("llama3", provider="openai-compatible", policy="require"),
        ),
        ("anthropic:small", ModelSelection(policy="tier", tier="small", provider="anthropic")),
        ("gpt-4o", ModelSelection.pinned("gpt-4o")),
    ],
)
def test_model_strings(text: str, expected: ModelSelection) -> None:
    assert ModelSelection.parse(text) == expected
    assert AgentSpec(id="a", model=text).model == expected


@pytest.mark.parametrize("text", ["", "two words", "openai:", ":gpt"])
def test_bad_model_strings_name_the_field(text: str) -> None:
    with pytest.raises(SpecError) as caught:
        AgentSpec(id="a", model=text)
    assert caught.value.field == "model"


def test_misspelt_keywords_suggest_the_closest_name() -> None:
    with pytest.raises(SpecError, match="did you mean 'system_prompt'"):
        AgentSpec(id="a", sytem_prompt="x")
    with pytest.raises(TypeError, match="did you mean 'instructions'"):
        Agent("test", instrutions="x")  # type: ignore[call-overload]


async def test_agents_on_different_providers_share_one_runtime() -> None:
    register_provider("one-test", lambda **_: ScriptedProvider(["from one"], name="one-test"))
    register_provider("two-test", lambda **_: ScriptedProvider(["from two"], name="two-test"))
    first = AgentSpec(id="first", model="one-test")
    second = AgentSpec(id="second", model="two-test:small")
    async with Runtime(provider=ScriptedProvider(["default"])) as runtime:
        a = await (await runtime.start(first, "hi")).wait()
        b = await (await runtime.start(second, "hi")).wait()
        c = await (await runtime.start(AgentSpec(id="third"), "hi")).wait()
        assert runtime.provider_named("one-test") is runtime.provider_named("one-test")
    assert (a.text, b.text, c.text) == ("from one", "from two", "default")
    missing = AgentSpec(id="fourth", model="nowhere:x")
    async with Runtime(provider=ScriptedProvider(["unused"])) as runtime:
        outcome = await (await runtime.start(missing, "hi")).wait()
    assert outcome.status == "error" and "unknown provider 'nowhere'" in (outcome.error or "")
    with pytest.raises(NoProviderError):
        Runtime(provider=ScriptedProvider([])).provider_named("nowhere")


# --- running ---------------------------------------------------------------------------------


async def test_run_returns_text_and_continues_a_session() -> None:
    agent = Agent(scripted("one", "two"), instructions="Be brief.")
    first = await agent.run("hello")
    assert first.output == "one" and first.ok
    second = await agent.run("again", session_id=first.session_id)
    assert second.output == "two" and second.session_id == first.session_id


@pytest.fixture(autouse=True)
def _registry_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    # Providers registered by a test are gone after it: the registry is process-wide
    # (the command line's help lists every registered name).
    from agentkit._internal import provider_names

    monkeypatch.setattr(provider_names, "FACTORIES", dict(provider_names.FACTORIES))


def scripted(*answers: str) -> str:
    """A model string naming one scripted provider registered for this test (the same
    instance for every runtime that asks for it)."""
    name = f"scripted-{uuid.uuid4().hex[:8]}"
    provider = ScriptedProvider(list(answers), name=name)
    register_provider(name, lambda **_: provider)
    return name


async def test_typed_output_for_models_dataclasses_typeddicts_and_scalars() -> None:
    forecast = await Agent("test", output_type=Forecast).run("Paris?")
    assert isinstance(forecast.output, Forecast)
    point = await Agent("test", output_type=Point).run("a point")
    assert isinstance(point.output, Point) and isinstance(point.output.x, int)
    pair = await Agent("test", output_type=Pair).run("a pair")
    assert set(pair.output) == {"left", "right"}
    number = await Agent("test", output_type=int).run("a number")
    assert isinstance(number.output, int)
    choice = await Agent("test", output_type=Literal["yes", "no"]).run("yes or no")  # type: ignore[arg-type]
    assert choice.output in ("yes", "no")


async def test_a_failed_run_raises_with_its_outcome() -> None:
    agent = Agent(scripted())  # an empty script: the model call fails
    with pytest.raises(RunFailedError) as caught:
        await agent.run("hi")
    assert caught.value.status == "error" and caught.value.error
    assert caught.value.outcome.accounting is not None
    async with Runtime(provider=ScriptedProvider([])) as runtime:  # Runtime returns it
        outcome = await (await runtime.start(AgentSpec(id="a"), "hi")).wait()
    assert outcome.status == "error"


def test_run_sync_from_synchronous_code() -> None:
    outcome = Agent("test", output_type=Forecast).run_sync("Paris?")
    assert isinstance(outcome.output, Forecast)


async def test_run_sync_inside_an_event_loop_says_what_to_do() -> None:
    with pytest.raises(RuntimeError, match=r"await agent\.run"):
        Agent("test").run_sync("hi")


async def test_start_streams_inside_the_agents_block_or_a_given_runtime() -> None:
    agent = Agent(scripted("streamed answer", "second"))
    with pytest.raises(RuntimeError, match="async with agent"):
        await agent.start("hi")
    async with agent:
        run = await agent.start("hi")
        kinds = [event.type async for event in run.events()]
        assert kinds[0] == "turn_start" and kinds[-1] == "turn_end"
        assert agent.output_of(await run.wait()) == "streamed answer"
    store = MemoryStore()
    async with Runtime(store=store) as runtime:
        shared = Agent(scripted("on a given runtime"), runtime=runtime)
        assert (await shared.run("hi")).output == "on a given runtime"
    assert await store.list_sessions()


async def test_the_agents_own_block_keeps_one_runtime() -> None:
    agent = Agent(scripted("a", "b", "c"))
    async with agent:
        outcomes = [await agent.run(f"n{i}") for i in range(3)]
    assert [o.output for o in outcomes] == ["a", "b", "c"]


def test_agent_repr_and_spec() -> None:
    agent = Agent("openai:gpt-4.1", name="forecaster", output_type=Forecast)
    assert repr(agent) == "<Agent forecaster -> Forecast>"
    assert agent.spec.model.provider == "openai" and agent.spec.output_schema is not None


def test_the_command_line_takes_a_model_string(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTKIT_", "OPENAI_"))}
    env.update(PYTHONPATH=str(ROOT), AGENTKIT_STORE=str(tmp_path / "cli.db"))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentkit", "run", "examples.hello:agent", "hi", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )

    done = cli("--model", "test")  # the model string names the provider too
    assert done.returncode == 0, done.stderr
    bad = cli("--model", "two words")
    assert bad.returncode == 2 and "--model" in bad.stderr and "Traceback" not in bad.stderr
