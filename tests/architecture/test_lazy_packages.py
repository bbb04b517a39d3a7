"""The lazy packages (`agentkit`, `agentkit.tools`, `agentkit.providers`, ...) stay visible to
type checkers: a misspelt name imported from one is an error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import SRC

pytestmark = pytest.mark.anyio



def test_mypy_still_sees_a_misspelt_name_imported_from_a_lazy_package(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(
        "from agentkit import Runtme\n"
        "from agentkit.tools import Tol\n"
        "from agentkit.providers import Provder\n"
        "from agentkit.stores import MemoryStor\n"
    )
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(user),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(SRC)},
        cwd=tmp_path,
    )
    for name in ("Runtme", "Tol", "Provder", "MemoryStor"):
        assert f'has no attribute "{name}"' in found.stdout, found.stdout
