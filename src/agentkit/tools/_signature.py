"""How a plain Python function becomes a tool: its signature as a JSON Schema (through
pydantic), its docstring's summary and argument descriptions, and the caller that validates
each call's arguments, runs the function and encodes what it returns.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError, to_jsonable_python

from agentkit.actions import ToolContext
from agentkit.errors import ToolError

__all__ = ["Signature", "is_async", "make_caller", "parse_docstring"]


def is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004  (an object with `async def __call__`)
    return call is not None and inspect.iscoroutinefunction(call)


# --- the signature ---------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """What calling the function takes: the arguments' model and schema, and how the
    validated values are passed."""

    model: type[BaseModel] | None  # None: the function takes no arguments from the model
    schema: dict[str, Any]
    wants_context: bool
    positional: tuple[str, ...]  # model fields passed by position (positional-only)
    keywords: tuple[tuple[str, str], ...]  # (model field, parameter name) passed by keyword

    @classmethod
    def of(
        cls, fn: Callable[..., Any], tool_name: str, docs: dict[str, str]
    ) -> Signature:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"tool {tool_name!r}: cannot read the signature: {exc}") from None
        hints = _hints(fn, tool_name)
        parameters = list(signature.parameters.values())
        wants_context = False
        if parameters and hints.get(parameters[0].name) is ToolContext:
            wants_context = True
            parameters = parameters[1:]
        fields: dict[str, Any] = {}
        positional: list[str] = []
        keywords: list[tuple[str, str]] = []
        for index, parameter in enumerate(parameters):
            where = f"tool {tool_name!r}, parameter {parameter.name!r}"
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"{where}: *args and **kwargs cannot be tool arguments")
            annotation = hints.get(parameter.name, Any)
            if annotation is ToolContext:
                raise TypeError(f"{where}: the ToolContext parameter must come first")
            key = f"a{index}"  # field names never clash with BaseModel's own attributes
            info: dict[str, Any] = {"alias": parameter.name}
            if parameter.default is not parameter.empty:
                info["default"] = parameter.default
            doc = docs.get(parameter.name)
            if doc and not _describes_itself(annotation):
                info["description"] = doc
            fields[key] = (annotation, Field(**info))
            if parameter.kind is parameter.POSITIONAL_ONLY:
                positional.append(key)
            else:
                keywords.append((key, parameter.name))
        model: type[BaseModel] | None = None
        schema: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
        if fields:
            try:
                model = create_model(
                    _model_name(tool_name),
                    __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
                    **fields,
                )
                schema = _untitled(model.model_json_schema(by_alias=True))
            except Exception as exc:
                raise TypeError(
                    f"tool {tool_name!r}: its arguments have no JSON Schema: {exc}"
                ) from None
        return cls(model, schema, wants_context, tuple(positional), tuple(keywords))


def _hints(fn: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    """The resolved type hints of `fn` (of its `__call__` for a callable object). Names
    postponed annotations use (`from __future__ import annotations`) are looked up in the
    module, then where the tool is being made (a model class defined in a test function)."""
    target: Any = fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and not isinstance(fn, type):
        call = getattr(fn, "__call__", None)  # noqa: B004  (a callable object)
        if inspect.isfunction(call) or inspect.ismethod(call):
            target = call
    target = inspect.unwrap(target) if inspect.isfunction(target) else target
    try:
        return typing.get_type_hints(target, include_extras=True)
    except NameError as exc:
        error: Exception = exc
        for names in _callers_locals():
            try:
                return typing.get_type_hints(target, localns=names, include_extras=True)
            except NameError:
                continue
    except Exception as exc:
        error = exc
    raise TypeError(f"tool {tool_name!r}: cannot resolve the type hints: {error}") from None


def _callers_locals(depth: int = 8) -> Iterator[dict[str, Any]]:
    """The local names of the frames outside agentkit that led here, innermost first
    (`@tool` or `Tool.from_function` was called in one of them), at most `depth`."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and depth > 0:
        if not str(frame.f_globals.get("__name__", "")).startswith("agentkit."):
            depth -= 1
            yield dict(frame.f_locals)
        frame = frame.f_back


