"""Tool-call arguments as the model streamed them."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_arguments"]


def parse_arguments(raw: str) -> dict[str, Any] | str:
    """Tool-call arguments as an object, or the raw text when it is not a JSON object."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw
