"""Checks of single YAML fields (type, enum, list of strings, unknown keys, JSON Schema),
recording located diagnostics on a [`FileReport`][agentkit.apps._yaml.FileReport]."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from typing import Any

from ._yaml import FileReport, Path_, is_bool, type_word

SHOWN_CHARS = 80
"""Characters of a value quoted in a message; a longer one is cut (a 5,000-digit string
would otherwise fill the terminal)."""


def show(value: Any) -> str:
    if isinstance(value, str):
        text = str(value)
        if len(text) > SHOWN_CHARS:
            return f"{text[:SHOWN_CHARS]!r}... ({len(text):,} characters)"
        return repr(text)
    if value is None or is_bool(value) or isinstance(value, int | float):
        return f"{type_word(value)} ({'null' if value is None else yaml_scalar(value)})"
    return type_word(value)


def yaml_scalar(value: Any) -> str:
    if is_bool(value):
        return "true" if value else "false"
    return str(value)


def whole_number(value: Any) -> int | None:
    """`value` as an int when it is an integer in JSON Schema's sense (`30` or `30.0`).

    JSON has one number type, so `30.0` is an integer to every JSON Schema validator (and
    to editors using the shipped schemas); the loader agrees with them.
    """
    if is_bool(value):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def unknown_keys(
    report: FileReport,
    data: dict[Any, Any],
    allowed: tuple[str, ...],
    what: str,
    prefix: Path_ = (),
) -> None:
    for key in data:
        if not isinstance(key, str):
            report.add((*prefix, str(key)), f"keys must be strings, not {type_word(key)}", at="key")
            continue
        if key in allowed:
            continue
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        report.add(
            (*prefix, key),
            f"unknown field {key!r} in {what}{hint} (allowed: {', '.join(allowed)})",
            at="key",
        )


def present(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    prefix: Path_ = (),
    hint: str = "",
) -> bool:
    """Whether `data` has `key`; a missing required one is reported (`hint` says what fits)."""
    if key in data:
        return True
    if required:
        detail = f" ({hint})" if hint else ""
        report.add((*prefix, key), f"required field is missing{detail}")
    return False


def string_field(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    nonempty: bool = False,
    prefix: Path_ = (),
) -> str | None:
    if not present(report, data, key, required=required, prefix=prefix):
        return None
    value = data[key]
    if not isinstance(value, str):
        hint = "; quote it" if value is not None and not isinstance(value, dict | list) else ""
        report.add((*prefix, key), f"must be a string, not {show(value)}{hint}")
        return None
    if nonempty and not value.strip():
        report.add((*prefix, key), "must not be empty")
        return None
    return str(value)


def enum_field(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    choices: tuple[str, ...],
    *,
    required: bool = False,
    prefix: Path_ = (),
) -> str | None:
    if not present(report, data, key, required=required, prefix=prefix, hint=choices_text(choices)):
        return None
    value = data[key]
    if not isinstance(value, str) or value not in choices:
        report.add((*prefix, key), f"must be one of {choices_text(choices)}, not {show(value)}")
        return None
    return str(value)


def choices_text(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]


def bool_field(report: FileReport, data: dict[str, Any], key: str) -> bool | None:
    if not present(report, data, key):
        return None
    value = data[key]
    if not is_bool(value):
        report.add((key,), f"must be true or false, not {show(value)}")
        return None
    return bool(value)


def string_list_field(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    prefix: Path_ = (),
) -> list[tuple[int, str]] | None:
    if not present(report, data, key, required=required, prefix=prefix, hint="a list, [] for none"):
        return None
    values = data[key]
    if not isinstance(values, list):
        report.add((*prefix, key), f"must be a list of strings, not {show(values)}")
        return None
    out: list[tuple[int, str]] = []
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            report.add((*prefix, key, index), f"must be a non-empty string, not {show(value)}")
        else:
            out.append((index, str(value)))
    return out


def schema_problems(schema: Any) -> list[tuple[Path_, str]]:
    """Where and why `schema` fails its meta-schema (empty when valid)."""
    from agentkit._internal.schema import check_schema, ref_problems

    try:
        check_schema(schema)
    except ValueError:
        pass
    else:
        return []
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    problems: list[tuple[Path_, str]] = []
    meta = cls(cls.META_SCHEMA, format_checker=cls.FORMAT_CHECKER)  # checks `pattern` regexes
    for error in leaf_errors(meta.iter_errors(schema)):
        problems.append((tuple(error.absolute_path), error.message))
    problems.extend(ref_problems(schema))
    problems.sort(key=lambda p: [str(x) for x in p[0]])
    unique: list[tuple[Path_, str]] = []
    for problem in problems:
        if problem not in unique:
            unique.append(problem)
    return unique or [((), "rejected by its meta-schema")]


def leaf_errors(errors: Iterator[Any]) -> Iterator[Any]:
    """The most specific errors (meta-schema `anyOf` branches report through `context`)."""
    from jsonschema.exceptions import best_match

    for error in errors:
        if error.context:
            yield from leaf_errors(iter([best_match(error.context)]))
        else:
            yield error
