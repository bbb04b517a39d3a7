"""JSON Schema helpers. `jsonschema` is imported on first use, so `import agentkit` stays fast.

Validation is on the hot path of every tool call, so `schema_violations` first asks a fast
check compiled from the schema (for the plain subset of JSON Schema tool arguments use:
`type`, `properties`, `required`, `additionalProperties`, `items`, `enum`, annotations).
The fast check only ever answers "certainly valid"; anything else, and any schema outside
that subset, goes to `jsonschema`, which produces the error messages. Schemas are looked up
by identity first and by content second, so they are treated as immutable once used.

A schema whose `$ref`s loop without descending into the value (`schema_cycles`) is refused
by `check_schema` with the path of the loop, and is never handed to `jsonschema` by
`schema_violations`, which reports the loop as the instance's violation instead of
recursing until the stack runs out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from agentkit._internal.schema_cycles import find_ref_cycle, ref_cycle

__all__ = ["check_schema", "cycle_message", "ref_problems", "schema_violations"]

Check = Callable[[Any], bool]


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
    # The format checker makes the meta-schema check `pattern` values as regexes.
    meta = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)
    problems = [_describe(e) for e in sorted(meta.iter_errors(schema), key=lambda e: list(e.path))]
    problems.extend(
        f"{'/'.join(str(p) for p in path)}: {message}" for path, message in ref_problems(schema)
    )
    if problems:
        raise ValueError("not a valid JSON Schema: " + "; ".join(problems[:5]))


def cycle_message(cycle: str) -> str:
    """Why a schema with the `$ref` cycle `cycle` (as `schema_cycles` shows it) is refused."""
    return (
        f"its $refs loop back to themselves without descending into the value ({cycle}): "
        "validating anything would recurse without end; break the cycle"
    )


def ref_problems(schema: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Every `$ref` that does not point into the schema itself (agentkit never fetches
    remote schemas), and a `$ref` cycle that never descends into the value: the path of
    the `$ref` and why."""
    problems: list[tuple[tuple[str | int, ...], str]] = []

    def resolves(pointer: str) -> bool:
        node: Any = schema
        for raw in pointer.removeprefix("#").split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return False
        return True

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not (ref.startswith("#") and resolves(ref)):
                problems.append(((*path, "$ref"), f"{ref!r} does not resolve in this schema"))
            for key, value in node.items():
                if key not in ("const", "enum", "default", "examples"):
                    walk(value, (*path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, (*path, index))

    walk(schema, ())
    cycle = find_ref_cycle(schema)
    if cycle is not None:
        problems.append((cycle.location, cycle_message(cycle.text)))
    return problems


class _Compiled:
    """What one schema compiles to: the JSON key for `jsonschema`, a fast check, and the
    `$ref` cycle that makes it unusable, if any."""

    __slots__ = ("check", "cycle", "key", "schema")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema  # kept alive, so its id() stays unique while cached
        self.key = _key(schema)
        plain = isinstance(schema, dict) and "$schema" not in schema
        try:
            self.check = _compile(schema) if plain else None
        except RecursionError:  # nested deeper than the fast check goes
            self.check = None
        self.cycle = ref_cycle(schema)


_BY_ID: dict[int, _Compiled] = {}
_BY_ID_LIMIT = 1024


def _compiled(schema: dict[str, Any]) -> _Compiled:
    found = _BY_ID.get(id(schema))
    if found is not None and found.schema is schema:
        return found
    if len(_BY_ID) >= _BY_ID_LIMIT:
        _BY_ID.clear()
    compiled = _BY_ID[id(schema)] = _Compiled(schema)
    return compiled


def schema_violations(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Every way `instance` fails `schema`, as `path: message` strings (empty when valid)."""
    compiled = _compiled(schema)
    check = compiled.check
    if check is not None and check(instance):
        return []
    if compiled.cycle is not None:
        return [f"(root): the schema cannot be applied: {cycle_message(compiled.cycle)}"]
    validator = _validator(compiled.key)
    try:
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
    except RecursionError:  # a recursive schema (a tree) and a value nested deeper still
        return ["(root): the value is nested too deeply to be checked against the schema"]
    return [_describe(e) for e in errors]


def _describe(error: Any) -> str:
    path = "/".join(str(p) for p in error.absolute_path)
    return f"{path or '(root)'}: {error.message}"


# --- the fast check ---------------------------------------------------------------------------

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
     "writeOnly"}
)
_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items",
                            "enum"}
_SCALARS = (str, int, float, bool, type(None))


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


_TYPE_CHECKS: dict[str, Check] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
}


def _always(value: Any) -> bool:
    return True


def _compile(schema: Any) -> Check | None:
    """A function answering True only for instances certainly valid against `schema`, or
    `None` when the schema uses anything beyond the plain subset."""
    if schema is True or schema == {}:
        return _always
    if not isinstance(schema, dict) or not _KEYWORDS.issuperset(schema):
        return None
    checks: list[Check] = []

    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind
        if not isinstance(kinds, list) or not all(k in _TYPE_CHECKS for k in kinds):
            return None
        type_checks = [_TYPE_CHECKS[k] for k in kinds]
        if len(type_checks) == 1:
            checks.append(type_checks[0])
        else:
            checks.append(lambda v: any(c(v) for c in type_checks))

    if "enum" in schema:
        options = schema["enum"]
        if not isinstance(options, list) or not all(type(o) in _SCALARS for o in options):
            return None
        typed = frozenset((type(o), o) for o in options)
        # Same type and equal: certainly a member (jsonschema also matches 1 and 1.0,
        # which this check leaves to jsonschema).
        checks.append(lambda v: type(v) in _SCALARS and (type(v), v) in typed)

    object_check = _compile_object(schema)
    if object_check is None:
        return None
    if object_check is not _always:
        checks.append(lambda v: type(v) is not dict or object_check(v))

    if "items" in schema:
        item_check = _compile(schema["items"])
        if item_check is None:
            return None
        checks.append(lambda v: type(v) is not list or all(item_check(i) for i in v))

    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _compile_object(schema: dict[str, Any]) -> Check | None:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not all(isinstance(name, str) for name in required):
        return None
    if "properties" not in schema and "required" not in schema and extra is True:
        return _always
    property_checks: dict[str, Check] = {}
    for name, subschema in properties.items():
        check = _compile(subschema)
        if check is None:
            return None
        property_checks[name] = check
    if extra is True:
        extra_check: Check | None = None
        closed = False
    elif extra is False:
        extra_check = None
        closed = True
    else:
        extra_check = _compile(extra)
        if extra_check is None:
            return None
        closed = False
    needed = tuple(required)

    def check_object(value: dict[str, Any]) -> bool:
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():
            check = property_checks.get(name)
            if check is not None:
                if not check(item):
                    return False
            elif closed or (extra_check is not None and not extra_check(item)):
                return False
        return True

    return check_object
