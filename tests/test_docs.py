"""Every Python example in README.md and docs/ runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for index, match in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            found.append((f"{page.relative_to(ROOT)}#{index}", match.group(1)))
    return found


@pytest.mark.parametrize(("where", "code"), examples(), ids=[w for w, _ in examples()])
def test_example_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("AGENTKIT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    exec(compile(code, where, "exec"), {"__name__": "__docs__"})
