"""Real providers under the engine: a full agent turn with a tool loop, retries that
honour Retry-After, and cost accounting, against the loopback replay server."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from agentkit.events import Thinking, ToolResult
from agentkit.providers import AnthropicProvider, OpenAIProvider, estimate_cost
from agentkit.runtime import RetryPolicy, Runtime
from agentkit.spec import AgentSpec
from agentkit.testing._provider_conformance import TEXT_ANSWER, ReplayServer, Reply
from agentkit.tools import Tool, ToolContext, ToolRegistry
from support.paths import DATA

pytest.importorskip("anthropic", reason="the 'anthropic' extra is not installed")
pytest.importorskip("openai", reason="the 'openai' extra is not installed")

DATA = DATA / "providers"




def _reply(api: str, name: str) -> Reply:
    data = (DATA / api / f"{name}.sse").read_bytes()
    return Reply(200, [part + b"\n\n" for part in data.split(b"\n\n") if part])


async def get_weather(arguments: dict[str, Any], context: ToolContext) -> str:
    return f"21 °C and sunny in {arguments['city']} for {arguments.get('days', 1)} days"


TOOLS = ToolRegistry([
    Tool(
        name="get_weather",
        description="Current weather for a city.",
        input_schema={"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string"},
            "days": {"type": "integer"}}, "required": ["city"]},
        function=get_weather,
    )
])
SPEC = AgentSpec(
    id="wire:weather",
    description="Weather.",
    system_prompt="You are a terse weather assistant.",
    tools=("get_weather",),
    reasoning_effort="high",
)


@pytest.mark.anyio
@pytest.mark.parametrize("api", ["anthropic", "openai_responses", "openai_chat"])
async def test_tool_loop_turn(api: str) -> None:
    with ReplayServer([_reply(api, "tool_call"), _reply(api, "text")]) as server:
        provider: Any
        if api == "anthropic":
            provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        else:
            provider = OpenAIProvider(api_key="k", base_url=server.base_url,
                                      api="chat" if api == "openai_chat" else "responses")
        async with Runtime(provider=provider, tools=TOOLS) as runtime:
            run = await runtime.start(SPEC, "What's the weather in Zürich?")
            outcome = await run.wait()
            events = [entry async for entry in run.events()]
        await provider.aclose()
    assert outcome.status == "completed", outcome.error
    assert outcome.text == TEXT_ANSWER
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 1 and "21 °C and sunny in Zürich for 3 days" in str(results[0])
    assert outcome.accounting.model_calls == 2
    (usage,) = outcome.accounting.models.values()
    assert usage.output_tokens > 0 and usage.input_tokens == 40
    # The second request carried the tool result (and, where the API has them, the
    # thinking block with its signature) back to the model.
    second = server.requests[1].strings()
    assert any("21 °C and sunny in Zürich" in s for s in second)
    if api != "openai_chat":
        assert any(isinstance(e, Thinking) for e in events)
        expected = {
            "anthropic": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
            "+LqA2WkJ9Y/BSo8Yy2wzN0GCPd6Fg==",
            "openai_responses": "gAAAAABoB3ZkZ3JhZGVkX2VuY3J5cHRlZF9yZWFzb25pbmc=",
        }
        assert expected[api] in second


@pytest.mark.anyio
async def test_engine_retries_overload_honouring_retry_after() -> None:
    overloaded = Reply.json(
        529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        {"retry-after": "0"},
    )
    limited = Reply.json(
        429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}},
        {"retry-after": "0"},
    )
    with ReplayServer([overloaded, limited, _reply("anthropic", "text")]) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        spec = SPEC.model_copy(update={"tools": ()})
        estimator = partial(estimate_cost, provider="anthropic")
        async with Runtime(provider=provider, retry=RetryPolicy(max_attempts=3),
                           cost_estimator=estimator) as runtime:
            outcome = await (await runtime.start(spec, "Hi")).wait()
        await provider.aclose()
    assert outcome.status == "completed", outcome.error
    assert len(server.requests) == 3
    # claude-conformance-1 has no price, so no cost is claimed.
    assert outcome.accounting.cost_usd is None


@pytest.mark.anyio
async def test_engine_reports_unknown_model_without_retrying() -> None:
    missing = Reply.json(404, {"type": "error", "error": {
        "type": "not_found_error", "message": "model: claude-nope"}})
    with ReplayServer([missing]) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        spec = SPEC.model_copy(update={"tools": ()})
        async with Runtime(provider=provider) as runtime:
            outcome = await (await runtime.start(spec, "Hi")).wait()
        await provider.aclose()
    assert outcome.status == "error"
    assert outcome.error is not None and "not found" in outcome.error
    assert len(server.requests) == 1
