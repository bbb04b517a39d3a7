"""MCP servers as tools: `mcpServers` config, started and stopped with an async context.

```python
async with mcp_tools({"files": {"command": "python", "args": ["server.py"]}}) as tools:
    registry.add(*tools)  # tools are named mcp__files__<tool>
```

A server is either a local process spoken to over stdio (`command`, `args`, `env`, `cwd`)
or a streamable HTTP endpoint (`url`, `headers`). The official `mcp` package (extra `mcp`)
does the talking; it is imported only when servers are started.

A stdio server is contained like a shell command: on Linux its command runs under the
subreaper helper (`agentkit._internal.contain`), which passes its standard streams through
and kills the server and everything it started when the server stops, when the SDK stops
it (SIGTERM), and when agentkit dies, however. A tool whose input schema cannot be applied
(its `$ref`s loop without reaching the value) is refused when the server starts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from agentkit._internal.contain import CONTAINED, contained
from agentkit._internal.schema_cycles import ref_cycle
from agentkit.errors import McpConfigError, McpServerError
from agentkit.tools._base import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from mcp import Client

__all__ = [
    "McpConfigError",
    "McpServerConfig",
    "McpServerError",
    "mcp_tool_name",
    "mcp_tools",
    "parse_mcp_servers",
]

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamableHttp"})


@dataclass(frozen=True)
class McpServerConfig:
    """One entry of `mcpServers`.

    Attributes:
        name: The server's key; tool names become `mcp__<name>__<tool>`.
        command: Executable of a stdio server.
        args: Its arguments.
        env: Extra environment variables for it (merged over a safe default set).
        cwd: Its working folder.
        url: Endpoint of a streamable HTTP server.
        headers: HTTP headers sent to it (for example an authorization token).
        timeout: Seconds a tool call may take.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 120.0


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"{where}: must be a mapping of strings to strings")
    return dict(value)


def parse_mcp_servers(config: Mapping[str, Any]) -> list[McpServerConfig]:
    """Check an `mcpServers` mapping and turn it into server configs.

    Accepts the Claude `.mcp.json` shape: `{"name": {"command": ..., "args": [...],
    "env": {...}}}` for stdio servers and `{"name": {"type": "http", "url": ...,
    "headers": {...}}}` for streamable HTTP servers. A top-level `{"mcpServers": {...}}`
    wrapper is accepted too.

    Raises:
        McpConfigError: naming `mcpServers.<server>.<field>`.
    """
    if "mcpServers" in config and isinstance(config["mcpServers"], Mapping):
        config = config["mcpServers"]
    servers: list[McpServerConfig] = []
    for name, entry in config.items():
        where = f"mcpServers.{name}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise McpConfigError(f"{where}: a server name uses letters, digits, `_` and `-`")
        if not isinstance(entry, Mapping):
            raise McpConfigError(f"{where}: must be a mapping")
        known = {"type", "command", "args", "env", "cwd", "url", "headers", "timeout"}
        unknown = sorted(set(entry) - known)
        if unknown:
            raise McpConfigError(f"{where}.{unknown[0]}: unknown field")
        kind = entry.get("type", "stdio" if "command" in entry else "http")
        timeout = entry.get("timeout", 120.0)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise McpConfigError(f"{where}.timeout: must be a positive number of seconds")
        if kind == "stdio":
            command = entry.get("command")
            if not isinstance(command, str) or not command:
                raise McpConfigError(f"{where}.command: a stdio server needs a command")
            args = entry.get("args", [])
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise McpConfigError(f"{where}.args: must be a list of strings")
            cwd = entry.get("cwd")
            if cwd is not None and not isinstance(cwd, str):
                raise McpConfigError(f"{where}.cwd: must be a string")
            servers.append(
                McpServerConfig(
                    name=name,
                    command=command,
                    args=tuple(args),
                    env=_str_map(entry.get("env"), f"{where}.env"),
                    cwd=cwd,
                    timeout=float(timeout),
                )
            )
        elif kind in _HTTP_TYPES:
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise McpConfigError(f"{where}.url: an http server needs an http(s) url")
            servers.append(
                McpServerConfig(
                    name=name,
                    url=url,
                    headers=_str_map(entry.get("headers"), f"{where}.headers"),
                    timeout=float(timeout),
                )
            )
        else:
            raise McpConfigError(f"{where}.type: {kind!r} is not supported (use 'stdio' or 'http')")
    return servers


