"""Escape attempts, table-driven: every path trick, chained command and blocked address is
refused, and nothing outside the working directory is read or written."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.tools import FetchPolicy, Sandbox, ToolError, command_matches, entry_allows
from support.tools import REGISTRY, call_error, local_server, make_ctx

SECRET = "TOP SECRET outside the working directory"


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """`outside/` holds a secret; `work/` is the working directory with hostile links."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    work = tmp_path / "work"
    work.mkdir()
    (work / "sub").mkdir()
    (work / "sub" / "ok.txt").write_text("fine\n")
    os.symlink(outside / "secret.txt", work / "abs_link")
    os.symlink("../outside/secret.txt", work / "rel_link")
    os.symlink(outside, work / "dir_link")
    os.symlink("abs_link", work / "chain_link")
    os.symlink("../../outside", work / "sub" / "up_link")
    os.symlink(outside / "new.txt", work / "dangling_out")
    yield work, outside


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


PATH_TRICKS = [
    "../outside/secret.txt",
    "../../etc/passwd",
    "sub/../../outside/secret.txt",
    "sub/../../../etc/passwd",
    "/etc/passwd",
    "{outside}/secret.txt",
    "{work}/../outside/secret.txt",
    "~/secret.txt",
    "~root/.bashrc",
    "secret\x00.txt",
    "abs_link",
    "rel_link",
    "chain_link",
    "dir_link/secret.txt",
    "sub/up_link/secret.txt",
    "dangling_out",
]


def _fill(trick: str, work: Path, outside: Path) -> str:
    return trick.format(work=work, outside=outside)


@pytest.mark.anyio
@pytest.mark.parametrize("trick", PATH_TRICKS)
async def test_every_path_trick_is_refused_by_every_file_tool(
    layout: tuple[Path, Path], trick: str
) -> None:
    work, outside = layout
    path = _fill(trick, work, outside)
    before = snapshot(outside)
    ctx = make_ctx(work)
    calls = [
        ("Read", {"file_path": path}),
        ("read_file", {"file_path": path}),
        ("Write", {"file_path": path, "content": "pwned"}),
        ("write", {"file_path": path, "content": "pwned"}),
        ("Edit", {"file_path": path, "old_string": "TOP", "new_string": "pwned"}),
        ("LS", {"path": path}),
        ("Glob", {"pattern": "*", "path": path}),
        ("Grep", {"pattern": "SECRET", "path": path}),
    ]
    for name, args in calls:
        tool = REGISTRY.get(name)
        assert tool is not None
        message = await call_error(tool, ctx, **args)
        assert SECRET not in message
    assert snapshot(outside) == before
    assert not (outside / "new.txt").exists()


@pytest.mark.anyio
async def test_searches_never_follow_links_out(layout: tuple[Path, Path]) -> None:
    work, _ = layout
    ctx = make_ctx(work)
    grep = REGISTRY.get("grep")
    glob = REGISTRY.get("glob")
    assert grep is not None and glob is not None
    found = await grep.function({"pattern": "SECRET", "output_mode": "content"}, ctx)
    assert SECRET not in found and found.startswith("No matches")
    listed = await glob.function({"pattern": "**/secret.txt"}, ctx)
    assert "dir_link" not in listed and listed.startswith("No files")


@pytest.mark.anyio
async def test_links_swapped_in_between_check_and_use_never_leak(
    layout: tuple[Path, Path],
) -> None:
    """A thread keeps swapping `target` between a real file and a link to the secret while
    the tools read and write it: no read returns the secret, no write lands outside."""
    work, outside = layout
    ctx = make_ctx(work)
    target = work / "target"
    stop = threading.Event()

    def swapper() -> None:
        tmp_file, tmp_link = work / ".swap_file", work / ".swap_link"
        while not stop.is_set():
            tmp_file.write_text("harmless\n")
            os.replace(tmp_file, target)
            if tmp_link.is_symlink():
                tmp_link.unlink()
            os.symlink(outside / "secret.txt", tmp_link)
            os.replace(tmp_link, target)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    read = REGISTRY.get("Read")
    write = REGISTRY.get("Write")
    assert read is not None and write is not None
    outcomes = {"ok": 0, "refused": 0}
    try:
        for _ in range(300):
            for tool, args in (
                (read, {"file_path": "target"}),
                (write, {"file_path": "target", "content": "pwned"}),
            ):
                try:
                    result = await tool.function(args, ctx)
                except ToolError as exc:
                    assert SECRET not in str(exc)
                    outcomes["refused"] += 1
                else:
                    assert SECRET not in result
                    outcomes["ok"] += 1
    finally:
        stop.set()
        thread.join()
    assert (outside / "secret.txt").read_text() == SECRET
    assert outcomes["refused"] > 0  # the race was really exercised


