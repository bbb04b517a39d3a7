"""The restricted frontmatter grammar: accepted forms and every rejected form with its
exact location."""

from __future__ import annotations

import pytest

from agentkit.defs import DefinitionError, parse_definition


def doc(*lines: str, body: str = "Body.") -> str:
    return "---\n" + "\n".join(lines) + "\n---\n" + body + "\n"


def errors(text: str, path: str = "agent.md") -> list[tuple[int, int, str, str]]:
    with pytest.raises(DefinitionError) as info:
        parse_definition(text, path)
    return [(d.line, d.column, d.field, d.message) for d in info.value.diagnostics]


def one_error(text: str) -> tuple[int, int, str, str]:
    found = errors(text)
    assert len(found) == 1, found
    return found[0]


def test_plain_single_and_double_quoted_scalars() -> None:
    d = parse_definition(
        doc(
            "description: 'it''s \"fine\"'",
            'model: "caf\\u00e9"',
            "provider: plain-value",
        ),
        "a.md",
    )
    assert d.description == 'it\'s "fine"'
    assert d.model == "café"
    assert d.provider == "plain-value"


def test_escapes_in_double_quotes() -> None:
    d = parse_definition(doc('description: "a\\"b\\\\c\\u00e9\\x41\\U0001F600"'), "a.md")
    assert d.description == 'a"b\\céA\U0001f600'


def test_comments_blank_lines_and_inline_comments() -> None:
    d = parse_definition(
        doc("# a comment", "", "description: hi there # trailing note", "   # indented comment"),
        "a.md",
    )
    assert d.description == "hi there"


def test_hash_without_space_is_part_of_a_plain_value() -> None:
    d = parse_definition(doc("description: issue#5"), "a.md")
    assert d.description == "issue#5"


def test_crlf_and_bom_are_accepted() -> None:
    text = "\ufeff---\r\ndescription: x\r\ntools: [bash]\r\n---\r\nLine one\r\nLine two\r\n"
    d = parse_definition(text, "a.md")
    assert d.tools == ("bash",)
    assert d.body == "Line one\nLine two"


def test_flow_list_forms() -> None:
    d = parse_definition(
        doc("description: x", "runtime: claude-cli", "tools: [ Read ,'Edit', \"Bash(git *)\" ]"),
        "a.md",
    )
    assert d.tools == ("Read", "Edit", "Bash(git *)")
    assert parse_definition(doc("description: x", "tools: []"), "a.md").tools == ()


def test_missing_opening_line() -> None:
    assert one_error("description: x\n---\n")[:3] == (1, 1, "frontmatter")
    assert one_error(" ---\ndescription: x\n---\n")[:3] == (1, 1, "frontmatter")
    assert one_error("")[:3] == (1, 1, "frontmatter")


def test_unclosed_frontmatter() -> None:
    line, column, field, message = one_error("---\ndescription: x\n")
    assert (line, column, field) == (1, 1, "frontmatter")
    assert "never closed" in message


