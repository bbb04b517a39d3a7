"""Binding definitions to a host: capabilities, shell, delegation, prompts, models, and the
claude command line."""

from __future__ import annotations

import pytest

from agentkit.defs import (
    BindError,
    Definition,
    HostCapabilities,
    HostModel,
    base_prompt,
    bind,
    claude_cli_args,
    load_definition,
    parse_definition,
    resolve_model,
)
from agentkit.spec import ModelSelection
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"
EVERYTHING = HostCapabilities.of(
    ["read_file", "list_dir", "bash", "grep", "edit", "write", "agent", "agents"], shell="bash"
)


def define(*lines: str, body: str = "Do it.") -> Definition:
    return parse_definition("---\n" + "\n".join(lines) + "\n---\n" + body + "\n", "agent.md")


def rho(*lines: str, body: str = "Do it.") -> Definition:
    return parse_definition(
        "---\ndescription: d\n" + "\n".join(lines) + "\n---\n" + body + "\n", "agent.md"
    )


# --- rho tools ------------------------------------------------------------------------------


def test_listed_capabilities_become_the_sorted_allowlist() -> None:
    spec = bind(load_definition(EXAMPLES / "security-review.md"), EVERYTHING)
    assert spec.runtime == "engine"
    assert spec.tools == ("bash", "list_dir", "read_file")
    assert spec.reasoning_effort == "high"
    assert spec.id == "security-review"


def test_tools_all_means_every_host_capability() -> None:
    spec = bind(rho(), EVERYTHING)
    assert spec.tools == tuple(sorted(EVERYTHING.names))
    with_aliases = HostCapabilities.of(["read_file", "Read", "bash", "Bash", "Bash(git *)"])
    assert bind(rho(), with_aliases).tools == ("bash", "read_file")
    assert bind(rho("tools: all"), HostCapabilities()).tools == ()


@pytest.mark.parametrize(("shell", "other"), [("bash", "powershell"), ("powershell", "bash")])
def test_shell_resolves_to_the_platform_shell(shell: str, other: str) -> None:
    host = HostCapabilities.of(["bash", "powershell", "read_file"], shell=shell)  # type: ignore[arg-type]
    assert bind(rho("tools: [shell, read_file]"), host).tools == tuple(sorted([shell, "read_file"]))
    lonely = HostCapabilities.of([other], shell=shell)  # type: ignore[arg-type]
    with pytest.raises(BindError) as info:
        bind(rho("tools: [shell]"), lonely)
    assert f"shell resolves to {shell!r}" in str(info.value)


def test_a_host_offering_shell_gives_the_platform_shell_under_all() -> None:
    host = HostCapabilities.of(["shell", "grep"], shell="powershell")
    assert bind(rho(), host).tools == ("grep", "powershell")


def test_unknown_names_are_extensions_that_need_the_host() -> None:
    definition = rho("tools: [read_file, jira, web_search]")
    with pytest.raises(BindError) as info:
        bind(definition, EVERYTHING)
    assert info.value.problems == [
        "extension capability 'jira' is not supplied by this host",
        "capability 'web_search' is not available on this host",
    ]
    assert str(info.value).startswith("cannot bind agent 'agent': ")
    host = HostCapabilities.of([*EVERYTHING.names, "jira", "web_search"])
    assert bind(definition, host).tools == ("jira", "read_file", "web_search")


def test_a_delegated_agent_never_receives_agent_or_agents() -> None:
    listed = rho("tools: [agent, agents, read_file]")
    assert bind(listed, EVERYTHING).tools == ("agent", "agents", "read_file")
    assert bind(listed, EVERYTHING, delegated=True).tools == ("read_file",)
    assert "agent" not in bind(rho(), EVERYTHING, delegated=True).tools
    assert "agents" not in bind(rho(), EVERYTHING, delegated=True).tools
    # even when the host lacks them, listing them is fine for a delegate
    assert bind(listed, HostCapabilities.of(["read_file"]), delegated=True).tools == (
        "read_file",
    )


# --- prompts ----------------------------------------------------------------------------------


def test_extend_appends_the_body_to_the_base_prompt() -> None:
    spec = bind(rho(body="Be brief."), EVERYTHING)
    assert spec.system_prompt == base_prompt() + "\n\nBe brief."
    assert base_prompt().startswith("You are a coding agent")
    assert bind(rho(body=""), EVERYTHING).system_prompt == base_prompt()
    assert bind(rho(body="X"), EVERYTHING, base_prompt="Base.").system_prompt == "Base.\n\nX"


def test_replace_uses_the_body_alone() -> None:
    spec = bind(rho("prompt: replace", body="Only this."), EVERYTHING)
    assert spec.system_prompt == "Only this."


# --- models -----------------------------------------------------------------------------------


def test_inherit_keeps_the_host_selection() -> None:
    definition = rho()
    assert resolve_model(definition) == ModelSelection(policy="inherit")
    host = HostModel("xai", "grok-4.5", "xai-oauth")
    assert resolve_model(definition, host) == ModelSelection.pinned(
        "grok-4.5", provider="xai", auth="xai-oauth"
    )


def test_pinned_models_keep_their_policy() -> None:
    worker = load_definition(EXAMPLES / "worker.md")
    assert resolve_model(worker) == ModelSelection.pinned(
        "grok-4.5", provider="xai", auth="xai-oauth", policy="prefer"
    )
    required = rho("model-policy: require", "model: gpt-x", "provider: openai")
    assert resolve_model(required).policy == "require"


