"""WebFetch against a real HTTP server on 127.0.0.1; web search, questionnaire, sub-agents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentkit.permissions import Ask
from agentkit.providers import ModelRequest, ProviderError
from agentkit.runtime import Runtime
from agentkit.spec import AgentSpec
from agentkit.testing import FunctionProvider
from agentkit.tools import (
    FetchPolicy,
    SearchResult,
    ToolContext,
    ToolError,
    address_refusal,
    fetch_url,
)
from support.tools import REGISTRY, call, call_error, local_server, make_ctx

LOCAL = FetchPolicy(allow_private=True)

PAGE = b"""<html><head><title>Test page</title><style>p {color: red}</style>
<script>alert("no")</script></head>
<body><h1>Hello</h1><p>First &amp; second</p><ul><li>one</li><li>two</li></ul></body></html>"""


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["WebFetch", "fetch_content"])
async def test_fetches_html_as_text_when_private_addresses_are_allowed(
    tmp_path: Path, name: str
) -> None:
    with local_server() as server:
        server.routes["/page"] = (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE)
        ctx = make_ctx(tmp_path, fetch_policy=LOCAL)
        text = await call(REGISTRY, name, ctx, url=server.url("/page"))
    assert text.startswith(f"URL: {server.url('/page')}\nStatus: 200\nContent-Type: text/html")
    assert "# Test page" in text and "Hello" in text and "First & second" in text
    assert "one\ntwo" in text
    assert "alert" not in text and "color" not in text


@pytest.mark.anyio
async def test_sends_the_original_host_header(tmp_path: Path) -> None:
    with local_server() as server:
        ctx = make_ctx(tmp_path, fetch_policy=LOCAL)
        text = await call(REGISTRY, "WebFetch", ctx, url=f"http://localhost:{server.port}/host")
    assert text.endswith(f"\n\nlocalhost:{server.port}")


@pytest.mark.anyio
async def test_follows_redirects_rechecking_each_hop(tmp_path: Path) -> None:
    with local_server() as server:
        server.routes["/final"] = (200, {"Content-Type": "text/plain"}, b"arrived")
        ctx = make_ctx(tmp_path, fetch_policy=FetchPolicy(allowed_networks=("127.0.0.1/32",)))
        text = await call(REGISTRY, "WebFetch", ctx, url=server.url("/redirect?to=/final"))
        assert text.startswith(f"URL: {server.url('/final')}")
        assert text.endswith("arrived")
        assert server.hits == ["/redirect?to=/final", "/final"]


@pytest.mark.anyio
async def test_too_many_redirects(tmp_path: Path) -> None:
    with local_server() as server:
        loop = "/redirect"  # without `to`, it redirects to itself
        policy = FetchPolicy(allow_private=True, max_redirects=3)
        with pytest.raises(ToolError, match="too many redirects"):
            await fetch_url(server.url(loop), policy)
        assert len(server.hits) == 4


@pytest.mark.anyio
async def test_body_size_and_text_caps(tmp_path: Path) -> None:
    with local_server() as server:
        server.routes["/big"] = (200, {"Content-Type": "text/plain"}, b"z" * 50_000)
        policy = FetchPolicy(allow_private=True, max_bytes=1000)
        result = await fetch_url(server.url("/big"), policy)
        assert result.truncated and len(result.body) == 1000
        ctx = make_ctx(tmp_path, fetch_policy=FetchPolicy(allow_private=True, max_chars=100))
        text = await call(REGISTRY, "WebFetch", ctx, url=server.url("/big"))
    assert "z" * 100 in text and "z" * 101 not in text
    assert "[text truncated at 100 characters]" in text


@pytest.mark.anyio
async def test_time_cap(tmp_path: Path) -> None:
    with local_server() as server:
        policy = FetchPolicy(allow_private=True, timeout=0.5)
        with pytest.raises(ToolError, match=r"longer than 0\.5 s"):
            await fetch_url(server.url("/slow?s=3"), policy)


@pytest.mark.anyio
async def test_binary_content_is_not_dumped(tmp_path: Path) -> None:
    with local_server() as server:
        server.routes["/img"] = (200, {"Content-Type": "image/png"}, b"\x89PNG\x00" * 10)
        ctx = make_ctx(tmp_path, fetch_policy=LOCAL)
        text = await call(REGISTRY, "WebFetch", ctx, url=server.url("/img"))
    assert "[binary content, 50 bytes, not shown]" in text


@pytest.mark.anyio
async def test_a_wrong_policy_object_is_a_tool_error(tmp_path: Path) -> None:
    tool = REGISTRY.get("WebFetch")
    assert tool is not None
    ctx = make_ctx(tmp_path, fetch_policy={"allow_private": True})
    assert "FetchPolicy" in await call_error(tool, ctx, url="http://127.0.0.1/")


def test_address_classification() -> None:
    import ipaddress

    assert address_refusal(ipaddress.ip_address("93.184.216.34")) is None
    assert address_refusal(ipaddress.ip_address("2606:4700::1111")) is None
    assert address_refusal(ipaddress.ip_address("127.0.0.1")) == "a loopback address"
    assert address_refusal(ipaddress.ip_address("::ffff:10.1.2.3")) == "a private address"
    assert address_refusal(ipaddress.ip_address("169.254.169.254")) == "a link-local address"
    assert address_refusal(ipaddress.ip_address("0.0.0.0")) == "an unspecified address"
    assert address_refusal(ipaddress.ip_address("ff02::1")) == "a multicast address"
    policy = FetchPolicy(allowed_networks=("10.0.0.0/8",))
    assert policy.refusal(ipaddress.ip_address("10.1.1.1")) is None
    assert policy.refusal(ipaddress.ip_address("192.168.0.1")) == "a private address"


# -- web search ---------------------------------------------------------------------


@dataclass
class FakeSearchEngine:
    """A search backend as a host would plug in (no network: canned results)."""

    queries: list[tuple[str, int]] = field(default_factory=list)

    async def search(self, query: str, max_results: int) -> Sequence[SearchResult]:
        self.queries.append((query, max_results))
        return [
            SearchResult("Result one", "https://example.org/1", "first snippet"),
            SearchResult("Result two", "https://example.org/2"),
        ]

    async def get_content(self, url: str) -> str:
        return f"full text of {url}"


@dataclass
class SearchOnly:
    async def search(self, query: str, max_results: int) -> Sequence[SearchResult]:
        return []


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["WebSearch", "web_search"])
async def test_web_search_uses_the_host_backend(tmp_path: Path, name: str) -> None:
    engine = FakeSearchEngine()
    ctx = make_ctx(tmp_path, web_search=engine)
    text = await call(REGISTRY, name, ctx, query="agentkit", max_results=5)
    assert text == (
        "1. Result one\n   https://example.org/1\n   first snippet\n"
        "2. Result two\n   https://example.org/2"
    )
    assert engine.queries == [("agentkit", 5)]
    content = await call(REGISTRY, "get_search_content", ctx, url="https://example.org/2")
    assert content == "full text of https://example.org/2"
    assert await call(REGISTRY, name, make_ctx(tmp_path, web_search=SearchOnly()), query="x") == (
        "No results for 'x'"
    )


@pytest.mark.anyio
async def test_get_search_content_falls_back_to_the_safe_fetch(tmp_path: Path) -> None:
    with local_server() as server:
        server.routes["/doc"] = (200, {"Content-Type": "text/plain"}, b"document body")
        allowed = make_ctx(tmp_path, web_search=SearchOnly(), fetch_policy=LOCAL)
        text = await call(REGISTRY, "get_search_content", allowed, url=server.url("/doc"))
        assert text.endswith("document body")
        tool = REGISTRY.get("get_search_content")
        assert tool is not None
        refused = await call_error(
            tool, make_ctx(tmp_path, web_search=SearchOnly()), url=server.url("/doc")
        )
        assert "loopback" in refused
        assert server.hits == ["/doc"]


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["WebSearch", "web_search", "get_search_content"])
async def test_no_search_backend_is_a_clear_tool_error(tmp_path: Path, name: str) -> None:
    tool = REGISTRY.get(name)
    assert tool is not None
    message = await call_error(tool, make_ctx(tmp_path), query="x", url="https://example.org")
    assert "web search is not configured" in message


# -- questionnaire ------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["questionnaire", "AskUserQuestion"])
async def test_questionnaire_asks_the_host(tmp_path: Path, name: str) -> None:
    asked: list[list[dict[str, Any]]] = []

    async def ask(questions: list[dict[str, Any]], ctx: ToolContext) -> dict[str, str]:
        asked.append(questions)
        assert ctx.run_id == "run-1"
        return {q["id"]: "yes" for q in questions}

    ctx = make_ctx(tmp_path, questionnaire=ask)
    answers = await call(
        REGISTRY,
        name,
        ctx,
        questions=[
            {"question": "Proceed?", "options": ["yes", "no"]},
            {"id": "why", "question": "Why?"},
        ],
    )
    assert answers == {"q1": "yes", "why": "yes"}
    assert asked[0][0] == {"id": "q1", "question": "Proceed?", "options": ["yes", "no"]}
    tool = REGISTRY.get(name)
    assert tool is not None
    # Without the service, the questions go to a person: the run waits on them (see
    # tests/runtime/test_human_in_the_loop.py).
    asked_person = await tool.function({"questions": [{"question": "?"}]}, make_ctx(tmp_path))
    assert asked_person == Ask(questions=({"id": "q1", "question": "?"},))


# -- sub-agents ---------------------------------------------------------------------


def decide(request: ModelRequest) -> Any:
    """Sub-agents answer from their system prompt: the broken one fails."""
    if "broken" in request.system:
        raise ProviderError("model unavailable")
    prompt = request.messages[-1].content  # type: ignore[union-attr]
    return {"text": f"{request.system} did: {prompt}"}


def agent_specs(caller: AgentSpec) -> list[AgentSpec]:
    return [
        caller,
        AgentSpec(id="app:explore", description="Explores code", system_prompt="explore"),
        AgentSpec(id="app:broken", description="Always fails", system_prompt="broken"),
        AgentSpec(id="app:secret", description="Not for everyone", system_prompt="secret"),
    ]


@pytest.mark.anyio
async def test_agents_lists_and_agent_runs_sub_agents(tmp_path: Path) -> None:
    caller = AgentSpec(id="app:main", allowed_subagents=("app:explore", "app:broken"))
    provider = FunctionProvider(decide, record=True)
    async with Runtime(provider=provider, agents=agent_specs(caller)) as runtime:
        ctx = ToolContext(
            working_dir=tmp_path,
            run_id="r",
            session_id="s",
            agent_id=caller.id,
            spec=caller,
            runtime=runtime,
        )
        listed = await call(REGISTRY, "agents", ctx)
        assert listed == "- app:broken: Always fails\n- app:explore: Explores code"
        answer = await call(REGISTRY, "agent", ctx, agent="app:explore", prompt="find main")
        assert answer == "explore did: find main"
        agent = REGISTRY.get("agent")
        assert agent is not None
        failed = await call_error(agent, ctx, agent="app:broken", prompt="x")
        assert "model unavailable" in failed
        refused = await call_error(agent, ctx, agent="app:secret", prompt="x")
        assert "no sub-agent 'app:secret'" in refused
    assert [r.system for r in provider.requests] == ["explore", "broken"]


@pytest.mark.anyio
async def test_agent_without_runtime_is_a_tool_error(tmp_path: Path) -> None:
    agent = REGISTRY.get("agent")
    assert agent is not None
    message = await call_error(agent, make_ctx(tmp_path), agent="x", prompt="y")
    assert "no runtime" in message


# -- every hop passes the permission rule ------------------

import dataclasses  # noqa: E402

from agentkit.tools import entry_allows  # noqa: E402


def ruled_ctx(tmp_path: Path, *entries: str) -> ToolContext:
    spec = AgentSpec(id="t:fetcher", description="d", system_prompt="p", tools=entries)
    return dataclasses.replace(make_ctx(tmp_path, fetch_policy=LOCAL), spec=spec)


@pytest.mark.anyio
async def test_a_redirect_to_another_domain_fails_the_domain_rule(tmp_path: Path) -> None:
    """`WebFetch(domain:127.0.0.2)` followed a 302 to 127.0.0.3 and returned its body: the
    rule was checked on the first URL only."""
    with local_server() as server:
        server.routes["/final"] = (200, {"Content-Type": "text/plain"}, b"secret body")
        elsewhere = f"http://localhost:{server.port}/final"
        url = server.url(f"/redirect?to={elsewhere}")
        ctx = ruled_ctx(tmp_path, "WebFetch(domain:127.0.0.1)")
        fetch = REGISTRY.get("WebFetch")
        assert fetch is not None
        assert entry_allows("WebFetch(domain:127.0.0.1)", fetch, {"url": url}, ctx)
        message = await call_error(fetch, ctx, url=url)
        assert message == f"a redirect to {elsewhere} is not allowed by the permission rules"
        assert "/final" not in server.hits
        # a redirect within the allowed domain is followed; a bare entry lifts the rule
        same = server.url(f"/redirect?to={server.url('/final')}")
        assert "secret body" in await call(REGISTRY, "WebFetch", ctx, url=same)
        free = ruled_ctx(tmp_path, "WebFetch(domain:127.0.0.1)", "fetch_content")
        assert "secret body" in await call(REGISTRY, "WebFetch", free, url=url)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "location", ["http:\\\\127.0.0.1/x", "http:/\\127.0.0.1/x", "http://[::1/x", "http://a b/"]
)
async def test_a_malformed_redirect_is_a_tool_error(tmp_path: Path, location: str) -> None:
    """`http:\\\\127.0.0.1/...` raised httpx.InvalidURL into the tool result."""
    with local_server() as server:
        ctx = make_ctx(tmp_path, fetch_policy=LOCAL)
        fetch = REGISTRY.get("WebFetch")
        assert fetch is not None
        message = await call_error(fetch, ctx, url=server.url(f"/redirect?to={location}"))
    assert message


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["http://xn--a.example/", "http://\udcff.example/", "http:\\\\x/"])
async def test_odd_urls_are_tool_errors(tmp_path: Path, url: str) -> None:
    fetch = REGISTRY.get("WebFetch")
    assert fetch is not None
    assert await call_error(fetch, make_ctx(tmp_path), url=url)
