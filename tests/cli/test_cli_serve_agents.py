"""`agentkit serve --agents`: each path goes to the agent format that claims it (a
definition, a folder of them, an app folder), and a path no format claims is refused
before anything starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from support.cli import agentkit
from support.paths import EXAMPLES
from support.serve_process import ServeProcess


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "notes.txt", "not a .md definition, a folder of them, or an app"),
        (lambda tmp: tmp / "empty", "the folder holds no .md definition nor app.yaml"),
    ],
)
def test_a_path_no_format_claims_is_refused_with_exit_2(
    python: str, cli_env: dict[str, str], tmp_path: Path, make: object, message: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    if path.suffix:
        path.write_text("not an agent\n")
    else:
        path.mkdir()
    done = agentkit(
        python, cli_env, "serve", "--db", str(tmp_path / "m.db"), "--port", "0",
        "--provider", "test", "--agents", str(path),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"--agents {path}: {message}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.anyio
async def test_definitions_a_folder_of_them_and_an_app_are_loaded_by_their_formats(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "defs"
    folder.mkdir()
    shutil.copy(EXAMPLES / "defs" / "worker.md", folder / "worker.md")
    server = ServeProcess(
        tmp_path / "serve",
        args=[
            "--agents", str(EXAMPLES / "defs" / "security-review.md"),
            "--agents", str(folder),
            "--agents", str(EXAMPLES / "research-app"),
        ],
    )  # fmt: skip
    try:
        token = await server.add_member("ada", "owner")
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            response = await http.get("/v1/agents", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200, response.text
        names = {agent["name"] for agent in response.json()["agents"]}
        assert {"security-review", "worker", "research-app:researcher"} <= names
    finally:
        server.stop()
