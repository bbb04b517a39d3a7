"""Every python example of docs/apps.md runs as written, from any folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.paths import ROOT

DOC = ROOT / "docs" / "apps.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOC), "exec"), {"__name__": "__docs__"})
