"""One HTTP contract: the server's routes, its OpenAPI document's paths and the operations
the remote clients call are the rows of one route table; the error codes read the same
in both directions; what the server encodes, a client parses back."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentkit.client import contract
from agentkit.client.contract import (
    ERRORS,
    OPERATIONS,
    Operation,
    SseEvent,
    SseParser,
    code_for_exception,
    conversations_exception,
    encode_event,
    rooms_exception,
)
from support.paths import SRC

pytest.importorskip("starlette", reason="the server extra installs starlette")

PACKAGE = SRC / "agentkit"

# Operations no remote client calls: the open ones, cancelling one run by its id (the
# clients cancel whichever is running), the room agents' progress (shown by the web UI) and
# the run inspector's.
SERVER_ONLY = {
    contract.HEALTHZ,
    contract.OPENAPI,
    contract.METRICS,  # for the operators' scrapers
    contract.CANCEL_RUN,
    contract.LIST_ROOM_AGENTS,
    contract.LIST_RUNS,
    contract.GET_RUN,
    contract.LIST_MEMBERS,  # owners manage members from the command line or over HTTP
    contract.ROTATE_TOKEN,
}


def _table() -> set[tuple[str, str]]:
    return {(operation.method.lower(), operation.path) for operation in OPERATIONS}


def _client_operations() -> set[Operation]:
    """The operations the remote clients' modules name (imported from the contract)."""
    found = set()
    for module in (PACKAGE / "client").glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "agentkit.client.contract":
                for alias in node.names:
                    value = getattr(contract, alias.name)
                    if isinstance(value, Operation):
                        found.add(value)
    return found


def test_routes_openapi_paths_and_client_operations_are_one_table() -> None:
    from agentkit.conversations import Machine
    from agentkit.server import create_app, openapi_document

    assert len({operation.name for operation in OPERATIONS}) == len(OPERATIONS)
    assert len(_table()) == len(OPERATIONS)
    app = create_app(Machine(store=":memory:"))
    served = {
        (method.lower(), route.path)
        for route in app.routes
        for method in (getattr(route, "methods", None) or ())
        if method != "HEAD" and route.path != "/"  # the web UI's page is not an API route
    }
    document = openapi_document()
    described = {
        (method, path): operation
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    assert served == _table()
    assert set(described) == _table()
    for operation in OPERATIONS:
        entry = described[(operation.method.lower(), operation.path)]
        assert entry["operationId"] == operation.name
        assert ("security" in entry) == operation.member
    clients = _client_operations()
    assert clients <= set(OPERATIONS)
    assert clients | SERVER_ONLY == set(OPERATIONS)
    assert not clients & SERVER_ONLY


def _strings(module: Path) -> list[str]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    # An attribute's docstring is the string statement after its assignment.
    docstrings |= {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


@pytest.mark.parametrize(
    "module",
    sorted([*(PACKAGE / "server").glob("*.py"), *(PACKAGE / "client").glob("*.py")]),
    ids=lambda path: f"{path.parent.name}/{path.name}",
)
def test_no_path_is_written_outside_the_route_table(module: Path) -> None:
    roots = {operation.path.split("{")[0].rstrip("/") for operation in OPERATIONS}
    written = [text for text in _strings(module) if any(root in text for root in roots)]
    assert not written, f"{module.name} writes paths of the API: {written}"


def test_operation_urls_encode_each_value_as_one_segment() -> None:
    assert contract.GET_CONVERSATION.url(id="a/b c") == "/v1/conversations/a%2Fb%20c"
    assert contract.PUT_GRANT.parameters == ("room", "participant")
    assert (
        contract.PUT_GRANT.url(room="r", participant="member:*")
        == "/v1/rooms/r/grants/member%3A%2A"
    )
    with pytest.raises(ValueError):
        contract.FOLLOW_RUN.url(id="c")


@pytest.mark.parametrize("error", ERRORS, ids=lambda error: error.code)
def test_each_error_code_reads_the_same_both_ways(error: contract.ErrorCode) -> None:
    from agentkit.server import ERROR_CODES

    assert ERROR_CODES[error.code] == error.status
    for kind, read_back in (
        (error.conversations, conversations_exception),
        (error.rooms, rooms_exception),
    ):
        if kind is None:
            continue
        assert read_back(error.code) is kind  # what a client raises for the code
        if error.for_exceptions:
            # ... and the code the server answers for that exception
            assert code_for_exception(kind("x")) == error


def test_codes_a_client_does_not_know_read_as_its_api_base_class() -> None:
    from agentkit.errors import ConversationError, MemberError, RoomError

    assert conversations_exception("room_not_found") is ConversationError
    assert rooms_exception("conversation_busy") is RoomError
    assert conversations_exception("no_such_code") is ConversationError
    # An error without a row of its own is answered as its nearest class's.
    answer = code_for_exception(MemberError("no"))
    assert answer is not None and answer.code == "invalid"
    assert code_for_exception(RuntimeError("a bug")) is None


_NAMES = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0:"), min_size=1
).filter(lambda name: name.strip(" ") == name)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(
    events=st.lists(
        st.tuples(_NAMES, _JSON, st.none() | st.integers(min_value=0)), min_size=1, max_size=5
    ),
    cut=st.integers(min_value=0),
)
def test_what_the_server_encodes_a_client_parses_back(
    events: list[tuple[str, object, int | None]], cut: int
) -> None:
    stream = b": stream\n\n" + b"".join(encode_event(*event) for event in events)
    cut %= len(stream) + 1
    parser = SseParser()
    parsed = parser.feed(stream[:cut]) + parser.feed(stream[cut:])
    last_id: str | None = None
    expected = []
    for name, data, event_id in events:
        if event_id is not None:
            last_id = str(event_id)
        expected.append(
            SseEvent(
                event=name,
                data=json.dumps(data, ensure_ascii=False, separators=(",", ":")),
                id=last_id,
            )
        )
    assert parsed == expected
    assert [json.loads(event.data) for event in parsed] == [data for _, data, _ in events]
