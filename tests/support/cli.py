"""Shared helper for the command-line tests: `python -m agentkit ...` as a real subprocess."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.paths import ROOT


def agentkit(
    python: str, env: dict[str, str], *args: str, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with `args` (no stdin, 60 s limit) and capture its text output."""
    return subprocess.run(
        [python, "-m", "agentkit", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
