"""The editor JSON Schemas agree with the loader: what loads validates, what fails mostly fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from agentkit.apps import (
    AppLoadError,
    json_schema,
    load_agent_file,
    load_app,
    schema_path,
    schema_text,
)
from agentkit.apps._yaml import to_plain
from support.app_files import AGENT_CASES, APP, APP_CASES, EXAMPLE_APP, GOOD_AGENT

# rules only the loader can check: YAML itself, the file system, meta-schema validity
LOADER_ONLY = {
    "yaml-syntax",
    "duplicate-key",
    "empty-file",
    "schema-bad-type",
    "schema-bad-required",
    "schema-date",
    "schema-int-key",
    "non-string-key",
    "agents-missing-file",
    "agents-folder",
    "syntax",
    "two-documents",
    "tagged-value",
    "schema-nan",
}

FULL = """\
name: sentinel
description: Triages messages
model: haiku
reasoningEffort: xhigh
permissionMode: bypassPermissions
maxTurns: 40
tools: [Read, Glob, "Bash(git *)"]
actions: [research-app:notes_create, "*"]
allowedSubagents: [assistant:explore]
outputSchema: {type: object}
mcpServers:
  files: {command: npx, args: [-y, server-fs], env: {ROOT: /tmp}, cwd: /srv}
  web: {type: http, url: "https://example.org/mcp", headers: {X-Key: k}}
  events: {type: sse, url: "https://example.org/sse"}
  local: {type: stdio, command: ./server}
networkDiscovery: true
codeBacked: false
systemPromptPrefix: You triage.
"""


def parse(text: str) -> Any:
    return to_plain(YAML(typ="rt").load(text))


def errors(kind: str, text: str) -> list[str]:
    schema = json_schema(kind)  # type: ignore[arg-type]
    validator = jsonschema.Draft7Validator(schema)
    return [e.message for e in validator.iter_errors(parse(text))]


def test_schemas_are_valid_draft_7() -> None:
    for kind in ("app", "agent"):
        jsonschema.Draft7Validator.check_schema(json_schema(kind))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        GOOD_AGENT,
        FULL,
        GOOD_AGENT.replace("tier: medium", "model: opus"),
        GOOD_AGENT + "reasoningEffort: low\n",
        (EXAMPLE_APP / "agents" / "researcher.yaml").read_text(),
        (EXAMPLE_APP / "agents" / "sentinel.yaml").read_text(),
    ],
    ids=["good", "full", "legacy-model", "effort", "researcher", "sentinel"],
)
def test_valid_agent_files_validate(tmp_path: Path, text: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    load_agent_file(path)  # the loader accepts it ...
    assert errors("agent", text) == []  # ... and so does the schema


@pytest.mark.parametrize(
    "text",
    [c[1] for c in AGENT_CASES if c[0] not in LOADER_ONLY],
    ids=[c[0] for c in AGENT_CASES if c[0] not in LOADER_ONLY],
)
def test_invalid_agent_files_fail_the_schema(text: str) -> None:
    assert errors("agent", text) != []


@pytest.mark.parametrize(
    "text",
    [
        APP,
        (EXAMPLE_APP / "app.yaml").read_text(),
        APP + "name: Demo\ndescription: x\nversion: 1.0.0\n",
    ],
    ids=["minimal", "example", "full"],
)
def test_valid_app_files_validate(text: str) -> None:
    assert errors("app", text) == []


@pytest.mark.parametrize(
    "text",
    [c[1] for c in APP_CASES if c[0] not in LOADER_ONLY],
    ids=[c[0] for c in APP_CASES if c[0] not in LOADER_ONLY],
)
def test_invalid_app_files_fail_the_schema(text: str) -> None:
    assert errors("app", text) != []


def test_model_and_tier_together_fail_the_schema() -> None:
    assert errors("agent", GOOD_AGENT + "model: opus\n") != []
    assert errors("agent", GOOD_AGENT.replace("tier: medium\n", "")) != []


def test_schema_text_all_is_one_object_with_both_schemas() -> None:
    both = json.loads(schema_text())
    assert both == {"app": json_schema("app"), "agent": json_schema("agent")}


def test_schema_text_single_schema_and_file() -> None:
    for kind in ("app", "agent"):
        text = schema_text(kind)  # type: ignore[arg-type]
        assert json.loads(text) == json.loads(schema_path(kind).read_text())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown schema"):
        schema_text("other")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("30", True),
        ("30.0", True),
        ("29.0", True),
        ("30.5", False),
        ("0.0", False),
        ("'30'", False),
    ],
)
def test_loader_and_schema_agree_on_max_turns(tmp_path: Path, value: str, valid: bool) -> None:
    # JSON has one number type: 30.0 is an integer to every JSON Schema validator, so the
    # loader reads it as 30 too
    text = GOOD_AGENT.replace("maxTurns: 30", f"maxTurns: {value}")
    path = tmp_path / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    assert (errors("agent", text) == []) is valid
    if valid:
        spec = load_agent_file(path).spec
        assert spec.max_turns == int(float(value)) and isinstance(spec.max_turns, int)
    else:
        with pytest.raises(AppLoadError, match="maxTurns: must be a positive integer"):
            load_agent_file(path)


@pytest.mark.parametrize(("value", "valid"), [("2", True), ("2.0", True), ("2.5", False)])
def test_loader_and_schema_agree_on_format_version(tmp_path: Path, value: str, valid: bool) -> None:
    text = APP.replace("formatVersion: 2", f"formatVersion: {value}")
    assert (errors("app", text) == []) is valid
    (tmp_path / "app.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "one.yaml").write_text(GOOD_AGENT, encoding="utf-8")
    if valid:
        assert load_app(tmp_path).id == "demo"
    else:
        with pytest.raises(AppLoadError, match="formatVersion: must be 2"):
            load_app(tmp_path)
