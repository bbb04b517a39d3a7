"""Deterministic values from a JSON Schema (for the schema-driven test provider)."""

from __future__ import annotations

import random
from typing import Any

__all__ = ["generate"]

_WORDS = ("alpha", "bravo", "delta", "echo", "kilo", "lima", "oscar", "tango", "zulu")


def generate(schema: Any, rng: random.Random, root: Any = None, depth: int = 0) -> Any:
    """A value that satisfies `schema` (the common keywords), drawn from `rng`."""
    root = schema if root is None else root
    if schema is True or schema is None or schema == {}:
        return rng.choice(_WORDS)
    if not isinstance(schema, dict):
        return None
    if "$ref" in schema:
        return generate(_resolve(schema["$ref"], root), rng, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return generate(schema[key][0], rng, root, depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            part = _resolve(part["$ref"], root) if "$ref" in part else part
            for name, value in part.items():
                if name in ("properties",) and name in merged:
                    merged[name] = {**merged[name], **value}
                elif name == "required" and name in merged:
                    merged[name] = [*merged[name], *value]
                else:
                    merged[name] = value
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        return generate({**merged, **rest}, rng, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        return _object(schema, rng, root, depth)
    if kind == "array":
        return _array(schema, rng, root, depth)
    if kind == "string":
        return _string(schema, rng)
    if kind == "integer":
        low = int(schema.get("minimum", int(schema.get("exclusiveMinimum", -1)) + 1))
        high = int(schema.get("maximum", int(schema.get("exclusiveMaximum", low + 101)) - 1))
        value = rng.randint(low, max(low, high))
        step = schema.get("multipleOf")
        return value - value % step if isinstance(step, int) and step > 0 else value
    if kind == "number":
        start = float(schema.get("minimum", 0))
        stop = float(schema.get("maximum", start + 100))
        return round(rng.uniform(start, stop), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def _resolve(ref: str, root: Any) -> Any:
    if not ref.startswith("#"):
        return {}
    node = root
    for part in ref.lstrip("#/").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _object(schema: dict[str, Any], rng: random.Random, root: Any, depth: int) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = list(schema.get("required", []))
    # Only required properties: an optional one (a `sessionId`, say) filled with a made-up
    # value would usually be wrong, and leaving it out is always valid.
    names = required
    result = {name: generate(properties.get(name, {}), rng, root, depth + 1) for name in names}
    minimum = schema.get("minProperties", 0)
    extra = schema.get("additionalProperties", True)
    index = 0
    while len(result) < minimum and extra is not False:
        result[f"key{index}"] = generate(extra if isinstance(extra, dict) else {}, rng, root)
        index += 1
    return result


def _array(schema: dict[str, Any], rng: random.Random, root: Any, depth: int) -> list[Any]:
    low = schema.get("minItems", 1)
    high = schema.get("maxItems", max(low, 3))
    count = rng.randint(low, max(low, min(high, low + 2)))
    items = schema.get("items", {})
    values: list[Any] = []
    attempts = 0
    while len(values) < count and attempts < count * 20:
        attempts += 1
        value = generate(items, rng, root, depth + 1)
        if schema.get("uniqueItems") and value in values:
            continue
        values.append(value)
    return values


def _string(schema: dict[str, Any], rng: random.Random) -> str:
    fmt = schema.get("format")
    if fmt == "date-time":
        return f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T12:00:00Z"
    if fmt == "date":
        return f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
    if fmt == "email":
        return f"{rng.choice(_WORDS)}@example.com"
    if fmt in ("uri", "url"):
        return f"https://example.com/{rng.choice(_WORDS)}"
    if fmt == "uuid":
        return f"00000000-0000-4000-8000-{rng.randint(0, 10**12 - 1):012d}"
    low = schema.get("minLength", 1)
    high = schema.get("maxLength", max(low, 24))
    text = " ".join(rng.choice(_WORDS) for _ in range(3))
    while len(text) < low:
        text += " " + rng.choice(_WORDS)
    return text[: max(high, low)] if len(text) > high else text
