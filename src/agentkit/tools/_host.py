"""Tools that go through the host: `questionnaire`, and `agents` / `agent` for sub-agents."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentkit.actions import RunHost
from agentkit.permissions import Ask
from agentkit.spec import AgentSpec
from agentkit.tools._base import Tool, ToolContext, ToolError, object_schema

__all__ = [
    "QuestionnaireCallback",
    "agent_tool",
    "agents_tool",
    "questionnaire_tool",
]

QuestionnaireCallback = Callable[[list[dict[str, Any]], ToolContext], Awaitable[Any]]
"""`async def ask(questions, context) -> answers`: put in `services["questionnaire"]`.

Each question is `{"id", "question", "options"?, "multiple"?}`; the answers (anything JSON
can encode, usually `{id: answer}`) go back to the model. Returning `Ask()` puts the
questions to a person instead, as a host without the service does (see
docs/human-in-the-loop.md).
"""


def questionnaire_tool() -> Tool:
    """The `questionnaire` tool: ask the user questions through the host's callback, or,
    without one (or when it returns `Ask()`), as a `question` the run waits on until a
    person answers it (`Run.answer`)."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        ask = ctx.services.get("questionnaire")
        questions: list[dict[str, Any]] = []
        for index, raw in enumerate(args["questions"], 1):
            question = dict(raw)
            question.setdefault("id", f"q{index}")
            questions.append(question)
        if ask is None:
            return Ask(questions=tuple(questions))
        answers = await ask(questions, ctx)
        if isinstance(answers, Ask):
            return Ask(questions=tuple(questions))
        if answers is None:
            raise ToolError("the user did not answer")
        return answers

    return Tool(
        name="questionnaire",
        aliases=("AskUserQuestion",),
        description=(
            "Ask the user one or more questions and wait for the answers. Give `options` for "
            "multiple choice (`multiple: true` allows several); omit them for a free answer."
        ),
        input_schema=object_schema(
            {
                "questions": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 50,
                    "items": object_schema(
                        {
                            "id": {"type": "string", "description": "Key of the answer."},
                            "question": {"type": "string"},
                            "options": {"type": "array", "items": {"type": "string"}},
                            "multiple": {"type": "boolean"},
                        },
                        "question",
                    ),
                },
            },
            "questions",
        ),
        function=run,
        effect="read",
        timeout=None,
    )


def _runtime(ctx: ToolContext) -> RunHost:
    if ctx.runtime is None:
        raise ToolError("sub-agents are not available here (no runtime)")
    return ctx.runtime


def _callable_agents(ctx: ToolContext) -> dict[str, AgentSpec]:
    """Agents this caller may run: its `allowed_subagents` if it has any, else every other."""
    agents = _runtime(ctx).agents
    allowed = tuple(ctx.spec.allowed_subagents) if ctx.spec is not None else ()
    return {
        agent_id: spec
        for agent_id, spec in agents.items()
        if agent_id != ctx.agent_id and (not allowed or agent_id in allowed)
    }


def agents_tool() -> Tool:
    """The `agents` tool: list the sub-agents the caller may run."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        agents = _callable_agents(ctx)
        if not agents:
            return "No sub-agents are available."
        return "\n".join(
            f"- {agent_id}: {spec.description or '(no description)'}"
            for agent_id, spec in sorted(agents.items())
        )

    return Tool(
        name="agents",
        description="List the sub-agents you can delegate a task to with the agent tool.",
        input_schema=object_schema({}),
        function=run,
        effect="read",
    )


def agent_tool() -> Tool:
    """The `agent` tool: run a sub-agent on a prompt and return its final answer."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> Any:
        agent_id = str(args["agent"])
        agents = _callable_agents(ctx)
        if agent_id not in agents:
            names = ", ".join(sorted(agents)) or "none"
            raise ToolError(f"no sub-agent {agent_id!r} is available (available: {names})")
        # Through the runtime's sub-agent path, so nesting is bounded like `summon`.
        result = await _runtime(ctx).run_subagent(
            agent_id, str(args["prompt"]), depth=ctx.depth + 1, working_dir=ctx.working_dir
        )
        if result.status != "ok":
            raise ToolError(f"sub-agent {agent_id} failed: {result.error}")
        data = result.data or {}
        payload = data.get("payload")
        return payload if payload is not None else data.get("content", "")

    return Tool(
        name="agent",
        description=(
            "Delegate a self-contained task to a sub-agent (see the agents tool) and get its "
            "final answer. The sub-agent does not see this conversation; put everything it "
            "needs in `prompt`."
        ),
        input_schema=object_schema(
            {
                "agent": {"type": "string", "description": "Id of the sub-agent."},
                "prompt": {"type": "string", "description": "The complete task."},
            },
            "agent",
            "prompt",
        ),
        function=run,
        # The sub-agent's own calls are checked under its own spec and permission mode.
        effect="read",
        timeout=None,
    )
