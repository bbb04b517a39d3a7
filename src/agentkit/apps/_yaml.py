"""Reading YAML with positions: parse a file, collect diagnostics located by field path.

Everything the loader checks is addressed by a *path* from the document root, a tuple of
mapping keys and sequence indices such as `("outputSchema", "properties", "x")` or
`("tools", 2)`. A [`FileReport`][agentkit.apps._yaml.FileReport] turns a path into the 1-based
line and column of that key or value in the file, and into the field name the user sees
(`outputSchema.properties.x`, `tools[2]`).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentkit.diagnostics import Diagnostic, Severity

__all__ = ["FileReport", "Path_", "field_name", "read_yaml", "to_plain"]

Path_ = tuple[str | int, ...]
"""A path from the document root: mapping keys and sequence indices."""

ROOT_FIELD = "(root)"


def field_name(path: Sequence[str | int]) -> str:
    """`("tools", 2)` -> `tools[2]`; `("a", "b")` -> `a.b`; `()` -> `(root)`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or ROOT_FIELD


_MESSAGE_CHARS = 500


def _clip(text: str) -> str:
    """A message or field name cut to a readable length: they quote the user's keys and
    values, which can be up to a megabyte long."""
    if len(text) <= _MESSAGE_CHARS:
        return text
    return f"{text[:_MESSAGE_CHARS]}... ({len(text):,} characters)"


def _is_map(value: Any) -> bool:
    return isinstance(value, dict)


def _is_seq(value: Any) -> bool:
    return isinstance(value, list)


@dataclass
class FileReport:
    """The diagnostics of one file, located against its parsed document.

    Attributes:
        file: The file name shown to the user.
        root: The parsed round-trip document (`CommentedMap` etc.), or `None`.
        diagnostics: Everything found so far, errors and warnings.
    """

    file: str
    root: Any = None
    parsed: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def add(
        self,
        path: Sequence[str | int],
        message: str,
        *,
        at: Literal["value", "key"] = "value",
        severity: Severity = "error",
    ) -> None:
        """Record a problem at the key or value `path` names (its container when absent)."""
        line, column = self.locate(path, at=at)
        self.diagnostics.append(
            Diagnostic(self.file, line, column, _clip(field_name(path)), _clip(message), severity)
        )

    def warn(self, path: Sequence[str | int], message: str) -> None:
        """Record a warning at the value `path` names."""
        self.add(path, message, severity="warning")

    def at_position(self, line: int, column: int, field_: str, message: str) -> None:
        """Record an error at an explicit 1-based position."""
        self.diagnostics.append(Diagnostic(self.file, line, column, _clip(field_), _clip(message)))

    @property
    def has_errors(self) -> bool:
        """Whether any diagnostic is an error."""
        return any(d.severity == "error" for d in self.diagnostics)

    def locate(
        self, path: Sequence[str | int], *, at: Literal["value", "key"] = "value"
    ) -> tuple[int, int]:
        """The 1-based position of the key or value at `path`.

        When the last step does not exist (a missing required field), the position of the
        container that should hold it; (1, 1) for the document itself.
        """
        node = self.root
        position = _start(node)
        for i, step in enumerate(path):
            last = i == len(path) - 1
            part = _actual_key(node, step)
            if _is_map(node) and part in node:
                lc = node.lc
                # a null value has no position of its own: point at its key
                use_key = (last and at == "key") or node[part] is None
                pos = lc.key(part) if use_key else lc.value(part)
                node = node[part]
            elif _is_seq(node) and isinstance(part, int) and 0 <= part < len(node):
                pos = node.lc.item(part)
                node = node[part]
            else:
                break
            if pos is not None:
                position = (pos[0] + 1, pos[1] + 1)
        return position


def _actual_key(node: Any, step: str | int) -> Any:
    """The key of `node` that `step` names (a non-string key is named by its text)."""
    if _is_map(node) and step not in node:
        for key in node:
            if str(key) == str(step):
                return key
    return step


def _start(node: Any) -> tuple[int, int]:
    lc = getattr(node, "lc", None)
    if lc is None or lc.line is None:
        return (1, 1)
    return (lc.line + 1, lc.col + 1)


