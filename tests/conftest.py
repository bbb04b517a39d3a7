"""Shared fixtures: every async test runs under asyncio and trio."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from support.paths import SRC


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running `python -m agentkit` in a subprocess against this checkout,
    with no provider configured from the outside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AGENTKIT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env["AGENTKIT_PROVIDER"] = "none"  # no default provider, not even the local model
    env["AGENTKIT_STORE"] = str(tmp_path / "cli-store.db")
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.fixture
def python() -> str:
    return sys.executable
