"""The local model's grammar for JSON Schema: llama.cpp's converter, with numeric bounds.

llama-cpp-python's JSON-Schema-to-GBNF converter already enforces `required` and
`additionalProperties: false`, `enum` and `const`, string `minLength`/`maxLength`,
`pattern`, array `minItems`/`maxItems` and nested objects. It ignores numeric bounds, so a
schema's `score: {minimum: 1, maximum: 10}` let a small model write `100` over and over.
This adds them:

- `integer` with `minimum`, `maximum`, `exclusiveMinimum` or `exclusiveMaximum`: exactly
  the integers in range, for any range (rules over decimal digits, a few alternatives per
  digit of the bounds), up to 16 digits as for unbounded integers;
- `number` with a `minimum` of 0 or more and whole-number bounds: the integer part in
  range, then up to six decimals, the upper bound itself only as `10`, `10.0`, ... (no
  exponent);
- `number` with a `minimum` of 0 or more and a fractional or exclusive bound: the sign
  only (no `-`);
- `number` that may be negative: nothing beyond llama.cpp's number rule.

What the grammar does not enforce, the engine still checks: it answers a value out of
range with a tool error naming the field.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

__all__ = ["integer_range", "number_range", "schema_rules"]

MAX_DIGITS = 16  # as llama.cpp's own integer rule: 1 to 16 digits
_BOUND_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _digits_rule(length: int) -> str:
    """Any natural number of exactly `length` digits (no leading zero)."""
    return "[0-9]" if length == 1 else "[1-9]" + " [0-9]" * (length - 1)


def _same_length_range(low: str, high: str) -> str:
    """Numbers from `low` to `high`, both of the same length, as one sequence."""
    parts: list[str] = []
    for a, b in zip(low, high, strict=True):
        parts.append(f'"{a}"' if a == b else f"[{a}-{b}]")
    return " ".join(parts)


def _split(low: int, high: int) -> list[tuple[int, int]]:
    """`[low, high]` cut into ranges whose ends differ only in a common prefix, then one
    digit span, then 0...0 to 9...9 (the cuts of the classic number-range regex)."""
    stops = {high}
    nines = 1
    while True:
        text = str(low)
        stop = int(text[:-nines] + "9" * nines) if nines < len(text) else 10**nines - 1
        if not low <= stop < high:
            break
        stops.add(stop)
        nines += 1
    zeros = 1
    while True:
        stop = (high + 1) - (high + 1) % 10**zeros - 1
        if not low < stop <= high:
            break
        stops.add(stop)
        zeros += 1
    ranges: list[tuple[int, int]] = []
    start = low
    for stop in sorted(stops):
        ranges.append((start, stop))
        start = stop + 1
    return ranges


def _natural_range(low: int, high: int | None) -> list[str]:
    """Alternatives matching the naturals from `low` to `high` (`None`: up to 16 digits)."""
    alternatives: list[str] = []
    top = high if high is not None else 10**MAX_DIGITS - 1
    top = min(top, 10**MAX_DIGITS - 1)
    if low > top:
        return []
    if high is None:  # the numbers longer than `low` are all in: one rule per length
        longer = len(str(low)) + 1
        alternatives = [_digits_rule(n) for n in range(longer, MAX_DIGITS + 1)]
        top = 10 ** len(str(low)) - 1
    for start, stop in _split(low, top):
        text_start, text_stop = str(start), str(stop)
        if len(text_start) != len(text_stop):  # never, by the cuts; kept safe
            raise ValueError(f"range cut {start}..{stop} spans lengths")
        alternatives.insert(0, _same_length_range(text_start, text_stop))
    return alternatives


def integer_range(low: int | None, high: int | None) -> str | None:
    """A GBNF expression matching exactly the JSON integers from `low` to `high` (either
    may be `None`: unbounded that way), or `None` when no integer is in range."""
    if low is not None and high is not None and low > high:
        return None
    alternatives: list[str] = []
    if low is None or low < 0:  # the negative part: "-" then naturals from -high to -low
        neg_low = 1 if high is None or high >= 0 else -high
        neg_high = None if low is None else -low
        alternatives += [f'"-" {alt}' for alt in _natural_range(neg_low, neg_high)]
    if high is None or high >= 0:
        alternatives += _natural_range(max(low or 0, 0), high)
    if not alternatives:
        return None
    return "(" + " | ".join(f"({alt})" if " " in alt else alt for alt in alternatives) + ")"


def _number(value: Any) -> float | None:
    """`value` when it is a JSON number (not a boolean), else `None`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def _bounds(schema: dict[str, Any]) -> tuple[float | None, float | None, bool, bool]:
    """(lowest, highest, lowest excluded, highest excluded) of a numeric schema."""
    low, high = _number(schema.get("minimum")), _number(schema.get("maximum"))
    ex_low = _number(schema.get("exclusiveMinimum"))
    ex_high = _number(schema.get("exclusiveMaximum"))
    low_out = ex_low is not None and (low is None or ex_low >= low)
    high_out = ex_high is not None and (high is None or ex_high <= high)
    return (ex_low if low_out else low), (ex_high if high_out else high), low_out, high_out


