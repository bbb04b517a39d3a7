"""Running a benchmark script of bench/ in its quick mode, as the smoke tests do."""

from __future__ import annotations

import os
import subprocess
import sys

from support.paths import ROOT, SRC


def quick(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`bench/<script> --quick ARGS` against this checkout's source, its output captured."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--quick", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
