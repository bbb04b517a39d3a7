"""`WebSearch` / `web_search` and `get_search_content`: web search through a host backend.

agentkit ships no search engine. A host supplies one as `services["web_search"]`: any
object with `async search(query, max_results) -> list[SearchResult]` and, optionally,
`async get_content(url) -> str`. Without a backend both tools fail with a clear tool error.
`get_search_content` falls back to the safe fetch (`WebFetch`'s rules) when the backend has
no `get_content`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentkit.tools._base import Tool, ToolContext, ToolError
from agentkit.tools._fetch import fetch_url, policy_of, render

__all__ = [
    "SearchBackend",
    "SearchResult",
    "get_search_content_tool",
    "web_search_tool",
]


@dataclass(frozen=True)
class SearchResult:
    """One search hit."""

    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class SearchBackend(Protocol):
    """What `services["web_search"]` must provide."""

    async def search(self, query: str, max_results: int) -> Sequence[SearchResult]:
        """Up to `max_results` hits for `query`, best first."""
        ...


def _backend(ctx: ToolContext) -> SearchBackend:
    backend = ctx.services.get("web_search")
    if backend is None:
        raise ToolError(
            "web search is not configured on this host (no `web_search` service); "
            "try WebFetch on a known URL instead"
        )
    if not isinstance(backend, SearchBackend):
        raise ToolError("the host's `web_search` service has no async `search` method")
    return backend


def web_search_tool() -> Tool:
    """The `WebSearch` / `web_search` tool."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        backend = _backend(ctx)
        query = str(args["query"]).strip()
        if not query:
            raise ToolError("the query is empty")
        limit = int(args.get("max_results") or 8)
        hits = list(await backend.search(query, limit))[:limit]
        if not hits:
            return f"No results for {query!r}"
        rows = [
            f"{i}. {hit.title}\n   {hit.url}" + (f"\n   {hit.snippet}" if hit.snippet else "")
            for i, hit in enumerate(hits, 1)
        ]
        return "\n".join(rows)

    return Tool(
        name="WebSearch",
        aliases=("web_search",),
        description=(
            "Search the web. Returns numbered results with title, URL and snippet; read a "
            "result in full with get_search_content or WebFetch."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The search query."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        function=run,
        effect="read",
        timeout=60.0,
    )


def get_search_content_tool() -> Tool:
    """The `get_search_content` tool: the full text behind a search result's URL."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        backend = _backend(ctx)
        url = str(args["url"])
        get_content = getattr(backend, "get_content", None)
        if get_content is not None:
            return str(await get_content(url))
        policy = policy_of(ctx)
        return render(await fetch_url(url, policy), policy.max_chars)

    return Tool(
        name="get_search_content",
        description="Get the full text of a web search result by its URL.",
        input_schema={
            "type": "object",
            "properties": {"url": {"type": "string", "description": "The result's URL."}},
            "required": ["url"],
            "additionalProperties": False,
        },
        function=run,
        effect="read",
        timeout=120.0,
    )
