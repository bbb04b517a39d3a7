"""The agent formats seam: which format claims a path or a target, loading and validating
through it, and the runtime hooks a format brings (installed by loading, never by import)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentkit.apps import AppFormat, RunnableAppAgent
from agentkit.apps import validate_paths as validate_apps
from agentkit.defs import (
    RUNTIME_DRIVERS,
    SESSION_CHECKS,
    DefinitionFormat,
    RunnableDefinition,
    check_resume,
    claude_cli_driver,
)
from agentkit.defs import validate_paths as validate_defs
from agentkit.formats import (
    BUILTIN_FORMATS,
    AgentFormat,
    format_named,
    load_agents,
    load_target,
    registered_formats,
    validate_paths,
)
from agentkit.tools import builtin_tools
from support.paths import ROOT

APP = ROOT / "examples" / "research-app"
DEFS = ROOT / "examples" / "defs"


def test_the_built_in_formats_are_registered_apps_first() -> None:
    assert [f.name for f in registered_formats()] == ["apps", "defs"]
    assert registered_formats() == BUILTIN_FORMATS
    assert isinstance(format_named("defs"), DefinitionFormat)
    assert isinstance(format_named("apps"), AppFormat)
    with pytest.raises(LookupError, match="no agent format 'rst'"):
        format_named("rst")


def test_each_path_is_claimed_by_one_format(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("---\ndescription: x\n---\n")
    (tmp_path / "empty").mkdir()
    cases = {
        APP: "apps",
        APP / "app.yaml": "apps",
        APP / "agents" / "researcher.yaml": "apps",
        DEFS: "defs",
        DEFS / "worker.md": "defs",
        tmp_path / "notes": "defs",
        tmp_path / "missing.md": "defs",
        tmp_path / "empty": None,
        tmp_path / "notes.txt": None,
    }
    for path, expected in cases.items():
        claims = [f.name for f in registered_formats() if f.claims_path(path)]
        assert claims == ([] if expected is None else [expected]), path


def test_run_targets_are_claimed_as_the_command_line_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    apps, defs = AppFormat(), DefinitionFormat()
    assert defs.claims_target("agents/reviewer.md", None)
    assert defs.claims_target("agents/reviewer.md", APP)
    assert not apps.claims_target("agents/reviewer.md", APP)
    assert apps.claims_target("research-app:researcher", APP)
    assert not apps.claims_target("agent.py:agent", APP)  # a spec in a Python file
    monkeypatch.chdir(tmp_path)
    assert not apps.claims_target("research-app:researcher", None)  # no app.yaml here
    assert not apps.claims_target("examples.hello:agent", None)
    monkeypatch.chdir(APP)
    assert apps.claims_target("research-app:researcher", None)
    assert not apps.claims_target("researcher", None)  # not <app-id>:<name>


def test_load_agents_loads_with_the_claiming_or_named_format() -> None:
    app_ids = [spec.id for spec in load_agents(APP)]
    assert app_ids == ["research-app:researcher", "research-app:sentinel"]
    assert [spec.id for spec in load_agents(APP, format_name="apps")] == app_ids
    tools = builtin_tools().names()
    worker = load_agents(DEFS / "worker.md", tools=tools)
    assert [spec.id for spec in worker] == ["worker"]
    assert sorted(spec.id for spec in load_agents(DEFS, tools=tools)) == [
        "claude-planner",
        "security-review",
        "worker",
    ]
    with pytest.raises(LookupError, match="no agent format knows this path"):
        load_agents(ROOT / "README.md.txt")
    with pytest.raises(ValueError, match="no such file"):
        load_agents(DEFS / "gone.md")


def test_load_target_gives_a_runnable_agent_or_none() -> None:
    definition = load_target(str(DEFS / "worker.md"))
    assert isinstance(definition, RunnableDefinition)
    assert definition.spec.id == "worker"
    agent = load_target("research-app:sentinel", APP)
    assert isinstance(agent, RunnableAppAgent)
    assert agent.spec.id == "research-app:sentinel"
    assert "research-app:notes_create" in agent.app.actions  # its actions module is loaded
    assert load_target("examples.hello:agent") is None  # Python: the command line's own
    with pytest.raises(LookupError, match="has no agent 'nobody'"):
        load_target("research-app:nobody", APP)


def test_validate_paths_sends_each_path_to_its_format(tmp_path: Path) -> None:
    bad_md = tmp_path / "bad.md"
    bad_md.write_text("---\ndescription: x\nruntime: claude-cli\ntools: all\n---\n")
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("name: [\n")
    together = validate_paths([bad_md, APP, bad_yaml])
    apart = sorted([*validate_apps([APP, bad_yaml]), *validate_defs([bad_md])])
    assert together == apart
    assert {d.file for d in together if d.severity == "error"} == {str(bad_md), str(bad_yaml)}


def test_a_path_no_format_claims_is_reported_by_the_apps_format(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(ValueError, match=r"not an app\.yaml or agent \.yaml file"):
        validate_paths([notes])


def test_the_formats_meet_the_protocol() -> None:
    formats: list[AgentFormat] = [AppFormat(), DefinitionFormat()]  # checked by mypy
    assert [f.name for f in formats] == ["apps", "defs"]
    assert DefinitionFormat().drivers == {"claude-cli": claude_cli_driver}
    assert DefinitionFormat().session_checks == {"definition": check_resume}
    assert DefinitionFormat().drivers == RUNTIME_DRIVERS
    assert DefinitionFormat().session_checks == SESSION_CHECKS
    assert AppFormat().drivers == {} and AppFormat().session_checks == {}


def _fresh(code: str) -> None:
    """Run `code` in a new interpreter: the hooks and the registry are process-wide."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr


