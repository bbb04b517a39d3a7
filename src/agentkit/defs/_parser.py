"""Parsing agent definitions: every field, default, constraint and cross-field rule.

`parse_definition` turns the text of one Markdown file into a
[`Definition`][agentkit.defs.Definition] or raises
[`DefinitionError`][agentkit.defs.DefinitionError] listing every problem of the file with its
line, column and field. After the prose rules, the frontmatter is also checked against the
document's JSON Schema (shipped as package data); a field the prose rules already reported is
not reported twice.

Why one long module: one reader per frontmatter field, in the order of the document's table,
each short; they share the checker that collects every problem at once.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, cast

from agentkit._internal.input import InputFileError, read_input_file
from agentkit.defs._auth import AuthRegistry
from agentkit.defs._grammar import Document, Entry, FlowList, Scalar, read_document
from agentkit.defs._types import (
    CLAUDE_REASONING,
    RHO_CAPABILITIES,
    RHO_NAME,
    RHO_REASONING,
    Definition,
    DefinitionError,
    DefinitionModelPolicy,
    PromptMode,
    Reasoning,
    RuntimeName,
)
from agentkit.diagnostics import Diagnostic

__all__ = [
    "FIELDS",
    "claude_entry_problem",
    "frontmatter_schema",
    "load_definition",
    "load_definitions",
    "parse_definition",
]

FIELDS: tuple[str, ...] = (
    "id",
    "description",
    "runtime",
    "prompt",
    "model-policy",
    "model",
    "provider",
    "auth",
    "reasoning",
    "tools",
    "inherit_claude_config",
)
"""Every frontmatter key a definition may use."""

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_CLAUDE_BASE = re.compile(r"[A-Za-z0-9_-]+")
_DEFAULT_REGISTRY = AuthRegistry()


@lru_cache(maxsize=1)
def frontmatter_schema() -> dict[str, Any]:
    """The document's JSON Schema of the frontmatter object (package data)."""
    text = (
        resources.files("agentkit.defs")
        .joinpath("schema/agent-definition-frontmatter.json")
        .read_text(encoding="utf-8")
    )
    return cast(dict[str, Any], json.loads(text))


@lru_cache(maxsize=1)
def _schema_validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(frontmatter_schema())


def claude_entry_problem(entry: str) -> tuple[int, str] | None:
    """Why `entry` is not a valid Claude tool entry, as `(offset, message)`; `None` if valid.

    An entry is `ToolName` or `ToolName(specifier)`: the name uses letters, digits, `_` and
    `-`; the specifier has balanced parentheses and no commas.
    """
    match = _CLAUDE_BASE.match(entry)
    if not match:
        return 0, "a Claude tool entry starts with a name of letters, digits, '_' or '-'"
    start = match.end()
    if start == len(entry):
        return None
    if entry[start] != "(":
        return start, (
            f"unexpected {entry[start]!r} in the tool name "
            "(names use letters, digits, '_' and '-'; a specifier goes in parentheses)"
        )
    depth = 0
    end = -1
    for i in range(start, len(entry)):
        char = entry[i]
        if char == ",":
            return i, "commas are not allowed inside a specifier"
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end < 0:
        return start, "unbalanced parentheses in the specifier"
    if end != len(entry) - 1:
        return end + 1, "unexpected text after the specifier"
    if end == start + 1:
        return start, "empty specifier; write Name or Name(specifier)"
    return None


@dataclass
class _Check:
    """Collects the diagnostics of one file while its fields are read."""

    file: str
    doc: Document
    registry: AuthRegistry
    errors: list[Diagnostic] = field(default_factory=list)
    bad: set[str] = field(default_factory=set)

    def at(self, node: Scalar | FlowList | Entry, fld: str, message: str) -> None:
        self.errors.append(Diagnostic(self.file, node.line, node.column, fld, message))
        self.bad.add(fld)

    def missing(self, fld: str, message: str) -> None:
        if fld in self.bad:
            return
        line = self.doc.opening_line
        self.errors.append(Diagnostic(self.file, line, 1, fld, message))
        self.bad.add(fld)

    def has(self, key: str) -> bool:
        return key in self.doc.entries

    def string(self, key: str) -> Scalar | None:
        entry = self.doc.entries.get(key)
        if entry is None:
            return None
        value = entry.value
        if isinstance(value, FlowList):
            self.at(value, key, "must be a single value, not a list")
            return None
        if isinstance(value.value, bool):
            self.at(value, key, f"must be a string, not the boolean {value.text}")
            return None
        return value

    def enum(self, key: str, allowed: tuple[str, ...]) -> Scalar | None:
        value = self.string(key)
        if value is not None and value.text not in allowed:
            self.at(value, key, f"must be one of {', '.join(allowed)}; got {value.text!r}")
            return None
        return value

    def token(self, key: str) -> Scalar | None:
        value = self.string(key)
        if value is None:
            return None
        if not value.text:
            self.at(value, key, "must not be empty")
            return None
        if any(c.isspace() for c in value.text):
            self.at(value, key, "must not contain whitespace")
            return None
        return value


def parse_definition(
    text: str,
    path: str | Path | None = None,
    *,
    auth_profiles: AuthRegistry | None = None,
) -> Definition:
    """Parse the text of one agent definition.

    Args:
        text: The whole file: `---`, frontmatter, `---`, Markdown body.
        path: Where the text came from; names the file in errors and gives the default `id`
            (the file stem). Without it the frontmatter must set `id`.
        auth_profiles: Known auth profiles (default: the shipped profiles).

    Raises:
        DefinitionError: listing every problem of the file.

    ```python
    from agentkit.defs import parse_definition

    text = "---\\ndescription: Reviews code\\ntools: [read_file, grep]\\n---\\nBe strict.\\n"
    definition = parse_definition(text, path="reviewer.md")
    assert definition.id == "reviewer"
    assert definition.tools == ("read_file", "grep")
    assert definition.model_policy == "inherit"
    ```
    """
    definition, errors, _ = _parse(text, path, auth_profiles or _DEFAULT_REGISTRY)
    if errors or definition is None:
        raise DefinitionError(errors)
    return definition


def load_definition(
    path: str | Path, *, auth_profiles: AuthRegistry | None = None
) -> Definition:
    """Read and parse one `.md` definition file.

    Raises:
        DefinitionError: when the file cannot be read, is not UTF-8 text, or is invalid.
    """
    definition, errors, _ = _load(Path(path), auth_profiles or _DEFAULT_REGISTRY)
    if errors or definition is None:
        raise DefinitionError(errors)
    return definition


def load_definitions(
    folder: str | Path, *, auth_profiles: AuthRegistry | None = None
) -> list[Definition]:
    """Read every `*.md` file directly in `folder`, sorted by id.

    All problems of all files (and ids defined twice) are raised together.

    Raises:
        DefinitionError: listing every problem of every file.
    """
    folder = Path(folder)
    try:
        is_folder = folder.is_dir()
    except (OSError, ValueError):
        is_folder = False
    if not is_folder:
        raise DefinitionError([Diagnostic(str(folder), 0, 0, "path", "is not a folder")])
    registry = auth_profiles or _DEFAULT_REGISTRY
    errors: list[Diagnostic] = []
    found: dict[str, Path] = {}
    definitions: list[Definition] = []
    try:
        files = sorted(folder.glob("*.md"))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise DefinitionError([Diagnostic(str(folder), 0, 0, "path", reason)]) from None
    for file in files:
        definition, file_errors, id_at = _load(file, registry)
        errors.extend(file_errors)
        if definition is None:
            continue
        if definition.id in found:
            errors.append(
                Diagnostic(
                    str(file), id_at[0], id_at[1], "id",
                    f"duplicate agent id {definition.id!r} "
                    f"(also defined in {found[definition.id]})",
                )
            )
            continue
        found[definition.id] = file
        definitions.append(definition)
    if errors:
        raise DefinitionError(errors)
    return sorted(definitions, key=lambda d: d.id)


