"""A minimal agent: `agentkit run examples.hello:agent "Add 1 and 2" --provider test`."""

from agentkit import AgentSpec

agent = AgentSpec(
    id="examples:hello",
    description="Answers briefly.",
    system_prompt="You are a helpful assistant. Answer briefly.",
    model={"policy": "tier", "tier": "small"},
)
