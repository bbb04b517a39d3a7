"""A JSON Schema whose `$ref`s loop without descending into the value is refused where it
is loaded, wherever the loop sits, with the loop's path, in milliseconds.

Before, only a loop that a few sample values reached was found (`{$ref: a}` at the top);
one nested in a property (`properties.a -> $defs.A -> allOf -> $defs.A`) loaded, and
validating an output that had `a` recursed until Python's stack ran out. A recursive schema
that descends into the value (a tree) is valid and still accepted.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from agentkit._internal.schema import check_schema, schema_violations
from agentkit._internal.schema_cycles import ref_cycle
from agentkit.actions import Action, ActionError
from agentkit.errors import SpecError
from agentkit.spec import AgentSpec
from agentkit.tools import McpServerError
from support.bench import quick
from support.http_api import bearer
from support.paths import ROOT, SRC
from support.served import Served, served

NESTED = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}},
}

CYCLES: list[tuple[dict[str, Any], str]] = [
    (NESTED, "#/properties/a/$ref -> #/$defs/A -> #/$defs/A/allOf/0/$ref -> #/$defs/A"),
    (
        {"properties": {"a": {"$ref": "#/properties/a"}}},
        "#/properties/a -> #/properties/a/$ref -> #/properties/a",
    ),
    (
        {"type": "array", "items": {"anyOf": [{"type": "null"}, {"$ref": "#/items"}]}},
        "#/items -> #/items/anyOf/1/$ref -> #/items",
    ),
    (
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"not": {"$ref": "#/$defs/a"}}}},
        "#/$defs/a -> #/$defs/a/$ref -> #/$defs/b -> #/$defs/b/not/$ref -> #/$defs/a",
    ),
    (
        {"$defs": {"A": {"$anchor": "node", "if": {"$ref": "#node"}}}, "$ref": "#/$defs/A"},
        "#/$ref -> #/$defs/A -> #/$defs/A/if/$ref -> #/$defs/A",
    ),
    (
        {"oneOf": [{"$ref": "#"}, {"type": "string"}]},
        "# -> #/oneOf/0/$ref -> #",
    ),
]


@pytest.mark.parametrize(("schema", "shown"), CYCLES)
def test_a_cycle_anywhere_is_refused_with_its_path_in_milliseconds(
    schema: dict[str, Any], shown: str
) -> None:
    started = time.perf_counter()
    with pytest.raises(ValueError, match="loop back to themselves") as refused:
        check_schema(schema)
    elapsed = time.perf_counter() - started
    assert shown in str(refused.value)
    assert elapsed < 1.0  # a few milliseconds; the target itself belongs to bench/


def test_every_loader_refuses_it_naming_the_field() -> None:
    with pytest.raises(SpecError) as spec_error:
        AgentSpec(id="demo:o", output_schema=NESTED)
    assert spec_error.value.field == "output_schema"
    assert "#/$defs/A/allOf/0/$ref" in str(spec_error.value)

    async def execute(args: dict[str, Any], ctx: Any) -> str:
        return "never"

    with pytest.raises(ActionError, match=r"demo:act: input_schema: .*#/\$defs/A/allOf/0/\$ref"):
        Action(id="demo:act", input_schema=NESTED, execute=execute)


def test_a_host_tool_schema_that_loops_is_a_violation_not_a_recursion() -> None:
    """A host's own `Tool` is checked at its first call (as any schema that cannot be
    applied is); the call gets the loop as its error instead of a RecursionError."""
    (violation,) = schema_violations({"a": 1}, NESTED)
    assert "the schema cannot be applied" in violation
    assert "#/$defs/A/allOf/0/$ref -> #/$defs/A" in violation


def test_an_mcp_tool_whose_schema_loops_is_refused_when_its_server_starts() -> None:
    from agentkit.tools._mcp import McpServerConfig, _as_tool

    listed = SimpleNamespace(name="loop", description="d", input_schema=NESTED)
    with pytest.raises(McpServerError, match=r"'srv'.*'loop'.*#/\$defs/A/allOf/0/\$ref"):
        _as_tool(McpServerConfig(name="srv", command="x"), None, listed)  # type: ignore[arg-type]


def test_recursive_schemas_that_descend_into_the_value_are_accepted() -> None:
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            }
        },
        "$ref": "#/$defs/node",
    }
    check_schema(tree)
    assert AgentSpec(id="demo:t", output_schema=tree).output_schema == tree
    assert schema_violations({"children": [{"children": []}]}, tree) == []
    assert schema_violations({"children": [{"children": 1}]}, tree)
    # A value nested deeper than Python's stack is a violation too, never a RecursionError.
    deep: dict[str, Any] = {"children": []}
    for _ in range(3000):
        deep = {"children": [deep]}
    (violation,) = schema_violations(deep, tree)
    assert "nested too deeply" in violation


def test_a_long_cycle_is_found_in_linear_time_and_shown_briefly() -> None:
    count = 5000
    chain = {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{(i + 1) % count}"} for i in range(count)}}
    started = time.perf_counter()
    shown = ref_cycle(chain)
    assert time.perf_counter() - started < 5.0  # about 0.2 s; quadratic would take minutes
    assert shown is not None and "more)" in shown and len(shown) < 1000
    # so is a loop at the bottom of a schema nested thousands of levels deep
    deep: dict[str, Any] = {"$ref": "#"}
    for _ in range(3000):
        deep = {"allOf": [deep]}
    shown = ref_cycle(deep)
    assert shown is not None and shown.endswith("/$ref -> #") and len(shown) < 1000


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # this checkout's sources first (`served` puts only the repository's root on the path)
    path = os.pathsep.join([str(SRC), str(ROOT)])
    with served(tmp_path_factory.mktemp("cycles"), env={"PYTHONPATH": path}) as running:
        yield running


def test_a_prompt_whose_output_schema_loops_is_a_422_naming_it(server: Served) -> None:
    owner = server.add_member("olga", "owner")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        created = http.post("/v1/conversations", json={}, headers=bearer(owner)).json()
        refused = http.post(
            f"/v1/conversations/{created['id']}/runs",
            json={"prompt": "json", "outputSchema": NESTED},
            headers=bearer(owner),
        )
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert "#/properties/a/$ref -> #/$defs/A" in error["message"]
    assert "Traceback" not in refused.text


def test_the_schema_cycle_benchmark_runs(tmp_path: Path) -> None:
    """No timing is asserted (busy machines); bench/schema_cycles.py reports them."""
    output = tmp_path / "cycles.json"
    done = quick("schema_cycles.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    results = json.loads(output.read_text())["results"]
    assert results["nested loop"]["find_ms"] > 0 and "| nested loop |" in done.stdout
