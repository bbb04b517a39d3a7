"""JSON Schema helpers. `jsonschema` is imported on first use, so `import agentkit` stays fast."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

__all__ = ["check_schema", "schema_violations"]


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    import jsonschema

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _key(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def check_schema(schema: dict[str, Any]) -> None:
    """Raise `ValueError` listing why `schema` is not a valid JSON Schema."""
    import jsonschema

    if not isinstance(schema, dict):
        raise ValueError("a JSON Schema must be an object")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    errors = sorted(cls(cls.META_SCHEMA).iter_errors(schema), key=lambda e: list(e.path))
    if errors:
        raise ValueError(
            "not a valid JSON Schema: " + "; ".join(_describe(e) for e in errors[:5])
        )


def schema_violations(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Every way `instance` fails `schema`, as `path: message` strings (empty when valid)."""
    validator = _validator(_key(schema))
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    return [_describe(e) for e in errors]


def _describe(error: Any) -> str:
    path = "/".join(str(p) for p in error.absolute_path)
    return f"{path or '(root)'}: {error.message}"
