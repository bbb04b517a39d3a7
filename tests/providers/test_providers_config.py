"""Provider configuration: registry names, environment, catalogs, clear errors, cost."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentkit.events import ModelUsage
from agentkit.providers import (
    DEFAULT_CATALOGS,
    AnthropicProvider,
    ModelCatalog,
    NoProviderError,
    OpenAIProvider,
    ProviderConfigError,
    Usage,
    available_providers,
    create_provider,
    default_provider_name,
    estimate_cost,
    local_model_available,
)
from support.paths import SRC

ENV_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AGENTKIT_PROVIDER", "AGENTKIT_BASE_URL",
            "AGENTKIT_API_KEY", "AGENTKIT_MODEL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def test_all_provider_names_are_registered() -> None:
    assert {"anthropic", "openai", "openai-compatible", "local", "test", "scripted"} <= set(
        available_providers()
    )


@pytest.mark.parametrize(
    ("name", "variable"),
    [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY"),
     ("openai-compatible", "AGENTKIT_BASE_URL")],
)
def test_missing_configuration_names_the_variable_to_set(name: str, variable: str) -> None:
    with pytest.raises(ProviderConfigError) as info:
        create_provider(name)
    assert variable in str(info.value)
    # The CLI reports every NoProviderError as a message, never a traceback.
    assert isinstance(info.value, NoProviderError)


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    anthropic = create_provider("anthropic")
    assert isinstance(anthropic, AnthropicProvider) and anthropic.name == "anthropic"
    openai = create_provider("openai")
    assert isinstance(openai, OpenAIProvider) and openai.api == "responses"
    assert create_provider("openai", api="chat").api == "chat"  # type: ignore[attr-defined]


def test_openai_compatible_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTKIT_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AGENTKIT_MODEL", "qwen2.5:0.5b")
    provider = create_provider("openai-compatible")
    assert isinstance(provider, OpenAIProvider)
    assert provider.name == "openai-compatible" and provider.api == "chat"
    assert provider.resolve_model("large", None) == "qwen2.5:0.5b"
    assert provider.resolve_model("small", None) == "qwen2.5:0.5b"
    assert provider.resolve_model(None, "llama3") == "llama3"


def test_unknown_option_values_are_config_errors() -> None:
    with pytest.raises(ProviderConfigError, match="thinking must be"):
        create_provider("anthropic", api_key="k", thinking="lots")
    with pytest.raises(ProviderConfigError, match="api must be"):
        create_provider("openai", api_key="k", api="completions")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AGENTKIT_PROVIDER": "test", "ANTHROPIC_API_KEY": "k"}, "test"),
        ({"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, "anthropic"),
        ({"OPENAI_API_KEY": "k"}, "openai"),
        ({"AGENTKIT_BASE_URL": "http://127.0.0.1:8000/v1"}, "openai-compatible"),
    ],
)
def test_default_provider_from_environment(env: dict[str, str], expected: str) -> None:
    assert default_provider_name(env) == expected


def test_without_keys_the_local_model_is_the_default_when_installed() -> None:
    assert default_provider_name({}) == ("local" if local_model_available() else None)
    # AGENTKIT_PROVIDER=none turns every default off.
    assert default_provider_name({"AGENTKIT_PROVIDER": "none", "OPENAI_API_KEY": "k"}) is None


def test_catalog_overrides() -> None:
    provider = create_provider("anthropic", api_key="k", catalog={"large": "claude-custom"})
    assert provider.resolve_model("large", None) == "claude-custom"
    assert provider.resolve_model("small", None) == DEFAULT_CATALOGS["anthropic"].tiers["small"]
    assert provider.resolve_model(None, "opus") == DEFAULT_CATALOGS["anthropic"].tiers["large"]
    assert provider.resolve_model(None, "claude-pinned") == "claude-pinned"
    mine = ModelCatalog({"large": "a", "medium": "b", "small": "c"})
    assert create_provider("openai", api_key="k", catalog=mine).resolve_model(None, None) == "b"


def test_every_real_provider_has_a_full_default_catalog() -> None:
    for name in ("anthropic", "openai", "openai-compatible", "local"):
        assert set(DEFAULT_CATALOGS[name].tiers) == {"large", "medium", "small"}, name


def test_estimate_cost_uses_genai_prices() -> None:
    genai_prices = pytest.importorskip("genai_prices", reason="the 'prices' extra is missing")
    usage = Usage("claude-sonnet-4-5", input_tokens=800, output_tokens=500,
                  cache_read_tokens=200)
    expected = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=1000, cache_read_tokens=200, output_tokens=500),
        "claude-sonnet-4-5", provider_id="anthropic",
    ).total_price
    cost = estimate_cost("claude-sonnet-4-5", usage, provider="anthropic")
    assert cost is not None and cost == pytest.approx(float(expected))
    # Sonnet 4.5: $3/M input, $0.30/M cache reads, $15/M output.
    assert cost == pytest.approx((800 * 3 + 200 * 0.3 + 500 * 15) / 1e6)
    # The engine's ModelUsage works the same way.
    as_event = ModelUsage(input_tokens=800, output_tokens=500, cache_read_tokens=200)
    assert estimate_cost("claude-sonnet-4-5", as_event, provider="anthropic") == cost
    for model in (*DEFAULT_CATALOGS["anthropic"].tiers.values(),
                  *DEFAULT_CATALOGS["openai"].tiers.values()):
        assert estimate_cost(model, usage) is not None, f"no price for default model {model}"


def test_estimate_cost_unknown_cases() -> None:
    usage = Usage("m", input_tokens=10, output_tokens=10)
    assert estimate_cost("no-such-model-anywhere", usage) is None
    assert estimate_cost("SmolLM2-135M-Instruct", usage, provider="local") == 0.0
    assert estimate_cost("gpt-6.1-sol", usage, provider="openai-compatible") is None


def test_importing_providers_loads_no_client_library() -> None:
    code = (
        "import sys, agentkit.providers\n"
        "heavy = [m for m in ('anthropic', 'openai', 'llama_cpp', 'genai_prices', 'httpx')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "[]"
