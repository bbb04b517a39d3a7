"""`Agent` is typed through generics: `mypy --strict` infers `RunOutcome[Forecast]` and
`Forecast` for an `output_type`, `str` without one, and refuses a misspelt keyword."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.paths import ROOT, SRC

HERE = Path(__file__).resolve().parent


def _mypy(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(SRC)},
        cwd=HERE,
        timeout=300,
    )


def test_outputs_are_typed(tmp_path: Path) -> None:
    found = _mypy(HERE / "typing" / "agent_types.py", tmp_path / "cache")
    assert found.returncode == 0, found.stdout + found.stderr


def test_misspelt_keywords_and_wrong_output_uses_are_type_errors(tmp_path: Path) -> None:
    path = HERE / "typing" / "agent_misspelt.py"
    found = _mypy(path, tmp_path / "cache")
    expected = {
        number
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.endswith("# error")
    }
    reported = {
        int(line.split(":")[1]) for line in found.stdout.splitlines() if ": error:" in line
    }
    assert reported == expected, found.stdout


def _first_example() -> str:
    import re

    page = (ROOT / "docs" / "python-agents.md").read_text(encoding="utf-8")
    found = re.search(r"^```python\n(.*?)^```", page, re.S | re.M)
    assert found is not None
    return found.group(1)


def test_the_guides_first_example_is_eight_lines_that_type_check(tmp_path: Path) -> None:
    code = _first_example()
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 8, lines
    assert "@tool\ndef " in code and "@tool\nasync def " in code and "BaseModel" in code
    script = tmp_path / "first.py"
    script.write_text(code)
    found = _mypy(script, tmp_path / "cache")
    assert found.returncode == 0, found.stdout + found.stderr


def test_the_guides_first_example_runs_on_the_test_provider_and_the_local_model(
    tmp_path: Path,
) -> None:
    code = _first_example()
    assert '"test"' in code
    for model in ("test", "local"):
        script = tmp_path / f"first_{model}.py"
        script.write_text(code.replace('"test"', f'"{model}"'))
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
            cwd=tmp_path,
            timeout=600,
        )
        assert done.returncode == 0, (model, done.stderr)
        assert "city=" in done.stdout and "summary=" in done.stdout, (model, done.stdout)
