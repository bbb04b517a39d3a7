"""Fingerprints are stable formats (pinned vectors), ignore formatting, and drive resume."""

from __future__ import annotations

import hashlib

import pytest

from agentkit.defs import (
    Definition,
    ResumeError,
    bind,
    canonical_fields,
    check_resume,
    fingerprint,
    fingerprint_lines,
    fingerprint_record,
    load_definition,
    parse_definition,
)
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"

VECTORS = {
    "security-review": (
        "v2:ec09a2eb831bdcf08e4b798701cd73f18149ae60ba0ab133ed3ffa8050864351",
        "v1:59353f1a080ec6f17787e857ddb7d0178f33c46e595ca8efd6bfb3dfa75118c5",
    ),
    "worker": (
        "v2:0cdd5ea0496ffbeb910d850965692060ad66996b491642f2524b56b5afcdb7b6",
        "v1:c27ed0aa98c17df031260909c8b7fb7ed9b62199f1615307b3283ef1eb65f26d",
    ),
    "claude-planner": (
        "v2:4ef83c81621795f4491b3883e4ab618e587bffec685bacc8ef6df31cb34c0a43",
        "v1:396b48e03e39d0343773db361e22889cb6b0bdfa2f4d14a51b836e8bd45ea600",
    ),
}


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_pinned_vectors_of_the_spec_examples(name: str) -> None:
    v2, v1 = VECTORS[name]
    definition = load_definition(EXAMPLES / f"{name}.md")
    assert fingerprint(definition) == v2
    assert fingerprint(definition, 1) == v1
    assert fingerprint_lines(EXAMPLES / f"{name}.md") == [v2, v1]


def test_the_v2_format_is_sha256_of_the_documented_canonical_json() -> None:
    canonical = (
        '{"fields":{"auth":null,"body":"Review the requested changes. Do not modify files.",'
        '"description":"Reviews changes for security defects","id":"security-review",'
        '"inherit_claude_config":false,"model":null,"model-policy":"inherit","prompt":"extend",'
        '"provider":null,"reasoning":"high","runtime":"rho",'
        '"tools":["bash","list_dir","read_file"]},"version":2}'
    )
    expected = "v2:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert expected == VECTORS["security-review"][0]
    v1_canonical = canonical.replace('"inherit_claude_config":false,', "").replace(
        '"runtime":"rho",', ""
    ).replace('"version":2', '"version":1')
    assert "v1:" + hashlib.sha256(v1_canonical.encode()).hexdigest() == VECTORS[
        "security-review"
    ][1]


BASE = """---
id: security-review
description: Reviews changes for security defects
runtime: rho
model-policy: inherit
reasoning: high
tools: [read_file, list_dir, bash]
---
Review the requested changes. Do not modify files.
"""

SAME = [
    # reordered keys, other quotes, comments, defaults omitted, CRLF, body whitespace
    "\r\n".join(
        [
            "---",
            "# the reviewer",
            "tools: ['bash', \"read_file\", list_dir]   # set, any order",
            "reasoning: \"high\"",
            "description: '  Reviews changes for security defects '",
            "id: 'security-review'",
            "---",
            "",
            "Review the requested changes. Do not modify files.   ",
            "",
            "",
        ]
    ),
    BASE.replace("model-policy: inherit\n", "").replace("runtime: rho\n", ""),
    BASE.replace("---\nReview", "---\n\n\n   \nReview") + "\n\n",
    BASE.replace("tools: [read_file, list_dir, bash]", "tools: [bash, bash_extra]").replace(
        "bash_extra", "read_file, list_dir"
    ),
    BASE.replace("runtime: rho\n", "runtime: rho\ninherit_claude_config: false\nprompt: extend\n"),
]


@pytest.mark.parametrize("text", SAME)
def test_formatting_never_changes_the_fingerprint(text: str) -> None:
    definition = parse_definition(text, "moved/elsewhere/file.md")
    assert fingerprint(definition) == VECTORS["security-review"][0]
    assert fingerprint(definition, 1) == VECTORS["security-review"][1]


CHANGES = {
    "id": ("id: security-review", "id: security-review-2"),
    "description": ("defects", "defects!"),
    "prompt": ("runtime: rho", "runtime: rho\nprompt: replace"),
    "body": ("Do not modify files.", "Do not modify any file."),
    "model-policy": ("model-policy: inherit", "model: m"),
    "reasoning": ("reasoning: high", "reasoning: max"),
    "tools": ("list_dir, bash]", "list_dir, bash, grep]"),
}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_every_behavioural_field_changes_both_fingerprints(field: str) -> None:
    old, new = CHANGES[field]
    changed = parse_definition(BASE.replace(old, new), "x.md")
    assert fingerprint(changed) != VECTORS["security-review"][0]
    assert fingerprint(changed, 1) != VECTORS["security-review"][1]


