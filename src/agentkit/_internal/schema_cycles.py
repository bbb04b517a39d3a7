"""Find the `$ref` cycles of a JSON Schema that validation would follow without end.

A validator applies some subschemas to the value itself (`$ref`, `allOf`, `anyOf`,
`oneOf`, `not`, `if` / `then` / `else`, `dependentSchemas`) and others to a part of it
(`properties`, `items`, `additionalProperties`, `contains`, ...). A cycle of `$ref`s
that passes only through the first kind applies the same schema to the same value again
and again: validating anything that reaches it recurses until Python's stack runs out,
however small the value. A cycle that passes through the second kind (a tree whose
`children` are trees) descends one level of the value per turn, so it ends where the value
ends; such recursive schemas are valid and accepted.

`ref_cycle` looks at the whole schema, not only at what a sample value reaches: a cycle
inside `properties`, `items`, `$defs` or `allOf` is found wherever it is, reachable or not,
in time linear in the schema's size (no recursion: a schema nested thousands of levels
deep is fine). `$ref`s that do not start with `#` (remote schemas, which agentkit never
fetches) are not followed; `ref_problems` reports them.

How a cycle is shown: the JSON pointers of each `$ref` and of the schema it leads to, from
the root's first `$ref` on the way to the cycle (when the root reaches it) around the cycle
and back to where it closes, such as
`#/properties/a/$ref -> #/$defs/A -> #/$defs/A/allOf/0/$ref -> #/$defs/A`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["RefCycle", "find_ref_cycle", "ref_cycle"]

Pointer = tuple[str | int, ...]

_SAME, _PART, _HOLD = 0, 1, 2
"""A subschema applies to the value itself, to a part of it, or is only held ($defs)."""
_ONE, _MANY, _MAP = 0, 1, 2
"""A keyword holds one subschema, a list of them, or a mapping of names to them."""
_KEYWORDS: dict[str, tuple[int, int]] = {
    **{key: (_SAME, _ONE) for key in ("not", "if", "then", "else")},
    **{key: (_SAME, _MANY) for key in ("allOf", "anyOf", "oneOf")},
    **{key: (_SAME, _MAP) for key in ("dependentSchemas", "dependencies")},
    **{
        key: (_PART, _ONE)
        for key in (
            "additionalItems",
            "additionalProperties",
            "contains",
            "propertyNames",
            "unevaluatedItems",
            "unevaluatedProperties",
            "contentSchema",
        )
    },
    "items": (_PART, _ONE),  # or a list of them (drafts before 2020-12), see `_children`
    "prefixItems": (_PART, _MANY),
    **{key: (_PART, _MAP) for key in ("properties", "patternProperties")},
    **{key: (_HOLD, _MAP) for key in ("$defs", "definitions")},
}
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_SHOWN_STEPS = 24
"""Pointers a cycle is shown with at most; the middle of a longer one is left out."""
_SHOWN_PARTS = 20
"""Parts a pointer is shown with at most; the middle of a longer one is left out."""


@dataclass(frozen=True)
class RefCycle:
    """A `$ref` cycle that does not descend into the value.

    Attributes:
        location: Where the first `$ref` of the cycle is, as path parts from the root.
        text: The cycle as JSON pointers joined by `->` (see the module documentation).
    """

    location: Pointer
    text: str


def ref_cycle(schema: Any) -> str | None:
    """The first `$ref` cycle of `schema` that never descends into the value, shown as a
    path of JSON pointers, or `None` when there is none."""
    found = find_ref_cycle(schema)
    return None if found is None else found.text


_SAME, _PART, _HOLD = 0, 1, 2


def _children(node: dict[str, Any]) -> list[tuple[Pointer, dict[str, Any], int]]:
    """Every subschema of `node`: its path from `node`, its value, and how it applies
    (`_SAME`, `_PART` or `_HOLD`)."""
    found: list[tuple[Pointer, dict[str, Any], int]] = []
    for key, value in node.items():
        spec = _KEYWORDS.get(key)
        if spec is None:
            continue
        kind, shape = spec
        if isinstance(value, dict) and shape == _ONE:
            found.append(((key,), value, kind))
        elif isinstance(value, list) and shape in (_ONE, _MANY):  # `items: [...]` too
            found.extend(
                ((key, index), item, kind)
                for index, item in enumerate(value)
                if isinstance(item, dict)
            )
        elif isinstance(value, dict) and shape == _MAP:
            found.extend(
                ((key, name), item, kind) for name, item in value.items() if isinstance(item, dict)
            )
    return found


class _Graph:
    """The schema's subschemas (numbered) and the edges between them.

    Nodes are numbered and remember their parent, so a node deep in the schema costs no
    more than a shallow one; pointers are spelled out only for what is shown.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.objects: list[dict[str, Any]] = []
        self.bases: list[int] = []
        self.parents: list[tuple[int, Pointer]] = []  # (parent node, parts from it)
        self.by_object: dict[int, int] = {}
        self.anchors: dict[tuple[int, str], int] = {}
        self.dynamic: dict[str, list[int]] = {}
        self.children: list[list[tuple[Pointer, dict[str, Any], int]]] = []
        self.same: list[list[tuple[int, str | None]]] = []  # edges on the same value
        self.part: list[list[int]] = []  # edges to a part of the value
        self._add(schema, 0, -1, ())
        done = 0
        while done < len(self.objects):  # nodes added by a $ref's target are done too
            self._link(done)
            done += 1

    def _add(self, node: dict[str, Any], base: int, parent: int, parts: Pointer) -> int:
        """Number `node` and every subschema under it; the number of `node`."""
        first = len(self.objects)
        stack = [(node, base, parent, parts)]
        while stack:
            node, base, parent, parts = stack.pop()
            if id(node) in self.by_object:
                continue
            number = len(self.objects)
            self.by_object[id(node)] = number
            if number == 0 or (isinstance(node.get("$id"), str) and parts):
                base = number  # a resource of its own: its `#...` refs start here
            self.objects.append(node)
            self.bases.append(base)
            self.parents.append((parent, parts))
            self.same.append([])
            self.part.append([])
            children = _children(node)
            self.children.append(children)
            for key in ("$anchor", "$dynamicAnchor"):
                name = node.get(key)
                if isinstance(name, str):
                    self.anchors.setdefault((base, name), number)
                    if key == "$dynamicAnchor":
                        self.dynamic.setdefault(name, []).append(number)
            for child_parts, child, _ in children:
                stack.append((child, base, number, child_parts))
        return self.by_object.get(id(node), first)

    def _link(self, number: int) -> None:
        node, base = self.objects[number], self.bases[number]
        for key in _REFS:
            ref = node.get(key)
            if isinstance(ref, str) and ref.startswith("#"):
                for target in self._targets(key, ref, base):
                    self.same[number].append((target, key))
        for _, child, kind in self.children[number]:
            target = self.by_object[id(child)]
            if kind == _SAME:
                self.same[number].append((target, None))
            elif kind == _PART:
                self.part[number].append(target)

    def _targets(self, key: str, ref: str, base: int) -> list[int]:
        if ref == "#" or ref.startswith("#/"):
            found = [] if (target := self._pointed(base, ref)) is None else [target]
            return [*found, 0] if key == "$recursiveRef" else found
        # `#name`: an anchor of this resource (and, for $dynamicRef, any resource's)
        name = ref[1:]
        static = self.anchors.get((base, name))
        found = [] if static is None else [static]
        return found + self.dynamic.get(name, []) if key == "$dynamicRef" else found

    def _pointed(self, base: int, ref: str) -> int | None:
        """The node the JSON pointer `ref` names from the resource `base` (numbered now if
        it is a schema no keyword holds), or `None` when it names no schema."""
        value: Any = self.objects[base]
        parts: list[str | int] = []
        for raw in ref[1:].split("/")[1:]:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and part in value:
                value = value[part]
                parts.append(part)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
                parts.append(int(part))
            else:
                return None
        if not isinstance(value, dict):
            return None
        found = self.by_object.get(id(value))
        return found if found is not None else self._add(value, base, base, tuple(parts))

    def pointer(self, number: int, *more: str) -> str:
        """The JSON pointer of a node (and `more` parts), its middle left out when the
        node is deep (a message stays short however deep the schema)."""
        parts: list[str | int] = list(self.path(number, *more))
        if len(parts) > _SHOWN_PARTS:
            cut = len(parts) - _SHOWN_PARTS + 1
            parts = [*parts[:6], f"...({cut} more)...", *parts[-(_SHOWN_PARTS - 7) :]]
        return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)

    def path(self, number: int, *more: str) -> Pointer:
        parts: list[str | int] = list(more)
        while number > 0:
            number, step = self.parents[number]
            parts[:0] = step
        return tuple(parts)


