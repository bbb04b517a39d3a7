"""The routes of a person's decisions: a waiting run's permission request decided, its
question answered (`machine.runs.decisions`, acting as the member the token names)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from agentkit.conversations import Member
from agentkit.server._bodies import AnswerRequest, DecisionRequest
from agentkit.server._http import read_body, state_of

__all__ = ["answer_request", "decide_request"]


async def decide_request(request: Request, member: Member) -> Response:
    """`POST /v1/conversations/{id}/runs/{run_id}/decisions` -> 202 once it is stored."""
    body = await read_body(request, DecisionRequest)
    path = request.path_params
    await state_of(request).machine.runs.decisions.decide(
        member,
        path["id"],
        path["run_id"],
        body.request_id,
        allow=body.decision == "allow",
        message=body.message,
        updated_input=body.updated_input,
        remember=body.remember,
    )
    return Response(status_code=202)


async def answer_request(request: Request, member: Member) -> Response:
    """`POST /v1/conversations/{id}/runs/{run_id}/answers` -> 202 once it is stored."""
    body = await read_body(request, AnswerRequest)
    path = request.path_params
    await state_of(request).machine.runs.decisions.answer(
        member, path["id"], path["run_id"], body.request_id, body.answers
    )
    return Response(status_code=202)
