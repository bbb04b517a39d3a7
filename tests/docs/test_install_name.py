"""The distribution is `typed-agentkit`: `agentkit` on PyPI is an unrelated project.

Every install instruction (README, docs, error messages in src/) must name the distribution,
while the import name and the console script stay `agentkit`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from support.paths import ROOT, SRC

DISTRIBUTION = "typed-agentkit"

# `pip install agentkit`, `pip install 'agentkit[x]'`, `pip install -U "agentkit>=1"`, ...:
# a pip install whose requirement is the bare name `agentkit` (not typed-agentkit, not a path).
WRONG_PIP = re.compile(r"""pip3?\s+install\s+(?:-\S+\s+)*['"]?agentkit\b(?!-)""")
# `install agentkit[mcp]` and other mentions of the extras under the wrong name.
WRONG_EXTRA = re.compile(r"""(?<![\w-])agentkit\[""")


def _texts() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    sources = sorted(SRC.rglob("*.py"))
    return pages + sources


@pytest.mark.parametrize(
    "pattern", [WRONG_PIP, WRONG_EXTRA], ids=["pip install agentkit", "agentkit[extra]"]
)
def test_no_install_instruction_names_the_wrong_distribution(pattern: re.Pattern[str]) -> None:
    found = []
    for path in _texts():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "install instructions must name typed-agentkit:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "pip install agentkit",
        "pip install 'agentkit[local]'",
        'pip install -U "agentkit>=0.1"',
        "pip3 install agentkit[postgres]",
        "MCP servers need the mcp package: install agentkit[mcp]",
    ],
)
def test_the_check_catches_the_wrong_name(line: str) -> None:
    assert WRONG_PIP.search(line) or WRONG_EXTRA.search(line)


@pytest.mark.parametrize(
    "line",
    [
        "pip install typed-agentkit",
        "pip install 'typed-agentkit[local]'",
        "pip install -e '.[dev]'",
        "pip install agentkit-tools",  # some other project: not ours to judge
        "from agentkit import Runtime",
    ],
)
def test_the_check_lets_the_right_name_through(line: str) -> None:
    assert not WRONG_PIP.search(line) and not WRONG_EXTRA.search(line)


def test_pyproject_names_the_distribution_and_keeps_the_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"agentkit": "agentkit.cli:main"}
    # extras that include other extras refer to the distribution by its own name
    for extra, requirements in project["optional-dependencies"].items():
        for requirement in requirements:
            name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
            assert name != "agentkit", f"extra {extra!r} names the wrong distribution"
    self_references = [
        r for rs in project["optional-dependencies"].values() for r in rs if "agentkit" in r
    ]
    assert self_references and all(r.startswith(f"{DISTRIBUTION}[") for r in self_references)