def test_importing_the_adapters_registers_nothing_and_loading_installs_the_hooks() -> None:
    _fresh(
        f"""
        import agentkit.apps, agentkit.defs, agentkit.formats
        from agentkit.engine import registered_driver, session_checks

        assert registered_driver("claude-cli") is None and session_checks() == {{}}
        agentkit.formats.load_agents({str(APP)!r})
        assert registered_driver("claude-cli") is None  # apps bring no driver
        agentkit.formats.load_agents({str(DEFS / "claude-planner.md")!r})
        assert registered_driver("claude-cli") is agentkit.defs.claude_cli_driver
        assert session_checks() == {{"definition": agentkit.defs.check_resume}}
        """
    )


def test_register_runtime_hooks_is_the_explicit_call_for_plain_python() -> None:
    _fresh(
        """
        from agentkit.defs import check_resume, claude_cli_driver, register_runtime_hooks
        from agentkit.engine import registered_driver, session_checks

        register_runtime_hooks()
        register_runtime_hooks()  # again: nothing changes
        assert registered_driver("claude-cli") is claude_cli_driver
        assert session_checks() == {"definition": check_resume}
        """
    )


def test_a_registered_format_is_asked_first(tmp_path: Path) -> None:
    (tmp_path / "agent.toml").write_text('id = "toml-agent"\n')
    _fresh(
        f"""
        from pathlib import Path
        from agentkit.formats import (
            load_agents, load_target, register_format, registered_formats, validate_paths
        )
        from agentkit.diagnostics import Diagnostic
        from agentkit.spec import AgentSpec

        class TomlFormat:
            name = "toml"
            drivers = {{}}
            session_checks = {{}}

            def claims_path(self, path):
                return path.suffix == ".toml"

            def claims_target(self, target, folder):
                return target.endswith(".toml")

            def load_path(self, path, *, tools):
                agent_id = path.read_text().split('"')[1]
                return [AgentSpec(id=agent_id)]

            def load_target(self, target, folder):
                raise LookupError(f"{{target}}: not runnable")

            def validate(self, paths):
                return [Diagnostic(str(p), 1, 1, "id", "checked") for p in paths]

        register_format(TomlFormat())
        assert [f.name for f in registered_formats()] == ["toml", "apps", "defs"]
        path = Path({str(tmp_path / "agent.toml")!r})
        assert [s.id for s in load_agents(path)] == ["toml-agent"]
        assert [d.message for d in validate_paths([path])] == ["checked"]
        try:
            load_target("x.toml")
        except LookupError as exc:
            assert "not runnable" in str(exc)
        else:
            raise AssertionError("the toml format was not asked")
        register_format(TomlFormat())  # the same name again replaces it
        assert [f.name for f in registered_formats()] == ["toml", "apps", "defs"]
        """
    )