def _describes_itself(annotation: Any) -> bool:
    """Whether `Annotated[..., Field(description=...)]` already describes the argument."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(
        isinstance(meta, FieldInfo) and meta.description for meta in annotation.__metadata__
    )


def _model_name(tool_name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"\W|_", tool_name) if part)


_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
"""Schema keywords whose value maps names to schemas (a property called `title` is kept)."""
_VALUES = frozenset({"default", "const", "enum", "examples"})
"""Schema keywords whose value is data, not schema."""


_NOT_MERGEABLE = frozenset({"enum", "const", "$ref", "anyOf", "allOf", "oneOf", "not", "if"})
"""Keywords that keep `X | None` an `anyOf` (they would refuse `null` in a type list)."""


def _untitled(schema: Any) -> Any:
    """`schema` without pydantic's generated `title`s (noise to a model), and with
    `anyOf: [{"type": "string"}, {"type": "null"}]` written `type: ["string", "null"]`
    (the same, shorter, and checked without `jsonschema` on each call)."""
    if isinstance(schema, list):
        return [_untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _VALUES:
            out[key] = value
        elif key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: _untitled(sub) for name, sub in value.items()}
        else:
            out[key] = _untitled(value)
    options = out.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = options[0] if options[1] == {"type": "null"} else options[1]
        if (
            isinstance(other, dict)
            and isinstance(other.get("type"), str)
            and _NOT_MERGEABLE.isdisjoint(other)
            and other.keys().isdisjoint(out.keys() - {"anyOf"})
        ):
            merged = {key: value for key, value in out.items() if key != "anyOf"}
            merged.update(other)
            merged["type"] = [other["type"], "null"]
            return merged
    return out


# --- the call --------------------------------------------------------------------------


def make_caller(
    fn: Callable[..., Any], tool_name: str, signature: Signature, is_async: bool
) -> Callable[[dict[str, Any], ToolContext], Awaitable[Any]]:
    model = signature.model
    validate = None if model is None else model.__pydantic_validator__.validate_python
    positional, keywords, wants_context = (
        signature.positional,
        signature.keywords,
        signature.wants_context,
    )

    async def call(arguments: dict[str, Any], context: ToolContext) -> Any:
        args: list[Any] = [context] if wants_context else []
        kwargs: dict[str, Any] = {}
        if validate is not None:
            try:
                values = validate(arguments).__dict__
            except ValidationError as exc:
                raise ToolError(_invalid(exc)) from None
            args.extend(values[key] for key in positional)
            for key, parameter in keywords:
                kwargs[parameter] = values[key]
        if is_async:
            result = await fn(*args, **kwargs)
        else:
            # A worker thread cannot be stopped: at the tool's timeout (or when the run is
            # cancelled) the call stops waiting and the thread runs on alone.
            result = await anyio.to_thread.run_sync(
                functools.partial(fn, *args, **kwargs), abandon_on_cancel=True
            )
        return _serialised(result, tool_name)

    return call


def _invalid(exc: ValidationError) -> str:
    """A validation error as the model is told it, naming each field."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        problems.append(f"{where}: {error['msg']}")
    return "invalid arguments: " + "; ".join(problems)


def _serialised(result: Any, tool_name: str) -> Any:
    """A function's return value as JSON holds it: a string as is, pydantic models,
    dataclasses and containers of them as plain JSON values."""
    if type(result) is str or result is None:
        return result
    try:
        return to_jsonable_python(result)
    except PydanticSerializationError as exc:
        raise TypeError(
            f"tool {tool_name!r} returned a {type(result).__name__}, which cannot be "
            f"encoded as JSON: {exc}"
        ) from None


# --- docstrings ------------------------------------------------------------------------

_GOOGLE_ARGS = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments):\s*$"
)
_GOOGLE_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns?|Yields?|Raises|Exceptions?|Examples?|Notes?|Attributes|Warnings?|Warns|"
    r"See Also|Todo|References|Methods):\s*$"
)
_GOOGLE_ARG = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """A docstring's description and its arguments' descriptions, by argument name.

    Reads Google style (`Args:` with `name: text` or `name (type): text` entries,
    continuation lines indented further), reST (`:param name: text`,
    `:param type name: text`) and numpy style (`Parameters` over a `----------` rule). The
    description is the text before the first section or field, with its paragraphs kept.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    arguments: dict[str, str] = {}
    index = 0
    in_description = True
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _GOOGLE_SECTION.match(stripped) and line == stripped:
            in_description = False
            index += 1
            body: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index][:1] in " \t"):
                body.append(lines[index])
                index += 1
            if _GOOGLE_ARGS.match(stripped):
                arguments.update(_google_arguments(body))
            continue
        if line == stripped and stripped and _NUMPY_RULE.match(following):
            in_description = False
            section = stripped.lower()
            index += 2
            body = []
            while index < len(lines) and not (
                index + 1 < len(lines) and _NUMPY_RULE.match(lines[index + 1].strip())
            ):
                body.append(lines[index])
                index += 1
            if section in ("parameters", "other parameters", "keyword arguments"):
                arguments.update(_numpy_arguments(body))
            continue
        rest = _REST_FIELD.match(stripped)
        if rest is not None:
            in_description = False
            kind, target, text = rest.groups()
            parts = [text.strip()]
            index += 1
            while index < len(lines) and lines[index][:1] in " \t" and lines[index].strip():
                parts.append(lines[index].strip())
                index += 1
            if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and target:
                arguments[target.split()[-1]] = " ".join(p for p in parts if p)
            continue
        if in_description:
            description.append(line)
        index += 1
    return "\n".join(description).strip(), arguments


def _google_arguments(body: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    indent: int | None = None
    current: str | None = None
    for line in body:
        if not line.strip():
            continue
        level = len(line) - len(line.lstrip())
        if indent is None:
            indent = level
        match = _GOOGLE_ARG.match(line.strip()) if level <= indent else None
        if match is not None:
            current = match.group(1)
            found[current] = match.group(2).strip()
        elif current is not None:
            found[current] = f"{found[current]} {line.strip()}".strip()
    return found


def _numpy_arguments(body: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    current: str | None = None
    for line in body:
        if not line.strip():
            continue
        if line[:1] not in " \t":
            names = [n.strip().lstrip("*") for n in line.partition(":")[0].split(",")]
            current = None
            for name in names:
                if name.isidentifier():
                    current = name
                    found[name] = ""
        elif current is not None:
            found[current] = f"{found[current]} {line.strip()}".strip()
    return found
