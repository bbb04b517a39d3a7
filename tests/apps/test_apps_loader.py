"""Loading agent YAML files: every rule of the field table, with the exact error location."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.apps import AppLoadError, load_agent_file
from agentkit.diagnostics import Diagnostic
from agentkit.errors import LoadError
from agentkit.spec import AgentSpec, ModelSelection
from support.app_files import AGENT_CASES, GOOD_AGENT, good_agent_with


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(tmp_path: Path, text: str) -> list[Diagnostic]:
    path = write(tmp_path, text)
    with pytest.raises(AppLoadError) as info:
        load_agent_file(path)
    assert isinstance(info.value, LoadError)
    errors = info.value.errors
    assert all(d.file == str(path) for d in errors)
    return errors


@pytest.mark.parametrize(
    ("text", "line", "column", "field", "fragment"),
    [case[1:] for case in AGENT_CASES],
    ids=[case[0] for case in AGENT_CASES],
)
def test_each_rule_reports_its_exact_location(
    tmp_path: Path, text: str, line: int, column: int, field: str, fragment: str
) -> None:
    errors = errors_of(tmp_path, text)
    located = [(d.line, d.column, d.field) for d in errors]
    assert (line, column, field) in located, [str(d) for d in errors]
    match = next(d for d in errors if (d.line, d.column, d.field) == (line, column, field))
    assert fragment in match.message, str(match)


def test_good_file_loads_into_an_agent_spec(tmp_path: Path) -> None:
    agent = load_agent_file(write(tmp_path, GOOD_AGENT), app_id="research-app")
    assert agent.id == "research-app:researcher"
    assert agent.spec == AgentSpec(
        id="research-app:researcher",
        description="Researches a topic",
        system_prompt="You research.",
        model=ModelSelection.of_tier("medium"),
        reasoning_effort="high",
        tools=("Read",),
        permission_mode="acceptEdits",
        max_turns=30,
        metadata={"appId": "research-app", "source": str(tmp_path / "agent.yaml")},
    )
    assert agent.warnings == ()


def test_standalone_agent_gets_app_id_local(tmp_path: Path) -> None:
    assert load_agent_file(write(tmp_path, GOOD_AGENT)).spec.id == "local:researcher"


def test_invalid_app_id_argument_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid app id"):
        load_agent_file(write(tmp_path, GOOD_AGENT), app_id="Bad:Id")


def test_every_field_maps_onto_the_spec(tmp_path: Path) -> None:
    text = """\
name: sentinel
description: Triages messages
model: haiku
reasoningEffort: xhigh
permissionMode: bypassPermissions
maxTurns: 40
tools: [Read, Glob, "Bash(git *)"]
actions: [research-app:notes_create, system:fetch_channel_history]
allowedSubagents: [assistant:explore]
outputSchema:
  type: object
  required: [decision]
  properties:
    decision: {type: string, enum: [REPLY, IGNORE]}
mcpServers:
  files: {command: npx, args: [-y, server-fs], env: {ROOT: /tmp}}
  web: {type: http, url: "https://example.org/mcp", headers: {X-Key: k}}
networkDiscovery: true
codeBacked: false
systemPromptPrefix: |
  You triage.
