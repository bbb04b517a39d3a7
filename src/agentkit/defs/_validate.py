"""Validation and fingerprint helpers behind `agentkit validate` and `agentkit fingerprint`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agentkit.defs._auth import AuthRegistry
from agentkit.defs._fingerprint import fingerprint
from agentkit.defs._parser import load_definition, load_definitions
from agentkit.defs._types import DefinitionError
from agentkit.diagnostics import Diagnostic
from agentkit.errors import DefinitionPathError

__all__ = ["DefinitionPathError", "fingerprint_lines", "validate_paths"]


def validate_paths(
    paths: Iterable[str | Path], *, auth_profiles: AuthRegistry | None = None
) -> list[Diagnostic]:
    """Every problem of the given `.md` definitions and folders of them (empty when valid).

    A folder contributes the `*.md` files directly in it (ids must be unique within it).

    Raises:
        DefinitionPathError: before checking anything, when a path does not exist, is a
            file that is not `.md`, or is a folder without `.md` definitions.

    ```python
    import tempfile
    from pathlib import Path

    from agentkit.defs import DefinitionPathError, validate_paths

    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "ok.md").write_text("---\\ndescription: fine\\n---\\n")
        assert validate_paths([folder]) == []
        try:
            validate_paths([Path(folder, "gone.md")])
        except DefinitionPathError as exc:
            assert str(exc).endswith("gone.md: does not exist")
    ```
    """
    given = [Path(raw) for raw in paths]
    problems = {str(path): why for path in given if (why := _unusable(path))}
    if problems:
        message = "\n".join(f"{path}: {why}" for path, why in problems.items())
        raise DefinitionPathError(message, problems)
    diagnostics: list[Diagnostic] = []
    for path in given:
        try:
            if path.is_dir():
                load_definitions(path, auth_profiles=auth_profiles)
            else:
                load_definition(path, auth_profiles=auth_profiles)
        except DefinitionError as exc:
            diagnostics.extend(exc.diagnostics)
    return sorted(diagnostics)


def _unusable(path: Path) -> str | None:
    if path.is_dir():
        return None if any(path.glob("*.md")) else "no .md definitions in this folder"
    if not path.exists():
        return "does not exist"
    if path.suffix != ".md":
        return "not a Markdown definition (.md)"
    return None


def fingerprint_lines(
    path: str | Path, *, auth_profiles: AuthRegistry | None = None
) -> list[str]:
    """The lines `agentkit fingerprint FILE` prints: the v2 then the v1 fingerprint.

    Each line is the fingerprint itself (`v2:<hex>`, `v1:<hex>`), the exact value a session
    stores.

    Raises:
        DefinitionError: when the file is invalid.

    ```python
    import tempfile
    from pathlib import Path

    from agentkit.defs import fingerprint_lines

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "worker.md")
        path.write_text("---\\ndescription: Implements delegated tasks\\n---\\n")
        v2, v1 = fingerprint_lines(path)
    assert v2.startswith("v2:") and v1.startswith("v1:")
    ```
    """
    definition = load_definition(path, auth_profiles=auth_profiles)
    return [fingerprint(definition, 2), fingerprint(definition, 1)]
