"""Semantic fingerprints of definitions, and the resume check.

A session stores the fingerprint of the definition it started with; resuming it with a
changed definition is refused. Fingerprints cover what changes behaviour and nothing else:
reformatting the file, reordering keys, changing quotes, writing a default explicitly or
moving the file never changes them.

Formats (stable; pinned by test vectors):

- The **canonical fields** are a JSON object with the frontmatter names as keys:
  `id`, `description` (trimmed), `runtime`, `prompt`, `body`, `model-policy` (resolved:
  `inherit` when omitted without a model, `select` when omitted with one), `model`,
  `provider`, `auth`, `reasoning` (`null` when unset), `tools` (`"all"` or the sorted list of
  entries) and `inherit_claude_config`. The body is normalised: line endings become `\\n`,
  trailing whitespace of each line is removed, and the whole is trimmed.
- **v2** hashes `{"fields": <canonical fields>, "version": 2}`; **v1** hashes
  `{"fields": <canonical fields without runtime and inherit_claude_config>, "version": 1}`.
  The JSON is serialised with sorted keys, `(",", ":")` separators and UTF-8
  (`ensure_ascii=False`), hashed with SHA-256, and written `v2:<64 hex digits>` /
  `v1:<64 hex digits>`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from agentkit.defs._types import Definition
from agentkit.errors import ResumeError
from agentkit.spec import AgentSpec

__all__ = [
    "ResumeError",
    "canonical_fields",
    "check_resume",
    "fingerprint",
    "fingerprint_record",
]

_V2_ONLY = ("runtime", "inherit_claude_config")
_LONG = ("description", "body")


def _normalise_body(body: str) -> str:
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def canonical_fields(definition: Definition, version: Literal[1, 2] = 2) -> dict[str, Any]:
    """The behaviourally relevant fields of `definition`, as fingerprinted by `version`."""
    tools: str | list[str] = (
        "all" if definition.tools == "all" else sorted(set(definition.tools))
    )
    fields: dict[str, Any] = {
        "id": definition.id,
        "description": definition.description.strip(),
        "runtime": definition.runtime,
        "prompt": definition.prompt_mode,
        "body": _normalise_body(definition.body),
        "model-policy": definition.model_policy,
        "model": definition.model,
        "provider": definition.provider,
        "auth": definition.auth,
        "reasoning": definition.reasoning,
        "tools": tools,
        "inherit_claude_config": definition.inherit_claude_config,
    }
    if version == 1:
        for key in _V2_ONLY:
            del fields[key]
    return fields


def _hash(fields: Mapping[str, Any], version: int) -> str:
    payload = json.dumps(
        {"fields": fields, "version": version},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return f"v{version}:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fingerprint(definition: Definition, version: Literal[1, 2] = 2) -> str:
    """The `v2:<hex>` (or `v1:<hex>`) fingerprint of `definition`.

    ```python
    from agentkit.defs import fingerprint, parse_definition

    one = "---\\ndescription: d\\ntools: [grep, bash]\\n---\\nHi\\n"
    two = "---\\ntools: ['bash', \\"grep\\"]\\ndescription: 'd'\\n---\\n\\nHi"
    a = parse_definition(one, path="a.md")
    b = parse_definition(two, path="a.md")
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a).startswith("v2:")
    ```
    """
    return _hash(canonical_fields(definition, version), version)


def fingerprint_record(definition: Definition) -> dict[str, Any]:
    """What a session stores about its definition: `{"fingerprint": "v2:...", "fields": {...}}`.

    The canonical fields let a refused resume say which fields changed.
    """
    return {"fingerprint": fingerprint(definition), "fields": canonical_fields(definition)}


def check_resume(stored: str | Mapping[str, Any], current: Definition | AgentSpec) -> None:
    """Check that a session created with `stored` may resume with `current`.

    `stored` is a fingerprint string or a record from `fingerprint_record` (the record lets
    the error name the changed fields). `current` is the definition now on disk, or the spec
    `bind` made from it (its `metadata["definition"]` holds the record). An equal v2
    fingerprint is accepted. A v1 fingerprint (sessions from before the runtime axis) is
    accepted only when it matches exactly and the definition is a default Rho one
    (`runtime: rho`, `inherit_claude_config: false`).

    Raises:
        ResumeError: saying what changed.
        ValueError: when `current` is a spec that was not bound from a definition.
    """
    current_fields, agent_id = _current(current)
    fields: Mapping[str, Any] | None = None
    if isinstance(stored, Mapping):
        value = stored.get("fingerprint")
        raw_fields = stored.get("fields")
        fields = raw_fields if isinstance(raw_fields, Mapping) else None
    else:
        value = stored
    if not isinstance(value, str):
        raise ResumeError(f"the session of {agent_id!r} stored no definition fingerprint")
    v1_fields = {k: v for k, v in current_fields.items() if k not in _V2_ONLY}
    if value.startswith("v2:"):
        if value == _hash(current_fields, 2):
            return
        now = _hash(current_fields, 2)
    elif value.startswith("v1:"):
        now = _hash(v1_fields, 1)
        if value == now:
            axis = tuple(k for k in _V2_ONLY if current_fields.get(k) != _default(k))
            if not axis:
                return
            raise ResumeError(
                f"the session of {agent_id!r} has a v1 fingerprint, which resumes only a "
                f"default Rho definition; this one has runtime {current_fields['runtime']!r} "
                f"and inherit_claude_config {_show(current_fields['inherit_claude_config'])}",
                axis,
            )
    else:
        raise ResumeError(f"unrecognised definition fingerprint {value!r}")
    if fields is None:
        raise ResumeError(
            f"the definition {agent_id!r} changed since the session started "
            f"(fingerprint {value} is now {now})"
        )
    changed = tuple(
        key for key in current_fields if fields.get(key, _default(key)) != current_fields[key]
    )
    parts = [
        key if key in _LONG else f"{key} ({_show(fields.get(key, _default(key)))} -> "
        f"{_show(current_fields[key])})"
        for key in changed
    ]
    detail = ", ".join(parts) if parts else "fields unchanged but the fingerprint differs"
    raise ResumeError(
        f"the definition {agent_id!r} changed since the session started: {detail}", changed
    )


def _current(current: Definition | AgentSpec) -> tuple[dict[str, Any], str]:
    if isinstance(current, Definition):
        return canonical_fields(current), current.id
    record = current.metadata.get("definition")
    fields = record.get("fields") if isinstance(record, Mapping) else None
    if not isinstance(fields, Mapping):
        raise ResumeError(f"spec {current.id!r} was not bound from a definition")
    return dict(fields), current.id


def _default(key: str) -> Any:
    return {"runtime": "rho", "inherit_claude_config": False}.get(key)


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