def find_ref_cycle(schema: Any) -> RefCycle | None:
    """The first `$ref` cycle of `schema` that never descends into the value, or `None`."""
    if not isinstance(schema, dict):
        return None
    graph = _Graph(schema)
    state = [0] * len(graph.objects)  # 1: on the current path, 2: done
    for start in range(len(graph.objects)):
        if state[start]:
            continue
        path: list[tuple[int, str | None]] = [(start, None)]
        walks = [iter(graph.same[start])]
        state[start] = 1
        while walks:
            step = next(walks[-1], None)
            if step is None:
                walks.pop()
                state[path.pop()[0]] = 2
                continue
            target, via = step
            if state[target] == 1:
                index = next(i for i, (at, _) in enumerate(path) if at == target)
                return _shown(graph, [*path[index:], (target, via)])
            if state[target] == 0:
                state[target] = 1
                path.append((target, via))
                walks.append(iter(graph.same[target]))
    return None


def _shown(graph: _Graph, loop: list[tuple[int, str | None]]) -> RefCycle:
    """The cycle `loop` (its first node repeated at its end), from where the root first
    reaches it (after the `$ref`s on that way) or else from a `$ref`'s target."""
    nodes = [at for at, _ in loop[:-1]]
    vias = [via for _, via in loop[1:]]  # vias[i]: how nodes[i] leads to the next node
    entry, reached = _entry(graph, set(nodes))
    if reached is not None:
        start = nodes.index(reached)
    else:
        refs = [i for i, via in enumerate(vias) if via is not None]
        start = (refs[0] + 1) % len(nodes) if refs else 0
    nodes, vias = nodes[start:] + nodes[:start], vias[start:] + vias[:start]
    shown = [graph.pointer(nodes[0])]
    location: Pointer | None = None
    for index, via in enumerate(vias):
        target = nodes[(index + 1) % len(nodes)]
        if via is not None:
            location = location or graph.path(nodes[index], via)
            shown += [graph.pointer(nodes[index], via), graph.pointer(target)]
    if len(shown) == 1 or shown[-1] != shown[0]:
        shown.append(shown[0])  # a Python object that holds itself has no $ref to show
    where = location if location is not None else graph.path(nodes[0])
    steps = [*entry, *shown]
    if len(steps) > _SHOWN_STEPS:  # a message stays short however long the cycle
        cut = len(steps) - _SHOWN_STEPS + 4
        steps = [*steps[: _SHOWN_STEPS - 8], f"({cut} more)", *steps[-4:]]
    return RefCycle(location=where, text=" -> ".join(steps))


def _entry(graph: _Graph, goals: set[int]) -> tuple[list[str], int | None]:
    """The `$ref`s (and their targets) on a shortest way by which validation goes from
    the root to one of `goals`, that goal left out, and the goal; `([], None)` when
    validation never reaches them."""
    came: dict[int, tuple[int, str | None]] = {0: (-1, None)}
    queue = deque([0])
    reached: int | None = None
    while queue:
        at = queue.popleft()
        if at in goals:
            reached = at
            break
        for target, via in [*graph.same[at], *((target, None) for target in graph.part[at])]:
            if target not in came:
                came[target] = (at, via)
                queue.append(target)
    if reached is None:
        return [], None
    shown: list[str] = []
    at = reached
    while at != 0:
        before, via = came[at]
        if via is not None:
            shown += [graph.pointer(at), graph.pointer(before, via)]
        at = before
    shown.reverse()
    return shown[:-1], reached
