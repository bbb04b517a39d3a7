"""The OpenAPI document is exactly the server: Schemathesis generates requests from
`/openapi.json` (property-based: valid and invalid parameters and bodies, every
undeclared method, sequences of calls following the links it infers) and sends them to a
real `agentkit serve`, as an owner, an editor and a viewer.

A run fails on any 5xx, any status the document does not list for the operation, any
answer whose content type or body breaks its schema (an SSE event's `data` is checked
against its object schema), any request the document says is invalid that the server
accepts, and a 405 without `Allow`.

Schemathesis runs as its command (`python -m schemathesis.cli`, its engine with all its
phases: examples, coverage, fuzzing, stateful), one process per role at once, with a
bounded number of examples and a fixed seed (`AGENTKIT_SCHEMATHESIS_SEED` changes it) so
that CI is reproducible and stays within its budget on two cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.served import served

ROLES = ("owner", "editor", "viewer")
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "unsupported_method",
    "allow_header_conformance",
)
MAX_EXAMPLES = 10
SEED = os.environ.get("AGENTKIT_SCHEMATHESIS_SEED", "20261202")

# An event stream never ends by itself (a watch, a room's events): Schemathesis reads one
# event of those, or what comes within a tenth of a second, then checks what it read
# (`data` against its object schema).
CONFIG = """\
max-stream-events = 2

# A request the document calls invalid must be refused with one of these (413: a body
# over the server's limit, refused before it is read).
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 409, 413, 415, 422]

[[operations]]
include-path-regex = "/(watch|events/stream)$"
max-stream-events = 1
request-timeout = 0.1
"""


@pytest.mark.timeout(240)
def test_every_answer_is_what_the_openapi_document_says(tmp_path: Path) -> None:
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    # --metrics: /metrics answers its 200 (text/plain) to the owner, 403 to the others.
    with served(tmp_path / "server", "--metrics") as server:
        tokens = {role: server.add_member(f"st-{role}", role) for role in ROLES}
        runs: dict[str, tuple[subprocess.Popen[str], Path]] = {}
        for role, token in tokens.items():
            folder = tmp_path / role
            folder.mkdir()
            output = folder / "output.txt"
            with output.open("w") as out:
                process = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "schemathesis.cli",
                        "--config-file",
                        str(config),
                        "run",
                        f"{server.url}/openapi.json",
                        "--header",
                        f"Authorization: Bearer {token}",
                        "--checks",
                        ",".join(CHECKS),
                        "--max-examples",
                        str(MAX_EXAMPLES),
                        "--seed",
                        SEED,
                        "--request-timeout",
                        "10",
                        "--generation-database",
                        "none",
                        "--no-color",
                    ],
                    cwd=folder,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            runs[role] = (process, output)
        deadline = time.monotonic() + 200
        failed: list[str] = []
        for role, (process, output) in runs.items():
            try:
                process.wait(max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.returncode != 0:
                text = output.read_text(errors="replace")
                failed.append(f"--- as {role} (exit {process.returncode}) ---\n{text[-12000:]}")
    assert not failed, "\n".join(failed)