def test_runtime_axis_changes_v2_only() -> None:
    rho = parse_definition("---\nid: a\ndescription: d\ntools: [Read]\n---\n".replace(
        "tools: [Read]\n", ""), "a.md")
    claude = Definition(**{**rho.__dict__, "runtime": "claude-cli", "tools": "all"})
    inherit = Definition(**{**claude.__dict__, "inherit_claude_config": True})
    assert fingerprint(rho, 1) == fingerprint(claude, 1) == fingerprint(inherit, 1)
    assert len({fingerprint(rho), fingerprint(claude), fingerprint(inherit)}) == 3


def test_canonical_fields_v1_has_no_runtime_axis() -> None:
    definition = load_definition(EXAMPLES / "worker.md")
    assert set(canonical_fields(definition)) - set(canonical_fields(definition, 1)) == {
        "runtime",
        "inherit_claude_config",
    }


# --- resume --------------------------------------------------------------------------------


def test_resume_accepts_an_equal_v2_fingerprint_and_record() -> None:
    definition = load_definition(EXAMPLES / "security-review.md")
    check_resume(VECTORS["security-review"][0], definition)
    check_resume(fingerprint_record(definition), definition)
    reformatted = parse_definition(SAME[0], "x.md")
    check_resume(fingerprint_record(definition), reformatted)


def test_resume_accepts_an_exact_v1_for_an_unchanged_default_rho_definition() -> None:
    definition = load_definition(EXAMPLES / "security-review.md")
    check_resume(VECTORS["security-review"][1], definition)
    check_resume({"fingerprint": VECTORS["security-review"][1]}, definition)


def test_resume_refuses_v1_once_the_runtime_axis_is_used() -> None:
    rho = parse_definition("---\nid: a\ndescription: d\ntools: [Read]\n---\n".replace(
        "tools: [Read]\n", ""), "a.md")
    claude = Definition(**{**rho.__dict__, "runtime": "claude-cli", "tools": "all"})
    with pytest.raises(ResumeError) as info:
        check_resume(fingerprint(rho, 1), claude)
    assert info.value.changed == ("runtime",)
    assert "runtime 'claude-cli'" in str(info.value)


def test_resume_refuses_a_real_change_and_says_what_changed() -> None:
    definition = load_definition(EXAMPLES / "security-review.md")
    record = fingerprint_record(definition)
    changed = parse_definition(
        BASE.replace("list_dir, bash]", "list_dir, bash, grep]").replace(
            "Do not modify files.", "Fix what you find."
        ),
        "x.md",
    )
    with pytest.raises(ResumeError) as info:
        check_resume(record, changed)
    assert info.value.changed == ("body", "tools")
    message = str(info.value)
    assert "body" in message
    assert "tools ([bash, list_dir, read_file] -> [bash, grep, list_dir, read_file])" in message
    with pytest.raises(ResumeError) as info:
        check_resume(record["fingerprint"], changed)
    assert "changed since the session started" in str(info.value)


def test_resume_with_a_v1_record_names_changed_fields() -> None:
    definition = load_definition(EXAMPLES / "security-review.md")
    record = {"fingerprint": fingerprint(definition, 1), "fields": canonical_fields(definition, 1)}
    changed = parse_definition(BASE.replace("reasoning: high", "reasoning: low"), "x.md")
    with pytest.raises(ResumeError) as info:
        check_resume(record, changed)
    assert info.value.changed == ("reasoning",)
    assert "reasoning (high -> low)" in str(info.value)


@pytest.mark.parametrize("stored", [None, "", "sha256:abc", "v3:abc", {"fields": {}}, 42])
def test_resume_refuses_missing_or_unknown_fingerprints(stored: object) -> None:
    definition = load_definition(EXAMPLES / "worker.md")
    with pytest.raises(ResumeError):
        check_resume(stored, definition)  # type: ignore[arg-type]


def test_bind_puts_the_fingerprint_record_in_the_spec_metadata() -> None:
    definition = load_definition(EXAMPLES / "claude-planner.md")
    spec = bind(definition)
    stored = spec.metadata["definition"]
    assert stored["fingerprint"] == VECTORS["claude-planner"][0]
    check_resume(stored, definition)


def test_resume_check_against_a_bound_spec() -> None:
    from agentkit.defs import HostCapabilities

    host = HostCapabilities.of(["read_file", "list_dir", "bash"])
    definition = load_definition(EXAMPLES / "security-review.md")
    record = fingerprint_record(definition)
    check_resume(record, bind(definition, host))
    check_resume(VECTORS["security-review"][1], bind(definition, host))
    changed = parse_definition(BASE.replace("reasoning: high", "reasoning: max"), "x.md")
    with pytest.raises(ResumeError) as info:
        check_resume(record, bind(changed, host))
    assert info.value.changed == ("reasoning",)
    from agentkit.spec import AgentSpec

    with pytest.raises(ValueError, match="not bound from a definition"):
        check_resume(record, AgentSpec(id="plain"))
