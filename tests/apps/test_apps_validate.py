"""`validate_paths`: app folders, app.yaml files and standalone agent files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit.apps import ValidateUsageError, validate_paths
from support.paths import ROOT

EXAMPLE = ROOT / "examples" / "research-app"

AGENT = """\
name: one
description: Does things
tier: small
permissionMode: default
tools: [Read]
systemPromptPrefix: You are one.
"""


def test_example_app_is_valid_with_one_warning() -> None:
    diagnostics = validate_paths([EXAMPLE])
    assert [(d.severity, Path(d.file).name, d.line, d.field) for d in diagnostics] == [
        ("warning", "sentinel.yaml", 8, "actions[0]")
    ]


def test_app_yaml_file_and_folder_give_the_same_result() -> None:
    assert validate_paths([EXAMPLE / "app.yaml"]) == validate_paths([EXAMPLE])


def test_standalone_agent_file(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(AGENT, encoding="utf-8")
    bad = tmp_path / "bad.yml"
    bad.write_text(AGENT.replace("tier: small", "tier: tiny") + "maxTurns: 2\n", encoding="utf-8")
    diagnostics = validate_paths([good, str(bad)])
    assert [str(d) for d in diagnostics] == [
        f"{bad}:3:7: tier: must be one of large, medium or small, not 'tiny'",
        f"{bad}:7:11: maxTurns: warning: 2 is below the recommended 30; an agent doing real "
        "work may stop before it finishes",
    ]


def test_diagnostics_are_json_ready(tmp_path: Path) -> None:
    bad = tmp_path / "agent.yaml"
    bad.write_text(AGENT + "extra: 1\n", encoding="utf-8")
    (diagnostic,) = validate_paths([bad])
    assert json.loads(json.dumps(diagnostic.to_dict())) == {
        "file": str(bad),
        "line": 7,
        "column": 1,
        "field": "extra",
        "message": diagnostic.message,
        "severity": "error",
    }


def test_app_yml_is_an_app_file(tmp_path: Path) -> None:
    (tmp_path / "app.yml").write_text("formatVersion: 2\nid: x\nagents: []\n", encoding="utf-8")
    assert validate_paths([tmp_path / "app.yml"]) == []


def test_missing_paths_are_a_usage_error_before_anything_is_checked(tmp_path: Path) -> None:
    with pytest.raises(ValidateUsageError) as info:
        validate_paths([EXAMPLE, tmp_path / "nope", tmp_path / "gone.yaml"])
    assert info.value.paths == [str(tmp_path / "nope"), str(tmp_path / "gone.yaml")]
    assert f"{tmp_path / 'nope'}: no such file or folder" in str(info.value)


def test_folder_without_app_yaml_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ValidateUsageError, match="not an app folder"):
        validate_paths([tmp_path])


def test_non_yaml_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi", encoding="utf-8")
    with pytest.raises(ValidateUsageError, match=r"not an app\.yaml or agent \.yaml file"):
        validate_paths([tmp_path / "notes.txt"])


def test_no_paths_is_a_usage_error() -> None:
    with pytest.raises(ValidateUsageError, match="no path given"):
        validate_paths([])
