"""Deterministic values from a JSON Schema (for the schema-driven test provider)."""

from __future__ import annotations

import math
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
    if kind in ("integer", "number"):
        return _number(schema, rng, integer=kind == "integer")
    if kind == "boolean":
        return rng.random() < 0.5
    return None


def _number(schema: dict[str, Any], rng: random.Random, *, integer: bool) -> int | float:
    """A number inside the bounds (inclusive or exclusive, either side optional) and on
    the `multipleOf` grid when one is given."""
    low: float | None = schema.get("minimum")
    high: float | None = schema.get("maximum")
    exclusive_low, exclusive_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    gap = 1 if integer else 1e-3
    if isinstance(exclusive_low, int | float) and not isinstance(exclusive_low, bool):
        low = exclusive_low + gap if low is None else max(low, exclusive_low + gap)
    if isinstance(exclusive_high, int | float) and not isinstance(exclusive_high, bool):
        high = exclusive_high - gap if high is None else min(high, exclusive_high - gap)
    if low is None:
        low = min(0, high - 100) if high is not None else 0
    if high is None:
        high = low + 100
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and not isinstance(step, bool) and step > 0:
        first, last = math.ceil(low / step), math.floor(high / step)
        value = step * rng.randint(first, max(first, last))
        return int(value) if integer else value
    if integer:
        return rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high)))
    return round(rng.uniform(low, high), 3)


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
    for name in properties:  # declared optional properties first, to reach minProperties
        if len(result) >= minimum:
            break
        result.setdefault(name, generate(properties[name], rng, root, depth + 1))
    extra = schema.get("additionalProperties", True)
    index = 0
    while len(result) < minimum and extra is not False:
        result[f"key{index}"] = generate(extra if isinstance(extra, dict) else {}, rng, root)
        index += 1
    return result


def _array(schema: dict[str, Any], rng: random.Random, root: Any, depth: int) -> list[Any]:
    deep = depth > 6  # a recursive schema: as few items as allowed, so it ends
    high = schema.get("maxItems", 3)
    low = min(schema.get("minItems", 0 if deep else 1), high)
    if deep:
        high = low
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