CHAINED_COMMANDS = [
    "git status; rm -rf x",
    "git status;rm -rf x",
    "git status && rm -rf x",
    "git status || rm -rf x",
    "git status | sh",
    "git status & rm -rf x",
    "git log $(rm -rf x)",
    'git log "$(rm -rf x)"',
    "git log `rm -rf x`",
    'git log "`rm -rf x`"',
    "git status\nrm -rf x",
    "git status\rrm -rf x",
    "git log > ../outside/pwned",
    "git log >> x",
    "git log < /etc/passwd",
    "git diff <(cat /etc/passwd)",
    "git log >(tee ../outside/pwned)",
    "git log ${HOME}",
    "git log $HOME",
    "(git status)",
    "git status 'unterminated",
    "rm -rf x",
    "gitx status",
    "FOO=1 git status",
    " ; git status",
]


@pytest.mark.anyio
@pytest.mark.parametrize("command", CHAINED_COMMANDS)
async def test_chained_or_substituted_commands_never_match_a_command_rule(
    layout: tuple[Path, Path], command: str
) -> None:
    work, outside = layout
    ctx = make_ctx(work)
    for name in ("Bash", "bash", "shell", "process"):
        tool = REGISTRY.get(name)
        assert tool is not None
        args = {"command": command}
        if name == "process":
            args["action"] = "start"
        assert not entry_allows(f"{name}(git *)", tool, args, ctx)
        assert not entry_allows(f"{name}(git:*)", tool, args, ctx)
    assert not (outside / "pwned").exists()


@pytest.mark.anyio
async def test_a_plain_matching_command_is_allowed_and_runs_inside(
    layout: tuple[Path, Path],
) -> None:
    work, _ = layout
    ctx = make_ctx(work)
    bash = REGISTRY.get("Bash")
    assert bash is not None
    args = {"command": "echo hello 'a;b' > /dev/null"}
    assert not entry_allows("Bash(echo *)", bash, args, ctx)
    args = {"command": "pwd"}
    assert entry_allows("Bash(pwd)", bash, args, ctx)
    assert (await bash.function(args, ctx)).strip() == str(work)


BLOCKED_URLS = [
    "http://127.0.0.1:{port}/",
    "http://localhost:{port}/",
    "http://LOCALHOST:{port}/",
    "http://app.localhost:{port}/",
    "http://[::1]:{port}/",
    "http://0.0.0.0:{port}/",
    "http://0:{port}/",
    "http://10.0.0.1/",
    "http://10.255.255.254:8080/",
    "http://172.16.0.1/",
    "http://172.31.255.1/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://255.255.255.255/",
    "http://2130706433:{port}/",
    "http://0x7f000001:{port}/",
    "http://0177.0.0.1:{port}/",
    "http://0x7f.0.0.1:{port}/",
    "http://127.1:{port}/",
    "http://017700000001:{port}/",
    "http://[::ffff:127.0.0.1]:{port}/",
    "http://[::ffff:7f00:1]:{port}/",
    "http://[::ffff:169.254.169.254]/",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:7f00:1::]/",
    "file:///etc/passwd",
    "ftp://127.0.0.1/",
    "gopher://127.0.0.1:70/",
    "data:text/plain,hello",
    "http://user:pass@127.0.0.1:{port}/",
    "http:///nohost",
]


@pytest.mark.anyio
@pytest.mark.parametrize("url", BLOCKED_URLS)
async def test_every_blocked_address_form_is_refused_before_connecting(url: str) -> None:
    with local_server() as server:
        server.routes["/"] = (200, {"Content-Type": "text/plain"}, b"reached")
        target = url.format(port=server.port)
        for name in ("WebFetch", "fetch_content"):
            tool = REGISTRY.get(name)
            assert tool is not None
            message = await call_error(tool, make_ctx(Path.cwd()), url=target)
            assert "reached" not in message
        assert server.hits == []