def mcp_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, with characters providers refuse replaced by `_`."""
    return "mcp__" + server + "__" + re.sub(r"[^A-Za-z0-9_-]", "_", tool)


@asynccontextmanager
async def mcp_tools(
    servers: Mapping[str, Any] | Sequence[McpServerConfig],
    *,
    errlog: TextIO | None = None,
) -> AsyncIterator[list[Tool]]:
    """Start MCP servers and yield their tools; the servers stop when the block exits.

    Args:
        servers: An `mcpServers` mapping (see
            [`parse_mcp_servers`][agentkit.tools.parse_mcp_servers]) or parsed configs.
        errlog: Where stdio servers' stderr goes (default: this process's stderr).

    Yields:
        One [`Tool`][agentkit.tools.Tool] per server tool, named `mcp__<server>__<tool>`,
        effect `execute` (a server's own read-only hints are not trusted).

    Raises:
        McpConfigError: The configuration is malformed.
        McpServerError: A server could not be started or did not list its tools.
    """
    configs = parse_mcp_servers(servers) if isinstance(servers, Mapping) else list(servers)
    try:
        import mcp  # noqa: F401  (optional extra `mcp`)
    except ModuleNotFoundError:
        raise McpServerError("MCP servers need mcp: pip install 'typed-agentkit[mcp]'") from None
    async with AsyncExitStack() as stack:
        tools: list[Tool] = []
        for config in configs:
            try:
                client = await _connect(stack, config, errlog or sys.stderr)
                listed = await _list_tools(client)
            except McpServerError:
                raise
            except Exception as exc:  # the SDK raises many kinds; name the server
                raise McpServerError(
                    f"MCP server {config.name!r} failed to start: {_describe(exc)}"
                ) from exc
            tools.extend(_as_tool(config, client, tool) for tool in listed)
        yield tools


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return str(exc) or type(exc).__name__


def _stdio_argv(config: McpServerConfig) -> list[str]:
    """The server's command line under the subreaper helper; a command that cannot be
    found is refused here (the helper would only say so on the server's stderr)."""
    assert config.command is not None
    command = config.command
    if CONTAINED:
        if os.sep in command:
            where = os.path.join(config.cwd or ".", command)
            if not (os.path.isfile(where) and os.access(where, os.X_OK)):
                raise McpServerError(
                    f"MCP server {config.name!r} failed to start: {command!r} is not an "
                    "executable file"
                )
        else:
            path = config.env.get("PATH", os.environ.get("PATH", os.defpath))
            if shutil.which(command, path=path) is None:
                raise McpServerError(
                    f"MCP server {config.name!r} failed to start: {command!r} was not found on PATH"
                )
    return contained([command, *config.args])


async def _connect(stack: AsyncExitStack, config: McpServerConfig, errlog: TextIO) -> Client:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    if config.command is not None:
        program, *args = _stdio_argv(config)
        params = StdioServerParameters(
            command=program,
            args=args,
            env=dict(config.env) or None,
            cwd=config.cwd,
        )
        client = Client(stdio_client(params, errlog=errlog), read_timeout_seconds=config.timeout)
    else:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert config.url is not None
        http = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
        )
        client = Client(
            streamable_http_client(config.url, http_client=http),
            read_timeout_seconds=config.timeout,
        )
    return await stack.enter_async_context(client)


async def _list_tools(client: Client) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _render_result(result: Any) -> str:
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            resource = block.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def _as_tool(config: McpServerConfig, client: Client, listed: Any) -> Tool:
    remote_name: str = listed.name

    async def call(args: dict[str, Any], ctx: ToolContext) -> str:
        from mcp import MCPError

        try:
            result = await client.call_tool(remote_name, args)
        except MCPError as exc:
            raise ToolError(f"{config.name}/{remote_name}: {exc}") from None
        text = _render_result(result)
        if result.is_error:
            raise ToolError(text or f"{config.name}/{remote_name} failed")
        return text

    schema = dict(listed.input_schema or {"type": "object"})
    schema.setdefault("type", "object")
    cycle = ref_cycle(schema)
    if cycle is not None:
        raise McpServerError(
            f"MCP server {config.name!r}: the input schema of its tool {remote_name!r} "
            f"cannot be applied: its $refs loop without reaching the value: {cycle}"
        )
    return Tool(
        name=mcp_tool_name(config.name, remote_name),
        description=listed.description or f"{remote_name} from the MCP server {config.name}",
        input_schema=schema,
        function=call,
        effect="execute",
        timeout=config.timeout,
    )