"""
    agent = load_agent_file(write(tmp_path, text), app_id="research-app")
    spec = agent.spec
    assert agent.tier == "small" and agent.legacy_model == "haiku"
    assert spec.model == ModelSelection.of_tier("small")
    assert spec.reasoning_effort == "xhigh"
    assert spec.system_prompt == "You triage.\n"
    assert spec.tools == ("Read", "Glob", "Bash(git *)")
    assert spec.actions == ("research-app:notes_create", "system:fetch_channel_history")
    assert spec.allowed_subagents == ("assistant:explore",)
    assert spec.permission_mode == "bypassPermissions"
    assert spec.max_turns == 40
    assert spec.output_schema == {
        "type": "object",
        "required": ["decision"],
        "properties": {"decision": {"type": "string", "enum": ["REPLY", "IGNORE"]}},
    }
    assert type(spec.output_schema["required"]) is list  # plain values, not ruamel types
    assert spec.metadata["mcpServers"] == {
        "files": {"command": "npx", "args": ["-y", "server-fs"], "env": {"ROOT": "/tmp"}},
        "web": {"type": "http", "url": "https://example.org/mcp", "headers": {"X-Key": "k"}},
    }
    assert spec.metadata["networkDiscovery"] is True
    assert spec.metadata["codeBacked"] is False
    assert spec.metadata["model"] == "haiku"
    assert agent.network_discovery is True and agent.code_backed is False
    # bypassPermissions + Bash(...) warns
    assert [(d.field, d.severity) for d in agent.warnings] == [("tools[2]", "warning")]


@pytest.mark.parametrize(
    ("legacy", "tier"), [("opus", "large"), ("sonnet", "medium"), ("haiku", "small")]
)
def test_legacy_model_maps_to_tier(tmp_path: Path, legacy: str, tier: str) -> None:
    agent = load_agent_file(write(tmp_path, good_agent_with("tier:", f"model: {legacy}")))
    assert agent.spec.model.tier == tier


def test_every_error_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    text = """\
name: a:b
description: x
tier: huge
permissionMode: yolo
maxTurns: 0
tools: [Read, 3]
unknown: 1
systemPromptPrefix: hi
"""
    errors = errors_of(tmp_path, text)
    assert [(d.line, d.field) for d in errors] == [
        (1, "name"),
        (3, "tier"),
        (4, "permissionMode"),
        (5, "maxTurns"),
        (6, "tools[1]"),
        (7, "unknown"),
    ]


def test_every_duplicate_key_is_reported(tmp_path: Path) -> None:
    text = GOOD_AGENT + "tier: small\noutputSchema:\n  type: object\n  type: string\n"
    errors = errors_of(tmp_path, text)
    assert [(d.line, d.column, d.field) for d in errors] == [
        (8, 1, "tier"),
        (11, 3, "outputSchema.type"),
    ]
    assert "first on line 3" in errors[0].message


def test_error_string_is_file_line_col_field_message(tmp_path: Path) -> None:
    (error,) = errors_of(tmp_path, good_agent_with("tier:", "tier: huge"))
    assert str(error) == (
        f"{tmp_path / 'agent.yaml'}:3:7: tier: must be one of large, medium or small, not 'huge'"
    )


# ------------------------------------------------------------------------------- warnings


def warnings_of(tmp_path: Path, text: str) -> list[tuple[int, int, str]]:
    agent = load_agent_file(write(tmp_path, text))
    assert all(d.severity == "warning" for d in agent.warnings)
    return [(d.line, d.column, d.field) for d in agent.warnings]


def test_max_turns_below_30_warns(tmp_path: Path) -> None:
    assert warnings_of(tmp_path, good_agent_with("maxTurns:", "maxTurns: 29")) == [
        (5, 11, "maxTurns")
    ]
    assert warnings_of(tmp_path, good_agent_with("maxTurns:", "maxTurns: 30")) == []
    assert warnings_of(tmp_path, good_agent_with("maxTurns:", None)) == []


@pytest.mark.parametrize("tool", ["WebFetch", "WebSearch", "Bash", "'Bash(curl *)'"])
def test_bypass_permissions_with_outside_world_tools_warns(tmp_path: Path, tool: str) -> None:
    text = good_agent_with("permissionMode:", "permissionMode: bypassPermissions")
    text = text.replace("tools: [Read]", f"tools: [Read, {tool}]")
    assert warnings_of(tmp_path, text) == [(6, 15, "tools[1]")]
    (warning,) = load_agent_file(tmp_path / "agent.yaml").warnings
    assert "without a permission prompt (allowlist rules such as Bash(git *) still apply)" in (
        warning.message
    )
    # the same tools without bypassPermissions are fine
    assert (
        warnings_of(tmp_path, GOOD_AGENT.replace("tools: [Read]", f"tools: [Read, {tool}]")) == []
    )


def test_bypass_permissions_with_read_only_tools_does_not_warn(tmp_path: Path) -> None:
    text = good_agent_with("permissionMode:", "permissionMode: bypassPermissions")
    assert warnings_of(tmp_path, text.replace("[Read]", "[Read, Grep, Glob]")) == []


def test_star_actions_warns(tmp_path: Path) -> None:
    assert warnings_of(tmp_path, GOOD_AGENT + 'actions: ["*"]\n') == [(8, 11, "actions[0]")]


def test_warnings_ride_along_with_errors(tmp_path: Path) -> None:
    path = write(tmp_path, good_agent_with("maxTurns:", "maxTurns: 5") + "bogus: 1\n")
    with pytest.raises(AppLoadError) as info:
        load_agent_file(path)
    assert [(d.field, d.severity) for d in info.value.diagnostics] == [
        ("maxTurns", "warning"),
        ("bogus", "error"),
    ]
    assert "\n" not in str(info.value)  # the message lists errors only
    assert ": bogus: unknown field" in str(info.value)


# ------------------------------------------------------------------ anchors and aliases

ALIAS_BOMB = GOOD_AGENT + "outputSchema:\n  $defs:\n    a0: &a0 {type: string}\n" + "".join(
    f"    a{i}: &a{i} {{allOf: [{', '.join([f'*a{i - 1}'] * 9)}]}}\n" for i in range(1, 9)
)


def test_alias_bomb_is_rejected_without_expanding_it(tmp_path: Path) -> None:
    # nine levels of nine aliases each: 9**8 copies if anything expanded them
    errors = errors_of(tmp_path, ALIAS_BOMB)
    first_alias = next(d for d in errors if "aliases" in d.message)
    assert (first_alias.line, first_alias.column, first_alias.field) == (
        11,
        22,
        "outputSchema.$defs.a1.allOf[0]",
    )
    assert first_alias.message.startswith("aliases are not allowed (*a0)")
    anchors = [(d.line, d.column, d.field) for d in errors if "anchors" in d.message]
    assert anchors[:2] == [(10, 9, "outputSchema.$defs.a0"), (11, 9, "outputSchema.$defs.a1")]
    assert len(errors) == 9 + 8 * 9


def test_merge_keys_and_aliases_are_errors_at_their_location(tmp_path: Path) -> None:
    text = "base: &b {tier: small}\n<<: *b\ntools: [&t Read, *t]\n"
    errors = errors_of(tmp_path, text)
    assert [(d.line, d.column, d.field, d.message.split(" (")[0]) for d in errors] == [
        (1, 7, "base", "anchors are not allowed"),
        (2, 5, "<<", "aliases are not allowed"),
        (3, 9, "tools[0]", "anchors are not allowed"),
        (3, 18, "tools[1]", "aliases are not allowed"),
    ]


def test_app_yaml_rejects_aliases(tmp_path: Path) -> None:
    from agentkit.apps import load_app

    (tmp_path / "app.yaml").write_text("formatVersion: 2\nid: &i t\nname: *i\nagents: []\n")
    with pytest.raises(AppLoadError) as info:
        load_app(tmp_path)
    located = [(d.line, d.column, d.field) for d in info.value.errors]
    assert located == [(2, 5, "id"), (3, 7, "name")]


def test_duplicate_keys_do_not_hide_the_other_errors(tmp_path: Path) -> None:
    text = """\
