"""The machine over HTTP: `agentkit serve`, as a library.

[`create_app`][agentkit.server.create_app] turns an open
[`Machine`][agentkit.conversations.Machine] into an ASGI application (Starlette) with the
routes described in `docs/server.md` and at `/openapi.json` (their table, the error codes
and the event streams' format are in [`agentkit.client.contract`][agentkit.client.contract]);
[`serve`][agentkit.server.serve] runs it with uvicorn on a socket from
[`bind`][agentkit.server.bind] and stops it cleanly on SIGINT and SIGTERM, on the event
loop [`loop_options`][agentkit.server.loop_options] picks (uvloop where installed). The client
side is [`RemoteMachine`][agentkit.client.RemoteMachine].

Needs the `server` extra: `pip install 'typed-agentkit[server]'`.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.server._app import DEFAULT_MAX_BODY_BYTES, MetricsMode, create_app
    from agentkit.server._errors import ERROR_CODES
    from agentkit.server._extensions import ExtensionError, load_extension, running_extensions
    from agentkit.server._openapi import openapi_document
    from agentkit.server._serve import bind, loop_options, serve, url_of

_EXPORTS: dict[str, str] = {
    "DEFAULT_MAX_BODY_BYTES": "agentkit.server._app",
    "ERROR_CODES": "agentkit.server._errors",
    "ExtensionError": "agentkit.server._extensions",
    "MetricsMode": "agentkit.server._app",
    "bind": "agentkit.server._serve",
    "create_app": "agentkit.server._app",
    "load_extension": "agentkit.server._extensions",
    "loop_options": "agentkit.server._serve",
    "openapi_document": "agentkit.server._openapi",
    "running_extensions": "agentkit.server._extensions",
    "serve": "agentkit.server._serve",
    "url_of": "agentkit.server._serve",
}

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ERROR_CODES",
    "ExtensionError",
    "MetricsMode",
    "bind",
    "create_app",
    "load_extension",
    "loop_options",
    "openapi_document",
    "running_extensions",
    "serve",
    "url_of",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
