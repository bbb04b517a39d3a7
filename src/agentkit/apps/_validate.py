"""`validate_paths`: check app folders, `app.yaml` files and agent files without running them.

This is what `agentkit validate PATH...` calls for YAML apps.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from agentkit.diagnostics import Diagnostic
from agentkit.errors import ValidateUsageError

from ._agent import check_agent_file
from ._loader import check_app

__all__ = ["ValidateUsageError", "validate_paths"]

APP_FILE_NAMES = ("app.yaml", "app.yml")
AGENT_SUFFIXES = (".yaml", ".yml")


def validate_paths(paths: Iterable[str | os.PathLike[str]]) -> list[Diagnostic]:
    """Every diagnostic (errors and warnings) of the given paths, in order.

    Each path is an app folder (holding `app.yaml`), an `app.yaml` (or `app.yml`) file, or
    an agent YAML file, which is checked on its own (as app `local`). The paths are valid
    when no diagnostic has severity `error`.

    Raises:
        ValidateUsageError: before checking anything, when a path does not exist, is a
            folder without `app.yaml`, or is a file that is neither `app.yaml` nor `.yaml`
            / `.yml`.
    """
    given = [Path(p) for p in paths]
    if not given:
        raise ValidateUsageError("no path given: name an app folder, app.yaml or agent file", [])
    problems = {str(path): why for path in given if (why := _unusable(path))}
    if problems:
        message = "\n".join(f"{path}: {why}" for path, why in problems.items())
        raise ValidateUsageError(message, problems)
    diagnostics: list[Diagnostic] = []
    for path in given:
        if path.is_dir() or path.name in APP_FILE_NAMES:
            diagnostics.extend(check_app(path))
        else:
            diagnostics.extend(check_agent_file(path))
    return diagnostics


def _unusable(path: Path) -> str | None:
    if not os.path.exists(path):
        return "no such file or folder"
    if path.is_dir():
        if not os.path.lexists(path / "app.yaml"):
            return "not an app folder (no app.yaml in it)"
        return None  # an app.yaml that is not a regular file is reported by the check
    if path.name in APP_FILE_NAMES or path.suffix.lower() in AGENT_SUFFIXES:
        return None
    return "not an app.yaml or agent .yaml file"