name: a
name: b
description: x
tier: huge
bogus: 1
permissionMode: default
tools: []
systemPromptPrefix: p
"""
    errors = errors_of(tmp_path, text)
    assert [(d.line, d.column, d.field) for d in errors] == [
        (2, 1, "name"),
        (4, 7, "tier"),
        (5, 1, "bogus"),
    ]
    assert "duplicate key 'name'" in errors[0].message
    assert "must be one of large, medium or small" in errors[1].message
    assert "unknown field 'bogus'" in errors[2].message


# ------------------------------------------------------------------- tool name warnings


def test_tool_names_the_runtime_would_not_offer_are_warnings(tmp_path: Path) -> None:
    text = good_agent_with(
        "tools:", 'tools: [Raed, read_file, process, "Bash(git *)", "mcp__x__y"]'
    )
    agent = load_agent_file(write(tmp_path, text))
    found = [(d.line, d.column, d.field, d.severity) for d in agent.warnings]
    assert found == [
        (6, 9, "tools[0]", "warning"),
        (6, 15, "tools[1]", "warning"),
        (6, 26, "tools[2]", "warning"),
        (6, 50, "tools[4]", "warning"),
    ]
    raed, read_file, process, mcp = (d.message for d in agent.warnings)
    assert "'Raed' is not a built-in tool (did you mean 'Read'?" in raed
    assert "plugin" in raed
    assert "'read_file' is a Rho capability name" in read_file
    assert "write 'Read'" in read_file
    assert "no Claude-named equivalent" in process
    assert "MCP server 'x'" in mcp and "does not declare" in mcp
    # warnings only: the agent loads with every entry, for plugins that add tools
    assert agent.spec.tools == ("Raed", "read_file", "process", "Bash(git *)", "mcp__x__y")


def test_mcp_tools_of_a_declared_server_and_claude_names_do_not_warn(tmp_path: Path) -> None:
    text = good_agent_with("tools:", 'tools: [Read, WebFetch, "Bash(git *)", mcp__db__query]')
    text += "mcpServers:\n  db: {command: ./server}\n"
    assert load_agent_file(write(tmp_path, text)).warnings == ()


# -- bounded inputs ----------------------------------

import os  # noqa: E402
import time  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentkit._internal.input import MAX_FILE_BYTES, MAX_NESTING, MAX_NODES  # noqa: E402
from agentkit.apps import load_app, validate_paths  # noqa: E402


def load_errors(path: Path) -> list[Diagnostic]:
    """The errors of loading `path` (an agent file), which must fail within seconds."""
    started = time.monotonic()
    with pytest.raises(AppLoadError) as info:
        load_agent_file(path)
    assert time.monotonic() - started < 10
    return info.value.errors


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 500, 10_000, 50_000])
def test_deep_flow_nesting_is_refused_at_its_position(tmp_path: Path, depth: int) -> None:
    """A flow list nested 50,000 deep grew past 9.9 GB; 500 deep gave a traceback."""
    path = write(tmp_path, GOOD_AGENT + "outputSchema: " + "[" * depth + "]" * depth + "\n")
    (error,) = load_errors(path)
    assert error.line == 8
    assert error.column == len("outputSchema: ") + MAX_NESTING  # the 65th level's `[`
    assert f"at most {MAX_NESTING} levels deep" in error.message


def test_deep_block_nesting_is_refused_at_its_position(tmp_path: Path) -> None:
    lines = [f"{'  ' * i}k{i}:" for i in range(200)]
    path = write(
        tmp_path, GOOD_AGENT + "outputSchema:\n" + "\n".join(f"  {x}" for x in lines) + " 1\n"
    )
    (error,) = load_errors(path)
    assert "levels deep" in error.message
    assert error.field.startswith("outputSchema.k0.k1")
    assert error.line == 8 + MAX_NESTING  # where the 65th level starts


def test_nesting_at_the_limit_is_accepted_by_the_reader(tmp_path: Path) -> None:
    depth = MAX_NESTING - 1  # the file's own mapping is one level
    path = write(tmp_path, GOOD_AGENT + "outputSchema: " + "[" * depth + "]" * depth + "\n")
    errors = load_errors(path)  # not a valid JSON Schema, but read
    assert all("levels deep" not in e.message for e in errors)


def test_a_file_over_one_mib_is_refused_before_parsing(tmp_path: Path) -> None:
    """A 52 MB agent file took 117 s and 0.93 GB."""
    path = write(tmp_path, GOOD_AGENT + "description: " + "x" * MAX_FILE_BYTES + "\n")
    (error,) = load_errors(path)
    assert (error.line, error.column) == (0, 0)
    assert "larger than 1,048,576 bytes" in error.message


def test_too_many_keys_are_refused_quickly(tmp_path: Path) -> None:
    """300,000 keys in 3 MB took 94 s; within 1 MiB the key count is capped."""
    path = write(tmp_path, GOOD_AGENT + "outputSchema: [" + "1," * 400_000 + "1]\n")
    (error,) = load_errors(path)
    assert f"at most {MAX_NODES:,}" in error.message
    assert error.field.startswith("outputSchema[")
    keys = "".join(f"  k{i}: {i}\n" for i in range(MAX_NODES // 2 - 20))
    near = write(tmp_path, GOOD_AGENT + "outputSchema:\n" + keys, "near.yaml")
    started = time.monotonic()
    agent = load_agent_file(near)  # just under the limit: loads, and stays fast
    assert time.monotonic() - started < 10
    assert agent.spec.output_schema is not None


def test_max_turns_with_5000_digits_is_a_clean_error(tmp_path: Path) -> None:
    """A located error, never Python's 'Exceeds the limit (4300 digits)' ValueError traceback."""
    path = write(tmp_path, good_agent_with("maxTurns:", "maxTurns: " + "9" * 5000))
    (error,) = load_errors(path)
    assert (error.line, error.field) == (5, "maxTurns")
    assert "numbers may have at most" in error.message
    quoted = write(
        tmp_path, good_agent_with("maxTurns:", "maxTurns: '" + "9" * 5000 + "'"), "q.yaml"
    )
    (error,) = load_errors(quoted)
    assert error.field == "maxTurns" and "positive integer" in error.message
    assert "(5,000 characters)" in error.message and len(error.message) < 200


