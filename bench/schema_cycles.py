"""Schema cycles: what finding a `$ref` cycle costs, and refusing a schema that has one.

Run: `python bench/schema_cycles.py [--quick] [--json FILE]` (with `src` on PYTHONPATH).

- `find`: `find_ref_cycle(schema)` alone (the graph walk of `agentkit._internal.
  schema_cycles`), milliseconds per schema;
- `check`: `check_schema(schema)`, the meta-schema check by `jsonschema` and the `$ref`
  checks together: what loading an `outputSchema` costs, refused or not.

On: the loop nested in a property (`properties.a -> $defs.A -> allOf -> $defs.A`), an
ordinary tool schema of 50 properties with a recursive tree type (accepted), and a loop
through 5,000 `$defs` (refused; `find` only, the meta-schema check of so many `$defs` is
`jsonschema`'s cost). Reported: medians over the rounds. The target: an ordinary schema is
refused or accepted in a few milliseconds, and `find` grows linearly with the schema.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from agentkit._internal.schema import check_schema
from agentkit._internal.schema_cycles import find_ref_cycle

NESTED = {
    "type": "object",
    "properties": {"a": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}},
}
TREE = {
    "type": "object",
    "properties": {
        **{f"field{i}": {"type": "string", "description": "a field"} for i in range(49)},
        "root": {"$ref": "#/$defs/node"},
    },
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }
    },
}


def chain(count: int) -> dict[str, Any]:
    return {"$defs": {f"d{i}": {"$ref": f"#/$defs/d{(i + 1) % count}"} for i in range(count)}}


def median_ms(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        with contextlib.suppress(ValueError):  # refused: what is measured
            work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few rounds (a smoke run)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    args = parser.parse_args()
    rounds = 5 if args.quick else 200
    check_schema({"type": "object"})  # import jsonschema outside the measure
    long = chain(500 if args.quick else 5000)
    results = {
        "nested loop": {
            "find_ms": median_ms(lambda: find_ref_cycle(NESTED), rounds),
            "check_ms": median_ms(lambda: check_schema(NESTED), rounds),
        },
        "tool schema with a tree": {
            "find_ms": median_ms(lambda: find_ref_cycle(TREE), rounds),
            "check_ms": median_ms(lambda: check_schema(TREE), rounds),
        },
        f"loop of {len(long['$defs'])} $defs": {
            "find_ms": median_ms(lambda: find_ref_cycle(long), max(3, rounds // 40)),
        },
    }
    print("| schema | find (ms) | check_schema (ms) |")
    print("| --- | ---: | ---: |")
    for name, row in results.items():
        check = f"{row['check_ms']:.2f}" if "check_ms" in row else "-"
        print(f"| {name} | {row['find_ms']:.3f} | {check} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"quick": args.quick, "results": results}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
