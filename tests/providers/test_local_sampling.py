"""The local model's sampling does not loop on open prompts: greedy decoding made
SmolLM2-135M repeat one line until the 1,024-token allowance ("Write a poem about
autumn." repeated a line 58 times); the model card's temperature and top_p with a
repetition penalty end the answer by itself.
"""

from __future__ import annotations

import collections

import pytest

from agentkit.providers import (
    LocalProvider,
    ModelRequest,
    Stop,
    TextChunk,
    UserMessage,
    local_model_available,
)
from agentkit.providers._local import SAMPLING
from agentkit.testing._provider_conformance import collect


def test_the_defaults_are_the_model_cards_with_a_repetition_penalty() -> None:
    assert SAMPLING == {"temperature": 0.2, "top_p": 0.9, "repeat_penalty": 1.1}


@pytest.mark.skipif(not local_model_available(), reason="the 'local' extra is not installed")
@pytest.mark.timeout(300)
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # sampling, not streaming: once
async def test_an_open_prompt_ends_by_itself_without_repeating_lines() -> None:
    provider = LocalProvider()
    assert (provider.temperature, provider.top_p, provider.repeat_penalty) == (0.2, 0.9, 1.1)
    request = ModelRequest(
        model="local",
        system="",
        max_output_tokens=1024,
        messages=(UserMessage(content="Write a poem about autumn."),),
    )
    chunks = await collect(provider.stream(request))
    text = "".join(c.text for c in chunks if isinstance(c, TextChunk))
    assert chunks[-1] == Stop("end_turn"), text[-500:]
    lines = collections.Counter(line.strip() for line in text.splitlines() if line.strip())
    assert lines and max(lines.values()) <= 2, lines.most_common(3)