def _load(
    path: Path, registry: AuthRegistry
) -> tuple[Definition | None, list[Diagnostic], tuple[int, int]]:
    file = str(path)
    try:
        data = read_input_file(path)
    except InputFileError as exc:
        return None, [Diagnostic(file, 0, 0, "file", str(exc))], (0, 0)
    except (OSError, ValueError) as exc:  # e.g. a NUL in the path
        return None, [Diagnostic(file, 0, 0, "file", f"cannot read the file: {exc}")], (0, 0)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [Diagnostic(file, line, column, "file", "the file is not UTF-8 text")], (0, 0)
    return _parse(text, path, registry)


def _parse(
    text: str, path: str | Path | None, registry: AuthRegistry
) -> tuple[Definition | None, list[Diagnostic], tuple[int, int]]:
    file = str(path) if path is not None else "<string>"
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        column = nul - (text.rfind("\n", 0, nul) + 1) + 1
        return None, [Diagnostic(file, line, column, "file", "not a text file (NUL byte)")], (0, 0)
    doc, grammar_errors = read_document(text, file)
    check = _Check(file, doc, registry, errors=list(grammar_errors))
    check.bad.update(d.field for d in grammar_errors)
    if any(d.field == "frontmatter" and d.line == 1 for d in grammar_errors) and not doc.entries:
        return None, check.errors, (0, 0)
    definition = _read_fields(check, path)
    _check_schema(check)
    id_entry = doc.entries.get("id")
    id_at = (id_entry.line, id_entry.column) if id_entry else (doc.opening_line, 1)
    if check.errors:
        return None, check.errors, id_at
    return definition, [], id_at


def _read_fields(check: _Check, path: str | Path | None) -> Definition | None:
    doc = check.doc
    for key, entry in doc.entries.items():
        if key not in FIELDS:
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            check.at(entry, key, f"unknown field{hint}")

    agent_id = _read_id(check, path)
    description = _read_description(check)
    runtime_value = check.enum("runtime", ("rho", "claude-cli"))
    runtime: RuntimeName | None = None
    if runtime_value is not None:
        runtime = cast(RuntimeName, runtime_value.text)
    elif "runtime" not in check.bad:
        runtime = "rho"

    prompt_value = check.enum("prompt", ("extend", "replace"))
    prompt_mode = cast(PromptMode, prompt_value.text if prompt_value else "extend")
    if prompt_mode == "replace" and not doc.body and prompt_value is not None:
        check.at(prompt_value, "prompt", "prompt: replace needs a non-empty Markdown body")

    reasoning_value = check.enum("reasoning", RHO_REASONING)
    if (
        reasoning_value is not None
        and runtime == "claude-cli"
        and reasoning_value.text not in CLAUDE_REASONING
    ):
        check.at(
            reasoning_value,
            "reasoning",
            f"{reasoning_value.text!r} is not accepted with runtime claude-cli "
            f"(use {', '.join(CLAUDE_REASONING)})",
        )
    policy, model, provider, auth = _read_model(check, runtime)
    tools = _read_tools(check, runtime)
    inherit = _read_inherit(check, runtime)

    if check.errors or agent_id is None or description is None or runtime is None:
        return None
    return Definition(
        id=agent_id,
        description=description,
        runtime=runtime,
        prompt_mode=prompt_mode,
        body=doc.body,
        model_policy=policy,
        model=model,
        provider=provider,
        auth=auth,
        reasoning=cast(Reasoning | None, reasoning_value.text if reasoning_value else None),
        tools=tools,
        inherit_claude_config=inherit,
        source=Path(path) if path is not None else None,
    )


