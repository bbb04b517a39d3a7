"""agentkit: one typed SDK for app agents, Markdown definitions, conversations and rooms."""

from agentkit._version import __version__
from agentkit.spec import AgentSpec, ModelSelection, SpecError

__all__ = ["AgentSpec", "ModelSelection", "SpecError", "__version__"]
