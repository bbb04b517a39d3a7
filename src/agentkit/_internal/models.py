"""Building pydantic models without validation, for values agentkit made itself.

Validating a model costs microseconds; the engine builds a dozen events per run and the
run log rebuilds a streamed answer's deltas for each reader. These are the pieces of
pydantic's instance layout such a builder sets directly (cheaper than `object.__setattr__`,
which frozen models need anyway): the builders of events and messages are in
`agentkit.engine`, and the run log inlines the one for text deltas.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = [
    "new_model",
    "set_dict",
    "set_extra",
    "set_fields_set",
    "set_private",
    "shared_fields_set",
]

new_model = object.__new__
set_dict = BaseModel.__dict__["__dict__"].__set__
set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
set_private = BaseModel.__dict__["__pydantic_private__"].__set__

_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


def shared_fields_set(names: Any) -> set[str]:
    """One `set` per distinct set of field names, shared by every trusted model built with
    it. The models are frozen, so nothing changes the set in place (`model_copy` copies
    it first); sharing it spares each event (and the garbage collector) a set of its own."""
    key = frozenset(names)
    shared = _FIELDS_SETS.get(key)
    if shared is None:
        shared = _FIELDS_SETS[key] = set(key)
    return shared
