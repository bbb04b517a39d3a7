"""Every frontmatter field, default, constraint and cross-field rule, with exact locations."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from agentkit.defs import (
    AuthProfile,
    AuthRegistry,
    Definition,
    DefinitionError,
    frontmatter_schema,
    load_definition,
    load_definitions,
    parse_definition,
)
from agentkit.errors import LoadError
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"


def doc(*lines: str, body: str = "Body.") -> str:
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


def errors(text: str, path: str | None = "agent.md") -> list[tuple[int, int, str, str]]:
    with pytest.raises(DefinitionError) as info:
        parse_definition(text, path)
    return [(d.line, d.column, d.field, d.message) for d in info.value.diagnostics]


def one_error(text: str, path: str | None = "agent.md") -> tuple[int, int, str, str]:
    found = errors(text, path)
    assert len(found) == 1, found
    return found[0]


def parse(*lines: str, body: str = "Body.", path: str = "agent.md") -> Definition:
    return parse_definition(doc(*lines, body=body), path)


# --- defaults -------------------------------------------------------------------------


def test_defaults() -> None:
    d = parse("description: Does things", path="some/dir/my-agent.md")
    assert d == Definition(
        id="my-agent",
        description="Does things",
        runtime="rho",
        prompt_mode="extend",
        body="Body.",
        model_policy="inherit",
        model=None,
        provider=None,
        auth=None,
        reasoning=None,
        tools="all",
        inherit_claude_config=False,
        source=Path("some/dir/my-agent.md"),
    )


def test_claude_cli_defaults_to_no_tools() -> None:
    d = parse("description: x", "runtime: claude-cli")
    assert d.tools == ()
    assert d.model_policy == "inherit"


def test_field_order_does_not_matter_runtime_resolved_before_tools() -> None:
    d = parse("tools: [Read, 'Bash(ls *)']", "description: x", "runtime: claude-cli")
    assert d.runtime == "claude-cli"
    assert d.tools == ("Read", "Bash(ls *)")


def test_error_is_a_load_error_with_file_name() -> None:
    with pytest.raises(LoadError) as info:
        parse_definition(doc("id: x"), "folder/x.md")
    assert str(info.value) == "folder/x.md:1:1: description: required"


# --- id ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a", "a1", "security-review", "x" * 64, "1-2-3"])
def test_valid_ids(value: str) -> None:
    assert parse(f"id: {value}", "description: x").id == value


@pytest.mark.parametrize(
    "value", ["Upper", "-lead", "trail-", "dou--ble", "under_score", "x" * 65, "'a b'", "''"]
)
def test_invalid_ids(value: str) -> None:
    line, column, field, _ = one_error(doc(f"id: {value}", "description: x"))
    assert (line, column, field) == (2, 5, "id")


def test_id_defaults_to_the_file_stem_and_a_bad_stem_is_an_error() -> None:
    assert parse("description: x", path="reviewer.md").id == "reviewer"
    line, column, field, message = one_error(doc("description: x"), "My Agent.md")
    assert (line, column, field) == (1, 1, "id")
    assert "'My Agent'" in message


def test_id_is_required_without_a_file_name() -> None:
    assert one_error(doc("description: x"), None)[:3] == (1, 1, "id")
    assert parse_definition(doc("id: a", "description: x")).id == "a"


# --- description -----------------------------------------------------------------------


def test_description_is_required() -> None:
    assert one_error(doc("id: a"))[:3] == (1, 1, "description")


@pytest.mark.parametrize("value", ["''", '"   "', '" \\t "'])
def test_empty_description(value: str) -> None:
    assert one_error(doc(f"description: {value}"))[:3] == (2, 14, "description")


def test_description_is_trimmed_and_counted_in_unicode_characters() -> None:
    assert parse("description: '  spaced  '").description == "spaced"
    assert len(parse(f"description: {'é' * 1024}").description) == 1024
    line, column, field, message = one_error(doc(f"description: {'é' * 1025}"))
    assert (line, column, field) == (2, 14, "description")
    assert "1024" in message
    assert parse(f"description: ' {'x' * 1024} '").description == "x" * 1024


def test_description_list_is_an_error() -> None:
    assert one_error(doc("description: [a]"))[:3] == (2, 14, "description")


# --- runtime, prompt, reasoning -------------------------------------------------------


def test_runtime_values() -> None:
    assert parse("description: x", "runtime: rho").runtime == "rho"
    assert parse("description: x", "runtime: 'claude-cli'").runtime == "claude-cli"
    line, column, field, message = one_error(doc("description: x", "runtime: claude"))
    assert (line, column, field) == (3, 10, "runtime")
    assert "rho, claude-cli" in message


def test_prompt_values_and_replace_needs_a_body() -> None:
    assert parse("description: x", "prompt: replace").prompt_mode == "replace"
    assert one_error(doc("description: x", "prompt: append"))[:3] == (3, 9, "prompt")
    line, column, field, message = one_error(doc("description: x", "prompt: replace", body="  \n"))
    assert (line, column, field) == (3, 9, "prompt")
    assert "non-empty" in message
    assert parse("description: x", "prompt: extend", body="").body == ""


def test_body_is_trimmed() -> None:
    assert parse("description: x", body="\n\n  Hello\n\nWorld  \n\n").body == "Hello\n\nWorld"


@pytest.mark.parametrize("value", ["off", "minimal", "low", "medium", "high", "xhigh", "max"])
def test_rho_reasoning(value: str) -> None:
    assert parse("description: x", f"reasoning: {value}").reasoning == value


@pytest.mark.parametrize("value", ["low", "medium", "high", "xhigh", "max"])
def test_claude_reasoning(value: str) -> None:
    assert parse("description: x", "runtime: claude-cli", f"reasoning: {value}").reasoning == value


@pytest.mark.parametrize("value", ["off", "minimal"])
def test_claude_rejects_off_and_minimal(value: str) -> None:
    line, column, field, message = one_error(
        doc("description: x", "runtime: claude-cli", f"reasoning: {value}")
    )
    assert (line, column, field) == (4, 12, "reasoning")
    assert "claude-cli" in message


def test_unknown_reasoning() -> None:
    assert one_error(doc("description: x", "reasoning: extreme"))[:3] == (3, 12, "reasoning")


# --- model, provider, auth: single-field constraints ------------------------------------


@pytest.mark.parametrize("field", ["model", "provider", "auth"])
def test_model_fields_must_be_non_empty_without_whitespace(field: str) -> None:
    extra = () if field == "model" else ("model: m",)
    empty = errors(doc("description: x", *extra, f"{field}: ''"))
    assert (empty[0][0], empty[0][1], empty[0][2]) == (3 + len(extra), len(field) + 3, field)
    spaced = errors(doc("description: x", *extra, f"{field}: 'a b'"))
    assert "whitespace" in spaced[0][3]


def test_model_policy_values() -> None:
    line, column, field, _ = one_error(doc("description: x", "model-policy: pinned"))
    assert (line, column, field) == (3, 15, "model-policy")


def test_unknown_fields_are_rejected_with_a_suggestion() -> None:
    line, column, field, message = one_error(doc("description: x", "modle: m"))
    assert (line, column, field) == (3, 1, "modle")
    assert "did you mean 'model'" in message
    assert one_error(doc("description: x", "name: m"))[:3] == (3, 1, "name")


# --- model rules, runtime rho ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "policy", "model", "provider", "auth"),
    [
        ((), "inherit", None, None, None),
        (("model-policy: inherit",), "inherit", None, None, None),
        (("model: grok-4.5",), "select", "grok-4.5", None, None),
        (("model: grok-4.5", "provider: xai", "auth: xai-oauth"), "select", "grok-4.5", "xai",
         "xai-oauth"),
        (("model: '@fast'",), "select", "@fast", None, None),
        (("model-policy: prefer", "model: m"), "prefer", "m", None, None),
        (("model-policy: require", "model: m", "provider: openai"), "require", "m", "openai",
         None),
        (("model-policy: select", "model: m", "auth: anthropic-api-key"), "select", "m", None,
         "anthropic-api-key"),
        (("model-policy: prefer", "model: m", "provider: custom"), "prefer", "m", "custom", None),
    ],
)
def test_rho_model_table_accepts(
    lines: tuple[str, ...], policy: str, model: str | None, provider: str | None, auth: str | None
) -> None:
    d = parse("description: x", *lines)
    assert (d.model_policy, d.model, d.provider, d.auth) == (policy, model, provider, auth)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (("model-policy: inherit", "model: m"), (4, 8, "model", "must be omitted")),
        (("model-policy: inherit", "provider: xai"), (4, 11, "provider", "must be omitted")),
        (("model-policy: inherit", "auth: xai-oauth"), (4, 7, "auth", "must be omitted")),
        (("model-policy: prefer",), (3, 15, "model-policy", "needs a model")),
        (("model-policy: require",), (3, 15, "model-policy", "needs a model")),
        (("model-policy: select", "provider: xai"), (3, 15, "model-policy", "needs a model")),
        (("provider: xai",), (3, 11, "provider", "needs a model")),
        (("auth: xai-oauth",), (3, 7, "auth", "needs a model")),
        (("model: m", "auth: nope"), (4, 7, "auth", "unknown auth profile 'nope'")),
        (("model: m", "provider: openai", "auth: xai-oauth"),
         (5, 7, "auth", "is for provider 'xai', not 'openai'")),
    ],
)
def test_rho_model_table_rejects(
    lines: tuple[str, ...], expected: tuple[int, int, str, str]
) -> None:
    line, column, field, message = one_error(doc("description: x", *lines))
    assert (line, column, field) == expected[:3]
    assert expected[3] in message


def test_hosts_can_register_auth_profiles() -> None:
    registry = AuthRegistry()
    registry.add(AuthProfile("corp-sso", "openai", "oauth"))
    text = doc("description: x", "model: m", "provider: openai", "auth: corp-sso")
    assert parse_definition(text, "a.md", auth_profiles=registry).auth == "corp-sso"
    with pytest.raises(DefinitionError):
        parse_definition(text, "a.md")


# --- model rules, runtime claude-cli --------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "policy", "model"),
    [
        ((), "inherit", None),
        (("model-policy: inherit",), "inherit", None),
        (("model: claude-opus-5",), "select", "claude-opus-5"),
        (("model-policy: select", "model: sonnet"), "select", "sonnet"),
    ],
)
def test_claude_model_table_accepts(lines: tuple[str, ...], policy: str, model: str | None) -> None:
    d = parse("description: x", "runtime: claude-cli", *lines)
    assert (d.model_policy, d.model, d.provider, d.auth) == (policy, model, None, None)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (("model-policy: prefer", "model: m"), (4, 15, "model-policy", "not accepted")),
        (("model-policy: require", "model: m"), (4, 15, "model-policy", "not accepted")),
        (("model-policy: select",), (4, 15, "model-policy", "needs a model")),
        (("model-policy: inherit", "model: m"), (5, 8, "model", "must be omitted")),
        (("model: '@fast'",), (4, 8, "model", "@aliases")),
        (("model-policy: inherit", "model: '@fast'"), (5, 8, "model", "@aliases")),
        (("model: m", "provider: anthropic"), (5, 11, "provider", "rho only")),
        (("model: m", "auth: anthropic-oauth"), (5, 7, "auth", "rho only")),
        (("provider: anthropic",), (4, 11, "provider", "rho only")),
    ],
)
def test_claude_model_table_rejects(
    lines: tuple[str, ...], expected: tuple[int, int, str, str]
) -> None:
    line, column, field, message = one_error(doc("description: x", "runtime: claude-cli", *lines))
    assert (line, column, field) == expected[:3]
    assert expected[3] in message


# --- tools --------------------------------------------------------------------------------


def test_rho_vocabulary() -> None:
    assert parse("description: x", "tools: all").tools == "all"
    assert parse("description: x", "tools: 'all'").tools == "all"
    every = (
        "agent, agents, bash, edit, fetch_content, get_search_content, glob, grep, list_dir, "
        "powershell, process, questionnaire, read_file, rho, shell, skill, web_search, write"
    )
    assert len(parse("description: x", f"tools: [{every}]").tools) == 18
    assert parse("description: x", "tools: [my-extension, mcp_tool]").tools == (
        "my-extension",
        "mcp_tool",
    )


@pytest.mark.parametrize(
    ("item", "column", "message"),
    [
        ("Read", 9, "Claude tool entry"),
        ("'bash(ls)'", 9, "Claude tool entry"),
        ("9lives", 9, "not a capability name"),
        ("'a.b'", 9, "not a capability name"),
    ],
)
def test_rho_rejects_claude_entries(item: str, column: int, message: str) -> None:
    line, col, field, text = one_error(doc("description: x", f"tools: [{item}]"))
    assert (line, col, field) == (3, column, "tools")
    assert message in text


def test_claude_vocabulary() -> None:
    d = parse(
        "description: x",
        "runtime: claude-cli",
        "tools: [Read, Edit, Glob, Grep, 'Bash(git *)', mcp__server__tool, 'Bash(npm run \"x\")',"
        " 'WebFetch(domain:example.com)', 'Bash(f (g) h)']",
    )
    assert d.tools == (
        "Read",
        "Edit",
        "Glob",
        "Grep",
        "Bash(git *)",
        "mcp__server__tool",
        'Bash(npm run "x")',
        "WebFetch(domain:example.com)",
        "Bash(f (g) h)",
    )


@pytest.mark.parametrize(
    ("tools", "column", "message"),
    [
        ("[read_file]", 9, "is a Rho capability"),
        ("[Read, bash]", 15, "is a Rho capability"),
        ("['Bash(git log, diff)']", 22, "commas are not allowed"),
        ("['Bash(git *']", 14, "unbalanced parentheses"),
        ("['Bash(a))']", 17, "unexpected text after"),
        ("['Bash(a) x']", 17, "unexpected text after"),
        ("['Bash()']", 14, "empty specifier"),
        ("['Re ad']", 12, "unexpected ' '"),
        ("['(x)']", 10, "starts with a name"),
        ("['Read!']", 14, "unexpected '!'"),
    ],
)
def test_claude_entry_grammar(tools: str, column: int, message: str) -> None:
    text_in = doc("description: x", "runtime: claude-cli", f"tools: {tools}")
    line, col, field, text = one_error(text_in)
    assert (line, col, field) == (4, column, "tools")
    assert message in text


def test_claude_rejects_tools_all() -> None:
    line, column, field, message = one_error(
        doc("description: x", "runtime: claude-cli", "tools: all")
    )
    assert (line, column, field) == (4, 8, "tools")
    assert "not accepted" in message


def test_mixing_vocabularies_reports_each_foreign_entry() -> None:
    found = errors(doc("description: x", "tools: [read_file, Read, 'Bash(git *)', grep]"))
    assert [(f[0], f[1], f[2]) for f in found] == [(3, 20, "tools"), (3, 26, "tools")]
    found = errors(
        doc("description: x", "runtime: claude-cli", "tools: [read_file, Read, grep]")
    )
    assert [(f[0], f[1], f[2]) for f in found] == [(4, 9, "tools"), (4, 26, "tools")]


@pytest.mark.parametrize(
    ("tools", "column", "message"),
    [
        ("bash", 8, "must be `all` or a list"),
        ("true", 8, "must be `all` or a list"),
        ("[bash, true]", 15, "boolean"),
        ("[bash, '']", 15, "empty tool entry"),
        ("[bash, grep, bash]", 21, "duplicate tool entry"),
    ],
)
def test_tools_shape(tools: str, column: int, message: str) -> None:
    line, col, field, text = one_error(doc("description: x", f"tools: {tools}"))
    assert (line, col, field) == (3, column, "tools")
    assert message in text


# --- inherit_claude_config ------------------------------------------------------------------


def test_inherit_claude_config() -> None:
    assert parse("description: x", "runtime: claude-cli", "inherit_claude_config: true") \
        .inherit_claude_config is True
    assert parse("description: x", "inherit_claude_config: false").inherit_claude_config is False
    line, column, field, message = one_error(doc("description: x", "inherit_claude_config: true"))
    assert (line, column, field) == (3, 24, "inherit_claude_config")
    assert "claude-cli" in message
    line, column, field, _ = one_error(
        doc("description: x", "runtime: claude-cli", "inherit_claude_config: [true]")
    )
    assert (line, column, field) == (4, 24, "inherit_claude_config")


# --- all errors at once, and the JSON Schema ---------------------------------------------------


def test_all_errors_of_a_file_are_reported_together_in_order() -> None:
    found = errors(
        doc(
            "id: Bad_Id",
            "description: ''",
            "runtime: claude-cli",
            "tools: [read_file, 'Bash(a, b)']",
            "model: '@alias'",
            "provider: xai",
            "reasoning: off",
            "inherit_claude_config: yes",
            "colour: blue",
        )
    )
    assert [(f[0], f[2]) for f in found] == [
        (2, "id"),
        (3, "description"),
        (5, "tools"),
        (5, "tools"),
        (6, "model"),
        (7, "provider"),
        (8, "reasoning"),
        (9, "inherit_claude_config"),
        (10, "colour"),
    ]
    assert not any(f[3].startswith("schema:") for f in found)


def test_the_shipped_schema_is_the_documents() -> None:
    schema = frontmatter_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "https://rho.dev/schemas/agent-definition-frontmatter.json"
    assert sorted(schema["properties"]) == sorted(
        ["id", "description", "runtime", "prompt", "model-policy", "model", "provider", "auth",
         "reasoning", "tools", "inherit_claude_config"]
    )


def test_schema_errors_are_never_reported_twice() -> None:
    cases = [
        doc("description: x", "runtime: claude-cli", "model-policy: inherit", "model: m"),
        doc("description: x", "model-policy: prefer"),
        doc("description: x", "runtime: claude-cli", "tools: all"),
        doc("description: x", "tools: [a, a]"),
        doc("description: x", "colour: blue"),
        doc("id: a"),
    ]
    for text in cases:
        found = errors(text)
        fields = [f[2] for f in found]
        assert len(fields) == len(set(fields)), found


# --- files and folders -------------------------------------------------------------------------


def test_examples_load() -> None:
    definitions = load_definitions(EXAMPLES)
    assert [d.id for d in definitions] == ["claude-planner", "security-review", "worker"]
    for d in definitions:
        assert d.source is not None and d.source.parent == EXAMPLES


def test_load_definition_reports_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError) as info:
        load_definition(tmp_path / "missing.md")
    assert info.value.diagnostics[0].field == "file"
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"---\ndescription: caf\xe9\n---\n")
    with pytest.raises(DefinitionError) as info:
        load_definition(bad)
    d = info.value.diagnostics[0]
    assert (d.file, d.line, d.column, d.field) == (str(bad), 2, 17, "file")
    nul = tmp_path / "nul.md"
    nul.write_text("---\ndescription: a\x00b\n---\n")
    with pytest.raises(DefinitionError) as info:
        load_definition(nul)
    d = info.value.diagnostics[0]
    assert (d.line, d.column, d.field) == (2, 15, "file")


def test_load_definitions_collects_every_file_and_rejects_duplicate_ids(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(doc("description: x"))
    (tmp_path / "b.md").write_text(doc("id: a", "description: x"))
    (tmp_path / "c.md").write_text(doc("description: ''"))
    (tmp_path / "notes.txt").write_text("ignored")
    with pytest.raises(DefinitionError) as info:
        load_definitions(tmp_path)
    found = [(Path(d.file).name, d.line, d.column, d.field) for d in info.value.diagnostics]
    assert found == [("b.md", 2, 1, "id"), ("c.md", 2, 14, "description")]
    assert "also defined in" in info.value.diagnostics[0].message
    with pytest.raises(DefinitionError):
        load_definitions(tmp_path / "a.md")


# -- bounded inputs ----------------------------------

import os  # noqa: E402
import time  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from agentkit._internal.input import MAX_FILE_BYTES  # noqa: E402


def test_deeply_nested_frontmatter_lists_are_one_clean_error(tmp_path: Path) -> None:
    """Frontmatter allows one level of `[a, b]`: a list nested 50,000 deep is refused at its
    second `[`, quickly, with no recursion."""
    path = tmp_path / "deep.md"
    path.write_text(doc("description: x", "tools: " + "[" * 50_000 + "]" * 50_000))
    started = time.monotonic()
    with pytest.raises(DefinitionError) as info:
        load_definition(path)
    assert time.monotonic() - started < 5
    (error,) = info.value.diagnostics
    assert (error.line, error.column, error.field) == (3, 9, "tools")
    assert "nested lists are not accepted" in error.message


def test_a_definition_over_one_mib_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_text(doc("description: x", body="x" * MAX_FILE_BYTES))
    with pytest.raises(DefinitionError) as info:
        load_definition(path)
    (error,) = info.value.diagnostics
    assert (error.line, error.column, error.field) == (0, 0, "file")
    assert "larger than 1,048,576 bytes" in error.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_definition_that_is_a_fifo_or_device_is_refused_without_blocking(
    tmp_path: Path,
) -> None:
    """A FIFO is refused, not read: reading it would block the loader until something
    wrote to it."""
    os.mkfifo(tmp_path / "pipe.md")
    os.symlink("/dev/zero", tmp_path / "zero.md")
    (tmp_path / "good.md").write_text(doc("description: x"))
    with pytest.raises(DefinitionError) as info:
        load_definitions(tmp_path)
    messages = {Path(d.file).name: d.message for d in info.value.diagnostics}
    assert messages == {
        "pipe.md": "is a named pipe (FIFO), not a regular file",
        "zero.md": "is a character device, not a regular file",
    }


def test_definition_loaders_raise_only_their_error_for_odd_paths(tmp_path: Path) -> None:
    for path in ("bad\0path.md", tmp_path / "missing.md", tmp_path / ("x" * 5000 + ".md")):
        with pytest.raises(DefinitionError):
            load_definition(path)
    with pytest.raises(DefinitionError):
        load_definitions("bad\0folder")


_MD_PIECES = st.sampled_from(
    ["[", "]", "a", ", ", "'x'", '"y"', "\n", "tools: ", "description: ", "id: ", "---\n",
     "  ", "- ", "{", "}", "#", ": ", "\\", "9" * 60]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pieces=st.lists(_MD_PIECES, max_size=40),
    depth=st.integers(0, 5000),
    repeat=st.integers(1, 5000),
)
def test_property_definitions_of_any_nesting_and_size_end_quickly(
    tmp_path: Path, pieces: list[str], depth: int, repeat: int
) -> None:
    """Random frontmatter, nested and repeated to random sizes: the loader always ends
    within seconds, with a Definition or a DefinitionError and nothing else."""
    text = "---\n" + "[" * depth + "".join(pieces) * repeat + "]" * depth + "\n---\nBody\n"
    path = tmp_path / "prop.md"
    path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    try:
        load_definition(path)
    except DefinitionError as exc:
        assert exc.diagnostics
    assert time.monotonic() - started < 5
