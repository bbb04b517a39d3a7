"""Tools: what they are, the built-in ones, the rules that restrict them, and MCP servers.

A [`Tool`][agentkit.tools.Tool] is an async function with a JSON Schema for its arguments
and an `effect` that permission modes decide by; [`tool`][agentkit.tools.tool] (or
[`Tool.from_function`][agentkit.tools.Tool.from_function]) makes one of a plain Python
function, sync or async, reading its schema from the type hints. The engine offers a
spec's allowlisted tools to the model, validates every call's arguments, and turns any
failure into a tool error the model sees.

[`builtin_tools`][agentkit.tools.builtin_tools] gives every built-in tool, each registered
under its Claude name and its Rho capability name (`Read` / `read_file`, `Bash` / `bash` /
`shell`, ...). [`entry_allows`][agentkit.tools.entry_allows] decides whether an allowlist
entry such as `Bash(git *)` allows a call. File tools stay inside the run's working
directory ([`Sandbox`][agentkit.tools.Sandbox]); `WebFetch` refuses private addresses
unless a [`FetchPolicy`][agentkit.tools.FetchPolicy] allows them;
[`mcp_tools`][agentkit.tools.mcp_tools] turns `mcpServers` into tools.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.permissions import Effect
    from agentkit.tools._base import (
        FunctionTool,
        Tool,
        ToolContext,
        ToolError,
        ToolFunction,
        ToolRegistry,
        parse_tool_entry,
        tool,
    )
    from agentkit.tools._builtin import (
        CLAUDE_TOOL_NAMES,
        EXTENSION_CAPABILITIES,
        RHO_CAPABILITIES,
        Vocabulary,
        builtin_tools,
    )
    from agentkit.tools._fetch import (
        FetchPolicy,
        FetchResult,
        address_refusal,
        fetch_tool,
        fetch_url,
    )
    from agentkit.tools._files import (
        edit_tool,
        glob_tool,
        grep_tool,
        list_dir_tool,
        read_tool,
        write_tool,
    )
    from agentkit.tools._host import (
        QuestionnaireCallback,
        agent_tool,
        agents_tool,
        questionnaire_tool,
    )
    from agentkit.tools._mcp import (
        McpConfigError,
        McpServerConfig,
        McpServerError,
        mcp_tool_name,
        mcp_tools,
        parse_mcp_servers,
    )
    from agentkit.tools._rules import (
        command_matches,
        entry_allows,
        entry_tool_names,
        is_simple_command,
        path_matches,
    )
    from agentkit.tools._sandbox import Sandbox
    from agentkit.tools._search import (
        SearchBackend,
        SearchResult,
        get_search_content_tool,
        web_search_tool,
    )
    from agentkit.tools._shell import ProcessTable, bash_tool, powershell_tool, process_tool

_EXPORTS: dict[str, str] = {
    "CLAUDE_TOOL_NAMES": "agentkit.tools._builtin",
    "EXTENSION_CAPABILITIES": "agentkit.tools._builtin",
    "Effect": "agentkit.permissions",
    "FetchPolicy": "agentkit.tools._fetch",
    "FetchResult": "agentkit.tools._fetch",
    "FunctionTool": "agentkit.tools._base",
    "McpConfigError": "agentkit.tools._mcp",
    "McpServerConfig": "agentkit.tools._mcp",
    "McpServerError": "agentkit.tools._mcp",
    "ProcessTable": "agentkit.tools._shell",
    "QuestionnaireCallback": "agentkit.tools._host",
    "RHO_CAPABILITIES": "agentkit.tools._builtin",
    "Sandbox": "agentkit.tools._sandbox",
    "SearchBackend": "agentkit.tools._search",
    "SearchResult": "agentkit.tools._search",
    "Tool": "agentkit.tools._base",
    "ToolContext": "agentkit.tools._base",
    "ToolError": "agentkit.tools._base",
    "ToolFunction": "agentkit.tools._base",
    "ToolRegistry": "agentkit.tools._base",
    "Vocabulary": "agentkit.tools._builtin",
    "address_refusal": "agentkit.tools._fetch",
    "agent_tool": "agentkit.tools._host",
    "agents_tool": "agentkit.tools._host",
    "bash_tool": "agentkit.tools._shell",
    "builtin_tools": "agentkit.tools._builtin",
    "command_matches": "agentkit.tools._rules",
    "edit_tool": "agentkit.tools._files",
    "entry_allows": "agentkit.tools._rules",
    "entry_tool_names": "agentkit.tools._rules",
    "fetch_tool": "agentkit.tools._fetch",
    "fetch_url": "agentkit.tools._fetch",
    "get_search_content_tool": "agentkit.tools._search",
    "glob_tool": "agentkit.tools._files",
    "grep_tool": "agentkit.tools._files",
    "is_simple_command": "agentkit.tools._rules",
    "list_dir_tool": "agentkit.tools._files",
    "mcp_tool_name": "agentkit.tools._mcp",
    "mcp_tools": "agentkit.tools._mcp",
    "parse_mcp_servers": "agentkit.tools._mcp",
    "parse_tool_entry": "agentkit.tools._base",
    "path_matches": "agentkit.tools._rules",
    "powershell_tool": "agentkit.tools._shell",
    "process_tool": "agentkit.tools._shell",
    "questionnaire_tool": "agentkit.tools._host",
    "read_tool": "agentkit.tools._files",
    "tool": "agentkit.tools._base",
    "web_search_tool": "agentkit.tools._search",
    "write_tool": "agentkit.tools._files",
}

__all__ = [
    "CLAUDE_TOOL_NAMES",
    "EXTENSION_CAPABILITIES",
    "RHO_CAPABILITIES",
    "Effect",
    "FetchPolicy",
    "FetchResult",
    "FunctionTool",
    "McpConfigError",
    "McpServerConfig",
    "McpServerError",
    "ProcessTable",
    "QuestionnaireCallback",
    "Sandbox",
    "SearchBackend",
    "SearchResult",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolRegistry",
    "Vocabulary",
    "address_refusal",
    "agent_tool",
    "agents_tool",
    "bash_tool",
    "builtin_tools",
    "command_matches",
    "edit_tool",
    "entry_allows",
    "entry_tool_names",
    "fetch_tool",
    "fetch_url",
    "get_search_content_tool",
    "glob_tool",
    "grep_tool",
    "is_simple_command",
    "list_dir_tool",
    "mcp_tool_name",
    "mcp_tools",
    "parse_mcp_servers",
    "parse_tool_entry",
    "path_matches",
    "powershell_tool",
    "process_tool",
    "questionnaire_tool",
    "read_tool",
    "tool",
    "web_search_tool",
    "write_tool",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
