"""The ADK agent `bench/served.py` serves with `adk api_server`: one LLM agent on a fake model."""

from . import agent as agent
