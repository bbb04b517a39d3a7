"""Whatever an agent or app file holds, loading gives an agent or an AppLoadError: never a
traceback, and every diagnostic has a position."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from agentkit.apps import AppLoadError, load_agent_file, load_app
from agentkit.apps._agent import AGENT_FIELDS
from agentkit.apps._loader import APP_FIELDS

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 100),
    st.floats(allow_nan=False, width=32),
    st.sampled_from(["", "Read", "a:b", "*", "large", "opus", "x y", "research-app:notes"]),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(
                st.sampled_from(["type", "properties", "command", "url"]), st.text(max_size=5)
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=12,
)


def dump(data: Any) -> str:
    out = io.StringIO()
    YAML(typ="safe").dump(data, out)
    return out.getvalue()


def check(error: AppLoadError) -> None:
    assert error.errors
    for diagnostic in error.diagnostics:
        assert diagnostic.line >= 1 and diagnostic.column >= 1, diagnostic
        assert diagnostic.field and diagnostic.message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from([*AGENT_FIELDS, "other"]), values, max_size=10))
def test_agent_files_never_crash(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "agent.yaml"
        path.write_text(dump(data), encoding="utf-8")
        try:
            agent = load_agent_file(path)
        except AppLoadError as exc:
            check(exc)
        else:
            assert agent.spec.id == f"local:{agent.name}"


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_never_crashes(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "agent.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_agent_file(path)
        except AppLoadError as exc:
            check(exc)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from([*APP_FIELDS, "other"]), values, max_size=6))
def test_app_files_never_crash(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "app.yaml").write_text(dump(data), encoding="utf-8")
        try:
            load_app(folder)
        except AppLoadError as exc:
            check(exc)
