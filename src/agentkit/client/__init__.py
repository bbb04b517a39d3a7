"""The remote client: a machine served by `agentkit serve`, reached over HTTP.

[`RemoteMachine`][agentkit.client.RemoteMachine] has the API of the in-process client
(`machine.client(member)`), and
[`RemoteRoomsClient`][agentkit.client.RemoteRoomsClient] that of the in-process rooms client;
one conformance suite tests both. They need the `server` extra (httpx), which is imported when
a client is opened, not when this package is.
"""

from agentkit.client._conversations import RemoteMachine
from agentkit.client._rooms import RemoteRoomsClient

__all__ = ["RemoteMachine", "RemoteRoomsClient"]