def test_messages_quoting_huge_keys_stay_readable(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_AGENT + "k" * 1000 + ": 1\n")
    (error,) = load_errors(path)
    assert "unknown field" in error.message and len(str(error)) < 1300


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_an_app_yaml_that_is_a_fifo_or_a_device_gets_an_honest_error(tmp_path: Path) -> None:
    """Not 'no such file' (load_app) or 'no app.yaml in it' (validate), and an agent file
    that is a FIFO never blocks the loader."""
    fifo_app = tmp_path / "fifo"
    fifo_app.mkdir()
    os.mkfifo(fifo_app / "app.yaml")
    zero_app = tmp_path / "zero"
    zero_app.mkdir()
    os.symlink("/dev/zero", zero_app / "app.yaml")
    for folder, kind in ((fifo_app, "named pipe (FIFO)"), (zero_app, "character device")):
        with pytest.raises(AppLoadError) as info:
            load_app(folder)
        assert f"is a {kind}, not a regular file" in str(info.value)
        (found,) = validate_paths([folder])
        assert f"is a {kind}" in found.message
    agent_fifo = tmp_path / "agent.yaml"
    os.mkfifo(agent_fifo)
    assert "named pipe" in load_errors(agent_fifo)[0].message
    app = tmp_path / "app"
    app.mkdir()
    (app / "app.yaml").write_text("formatVersion: 2\nid: a\nagents: [x.yaml]\n")
    os.mkfifo(app / "x.yaml")
    with pytest.raises(AppLoadError, match="not a regular file"):
        load_app(app)


