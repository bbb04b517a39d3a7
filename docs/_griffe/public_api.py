"""A Griffe extension, loaded by mkdocs.yml, that shapes the API reference for readers.

mkdocstrings' filters hide private *members*, but private names still leak in through the
bases of a public class (`Bases: _Event`), the parameters of a public function
(`Runtime.start(..., _depth=0)`) and values that name private constants; and a field
inherited from a private base is not shown at all. Once the `agentkit` package is loaded:

- a private base class is replaced by its own bases, and its public attributes (the `agent`
  field every event inherits from `_Event`) are copied into the class, so each public class
  shows every field it has and no private class;
- parameters whose name starts with `_` are dropped from signatures;
- an attribute a method sets (`self.store = store if ... else MemoryStore()`) keeps its
  name and type but not the right-hand side, which is code rather than a default;
- a class docstring's `Attributes:` section becomes the docstrings of the fields it
  describes, so each field is shown once with its type, default and meaning;
- a value, default or annotation that names something private (`-> _Job`,
  `frozenset(_NAMES)`) is left out rather than shown.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import (
    Alias,
    Attribute,
    Class,
    Docstring,
    DocstringSectionAttributes,
    Expr,
    Extension,
    Function,
    Module,
    Object,
)

# Members of a private base that are machinery, not fields (pydantic's model configuration).
NOT_FIELDS = frozenset({"model_config"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _copy_attribute(attribute: Attribute, owner: Class) -> Attribute:
    docstring = None
    if attribute.docstring is not None:
        docstring = Docstring(
            attribute.docstring.value,
            lineno=attribute.docstring.lineno,
            endlineno=attribute.docstring.endlineno,
            parser=attribute.docstring.parser,
            parser_options=attribute.docstring.parser_options,
        )
    copy = Attribute(
        attribute.name,
        lineno=attribute.lineno,
        endlineno=attribute.endlineno,
        docstring=docstring,
        value=attribute.value,
        annotation=attribute.annotation,
        parent=owner,
    )
    copy.labels = set(attribute.labels)
    return copy


class PublicApi(Extension):
    """Flatten private bases into public classes; keep private names out of signatures."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if isinstance(obj, Class) and not _private(obj.name):
                self._flatten_private_bases(obj)
                self._attributes_section_to_members(obj)
            elif isinstance(obj, Function):
                self._clean_signature(obj)
            elif isinstance(obj, Attribute):
                if _assigned_in_init(obj) or _mentions_private(obj.value):
                    obj.value = None  # code, not a default a reader could use
                if _mentions_private(obj.annotation):
                    obj.annotation = None

    def _attributes_section_to_members(self, cls: Class) -> None:
        """Move the descriptions of a class docstring's `Attributes:` section onto the
        fields themselves, so each field is shown once, with its type, default and meaning
        (rather than a table followed by the same fields again without their meaning)."""
        if cls.docstring is None:
            return
        sections = cls.docstring.parsed  # cached: the renderer reads this same list
        for section in list(sections):
            if not isinstance(section, DocstringSectionAttributes):
                continue
            described = {a.name: a for a in section.value}
            fields = {n: m for n, m in cls.members.items() if isinstance(m, Attribute)}
            if not set(described) <= set(fields):
                continue  # the section names something that is not a field: keep it
            for name, entry in described.items():
                field = fields[name]
                if field.docstring is None and entry.description:
                    field.docstring = Docstring(
                        entry.description,
                        parent=field,
                        parser=cls.docstring.parser,
                        parser_options=cls.docstring.parser_options,
                    )
            sections.remove(section)

    def _clean_signature(self, func: Function) -> None:
        for parameter in list(func.parameters):
            if _private(parameter.name):
                del func.parameters[parameter.name]
                continue
            if _mentions_private(parameter.annotation):
                parameter.annotation = None
            if _mentions_private(parameter.default):
                parameter.default = "..."
        if _mentions_private(func.returns):
            func.returns = None

    def _flatten_private_bases(self, cls: Class) -> None:
        bases: list[str | Expr] = []
        for base, resolved in _bases(cls):
            if resolved is None or not _private(resolved.name):
                bases.append(base)
                continue
            # lift the private base's own bases, then its public attributes
            self._flatten_private_bases(resolved)
            for inherited in resolved.bases:
                if inherited not in bases:
                    bases.append(inherited)
            for name, member in resolved.members.items():
                if (
                    isinstance(member, Attribute)
                    and name not in cls.members
                    and not _private(name)
                    and name not in NOT_FIELDS
                ):
                    cls.set_member(name, _copy_attribute(member, cls))
        cls.bases = bases


PRIVATE_NAME = re.compile(r"(?<![\w.])_[A-Za-z]\w*|\._[A-Za-z]\w*")


def _mentions_private(expression: str | Expr | None) -> bool:
    """Whether a value or annotation names something private (`_Job`, `_NOTHING_USED`)."""
    return expression is not None and PRIVATE_NAME.search(str(expression)) is not None


def _assigned_in_init(attribute: Attribute) -> bool:
    """An instance attribute set by a method (`self.x = ...`), not declared on the class."""
    parent = attribute.parent
    return (
        isinstance(parent, Class)
        and "instance-attribute" in attribute.labels
        and "class-attribute" not in attribute.labels
        and attribute.value is not None
    )


def _bases(cls: Class) -> list[tuple[str | Expr, Class | None]]:
    out: list[tuple[str | Expr, Class | None]] = []
    for base in cls.bases:
        path = base if isinstance(base, str) else base.canonical_path
        try:
            resolved: Object | Alias = cls.modules_collection.get_member(path)
            if isinstance(resolved, Alias):
                resolved = resolved.final_target
        except Exception:  # an external base (pydantic, Exception, ...): kept as it is
            out.append((base, None))
            continue
        out.append((base, resolved if isinstance(resolved, Class) else None))
    return out


def _walk(obj: Object) -> list[Object]:
    found: list[Object] = [obj]
    for member in obj.members.values():
        if isinstance(member, Alias):
            continue  # documented where it is defined
        found.extend(_walk(member))
    return found
