"""Fuzzing the parser: any text gives a Definition or a DefinitionError, never another
exception; parsed definitions satisfy the JSON Schema and survive reformatting."""

from __future__ import annotations

import json
import random

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.defs import (
    FIELDS,
    Definition,
    DefinitionError,
    fingerprint,
    frontmatter_schema,
    parse_definition,
)

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(text: str) -> Definition | DefinitionError:
    try:
        return parse_definition(text, "fuzz.md")
    except DefinitionError as exc:
        assert exc.diagnostics, "a DefinitionError always carries diagnostics"
        lines = text.count("\n") + 1
        for d in exc.diagnostics:
            assert d.file == "fuzz.md"
            assert 1 <= d.line <= lines + 1, d
            assert d.column >= 1, d
        return exc


@FUZZ
@given(st.text())
def test_any_text(text: str) -> None:
    outcome(text)


@FUZZ
@given(st.text())
def test_any_frontmatter_text(text: str) -> None:
    outcome("---\n" + text + "\n---\nBody")


KEYS = st.sampled_from([*FIELDS, "name", "model_policy", "", " id", "tools "])
ATOMS = st.sampled_from(
    [
        "all", "rho", "claude-cli", "extend", "replace", "inherit", "prefer", "require",
        "select", "off", "minimal", "low", "high", "max", "true", "false", "yes", "xai",
        "openai", "xai-oauth", "xai-api-key", "grok-4.5", "@fast", "@", "read_file", "bash",
        "shell", "Read", "Bash(git *)", "Bash(a, b)", "mcp__s__t", "Task", "x-y", "Bad Id",
        "", " ", "a: b", "#", "&a", "*a", "!t", "|", "-", "[", "]", "{", "'", '"', "\\",
        "é" * 3, "x" * 70,
    ]
)


def render_scalar(atom: str, style: int) -> str:
    if style == 0:
        return atom
    if style == 1:
        return "'" + atom.replace("'", "''") + "'"
    return json.dumps(atom)


@st.composite
def frontmatter(draw: st.DrawFn) -> str:
    lines = ["description: fuzzed"] if draw(st.integers(0, 3)) else []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(KEYS)
        if draw(st.booleans()):
            items = draw(st.lists(st.tuples(ATOMS, st.integers(0, 2)), max_size=4))
            value = "[" + ", ".join(render_scalar(a, s) for a, s in items) + "]"
        else:
            value = render_scalar(draw(ATOMS), draw(st.integers(0, 2)))
        lines.append(f"{key}: {value}")
    body = draw(st.sampled_from(["", "Body.", "  \n\nMulti\nline\n", "---\nmore"]))
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def instance_of(d: Definition) -> dict[str, object]:
    out: dict[str, object] = {
        "id": d.id,
        "description": d.description,
        "runtime": d.runtime,
        "prompt": d.prompt_mode,
        "tools": d.tools if d.tools == "all" else list(d.tools),
        "inherit_claude_config": d.inherit_claude_config,
    }
    if d.runtime == "claude-cli" and d.tools == ():
        del out["tools"]
    for key, value in (
        ("model", d.model),
        ("provider", d.provider),
        ("auth", d.auth),
        ("reasoning", d.reasoning),
    ):
        if value is not None:
            out[key] = value
    if d.model_policy != "inherit" or d.model is None:
        out["model-policy"] = d.model_policy
    return out


def reformat(d: Definition, seed: int) -> str:
    data = instance_of(d)
    keys = list(data)
    random.Random(seed).shuffle(keys)
    lines = []
    for key in keys:
        value = data[key]
        if isinstance(value, bool):
            lines.append(f"{key}: {str(value).lower()}")
        elif isinstance(value, list):
            lines.append(f"{key}: [" + ", ".join(json.dumps(v) for v in value) + "]")
        else:
            lines.append(f"{key}: {json.dumps(value)}")
    return "---\r\n# reformatted\r\n" + "\r\n".join(lines) + "\r\n---\r\n\r\n" + d.body + "  \n"


@FUZZ
@given(frontmatter(), st.integers(0, 1000))
def test_structured_frontmatter(text: str, seed: int) -> None:
    result = outcome(text)
    if isinstance(result, Definition):
        errors = list(jsonschema.Draft202012Validator(frontmatter_schema()).iter_errors(
            instance_of(result)
        ))
        assert not errors, [e.message for e in errors]
        again = parse_definition(reformat(result, seed), "fuzz.md")
        assert again == result
        assert fingerprint(again) == fingerprint(result)
        assert fingerprint(again, 1) == fingerprint(result, 1)


@FUZZ
@given(frontmatter())
def test_prose_rules_cover_the_schema(text: str) -> None:
    # Diagnostics prefixed "schema:" would mean the prose rules missed something.
    result = outcome(text)
    if isinstance(result, DefinitionError):
        assert not [d for d in result.diagnostics if d.message.startswith("schema:")], [
            str(d) for d in result.diagnostics
        ]