REDIRECT_TARGETS = [
    "http://127.0.0.2:{port}/",
    "http://[::1]:{port}/",
    "http://0x7f000002:{port}/",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://[::ffff:127.0.0.2]:{port}/",
    "file:///etc/passwd",
]


@pytest.mark.anyio
@pytest.mark.parametrize("target", REDIRECT_TARGETS)
async def test_redirects_to_blocked_addresses_are_refused(target: str) -> None:
    """Only 127.0.0.1 is allowed; a redirect from it to anything blocked is refused."""
    with local_server() as server:
        server.routes["/"] = (200, {"Content-Type": "text/plain"}, b"reached")
        policy = FetchPolicy(allowed_networks=("127.0.0.1/32",))
        ctx = make_ctx(Path.cwd(), fetch_policy=policy)
        tool = REGISTRY.get("WebFetch")
        assert tool is not None
        location = target.format(port=server.port)
        message = await call_error(tool, ctx, url=server.url(f"/redirect?to={location}"))
        assert "refused" in message or "only http and https" in message
        assert "reached" not in message
        assert [hit.split("?")[0] for hit in server.hits] == ["/redirect"]


@pytest.mark.anyio
async def test_hard_links_are_not_written_through(layout: tuple[Path, Path]) -> None:
    work, outside = layout
    os.link(outside / "secret.txt", work / "hard")
    ctx = make_ctx(work)
    for name, args in (
        ("Write", {"file_path": "hard", "content": "pwned"}),
        ("Edit", {"file_path": "hard", "old_string": "TOP", "new_string": "pwned"}),
    ):
        tool = REGISTRY.get(name)
        assert tool is not None
        assert "several hard links" in await call_error(tool, ctx, **args)
    assert (outside / "secret.txt").read_text() == SECRET


@pytest.mark.anyio
async def test_fifos_and_devices_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    ctx = make_ctx(tmp_path)
    with anyio.fail_after(5):
        for name, args in (
            ("Read", {"file_path": "pipe"}),
            ("Write", {"file_path": "pipe", "content": "x"}),
        ):
            tool = REGISTRY.get(name)
            assert tool is not None
            message = await call_error(tool, ctx, **args)
            assert "not a regular file" in message or "pipe" in message
        grep = REGISTRY.get("Grep")
        assert grep is not None
        assert (await grep.function({"pattern": "x"}, ctx)).startswith("No matches")


# -- properties -----------------------------------------------------------------------

SEPARATORS = [";", "&&", "||", "|", "&", "\n", "$(", "`", ">", "<", "<(", "${"]
PLAIN = st.text(alphabet=st.sampled_from("abcxyz-_./= *\t"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(before=PLAIN, separator=st.sampled_from(SEPARATORS), after=PLAIN)
def test_no_chained_command_ever_matches(before: str, separator: str, after: str) -> None:
    assert not command_matches("git *", f"git {before}{separator}{after}")
    assert not command_matches("*", f"{before}{separator}{after}")


PATH_PARTS = st.sampled_from(["..", ".", "sub", "abs_link", "rel_link", "dir_link", "up_link",
                              "chain_link", "secret.txt", "ok.txt", "", "loop", "self"])


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(PATH_PARTS, min_size=1, max_size=6), absolute=st.booleans())
def test_any_opened_file_is_inside_the_working_directory(
    layout: tuple[Path, Path], parts: list[str], absolute: bool
) -> None:
    """Whatever path is composed from dots and links, the sandbox either refuses it or opens
    a file whose real location (read back from /proc) is inside the working directory."""
    work, _ = layout
    if not (work / "loop").is_symlink():
        os.symlink("loop", work / "loop")
        os.symlink(".", work / "self")
    path = "/".join(parts)
    if absolute:
        path = f"{work}/{path}"
    sandbox = Sandbox(work)
    try:
        fd = sandbox.open_file(path)
    except ToolError:
        return
    try:
        real = Path(os.readlink(f"/proc/self/fd/{fd}"))
    finally:
        os.close(fd)
    assert real.is_relative_to(work.resolve())
