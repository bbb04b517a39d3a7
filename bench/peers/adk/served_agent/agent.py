"""An ADK agent whose model is the benchmark's fake model, registered under its own name.

The model answers 20 text deltas of five words each (`bench/served.py` gives every system
the same): at once when the user's message is "fast", 5 ms apart when it is "paced". With
`stream=True` (what `POST /run_sse` with `"streaming": true` asks for) every delta is a
partial response and the last response carries the whole text, as ADK's streaming contract
says; without it, one response with the whole text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.models.registry import LLMRegistry
from google.genai import types

DELTAS = 20
DELTA = "alpha beta gamma delta epsilon "  # five words
PACE_S = 0.005


def _pace(request: LlmRequest) -> float:
    """5 ms for a last user message "paced", else 0 (the fast model)."""
    for content in reversed(request.contents or []):
        if content.role == "user":
            text = "".join(part.text or "" for part in content.parts or [])
            return PACE_S if text.strip() == "paced" else 0.0
    return 0.0


class BenchFakeLlm(BaseLlm):
    """The benchmark's fake model, resolved by ADK's registry for `bench-fake*` names."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"bench-fake.*"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        pace = _pace(llm_request)
        if stream:
            for index in range(DELTAS):
                if pace and index:
                    await asyncio.sleep(pace)
                yield LlmResponse(
                    content=types.Content(role="model", parts=[types.Part(text=DELTA)]),
                    partial=True,
                )
        usage: Any = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=1,
            candidates_token_count=DELTAS * 5,
            total_token_count=1 + DELTAS * 5,
        )
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=DELTA * DELTAS)]),
            partial=False,
            turn_complete=True,
            usage_metadata=usage,
        )


LLMRegistry.register(BenchFakeLlm)

root_agent = LlmAgent(
    name="served_agent",
    model="bench-fake-1",
    instruction="You are a benchmark agent.",
)
