"""The LangGraph graph `bench/served.py` serves with `langgraph dev`: one node calling a fake
chat model.

The model answers 20 text deltas of five words each (`bench/served.py` gives every system
the same): at once when the last human message is "fast", 5 ms apart when it is "paced".
The node calls it with `ainvoke`, so that LangGraph streams every delta to a client that
asked for `stream_mode: "messages-tuple"`, as it does for a real chat model.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph

DELTAS = 20
DELTA = "alpha beta gamma delta epsilon "  # five words
PACE_S = 0.005


def _pace(messages: Sequence[BaseMessage]) -> float:
    """5 ms for a last human message "paced", else 0 (the fast model)."""
    for message in reversed(messages):
        if message.type == "human":
            return PACE_S if str(message.content).strip() == "paced" else 0.0
    return 0.0


class BenchFakeChatModel(BaseChatModel):
    """The benchmark's fake chat model: 20 five-word deltas, paced or not."""

    @property
    def _llm_type(self) -> str:
        return "bench-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(DELTA * DELTAS))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for _ in range(DELTAS):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=DELTA))
            if run_manager:
                run_manager.on_llm_new_token(DELTA, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        pace = _pace(messages)
        for index in range(DELTAS):
            if pace and index:
                await asyncio.sleep(pace)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=DELTA))
            if run_manager:
                await run_manager.on_llm_new_token(DELTA, chunk=chunk)
            yield chunk


model = BenchFakeChatModel()


async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """The one step: the model's answer appended to the thread's messages."""
    return {"messages": [await model.ainvoke(state["messages"])]}


graph = (
    StateGraph(MessagesState)
    .add_node("model", call_model)
    .add_edge(START, "model")
    .add_edge("model", END)
    .compile()
)