def _read_id(check: _Check, path: str | Path | None) -> str | None:
    value = check.string("id")
    if value is not None:
        if not 1 <= len(value.text) <= 64:
            check.at(value, "id", "must be 1-64 characters")
            return None
        if not _ID.match(value.text):
            check.at(
                value, "id",
                "must be lowercase ASCII letters, digits and single hyphens "
                "(no leading, trailing or double hyphen)",
            )
            return None
        return value.text
    if check.has("id"):
        return None
    if path is None:
        check.missing("id", "required when the definition has no file name")
        return None
    stem = Path(path).stem
    if not (1 <= len(stem) <= 64 and _ID.match(stem)):
        check.missing(
            "id", f"no id given and the file name {stem!r} is not a valid id; add an `id:` field"
        )
        return None
    return stem


def _read_description(check: _Check) -> str | None:
    if not check.has("description"):
        check.missing("description", "required")
        return None
    value = check.string("description")
    if value is None:
        return None
    text = value.text.strip()
    if not text:
        check.at(value, "description", "must not be empty")
        return None
    if len(text) > 1024:
        check.at(value, "description", f"must be at most 1024 characters (got {len(text)})")
        return None
    return text


def _read_model(
    check: _Check, runtime: RuntimeName | None
) -> tuple[DefinitionModelPolicy, str | None, str | None, str | None]:
    policy_value = check.enum("model-policy", ("inherit", "prefer", "require", "select"))
    model = check.token("model")
    provider = check.token("provider")
    auth = check.token("auth")
    if model is not None and model.text.startswith("@") and len(model.text) == 1:
        check.at(model, "model", "an @alias needs a name after '@'")
        model = None

    policy_text = policy_value.text if policy_value else None
    if runtime == "claude-cli":
        for value, name in ((provider, "provider"), (auth, "auth")):
            if value is not None:
                check.at(value, name, f"{name} is not accepted with runtime claude-cli (rho only)")
        if policy_value is not None and policy_text in ("prefer", "require"):
            check.at(
                policy_value, "model-policy",
                f"{policy_text} is not accepted with runtime claude-cli (use select or inherit)",
            )
        if model is not None and model.text.startswith("@"):
            check.at(
                model, "model",
                "@aliases are resolved only by runtime rho; claude-cli passes the model name "
                "to --model",
            )
    elif runtime == "rho":
        if policy_text is None and model is None and "model" not in check.bad:
            for value, name in ((provider, "provider"), (auth, "auth")):
                if value is not None:
                    check.at(
                        value, name,
                        f"{name} needs a model; without one the host's model and login are "
                        "inherited",
                    )
        if auth is not None and "auth" not in check.bad and policy_text != "inherit":
            profile = check.registry.get(auth.text)
            if profile is None:
                known = ", ".join(check.registry.ids())
                check.at(auth, "auth", f"unknown auth profile {auth.text!r} (known: {known})")
            elif provider is not None and profile.provider != provider.text:
                check.at(
                    auth, "auth",
                    f"auth profile {auth.text!r} is for provider {profile.provider!r}, "
                    f"not {provider.text!r}",
                )
    if policy_text == "inherit":
        for value, name in ((model, "model"), (provider, "provider"), (auth, "auth")):
            if value is not None and name not in check.bad:
                check.at(value, name, f"{name} must be omitted with model-policy: inherit")
    elif (
        policy_value is not None
        and policy_text is not None
        and model is None
        and not check.has("model")
    ):
        check.at(policy_value, "model-policy", f"model-policy: {policy_text} needs a model")
        check.bad.add("model")  # the schema's `required: [model]` says the same

    if policy_text is not None:
        policy = cast(DefinitionModelPolicy, policy_text)
    else:
        policy = "select" if model is not None else "inherit"
    return (
        policy,
        model.text if model else None,
        provider.text if provider else None,
        auth.text if auth else None,
    )


