"""Checked by `mypy --strict` in tests/agent/test_agent_typing.py: every line marked `error`
must be one."""

from agentkit import Agent

Agent("test", instrutions="x")  # error
Agent("test", output_type=int).run_sync("x").output.upper()  # error