def test_closing_line_must_be_exact() -> None:
    assert "never closed" in one_error("---\ndescription: x\n--- \n")[3]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (("description: x", "tools:", "  - bash"), (3, 1, "tools", "block lists")),
        (("description: x", "tools:", "- bash", "- grep"), (3, 1, "tools", "block lists")),
        (("description: x", "model:", "  name: grok"), (3, 1, "model", "nested maps")),
        (("description: x", "model:", "  grok"), (3, 1, "model", "multi-line")),
        (("description: x", "model:"), (3, 1, "model", "missing value")),
        (("description: x", "model:   # nothing"), (3, 1, "model", "missing value")),
        (("description: one", "  two"), (3, 3, "description", "multi-line")),
        (("description: one", "- two"), (3, 1, "description", "block lists")),
        (("description: &anchor x",), (2, 14, "description", "anchors")),
        (("description: *alias",), (2, 14, "description", "aliases")),
        (("description: !!str x",), (2, 14, "description", "tags")),
        (("description: |",), (2, 14, "description", "multi-line (block)")),
        (("description: >-",), (2, 14, "description", "multi-line (block)")),
        (("description: {a: b}",), (2, 14, "description", "nested maps")),
        (("description: - x",), (2, 14, "description", "block lists")),
        (("description: \"open",), (2, 14, "description", "unterminated string")),
        (("description: 'open",), (2, 14, "description", "unterminated string")),
        (("description: \"bad \\q\"",), (2, 19, "description", "invalid escape")),
        (("description: \"x\" extra",), (2, 18, "description", "unexpected text")),
        (("description: a: b",), (2, 15, "description", "cannot contain ': '")),
        (("description:x",), (2, 13, "description", "space after ':'")),
        (("description: x", "just some text"), (3, 1, "frontmatter", "expected `key: value`")),
        (("'description': x",), (2, 1, "description", "keys are plain names")),
        (("description : x",), (2, 1, "description", "expected `key: value`")),
        (("  description: x",), (2, 3, "description", "indented lines")),
        (("description: x", "tools: [a, b"), (3, 8, "tools", "unterminated list")),
        (("description: x", "tools: [a, b,]"), (3, 14, "tools", "trailing comma")),
        (("description: x", "tools: [a,,b]"), (3, 11, "tools", "empty list item")),
        (("description: x", "tools: [a, [b]]"), (3, 12, "tools", "nested lists")),
        (("description: x", "tools: [a, {b: c}]"), (3, 12, "tools", "nested maps")),
        (("description: x", "tools: [a, &x b]"), (3, 12, "tools", "anchors")),
        (("description: x", "tools: [a] b"), (3, 12, "tools", "unexpected text")),
        (("description: x", "tools: [a # b]"), (3, 8, "tools", "unterminated list")),
        (("description: x\x07",), (2, 15, "description", "control characters")),
    ],
)
def test_rejected_forms_with_location(
    lines: tuple[str, ...], expected: tuple[int, int, str, str]
) -> None:
    line, column, field, message = one_error(doc(*lines))
    assert (line, column, field) == expected[:3]
    assert expected[3] in message


def test_duplicate_key_points_at_the_second() -> None:
    line, column, field, message = one_error(doc("description: x", "id: a", "id: b"))
    assert (line, column, field) == (4, 1, "id")
    assert "duplicate key" in message and "line 3" in message


@pytest.mark.parametrize("word", ["yes", "no", "on", "True", "FALSE", "1", "1.0", "null", "~"])
def test_only_plain_true_false_are_booleans(word: str) -> None:
    d = parse_definition(doc(f"description: {word}"), "a.md")
    assert d.description == word
    line, column, field, message = one_error(
        doc("description: x", "runtime: claude-cli", f"inherit_claude_config: {word}")
    )
    assert (line, column, field) == (4, 24, "inherit_claude_config")
    assert "true or false" in message


def test_quoted_true_is_a_string_not_a_boolean() -> None:
    line, column, field, _ = one_error(
        doc("description: x", "runtime: claude-cli", "inherit_claude_config: 'true'")
    )
    assert (line, column, field) == (4, 24, "inherit_claude_config")


def test_boolean_where_a_string_is_expected() -> None:
    line, column, field, message = one_error(doc("description: true"))
    assert (line, column, field) == (2, 14, "description")
    assert "boolean" in message
    assert parse_definition(doc("description: 'true'"), "a.md").description == "true"


def test_a_block_is_reported_once() -> None:
    found = errors(doc("description: x", "tools:", "  - a", "  - b", "  - c", "model: m"))
    assert [(f[0], f[2]) for f in found] == [(3, "tools")]


def test_every_grammar_error_of_a_file_is_reported() -> None:
    found = errors(doc("description: &a x", "model: 'open", "provider: a: b", "garbage"))
    assert [(f[0], f[2]) for f in found] == [
        (2, "description"),
        (3, "model"),
        (4, "provider"),
        (5, "frontmatter"),
    ]