def _read_tools(
    check: _Check, runtime: RuntimeName | None
) -> Literal["all"] | tuple[str, ...]:
    entry = check.doc.entries.get("tools")
    default: Literal["all"] | tuple[str, ...] = "all" if runtime != "claude-cli" else ()
    if entry is None:
        return default
    value = entry.value
    if isinstance(value, Scalar):
        if value.text != "all":
            check.at(value, "tools", "must be `all` or a list like [a, b]")
            return default
        if runtime == "claude-cli":
            check.at(
                value, "tools",
                "tools: all is not accepted with runtime claude-cli; list the Claude tools",
            )
            return default
        return "all"
    names: list[str] = []
    for item in value.items:
        item_value = item.value
        if isinstance(item_value, bool):
            check.at(item, "tools", f"a tool entry must be a string, not the boolean {item.text}")
            continue
        if not item_value:
            check.at(item, "tools", "empty tool entry")
            continue
        if item_value in names:
            check.at(item, "tools", f"duplicate tool entry {item_value!r}")
            continue
        names.append(item_value)
        if runtime == "rho":
            _check_rho_entry(check, item)
        elif runtime == "claude-cli":
            _check_claude_entry(check, item)
    return tuple(names)


def _check_rho_entry(check: _Check, item: Scalar) -> None:
    name = item.text
    if "(" in name or ")" in name or name[0].isupper():
        check.at(
            item, "tools",
            f"{name!r} is a Claude tool entry; runtime rho takes Rho capability names "
            "(read_file, bash, ...). Mixing vocabularies is not allowed",
        )
    elif not RHO_NAME.match(name):
        check.at(
            item, "tools",
            f"{name!r} is not a capability name (lowercase letters, digits, '_' and '-', "
            "starting with a letter)",
        )


def _check_claude_entry(check: _Check, item: Scalar) -> None:
    name = item.text
    if name in RHO_CAPABILITIES:
        check.at(
            item, "tools",
            f"{name!r} is a Rho capability; runtime claude-cli takes Claude Code tool entries "
            "(Read, Edit, Bash(git *), ...). Mixing vocabularies is not allowed",
        )
        return
    problem = claude_entry_problem(name)
    if problem is not None:
        offset, message = problem
        column = item.column + offset + (1 if item.quoted else 0)
        check.errors.append(Diagnostic(check.file, item.line, column, "tools", message))
        check.bad.add("tools")


def _read_inherit(check: _Check, runtime: RuntimeName | None) -> bool:
    entry = check.doc.entries.get("inherit_claude_config")
    if entry is None:
        return False
    value = entry.value
    if isinstance(value, FlowList) or not isinstance(value.value, bool):
        check.at(value, "inherit_claude_config", "must be true or false (plain, unquoted)")
        return False
    if value.value and runtime == "rho":
        check.at(
            value, "inherit_claude_config", "true is only accepted with runtime: claude-cli"
        )
    return value.value


def _instance(doc: Document) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, entry in doc.entries.items():
        value = entry.value
        if isinstance(value, FlowList):
            out[key] = [item.value for item in value.items]
        elif key == "description" and isinstance(value.value, str):
            out[key] = value.value.strip()
        else:
            out[key] = value.value
    return out


def _check_schema(check: _Check) -> None:
    """Check the frontmatter against the JSON Schema; report only what the prose rules did not."""
    instance = _instance(check.doc)
    reported = set(check.bad)
    errors = sorted(_schema_validator().iter_errors(instance), key=lambda e: list(e.absolute_path))
    for error in errors:
        path = list(error.absolute_path)
        fields: list[str]
        if path:
            fields = [str(path[0])]
        elif error.validator == "required":
            fields = [f for f in error.validator_value if f not in instance]
        elif error.validator == "additionalProperties":
            fields = [f for f in instance if f not in frontmatter_schema()["properties"]]
        else:
            fields = ["frontmatter"]
        for fld in fields:
            if fld in reported or (fld == "frontmatter" and check.errors):
                continue
            reported.add(fld)
            entry = check.doc.entries.get(fld)
            node: Scalar | FlowList | None = entry.value if entry else None
            if node is not None and isinstance(node, FlowList) and len(path) > 1:
                index = path[1]
                if isinstance(index, int) and index < len(node.items):
                    node = node.items[index]
            line, column = (node.line, node.column) if node else (check.doc.opening_line, 1)
            check.errors.append(
                Diagnostic(check.file, line, column, fld, f"schema: {error.message}")
            )
