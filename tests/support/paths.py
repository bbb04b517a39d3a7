"""Where things are in the checkout, for tests that read files or start processes by path."""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
"""This package: helpers, child-process scripts and `data/`."""
TESTS = SUPPORT.parent
"""The tests' root folder, on the `PYTHONPATH` of the processes that import `support`."""
ROOT = TESTS.parent
"""The repository's root."""
SRC = ROOT / "src"
"""The source folder, put on the `PYTHONPATH` of the processes the tests start."""
EXAMPLES = ROOT / "examples"
"""The examples the docs describe."""
DATA = SUPPORT / "data"
"""Recorded provider streams and stores written by older versions."""
