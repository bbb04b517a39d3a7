"""`agentkit members add|list|remove`, run as a real subprocess on a machine's store."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import anyio
import pytest

from agentkit.conversations import Member, Members
from agentkit.stores import open_store
from support.cli import agentkit


@pytest.fixture
def env(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The CLI's environment, with the default machine store in the test's folder."""
    return {**cli_env, "AGENTKIT_MACHINE_STORE": str(tmp_path / "default-machine.db")}


def _named(member: Member) -> tuple[str, str]:
    return (member.name, member.role)


def _authenticate(location: str, token: str) -> Member:
    async def go() -> Member:
        store = open_store(location)
        try:
            return await Members(store).authenticate(token)
        finally:
            await store.aclose()

    return anyio.run(go)


def _one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentkit: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_add_prints_the_token_alone_and_it_authenticates(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "machine.db")
    done = agentkit(python, env, "members", "add", "ada", "--role", "owner", "--db", db)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("\n") and done.stdout.count("\n") == 1
    token = done.stdout.strip()
    assert token and " " not in token
    assert token not in done.stderr
    assert _named(_authenticate(db, token)) == ("ada", "owner")


def test_list_and_remove(python: str, env: dict[str, str], tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'machine.db'}"  # four slashes: an absolute path
    for name, role in (("ada", "owner"), ("bob", "viewer")):
        done = agentkit(python, env, "members", "add", name, "--role", role, "--db", db)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "machine.db").is_file()

    table = agentkit(python, env, "members", "list", "--db", db)
    assert table.returncode == 0, table.stderr
    listed = agentkit(python, env, "members", "list", "--db", db, "--format", "json")
    rows = json.loads(listed.stdout)
    assert [(row["name"], row["role"]) for row in rows] == [("ada", "owner"), ("bob", "viewer")]
    ada_id, bob_id = rows[0]["id"], rows[1]["id"]
    assert len({ada_id, bob_id}) == 2 and all(len(i) == 32 for i in (ada_id, bob_id))
    assert table.stdout.splitlines() == [
        "NAME  ROLE    ID", f"ada   owner   {ada_id}", f"bob   viewer  {bob_id}"
    ]

    removed = agentkit(python, env, "members", "remove", "bob", "--db", db)
    assert removed.returncode == 0 and removed.stdout == "", removed.stderr
    listed = agentkit(python, env, "members", "list", "--db", db, "--format", "json")
    assert json.loads(listed.stdout) == [{"name": "ada", "role": "owner", "id": ada_id}]


def test_a_relative_sqlite_url_and_the_default_store(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    done = agentkit(
        python,
        env,
        "members",
        "add",
        "ada",
        "--role",
        "editor",
        "--db",
        "sqlite:///rel.db",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert _authenticate(str(tmp_path / "rel.db"), done.stdout.strip()).role == "editor"

    done = agentkit(python, env, "members", "add", "cy", "--role", "viewer")
    assert done.returncode == 0, done.stderr
    default = env["AGENTKIT_MACHINE_STORE"]
    assert _named(_authenticate(default, done.stdout.strip())) == ("cy", "viewer")
    listed = agentkit(python, env, "members", "list", "--format", "json")
    assert [(m["name"], m["role"]) for m in json.loads(listed.stdout)] == [("cy", "viewer")]


def test_listing_an_empty_or_missing_store_creates_nothing(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "none.db"
    table = agentkit(python, env, "members", "list", "--db", str(db))
    assert table.returncode == 0 and table.stdout == ""
    assert table.stderr.strip() == "no members"
    listed = agentkit(python, env, "members", "list", "--db", str(db), "--format", "json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    assert not db.exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("add", "ada", "--role", "boss"), "role 'boss' is not one of owner, editor, viewer"),
        (("add", "no spaces", "--role", "owner"), "member name 'no spaces' must be"),
        (("add", "-", "--role", "owner"), "member name '-' must be"),
    ],
)
def test_bad_input_is_one_error_line_exit_2(
    python: str, env: dict[str, str], tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    done = agentkit(python, env, "members", *args, "--db", str(tmp_path / "m.db"))
    assert done.returncode == 2
    assert done.stdout == ""
    assert says in _one_error_line(done.stderr)


def test_a_taken_name_is_exit_2_and_prints_no_token(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    first = agentkit(python, env, "members", "add", "ada", "--role", "owner", "--db", db)
    assert first.returncode == 0
    again = agentkit(python, env, "members", "add", "ada", "--role", "viewer", "--db", db)
    assert again.returncode == 2 and again.stdout == ""
    assert "member 'ada' exists already" in _one_error_line(again.stderr)
    # The first token still works, and the role did not change.
    assert _authenticate(db, first.stdout.strip()).role == "owner"


def test_removing_no_such_member_is_exit_1(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    db = str(tmp_path / "m.db")
    assert (
        agentkit(python, env, "members", "add", "ada", "--role", "owner", "--db", db).returncode
        == 0
    )
    for name in ("bob", "not a name"):
        done = agentkit(python, env, "members", "remove", name, "--db", db)
        assert done.returncode == 1
        assert f"no member {name!r}" in _one_error_line(done.stderr)
    # No store at all: no such member either, and no file left behind.
    missing = tmp_path / "missing.db"
    done = agentkit(python, env, "members", "remove", "ada", "--db", str(missing))
    assert done.returncode == 1 and not missing.exists()


@pytest.mark.parametrize(
    "db",
    ["mysql://nowhere/db", "DIRECTORY"],
)
def test_a_bad_db_is_one_error_line_exit_2(
    python: str, env: dict[str, str], tmp_path: Path, db: str
) -> None:
    if db == "DIRECTORY":
        db = str(tmp_path)  # a folder is no SQLite file
    for args in (("add", "ada", "--role", "owner"), ("list",), ("remove", "ada")):
        done = agentkit(python, env, "members", *args, "--db", db)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == ""
        _one_error_line(done.stderr)


def test_an_unreachable_postgres_is_one_error_line_exit_2(python: str, env: dict[str, str]) -> None:
    pytest.importorskip("psycopg")
    db = "postgresql://agentkit@127.0.0.1:9/none?connect_timeout=2"
    done = agentkit(python, env, "members", "list", "--db", db)
    assert done.returncode == 2 and done.stdout == ""
    _one_error_line(done.stderr)


@pytest.mark.postgres
def test_members_on_postgres(python: str, env: dict[str, str]) -> None:
    dsn = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("AGENTKIT_TEST_POSTGRES_DSN is not set")
    name = f"cli-{uuid.uuid4().hex[:12]}"
    done = agentkit(python, env, "members", "add", name, "--role", "editor", "--db", dsn)
    assert done.returncode == 0, done.stderr
    try:
        assert _named(_authenticate(dsn, done.stdout.strip())) == (name, "editor")
        listed = agentkit(python, env, "members", "list", "--db", dsn, "--format", "json")
        names = [(m["name"], m["role"]) for m in json.loads(listed.stdout)]
        assert (name, "editor") in names
    finally:
        removed = agentkit(python, env, "members", "remove", name, "--db", dsn)
    assert removed.returncode == 0, removed.stderr
    listed = agentkit(python, env, "members", "list", "--db", dsn, "--format", "json")
    assert name not in {row["name"] for row in json.loads(listed.stdout)}
