"""Validation and fingerprint helpers behind `agentkit validate` and `agentkit fingerprint`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agentkit.defs._auth import AuthRegistry
from agentkit.defs._fingerprint import fingerprint
from agentkit.defs._parser import load_definition, load_definitions
from agentkit.defs._types import DefinitionError
from agentkit.diagnostics import Diagnostic

__all__ = ["fingerprint_lines", "validate_paths"]


def validate_paths(
    paths: Iterable[str | Path], *, auth_profiles: AuthRegistry | None = None
) -> list[Diagnostic]:
    """Every problem of the given `.md` definitions and folders of them (empty when valid).

    A folder contributes the `*.md` files directly in it (ids must be unique within it). A
    missing path, a file that is not `.md`, or a folder without definitions is reported too.

    ```python
    import tempfile
    from pathlib import Path

    from agentkit.defs import validate_paths

    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "ok.md").write_text("---\\ndescription: fine\\n---\\n")
        assert validate_paths([folder]) == []
        assert validate_paths([Path(folder, "gone.md")])[0].message == "does not exist"
    ```
    """
    diagnostics: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        try:
            if path.is_dir():
                if not any(path.glob("*.md")):
                    diagnostics.append(
                        Diagnostic(str(path), 0, 0, "path", "no .md definitions in this folder")
                    )
                    continue
                load_definitions(path, auth_profiles=auth_profiles)
            elif not path.exists():
                diagnostics.append(Diagnostic(str(path), 0, 0, "path", "does not exist"))
            elif path.suffix != ".md":
                diagnostics.append(
                    Diagnostic(str(path), 0, 0, "path", "not a Markdown definition (.md)")
                )
            else:
                load_definition(path, auth_profiles=auth_profiles)
        except DefinitionError as exc:
            diagnostics.extend(exc.diagnostics)
    return sorted(diagnostics)


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
