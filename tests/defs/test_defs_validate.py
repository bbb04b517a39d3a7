"""`validate_paths` (behind `agentkit validate`) and the examples and docs of definitions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentkit.defs import (
    DefinitionError,
    DefinitionPathError,
    fingerprint_lines,
    validate_paths,
)
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"


def test_the_three_spec_examples_validate() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.md")) == [
        "claude-planner.md",
        "security-review.md",
        "worker.md",
    ]
    assert validate_paths([EXAMPLES]) == []
    assert validate_paths(sorted(EXAMPLES.glob("*.md"))) == []


def test_reports_every_problem_of_files_and_folders(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("---\ndescription: fine\n---\n")
    bad = tmp_path / "defs" / "bad.md"
    bad.parent.mkdir()
    bad.write_text("---\ndescription: x\ntools: [Read]\nmodel-policy: prefer\n---\n")
    found = validate_paths([good, bad.parent])
    assert [(Path(d.file).name, d.line, d.column, d.field) for d in found] == [
        ("bad.md", 3, 9, "tools"),
        ("bad.md", 4, 15, "model-policy"),
    ]
    assert str(found[0]).endswith(
        "bad.md:3:9: tools: 'Read' is a Claude tool entry; runtime rho takes Rho capability "
        "names (read_file, bash, ...). Mixing vocabularies is not allowed"
    )


def test_paths_that_cannot_be_validated_are_a_usage_error(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("---\ndescription: fine\n---\n")
    empty = tmp_path / "empty.md"  # a folder, whatever its name says
    empty.mkdir()
    other = tmp_path / "agent.yaml"
    other.write_text("name: x\n")
    missing = tmp_path / "missing.md"
    with pytest.raises(DefinitionPathError) as info:
        validate_paths([good, empty, other, missing])
    assert isinstance(info.value, ValueError)
    assert info.value.paths == [str(empty), str(other), str(missing)]
    assert str(info.value).splitlines() == [
        f"{empty}: no .md definitions in this folder",
        f"{other}: not a Markdown definition (.md)",
        f"{missing}: does not exist",
    ]


def test_fingerprint_lines_of_an_invalid_file_raise(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text("no frontmatter")
    with pytest.raises(DefinitionError):
        fingerprint_lines(bad)


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def test_docs_python_examples_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks((ROOT / "docs" / "definitions.md").read_text())
    assert len(blocks) >= 4
    for block in blocks:
        exec(compile(block, "docs/definitions.md", "exec"), {})


def test_docstring_examples_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import agentkit.defs as defs

    monkeypatch.chdir(tmp_path)
    seen = 0
    for name in defs.__all__:
        doc = getattr(getattr(defs, name), "__doc__", None) or ""
        for block in python_blocks(doc.replace("\n    ", "\n")):
            exec(compile(block, f"agentkit.defs.{name}", "exec"), {})
            seen += 1
    assert seen >= 6
