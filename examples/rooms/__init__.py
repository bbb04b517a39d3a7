"""The rooms example: a message-statistics agent, an LLM agent that answers questions,
and the extension that sets them up in a served machine (see docs/rooms.md)."""
