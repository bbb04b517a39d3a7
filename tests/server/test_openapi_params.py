"""The server's one reader of parameters and JSON text (`agentkit.server._params`), on its
own: what reaches it over HTTP is tested against a real server in
test_openapi_conformance.py; a path or query parameter with a lone surrogate cannot be
sent through uvicorn (it decodes percent-escapes with replacement characters), so the
check that refuses one anyway is tested here."""

from __future__ import annotations

import json

import pytest

from agentkit.server._errors import HTTPError
from agentkit.server._params import (
    MAX_INTEGER,
    BadNumber,
    check_text,
    integer_param,
    lone_surrogate_at,
    optional_integer_param,
    parse_json_float,
    parse_json_int,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, 7), ("0", 0), ("42", 42), ("007", 7), (str(MAX_INTEGER), MAX_INTEGER)],
)
def test_integers_are_read(raw: str | None, expected: int) -> None:
    assert integer_param(raw, "after", default=7) == expected


@pytest.mark.parametrize(
    "raw",
    ["", " ", "²", "٣", "1_000", "+1", "-1", "0x10", "1.0", str(MAX_INTEGER + 1), "9" * 5000],
)
def test_anything_else_is_invalid_naming_the_parameter(raw: str) -> None:
    with pytest.raises(HTTPError) as caught:
        integer_param(raw, "after", default=0)
    assert (caught.value.code, caught.value.status, caught.value.field) == ("invalid", 422, "after")


def test_minus_one_only_where_the_range_has_it() -> None:
    assert optional_integer_param("-1", "after", minimum=-1) == -1
    assert optional_integer_param(None, "after", minimum=-1) is None
    with pytest.raises(HTTPError):
        optional_integer_param("-2", "after", minimum=-1)
    with pytest.raises(HTTPError):
        optional_integer_param("1001", "limit", minimum=1, maximum=1000)


def test_lone_surrogates_in_parameters_are_invalid() -> None:
    check_text([("room", "caf\u00e9"), ("emoji", "\U0001f600")], "path")
    with pytest.raises(HTTPError) as caught:
        check_text([("ok", "x"), ("room", "a\ud800")], "path")
    assert caught.value.field == "room"


def test_lone_surrogates_in_json_are_found_where_they_are() -> None:
    assert lone_surrogate_at(json.loads('{"a": ["x", {"b": "\\ud83d\\ude00"}]}')) is None
    assert lone_surrogate_at(json.loads('{"a": ["x", {"b": "\\ud800"}]}')) == "a.1.b"
    assert lone_surrogate_at(json.loads('{"a": {"\\udfff": 1}}')) == "a.\udfff"


def test_json_numbers_a_store_holds() -> None:
    assert parse_json_int(str(MAX_INTEGER)) == MAX_INTEGER
    assert parse_json_int(str(-MAX_INTEGER - 1)) == -MAX_INTEGER - 1
    assert parse_json_float("1.5e300") == 1.5e300
    for text in (str(MAX_INTEGER + 1), str(-MAX_INTEGER - 2), "9" * 5000):
        with pytest.raises(BadNumber):
            parse_json_int(text)
    for text in ("1e400", "-1e400"):
        with pytest.raises(BadNumber):
            parse_json_float(text)