def test_load_app_raises_only_app_load_error_for_odd_paths(tmp_path: Path) -> None:
    for path in ("bad\0path", tmp_path / "missing", tmp_path / ("x" * 5000)):
        with pytest.raises(AppLoadError):
            load_app(path)
    (tmp_path / "app.yaml").write_text('formatVersion: 2\nid: a\nagents: ["a\\0b.yaml"]\n')
    with pytest.raises(AppLoadError) as info:
        load_app(tmp_path)
    (error,) = info.value.errors
    assert (error.line, error.field) == (3, "agents[0]") and "NUL" in error.message


_YAML_PIECES = st.sampled_from(
    ["[", "]", "{", "}", "a: ", "- ", "\n", "  ", ", ", "'x'", "1", "9" * 50, "&a ", "*a",
     "? ", ": ", "#", "!!str ", "\t", "|\n", '"', "name: x\n", "outputSchema:\n"]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(_YAML_PIECES, max_size=40),
    depth=st.integers(0, 3000),
    repeat=st.integers(1, 3000),
)
def test_property_any_nesting_and_size_ends_quickly_with_a_clean_error(
    tmp_path: Path, pieces: list[str], depth: int, repeat: int
) -> None:
    """Random YAML, nested randomly deep and repeated to random sizes: loading an app
    always ends within seconds, with AppLoadError (the only exception load_app raises)."""
    text = "[" * depth + "".join(pieces) * repeat + "]" * depth
    app = tmp_path / "prop"
    app.mkdir(exist_ok=True)
    (app / "app.yaml").write_text("formatVersion: 2\nid: p\nagents: [a.yaml]\n")
    (app / "a.yaml").write_text(text, encoding="utf-8")
    if repeat % 2:  # the app file itself, half of the time
        (app / "app.yaml").write_text("agents: [a.yaml]\n" + text, encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(AppLoadError) as info:
        load_app(app)
    assert time.monotonic() - started < 5, len(text)
    assert all(d.file for d in info.value.diagnostics)


def test_an_output_schema_whose_refs_loop_is_refused_at_load(tmp_path: Path) -> None:
    """It loaded, and validating the agent's output then ended in RecursionError."""
    looping = (
        "outputSchema: {$defs: {a: {$ref: '#/$defs/b'}, b: {$ref: '#/$defs/a'}}, "
        "$ref: '#/$defs/a'}\n"
    )
    (error,) = load_errors(write(tmp_path, GOOD_AGENT + looping))
    assert (error.line, error.field) == (8, "outputSchema.$defs.a.$ref")
    assert "loop back to themselves" in error.message
    assert "#/$ref -> #/$defs/a -> #/$defs/a/$ref -> #/$defs/b -> #/$defs/b/$ref" in error.message
    # Nested in a property, the loop was missed: validating `{}` never reached it.
    nested = (
        "outputSchema: {type: object, properties: {a: {$ref: '#/$defs/A'}}, "
        "$defs: {A: {allOf: [{$ref: '#/$defs/A'}]}}}\n"
    )
    (error,) = load_errors(write(tmp_path, GOOD_AGENT + nested, "nested.yaml"))
    assert error.field == "outputSchema.$defs.A.allOf[0].$ref"
    assert "#/properties/a/$ref -> #/$defs/A -> #/$defs/A/allOf/0/$ref -> #/$defs/A" in (
        error.message
    )
    tree = (
        "outputSchema: {$defs: {node: {type: object, properties: {children: {type: array, "
        "items: {$ref: '#/$defs/node'}}}}}, $ref: '#/$defs/node'}\n"
    )
    assert load_agent_file(write(tmp_path, GOOD_AGENT + tree, "tree.yaml")).spec.output_schema