def read_yaml(path: Path, display: str) -> FileReport:
    """Parse `path` with ruamel.yaml's round-trip loader.

    Syntax errors, anchors and aliases (agent files and `app.yaml` have no use for them,
    and expanding nested aliases can take exponential time) and duplicate keys (all of
    them, not only the first) are recorded with their position. `root` stays `None` when
    the file cannot be used; after duplicate keys it is set, so the fields are checked too.

    Before anything is built, the file must be a regular file of at most
    [`MAX_FILE_BYTES`][agentkit._internal.input.MAX_FILE_BYTES], and a first pass over the parser's
    events (which builds nothing) stops at the first collection nested deeper than
    `MAX_NESTING`, at more than `MAX_NODES` nodes, or at an unquoted number longer than
    `MAX_NUMBER_CHARS`, so no input makes loading slow or large.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    from agentkit._internal.input import InputFileError, read_input_file

    report = FileReport(display)
    try:
        data_bytes = read_input_file(path)
    except InputFileError as exc:
        report.at_position(0, 0, ROOT_FIELD, str(exc))
        return report
    try:
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data_bytes.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data_bytes.rfind(b"\n", 0, exc.start) + 1) + 1
        report.at_position(line, column, ROOT_FIELD, f"not UTF-8 text: {exc.reason}")
        return report

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = True
    try:
        _check_events(yaml, text, report)
        if report.has_errors:
            return report
        node = yaml.compose(text)
        root = None
        if node is not None:
            _find_duplicates(node, (), report)
            # built from the composed nodes: parsing the text a third time costs a third
            root = yaml.constructor.construct_document(node)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        parts = [str(p) for p in (exc.context, exc.problem) if p]
        problem = ": ".join(parts) or "invalid YAML"
        report.at_position(line, column, ROOT_FIELD, f"YAML syntax error: {problem}")
        return report
    except YAMLError as exc:  # pragma: no cover - ruamel raises marked errors in practice
        report.at_position(1, 1, ROOT_FIELD, f"YAML error: {exc}")
        return report
    except (ValueError, ArithmeticError, RecursionError) as exc:
        # A value ruamel could not construct; the event pass should have caught it first.
        report.at_position(1, 1, ROOT_FIELD, f"cannot load this YAML: {exc}")
        return report
    # duplicate keys are recorded, and the fields are still checked: every error of the
    # file is reported at once
    report.root = root
    report.parsed = True
    return report


@dataclass
class _Frame:
    """An open mapping or sequence while walking parser events."""

    path: Path_
    is_map: bool
    want_key: bool = True
    key: str | int = ""
    index: int = 0


_NUMBER = re.compile(r"^[-+]?(?:\.?[0-9]|0[xob])")


def _check_events(yaml: Any, text: str, report: FileReport) -> None:
    """Record every anchor (`&name`) and alias (`*name`) with the field it is at, and stop
    at the first breach of the nesting, node-count or number-length limits.

    Works on parser events, before anything is composed, so a nest of aliases is never
    expanded and a deep or huge document is refused after reading at most its limit.
    """
    from ruamel.yaml.events import (
        AliasEvent,
        CollectionEndEvent,
        MappingStartEvent,
        NodeEvent,
        ScalarEvent,
        SequenceStartEvent,
    )

    from agentkit._internal.input import MAX_NESTING, MAX_NODES, MAX_NUMBER_CHARS

    stack: list[_Frame] = []
    nodes = 0
    for event in yaml.parse(text):
        if isinstance(event, CollectionEndEvent):
            stack.pop()
            _node_done(stack, None)
            continue
        if not isinstance(event, NodeEvent):
            continue
        path = _node_path(stack)
        mark = event.start_mark
        nodes += 1
        if nodes > MAX_NODES:
            report.at_position(
                mark.line + 1,
                mark.column + 1,
                field_name(path),
                f"too many keys and items: a file may hold at most {MAX_NODES:,}",
            )
            return
        if isinstance(event, AliasEvent):
            report.at_position(
                mark.line + 1,
                mark.column + 1,
                field_name(path),
                f"aliases are not allowed (*{event.anchor}); write the value out",
            )
        elif event.anchor is not None:
            report.at_position(
                mark.line + 1,
                mark.column + 1,
                field_name(path),
                f"anchors are not allowed (&{event.anchor}); write the value out where "
                "it is used",
            )
        if isinstance(event, MappingStartEvent | SequenceStartEvent):
            if len(stack) >= MAX_NESTING:
                report.at_position(
                    mark.line + 1,
                    mark.column + 1,
                    field_name(path[:MAX_NESTING]),
                    f"nested too deeply: mappings and lists may be nested at most "
                    f"{MAX_NESTING} levels deep",
                )
                return
            stack.append(_Frame(path, isinstance(event, MappingStartEvent)))
        else:
            value = getattr(event, "value", None)
            if (
                isinstance(event, ScalarEvent)
                and event.style is None
                and isinstance(value, str)
                and len(value) > MAX_NUMBER_CHARS
                and _NUMBER.match(value)
            ):
                report.at_position(
                    mark.line + 1,
                    mark.column + 1,
                    field_name(path),
                    f"an unquoted value of {len(value):,} characters that starts like a "
                    f"number; numbers may have at most {MAX_NUMBER_CHARS} characters "
                    "(quote it if it is text)",
                )
                return
            _node_done(stack, value)


def _node_path(stack: list[_Frame]) -> Path_:
    if not stack:
        return ()
    top = stack[-1]
    if not top.is_map:
        return (*top.path, top.index)
    return top.path if top.want_key else (*top.path, top.key)


def _node_done(stack: list[_Frame], scalar: str | None) -> None:
    """A node of the innermost open collection is complete (`scalar`: its text)."""
    if not stack:
        return
    top = stack[-1]
    if not top.is_map:
        top.index += 1
    elif top.want_key:
        top.key = scalar if scalar is not None else "?"
        top.want_key = False
    else:
        top.want_key = True


def _find_duplicates(node: Any, path: Path_, report: FileReport) -> None:
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    if isinstance(node, MappingNode):
        seen: dict[tuple[str, str], int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode):
                ident = (
                    key_node.tag if isinstance(key_node.tag, str) else str(key_node.tag),
                    key_node.value,
                )
                mark = key_node.start_mark
                if ident[1] == "<<":
                    continue
                if ident in seen:
                    report.at_position(
                        mark.line + 1,
                        mark.column + 1,
                        field_name((*path, key_node.value)),
                        f"duplicate key {key_node.value!r} (first on line {seen[ident]})",
                    )
                else:
                    seen[ident] = mark.line + 1
                _find_duplicates(value_node, (*path, key_node.value), report)
            else:
                _find_duplicates(value_node, path, report)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            _find_duplicates(item, (*path, index), report)


class NotJson(ValueError):
    """A YAML value with no JSON equivalent; `path` says where."""

    def __init__(self, path: Path_, message: str) -> None:
        super().__init__(message)
        self.path = path


def to_plain(value: Any, path: Path_ = ()) -> Any:
    """Convert a round-trip YAML value to plain JSON-compatible Python values.

    Raises:
        NotJson: for dates, non-string keys, tagged values and other non-JSON values.
    """
    if _is_map(value):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJson(path, f"key {key!r} is not a string; quote it")
            out[str(key)] = to_plain(item, (*path, key))
        return out
    if _is_seq(value):
        return [to_plain(item, (*path, i)) for i, item in enumerate(value)]
    if value is None:
        return None
    if _is_bool(value):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise NotJson(path, f"{value} is not a JSON number")
        return float(value)
    if isinstance(value, datetime.date | datetime.datetime):
        raise NotJson(path, "a date is not a JSON value; quote it to make it a string")
    raise NotJson(path, f"{type_word(value)} is not a JSON value")


def _is_bool(value: Any) -> bool:
    from ruamel.yaml.scalarbool import ScalarBoolean

    return isinstance(value, bool | ScalarBoolean)


def is_bool(value: Any) -> bool:
    """Whether a YAML value is a boolean (`true` / `false`, anchored ones included)."""
    return _is_bool(value)


def type_word(value: Any) -> str:
    """How a YAML value's type is named in messages."""
    if value is None:
        return "null"
    if _is_bool(value):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if _is_map(value):
        return "a mapping"
    if _is_seq(value):
        return "a list"
    if isinstance(value, datetime.date | datetime.datetime):
        return "a date"
    tag = getattr(value, "tag", None)
    tag_text = getattr(tag, "value", tag)
    if isinstance(tag_text, str):
        return f"a value tagged {tag_text}"
    return f"a {type(value).__name__}"
