"""The restricted frontmatter grammar of agent definitions.

A definition file is `---`, frontmatter lines, `---`, then a Markdown body. The frontmatter is
not general YAML: each line is `key: value` where a value is a plain scalar, a single- or
double-quoted string, or a flow list `[a, b]` of those. Blank lines and `#` comments are
allowed. Block lists, nested maps, multi-line values, anchors, aliases, tags and duplicate keys
are errors. Every problem is collected with its line and column (1-based, in characters).

This module only reads the shape; what the keys mean is checked by `_parser`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentkit.diagnostics import Diagnostic

__all__ = ["Document", "Entry", "FlowList", "Scalar", "read_document"]

_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_GUESS = re.compile(r"^\s*['\"]?([A-Za-z0-9_][A-Za-z0-9_.-]*)['\"]?\s*:")
_MAP_LIKE = re.compile(r"^[^\s:'\"\[{#-][^\s:]*\s*:(\s|$)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029\ufeff]")
_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_BLOCK_HINT = "write lists as [a, b] on one line"


@dataclass(frozen=True)
class Scalar:
    """One scalar value with the position of its first character (a quote when quoted)."""

    text: str
    quoted: bool
    line: int
    column: int

    @property
    def value(self) -> str | bool:
        """The typed value: only plain `true` / `false` are booleans; all else is a string."""
        if not self.quoted and self.text in ("true", "false"):
            return self.text == "true"
        return self.text


@dataclass(frozen=True)
class FlowList:
    """A flow list `[a, b]` with the position of its `[`."""

    items: tuple[Scalar, ...]
    line: int
    column: int


@dataclass(frozen=True)
class Entry:
    """One `key: value` line; `line` / `column` locate the key."""

    key: str
    value: Scalar | FlowList
    line: int
    column: int


@dataclass
class Document:
    """The frontmatter entries (in file order, duplicates dropped) and the body."""

    entries: dict[str, Entry] = field(default_factory=dict)
    body: str = ""
    opening_line: int = 1
    closing_line: int = 1


class _LineError(Exception):
    def __init__(self, column: int, message: str) -> None:
        super().__init__(message)
        self.column = column
        self.message = message


def read_document(text: str, file: str) -> tuple[Document, list[Diagnostic]]:
    """Split `text` into frontmatter entries and body, collecting every grammar error.

    The split is done here, not by python-frontmatter: its boundary pattern takes any run of
    three or more dashes followed by any whitespace (`----`, `---  `) and it parses the block
    as general YAML, where the document's grammar accepts exactly `---` lines and a
    restricted set of values. Using it would loosen the contract for a few lines of code.
    """
    errors: list[Diagnostic] = []
    doc = Document()

    def error(line: int, column: int, fld: str, message: str) -> None:
        errors.append(Diagnostic(file, line, column, fld, message))

    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    if not lines or lines[0] != "---":
        error(1, 1, "frontmatter", "a definition must start with a line that is exactly '---'")
        return doc, errors
    closing = next((i for i in range(1, len(lines)) if lines[i] == "---"), None)
    if closing is None:
        error(1, 1, "frontmatter", "the frontmatter is never closed by a line that is '---'")
        return doc, errors
    doc.closing_line = closing + 1
    doc.body = "\n".join(lines[closing + 1 :]).strip()

    last_key = "frontmatter"
    index = 1
    while index < closing:
        number = index + 1
        raw = lines[index]
        index += 1
        stripped = raw.strip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        bad = _CONTROL.search(raw)
        if bad:
            error(number, bad.start() + 1, _guess_key(raw), "control characters are not allowed")
            continue
        if raw[0] in " \t":
            column = len(raw) - len(raw.lstrip(" \t")) + 1
            fld = last_key if last_key != "frontmatter" else _guess_key(raw)
            error(number, column, fld, _continuation_message(stripped, last_key))
            index = _skip_continuation(lines, index, closing)
            continue
        if stripped == "-" or stripped.startswith(("- ", "-\t")):
            error(number, 1, last_key, f"block lists are not accepted; {_BLOCK_HINT}")
            index = _skip_continuation(lines, index, closing)
            continue
        match = _KEY.match(raw)
        if not match or match.end() >= len(raw) or raw[match.end()] != ":":
            error(number, 1, _guess_key(raw), _bad_line_message(raw))
            continue
        key = match.group()
        rest_column = match.end() + 2
        rest = raw[match.end() + 1 :]
        if rest and rest[0] not in " \t":
            error(number, rest_column, key, "expected a space after ':'")
            last_key = key
            continue
        last_key = key
        value_text = rest.lstrip(" \t")
        value_column = rest_column + len(rest) - len(value_text)
        if not value_text or value_text.startswith("#"):
            follow = _next_content(lines, index, closing)
            if follow is not None and (lines[follow][:1] in (" ", "\t") or _is_dash(lines[follow])):
                error(number, 1, key, _block_message(lines[follow].strip(" \t")))
                index = _skip_continuation(lines, index, closing)
            else:
                error(number, 1, key, "missing value")
            continue
        try:
            value = _parse_value(value_text, number, value_column)
        except _LineError as exc:
            error(number, exc.column, key, exc.message)
            continue
        if key in doc.entries:
            first = doc.entries[key]
            error(number, 1, key, f"duplicate key (first given on line {first.line})")
            continue
        doc.entries[key] = Entry(key, value, number, 1)
    return doc, errors


def _guess_key(raw: str) -> str:
    """The key a malformed line most likely meant, so errors name it; else `frontmatter`."""
    match = _GUESS.match(raw)
    return match.group(1) if match else "frontmatter"


def _is_dash(line: str) -> bool:
    return line == "-" or line.startswith(("- ", "-\t"))


def _next_content(lines: list[str], index: int, closing: int) -> int | None:
    while index < closing:
        stripped = lines[index].strip(" \t")
        if stripped and not stripped.startswith("#"):
            return index
        index += 1
    return None


def _skip_continuation(lines: list[str], index: int, closing: int) -> int:
    """Skip the rest of an indented or dashed block so one mistake is reported once."""
    while index < closing:
        line = lines[index]
        stripped = line.strip(" \t")
        if stripped and not stripped.startswith("#") and not (
            line[0] in " \t" or _is_dash(line)
        ):
            break
        index += 1
    return index


def _block_message(stripped: str) -> str:
    if stripped == "-" or stripped.startswith(("- ", "-\t")):
        return f"block lists are not accepted; {_BLOCK_HINT}"
    if _MAP_LIKE.match(stripped):
        return "nested maps are not accepted; values are scalars or [a, b] lists"
    return "multi-line values are not accepted; put the value on one line"


def _continuation_message(stripped: str, key: str) -> str:
    if key == "frontmatter":
        return "indented lines are not accepted; write `key: value` at the start of the line"
    return _block_message(stripped)


def _bad_line_message(raw: str) -> str:
    if raw.startswith(("'", '"')):
        return "keys are plain names; write `key: value` without quotes around the key"
    if raw.startswith(("{", "[", "&", "*", "!", "?", "|", ">")):
        return "expected `key: value`; YAML flow, anchor, alias, tag and block syntax is not used"
    if raw in ("...",):
        return "document markers are not accepted inside the frontmatter"
    return "expected `key: value`"


def _parse_value(text: str, line: int, column: int) -> Scalar | FlowList:
    first = text[0]
    value: Scalar | FlowList
    if first == "[":
        value, end = _parse_list(text, line, column)
    elif first in "\"'":
        value, end = _parse_quoted(text, 0, line, column)
    else:
        _check_plain_start(text, 0, column, in_list=False)
        end = _comment_start(text)
        plain = text[:end].rstrip(" \t")
        _check_plain_body(plain, column)
        return Scalar(plain, False, line, column)
    rest = text[end:]
    stripped = rest.lstrip(" \t")
    if stripped and not (stripped.startswith("#") and len(stripped) < len(rest)):
        offset = end + len(rest) - len(stripped)
        raise _LineError(column + offset, "unexpected text after the value")
    return value


def _comment_start(text: str) -> int:
    for i in range(1, len(text)):
        if text[i] == "#" and text[i - 1] in " \t":
            return i
    return len(text)


def _check_plain_start(text: str, pos: int, column: int, *, in_list: bool) -> None:
    first = text[pos]
    col = column + pos
    if first == "{":
        raise _LineError(col, "nested maps are not accepted; values are scalars or [a, b] lists")
    if first == "&":
        raise _LineError(col, "anchors are not accepted")
    if first == "*":
        raise _LineError(col, "aliases are not accepted")
    if first == "!":
        raise _LineError(col, "tags are not accepted")
    if first in "|>":
        raise _LineError(col, "multi-line (block) values are not accepted")
    if first in "]}" or (first == "," and not in_list):
        raise _LineError(col, f"a value cannot start with {first!r}; quote it")
    nxt = text[pos + 1 : pos + 2]
    if first in "-?" and nxt in ("", " ", "\t"):
        if first == "-":
            raise _LineError(col, f"block lists are not accepted; {_BLOCK_HINT}")
        raise _LineError(col, "complex keys are not accepted")


def _check_plain_body(plain: str, column: int) -> None:
    for i, char in enumerate(plain):
        if char == ":" and (i + 1 == len(plain) or plain[i + 1] in " \t"):
            raise _LineError(
                column + i,
                "a plain value cannot contain ': ' (nested maps are not accepted); quote it",
            )


def _parse_quoted(text: str, pos: int, line: int, column: int) -> tuple[Scalar, int]:
    quote = text[pos]
    out: list[str] = []
    i = pos + 1
    while i < len(text):
        char = text[i]
        if char == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return Scalar("".join(out), True, line, column + pos), i + 1
        if char == "\\" and quote == '"':
            i = _escape(text, i, column, out)
            continue
        out.append(char)
        i += 1
    raise _LineError(
        column + pos, "unterminated string (multi-line values are not accepted)"
    )


def _escape(text: str, i: int, column: int, out: list[str]) -> int:
    code = text[i + 1 : i + 2]
    if code in _ESCAPES:
        out.append(_ESCAPES[code])
        return i + 2
    if code in _HEX_ESCAPES:
        width = _HEX_ESCAPES[code]
        digits = text[i + 2 : i + 2 + width]
        if len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
            value = int(digits, 16)
            if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
                out.append(chr(value))
                return i + 2 + width
    if not code:
        raise _LineError(column + i, "unterminated string (multi-line values are not accepted)")
    raise _LineError(column + i, f"invalid escape sequence '\\{code}'")


def _parse_list(text: str, line: int, column: int) -> tuple[FlowList, int]:
    items: list[Scalar] = []
    i = 1
    unterminated = "unterminated list; a list must be written [a, b] on one line"
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text):
            raise _LineError(column, unterminated)
        char = text[i]
        if char == "]":
            if items:
                raise _LineError(column + i, "empty list item (trailing comma)")
            return FlowList((), line, column), i + 1
        if char == "#" and text[i - 1] in " \t":
            raise _LineError(column, unterminated)
        if char in "\"'":
            item, i = _parse_quoted(text, i, line, column)
        elif char == "[":
            raise _LineError(column + i, "nested lists are not accepted")
        elif char == ",":
            raise _LineError(column + i, "empty list item")
        else:
            _check_plain_start(text, i, column, in_list=True)
            start = i
            while i < len(text) and text[i] not in ",[]{}" and not (
                text[i] == "#" and text[i - 1] in " \t"
            ):
                i += 1
            plain = text[start:i].rstrip(" \t")
            _check_plain_body(plain, column + start)
            if i < len(text) and text[i] in "[{}":
                raise _LineError(column + i, f"{text[i]!r} inside a list item; quote the item")
            item = Scalar(plain, False, line, column + start)
        items.append(item)
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text) or (text[i] == "#" and text[i - 1] in " \t"):
            raise _LineError(column, unterminated)
        if text[i] == "]":
            return FlowList(tuple(items), line, column), i + 1
        if text[i] != ",":
            raise _LineError(column + i, "expected ',' or ']' after a list item")
        i += 1
        while i < len(text) and text[i] in " \t":
            i += 1
        if i < len(text) and text[i] == "]":
            raise _LineError(column + i, "empty list item (trailing comma)")