def _integer_bounds(schema: dict[str, Any]) -> tuple[int | None, int | None]:
    low, high, low_out, high_out = _bounds(schema)
    lo = None if low is None else (math.floor(low) + 1 if low_out else math.ceil(low))
    hi = None if high is None else (math.ceil(high) - 1 if high_out else math.floor(high))
    return lo, hi


_FRACTION = '("." [0-9] [0-9]? [0-9]? [0-9]? [0-9]? [0-9]?)'


def number_range(schema: dict[str, Any]) -> str | None:
    """A GBNF expression for a bounded JSON number, or `None` when its bounds are not
    expressible (see the module's notes: then only its sign is enforced, if at all)."""
    low, high, low_out, high_out = _bounds(schema)
    if low is None or low < 0:
        return None  # negative numbers: left to the engine's check
    whole = all(b is None or float(b).is_integer() for b in (low, high))
    if not whole or low_out or high_out:
        return f'(("0" | [1-9] [0-9]*) {_FRACTION}?)'  # the sign, at least
    lo, hi = int(low), None if high is None else int(high)
    if hi is not None and lo >= hi:
        return f'("{lo}" ("." "0"+)?)' if lo == hi else None
    below = integer_range(lo, None if hi is None else hi - 1)
    parts = [f"{below} {_FRACTION}?"]
    if hi is not None:
        parts.append(f'("{hi}" ("." "0"+)?)')
    return "(" + " | ".join(parts) + ")"


_CONVERTERS: dict[str, Any] = {}


def _converter_class() -> Any:
    """llama-cpp-python's `SchemaConverter`, with numeric bounds (made on first use, so
    that importing this module needs no llama-cpp-python)."""
    if "class" not in _CONVERTERS:
        grammars: Any = importlib.import_module("llama_cpp.llama_grammar")

        class BoundedConverter(grammars.SchemaConverter):  # type: ignore[misc]
            def visit(self, schema: Any, name: str) -> Any:
                expression = _bounded(schema) if isinstance(schema, dict) else None
                if expression is None:
                    return super().visit(schema, name)
                rule = f"{name}-" if name in grammars.RESERVED_NAMES else name or "root"
                return self._add_rule(rule, f"{expression} space")

        _CONVERTERS["class"] = BoundedConverter
    return _CONVERTERS["class"]


def _bounded(schema: dict[str, Any]) -> str | None:
    """The expression of a bounded integer or number schema (`None`: not one)."""
    kind = schema.get("type")
    if kind not in ("integer", "number") or not any(k in schema for k in _BOUND_KEYS):
        return None
    if any(k in schema for k in ("enum", "const", "$ref", "oneOf", "anyOf", "allOf")):
        return None
    if kind == "integer":
        lo, hi = _integer_bounds(schema)
        if lo is None and hi is None:
            return None
        return integer_range(lo, hi) or _impossible()
    return number_range(schema)


def _impossible() -> str:
    raise ValueError("no integer is within the schema's bounds")


def schema_rules(schema: dict[str, Any], name: str) -> str:
    """The GBNF rules of `schema` under the rule `name` (see the module's notes)."""
    converter = _converter_class()(
        prop_order={"name": 0, "arguments": 1},
        allow_fetch=False,
        dotall=False,
        raw_pattern=False,
    )
    converter.visit(converter.resolve_refs(schema, "tools"), name)
    return str(converter.format_grammar())
