"""Wire-format tests: each provider, through its official client, against a loopback
server replaying byte-exact SSE streams of its API (tests/data/providers/<api>/)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentkit.providers import (
    Provider,
    Usage,
)
from agentkit.providers._anthropic import AnthropicProvider
from agentkit.providers._openai import OpenAIProvider
from agentkit.testing._provider_conformance import (
    CONFORMANCE_SCENARIOS,
    Reply,
    WireScript,
    run_conformance_scenario,
    split_inside_utf8,
)

pytest.importorskip("anthropic", reason="the 'anthropic' extra is not installed")
pytest.importorskip("openai", reason="the 'openai' extra is not installed")

DATA = Path(__file__).parent / "data" / "providers"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _events(data: bytes) -> list[bytes]:
    """One piece per SSE event, the blank line kept with its event."""
    return [part + b"\n\n" for part in data.split(b"\n\n") if part]


def _halves(data: bytes) -> list[bytes]:
    """Every event cut in the middle too, so lines arrive in pieces."""
    pieces: list[bytes] = []
    for event in _events(data):
        mid = len(event) // 2
        pieces.extend([event[:mid], event[mid:]])
    return pieces


def _stream(api: str, name: str, split: Callable[[bytes], list[bytes]] = _events) -> Reply:
    return Reply(200, split((DATA / api / f"{name}.sse").read_bytes()))


def anthropic_script() -> WireScript:
    api = "anthropic"
    return WireScript(
        text=[_stream(api, "text")],
        text_usage=Usage("claude-conformance-1", 20, 9, cache_read_tokens=5, cache_write_tokens=3),
        tool_call=[_stream(api, "tool_call", _halves)],
        utf8=[_stream(api, "utf8", split_inside_utf8)],
        malformed_tool_arguments=[_stream(api, "malformed_tool_arguments")],
        error_mid_stream=[_stream(api, "error_mid_stream")],
        overloaded=[
            Reply.json(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                 "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
                {"retry-after": "2", "request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
            )
        ],
        rate_limited=[
            Reply.json(
                429,
                {"type": "error", "error": {"type": "rate_limit_error", "message":
                 "This request would exceed the rate limit for your organization of 50 "
                 "input tokens per minute."}},
                {"retry-after": "7", "anthropic-ratelimit-requests-remaining": "0"},
            )
        ],
        model_not_found=[
            Reply.json(
                404,
                {"type": "error", "error": {"type": "not_found_error",
                                            "message": "model: conformance-model"}},
            )
        ],
    )


def _openai_errors() -> dict[str, Any]:
    return {
        "overloaded": [
            Reply.json(
                503,
                {"error": {"message": "The engine is currently overloaded, please try again "
                           "later.", "type": "server_error", "param": None, "code": None}},
                {"retry-after": "2"},
            )
        ],
        "rate_limited": [
            Reply.json(
                429,
                {"error": {"message": "Rate limit reached for gpt-conformance-1 on requests "
                           "per min (RPM): Limit 3, Used 3, Requested 1.",
                           "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
                {"retry-after": "7", "x-ratelimit-remaining-requests": "0"},
            )
        ],
        "model_not_found": [
            Reply.json(
                404,
                {"error": {"message": "The model `conformance-model` does not exist or you do "
                           "not have access to it.", "type": "invalid_request_error",
                           "param": None, "code": "model_not_found"}},
            )
        ],
    }


def openai_script(api: str) -> WireScript:
    return WireScript(
        text=[_stream(api, "text")],
        text_usage=Usage("gpt-conformance-1", 20, 9, cache_read_tokens=5, reasoning_tokens=2),
        tool_call=[_stream(api, "tool_call", _halves)],
        utf8=[_stream(api, "utf8", split_inside_utf8)],
        malformed_tool_arguments=[_stream(api, "malformed_tool_arguments")],
        error_mid_stream=[_stream(api, "error_mid_stream")],
        **_openai_errors(),
    )


FACTORIES: dict[str, tuple[Callable[[str], Provider], Callable[[], WireScript]]] = {
    "anthropic": (
        lambda url: AnthropicProvider(api_key="sk-ant-test", base_url=url),
        anthropic_script,
    ),
    "openai-responses": (
        lambda url: OpenAIProvider(api_key="sk-test", base_url=url + "/v1", api="responses"),
        lambda: openai_script("openai_responses"),
    ),
    "openai-chat": (
        lambda url: OpenAIProvider(api_key="sk-test", base_url=url + "/v1", api="chat"),
        lambda: openai_script("openai_chat"),
    ),
    "openai-compatible": (
        lambda url: OpenAIProvider(name="openai-compatible", base_url=url + "/v1"),
        lambda: openai_script("openai_chat"),
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", list(CONFORMANCE_SCENARIOS))
@pytest.mark.parametrize("flavour", list(FACTORIES))
async def test_conformance(flavour: str, scenario: str) -> None:
    factory, script = FACTORIES[flavour]
    await run_conformance_scenario(scenario, factory, script())
