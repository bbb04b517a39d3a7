"""Diagnostics: errors and warnings about a user's files, with an exact location.

Loaders (app YAML, Markdown definitions) collect every problem of a file as a
[`Diagnostic`][agentkit.diagnostics.Diagnostic] instead of stopping at the first, and raise
[`LoadError`][agentkit.errors.LoadError] carrying all of them. `agentkit validate` prints
them as `file:line:col: field: message`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["Diagnostic", "Severity"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem in a file. `line` and `column` are 1-based; 0 when unknown (and then
    left out of the `file:line:col` text)."""

    file: str
    line: int
    column: int
    field: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == "warning" else ""
        # An unknown position (a file that cannot be read, a folder without app.yaml) is
        # left out rather than shown as `:0:0`, which reads like a real place in the file.
        where = self.file
        if self.line > 0:
            where += f":{self.line}"
            if self.column > 0:
                where += f":{self.column}"
        return f"{where}: {self.field}: {prefix}{self.message}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (used by `agentkit validate --format json`)."""
        return asdict(self)


