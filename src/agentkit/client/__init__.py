"""The remote client: a machine served by `agentkit serve`, reached over HTTP.

[`RemoteMachine`][agentkit.client.RemoteMachine] has the API of the in-process client
(`machine.client(member)`), and
[`RemoteRoomsClient`][agentkit.client.RemoteRoomsClient] that of the in-process rooms client;
one conformance suite tests both. They need the `server` extra (httpx), which is imported when
a client is opened, not when this package is.

[`agentkit.client.contract`][agentkit.client.contract] is the HTTP contract both they and the
server follow: the route table, the error codes and the event streams' format.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.client._conversations import RemoteMachine
    from agentkit.client._rooms import RemoteRoomsClient

_EXPORTS: dict[str, str] = {
    "RemoteMachine": "agentkit.client._conversations",
    "RemoteRoomsClient": "agentkit.client._rooms",
}

__all__ = [
    "RemoteMachine",
    "RemoteRoomsClient",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
