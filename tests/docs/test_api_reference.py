"""The API reference, as mkdocs builds it: every public class with its fields and their
types, the `agentkit` page with its public names, and nothing private.

A page that lists the event classes without their fields leaves a reader guessing
`event.text` (the field is `content`); these tests read the built HTML.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from support.paths import ROOT

pytest.importorskip("mkdocs", reason="the dev extra installs mkdocs")
pytest.importorskip("mkdocstrings_handlers.python", reason="the dev extra installs it")

API = ROOT / "docs" / "api"
PRIVATE = re.compile(r"(?<![\w.])_[A-Za-z]\w*|\._[A-Za-z]\w*")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / "api" / name / "index.html").read_text(encoding="utf-8")


def visible_text(markup: str) -> str:
    """The article's text as a reader sees it (tags, scripts and attributes left out)."""
    match = re.search(r"<article.*?</article>", markup, re.S)
    body = match.group(0) if match else markup
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)))


def ids(markup: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', markup))


def documented_modules() -> list[tuple[str, str]]:
    """(page, module) for every `::: module` page of the API reference."""
    found = []
    for path in sorted(API.glob("*.md")):
        match = re.search(r"^::: (\S+)", path.read_text(encoding="utf-8"), re.M)
        assert match, f"{path.name} renders no module"
        found.append((path.stem, match.group(1)))
    return found


def fields_of(cls: type) -> list[str]:
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return list(cls.model_fields)
    if dataclasses.is_dataclass(cls):
        return [f.name for f in dataclasses.fields(cls) if not f.name.startswith("_")]
    return []


EVENT_FIELDS = {
    "TurnStart": ["agent", "type", "turn_id", "session_id", "user_prompt"],
    "Text": ["agent", "type", "content", "turn_phase"],
    "ToolUse": ["agent", "type", "id", "tool", "input"],
    "ToolResult": ["agent", "type", "tool_use_id", "tool", "output", "is_error"],
    "Result": ["agent", "type", "content", "accounting"],
    "ErrorEvent": ["agent", "type", "error", "accounting"],
}


def test_events_page_shows_every_field_with_its_type(site: Path) -> None:
    markup = page(site, "events")
    text = visible_text(markup)
    anchors = ids(markup)
    for cls, fields in EVENT_FIELDS.items():
        for field in fields:
            assert f"agentkit.events.{cls}.{field}" in anchors, f"{cls}.{field} is not rendered"
    # the fields newcomers look for, with their types as the reader sees them
    for shown in ("content : str", "tool_use_id : str", "is_error : bool = False"):
        assert shown in text
    assert "agent : str | None = None" in text  # inherited by every event from a private base


def test_events_page_shows_no_private_names(site: Path) -> None:
    text = visible_text(page(site, "events"))
    for private in ("_Wire", "_Event", "_trusted", "_text_delta"):
        assert private not in text


# The package page lists its names (tested below); their modules' pages render them.
@pytest.mark.parametrize(
    ("name", "module"), [(n, m) for n, m in documented_modules() if n != "agentkit"]
)
def test_every_public_class_is_rendered_with_its_fields(site: Path, name: str, module: str) -> None:
    markup = page(site, name)
    anchors = ids(markup)
    imported = importlib.import_module(module)
    missing = []
    for public in getattr(imported, "__all__", []):
        value = getattr(imported, public)
        if not isinstance(value, type):
            continue
        if f"{module}.{public}" not in anchors:
            missing.append(public)
            continue
        missing += [
            f"{public}.{field}"
            for field in fields_of(value)
            if f"{module}.{public}.{field}" not in anchors
        ]
    assert not missing, f"not rendered on the {name} page: {missing}"


@pytest.mark.parametrize(("name", "module"), documented_modules())
def test_no_private_name_is_shown(site: Path, name: str, module: str) -> None:
    shown = sorted(set(PRIVATE.findall(visible_text(page(site, name)))))
    assert not shown, f"private names on the {name} page: {shown}"


def test_package_page_lists_every_public_name(site: Path) -> None:
    import agentkit

    markup = page(site, "agentkit")
    text = visible_text(markup)
    for public in agentkit.__all__:
        assert public in text, f"agentkit.{public} is not on the agentkit page"
        if public != "__version__":
            module = agentkit._EXPORTS[public]  # where the name is defined
            assert f'href="../{module.split(".")[1]}/#{module}.{public}"' in markup