def test_unset_auth_keeps_a_fitting_host_login_else_the_provider_default() -> None:
    definition = rho("model: grok-4.5", "provider: xai")
    assert resolve_model(definition, HostModel("xai", "grok-3", "xai-oauth")).auth == "xai-oauth"
    assert resolve_model(definition, HostModel("openai", "gpt", "openai-api-key")).auth == (
        "xai-api-key"
    )
    assert resolve_model(definition).auth == "xai-api-key"
    assert resolve_model(rho("model: m", "provider: unknown-co")).auth is None
    no_provider = rho("model: m")
    assert resolve_model(no_provider, HostModel("openai", "gpt", "openai-api-key")).auth == (
        "openai-api-key"
    )


def test_auth_without_provider_implies_the_profiles_provider() -> None:
    selection = resolve_model(rho("model: m", "auth: anthropic-oauth"))
    assert (selection.provider, selection.auth) == ("anthropic", "anthropic-oauth")


def test_aliases_resolve_through_the_host_table() -> None:
    definition = rho("model: '@fast'")
    aliases = {"fast": HostModel("xai", "grok-mini", None), "@smart": "big-model"}
    selection = resolve_model(definition, aliases=aliases)
    assert (selection.provider, selection.model, selection.auth) == (
        "xai",
        "grok-mini",
        "xai-api-key",
    )
    smart = resolve_model(rho("model: '@smart'", "provider: openai"), aliases=aliases)
    assert (smart.provider, smart.model) == ("openai", "big-model")
    with pytest.raises(BindError) as info:
        resolve_model(rho("model: '@nope'"), aliases=aliases)
    assert "unknown model alias '@nope' (known: @fast, @smart)" in str(info.value)
    with pytest.raises(BindError) as info:
        resolve_model(rho("model: '@fast'", "provider: openai"), aliases=aliases)
    assert "is a 'xai' model, not 'openai'" in str(info.value)


def test_availability_prefer_falls_back_require_fails() -> None:
    host = HostModel("openai", "gpt", "openai-api-key")

    def never(provider: str | None, model: str) -> bool:
        return False

    preferred = rho("model-policy: prefer", "model: m", "provider: xai")
    assert resolve_model(preferred, host, available=never) == resolve_model(rho(), host)
    required = rho("model-policy: require", "model: m", "provider: xai")
    with pytest.raises(BindError) as info:
        resolve_model(required, host, available=never)
    assert "'m' of provider 'xai' is not available" in str(info.value)
    assert resolve_model(required, host, available=lambda p, m: True).model == "m"


def test_bind_carries_the_resolved_model() -> None:
    spec = bind(rho("model: '@fast'"), EVERYTHING, aliases={"fast": HostModel("xai", "g")})
    assert (spec.model.provider, spec.model.model) == ("xai", "g")
    with pytest.raises(BindError):
        bind(rho("model: '@fast'"), EVERYTHING)


# --- claude-cli --------------------------------------------------------------------------------


def test_claude_planner_binds_to_the_claude_cli_runtime() -> None:
    spec = bind(load_definition(EXAMPLES / "claude-planner.md"))
    assert spec.runtime == "claude-cli"
    assert spec.tools == ("Read", "Edit", "Bash(git *)")
    assert spec.system_prompt == "Produce a short plan. Prefer reading before editing."
    assert claude_cli_args(spec) == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--tools",
        "Read,Edit,Bash",
        "--allowedTools",
        "Read,Edit,Bash(git *)",
        "--disallowedTools",
        "Task,Agent",
        "--model=claude-opus-5",
        "--effort",
        "high",
        "--append-system-prompt=Produce a short plan. Prefer reading before editing.",
        "--setting-sources",
        "",
        "--strict-mcp-config",
    ]


def test_claude_without_tools_model_or_body() -> None:
    spec = bind(define("description: d", "runtime: claude-cli", body=""))
    assert claude_cli_args(spec) == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--tools",
        "",
        "--disallowedTools",
        "Task,Agent",
        "--setting-sources",
        "",
        "--strict-mcp-config",
    ]


def test_claude_replace_inherit_config_partials_resume_and_nested_task() -> None:
    definition = define(
        "description: d",
        "runtime: claude-cli",
        "prompt: replace",
        "inherit_claude_config: true",
        "tools: [Task, 'Bash(ls *)', 'Bash(cat *)', 'Task(x)', Read, mcp__db__query]",
        body="- You plan.",
    )
    spec = bind(definition, permission_mode="acceptEdits", max_turns=5)
    args = claude_cli_args(spec, include_partial_messages=True, resume="abc")
    assert "--system-prompt=- You plan." in args
    assert "--setting-sources" not in args and "--strict-mcp-config" not in args
    assert args[args.index("--tools") + 1] == "Bash,Read"
    assert args[args.index("--allowedTools") + 1] == "Bash(ls *),Bash(cat *),Read,mcp__db__query"
    assert args[args.index("--disallowedTools") + 1] == "Task,Agent"
    assert args[args.index("--permission-mode") + 1] == "acceptEdits"
    assert args[args.index("--max-turns") + 1] == "5"
    assert "--include-partial-messages" in args
    assert args[-1] == "--resume=abc"


def test_claude_host_capabilities_are_irrelevant() -> None:
    spec = bind(load_definition(EXAMPLES / "claude-planner.md"), HostCapabilities(), delegated=True)
    assert spec.tools == ("Read", "Edit", "Bash(git *)")
