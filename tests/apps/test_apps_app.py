"""Loading app.yaml: its fields, agent paths, duplicates and all-or-nothing loading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentkit.apps import App, AppLoadError, example_app_path, load_app
from agentkit.diagnostics import Diagnostic
from support.app_files import APP, APP_CASES, EXAMPLE_APP

AGENT = """\
name: {name}
description: Does {name} things
tier: small
permissionMode: default
tools: [Read]
systemPromptPrefix: You are {name}.
"""


def make_app(tmp_path: Path, app_yaml: str = APP, agents: dict[str, str] | None = None) -> Path:
    root = tmp_path / "app"
    root.mkdir(exist_ok=True)
    (root / "app.yaml").write_text(app_yaml, encoding="utf-8")
    for relative, text in (agents if agents is not None else {"agents/one.yaml": "one"}).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(AGENT.format(name=text) if "\n" not in text else text, encoding="utf-8")
    return root


def app_errors(root: Path) -> list[Diagnostic]:
    with pytest.raises(AppLoadError) as info:
        load_app(root)
    return info.value.errors


def where(errors: list[Diagnostic]) -> list[tuple[str, int, int, str]]:
    return [(Path(d.file).name, d.line, d.column, d.field) for d in errors]


def test_good_app_loads(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        APP.replace("id: demo", "id: demo-app\nname: Demo\ndescription: A demo\nversion: 1.2.0"),
    )
    app = load_app(root)
    assert isinstance(app, App)
    assert (app.id, app.name, app.description, app.version) == (
        "demo-app",
        "Demo",
        "A demo",
        "1.2.0",
    )
    assert app.root == root
    assert list(app.agents) == ["one"]
    assert app.agent("one") is app.agent("demo-app:one")
    assert app.agent("one").spec.id == "demo-app:one"
    assert [s.id for s in app.specs] == ["demo-app:one"]
    # the app.yaml file itself works as well as its folder
    assert load_app(root / "app.yaml").id == "demo-app"


def test_unknown_agent_lookup_is_a_key_error(tmp_path: Path) -> None:
    app = load_app(make_app(tmp_path))
    with pytest.raises(KeyError, match="no agent 'other:one'"):
        app.agent("other:one")


@pytest.mark.parametrize(
    ("text", "line", "column", "field", "fragment"),
    [c[1:] for c in APP_CASES],
    ids=[c[0] for c in APP_CASES],
)
def test_each_app_rule_reports_its_exact_location(
    tmp_path: Path, text: str, line: int, column: int, field: str, fragment: str
) -> None:
    root = make_app(tmp_path, text)
    errors = app_errors(root)
    assert ("app.yaml", line, column, field) in where(errors), [str(e) for e in errors]
    match = next(e for e in errors if (e.line, e.column, e.field) == (line, column, field))
    assert fragment in match.message
    assert match.file == str(root / "app.yaml")


def test_missing_app_yaml(tmp_path: Path) -> None:
    (error,) = app_errors(tmp_path)
    assert error.file == str(tmp_path / "app.yaml")
    assert "no such file" in error.message


def test_agent_path_falls_back_to_src(tmp_path: Path) -> None:
    root = make_app(tmp_path, agents={"src/agents/one.yaml": "one"})
    app = load_app(root)
    assert app.agent("one").source == root / "src" / "agents" / "one.yaml"


def test_agent_path_prefers_the_app_folder_over_src(tmp_path: Path) -> None:
    root = make_app(tmp_path, agents={"agents/one.yaml": "one", "src/agents/one.yaml": "two"})
    assert load_app(root).agent("one").source == root / "agents" / "one.yaml"


def test_symlink_leaving_the_app_folder_is_rejected(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(AGENT.format(name="one"), encoding="utf-8")
    root = make_app(tmp_path, agents={})
    (root / "agents").mkdir()
    os.symlink(outside, root / "agents" / "one.yaml")
    (error,) = app_errors(root)
    assert where([error]) == [("app.yaml", 4, 5, "agents[0]")]
    assert "leaves the app folder through a symbolic link" in error.message


def test_symlinked_folder_leaving_the_app_is_rejected(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "one.yaml").write_text(AGENT.format(name="one"), encoding="utf-8")
    root = make_app(tmp_path, agents={})
    os.symlink(elsewhere, root / "agents")
    (error,) = app_errors(root)
    assert "symbolic link" in error.message


def test_symlink_inside_the_app_folder_is_fine(tmp_path: Path) -> None:
    root = make_app(tmp_path, agents={"real/one.yaml": "one"})
    (root / "agents").mkdir()
    os.symlink(root / "real" / "one.yaml", root / "agents" / "one.yaml")
    assert list(load_app(root).agents) == ["one"]


def test_duplicate_agent_names_across_files(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        APP + "  - agents/two.yaml\n",
        {"agents/one.yaml": "same", "agents/two.yaml": "same"},
    )
    (error,) = app_errors(root)
    assert (error.file, error.line, error.column, error.field) == (
        str(root / "agents" / "two.yaml"),
        1,
        7,
        "name",
    )
    assert (
        f"duplicate agent name 'same': already declared in {root / 'agents' / 'one.yaml'}"
        in error.message
    )


def test_own_subagents_must_exist(tmp_path: Path) -> None:
    text = AGENT.format(name="one") + "allowedSubagents: [demo:one, demo:ghost, other:x]\n"
    root = make_app(tmp_path, agents={"agents/one.yaml": text})
    (error,) = app_errors(root)
    assert (Path(error.file).name, error.line, error.column, error.field) == (
        "one.yaml",
        7,
        30,
        "allowedSubagents[1]",
    )
    assert error.message == "app 'demo' declares no agent 'ghost'"


def test_non_string_names_do_not_break_cross_file_checks(tmp_path: Path) -> None:
    bad = AGENT.format(name="one").replace("name: one", "name: [one]")
    root = make_app(
        tmp_path,
        APP + "  - agents/two.yaml\n",
        {
            "agents/one.yaml": bad,
            "agents/two.yaml": AGENT.format(name="two") + "allowedSubagents: [demo:two]\n",
        },
    )
    assert where(app_errors(root)) == [("one.yaml", 1, 7, "name")]


def test_agents_get_the_app_id_in_their_canonical_ids(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        APP.replace("id: demo", "id: my-app") + "  - agents/two.yaml\n",
        {"agents/one.yaml": "one", "agents/two.yaml": "two"},
    )
    assert [s.id for s in load_app(root).specs] == ["my-app:one", "my-app:two"]


def test_all_or_nothing_one_bad_agent_fails_the_whole_app(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        APP + "  - agents/two.yaml\n",
        {"agents/one.yaml": "one", "agents/two.yaml": AGENT.format(name="two") + "oops: 1\n"},
    )
    errors = app_errors(root)
    assert where(errors) == [("two.yaml", 7, 1, "oops")]


def test_every_error_of_every_file_is_reported_at_once(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        "formatVersion: 1\nid: demo\nagents:\n  - agents/one.yaml\n  - agents/two.yaml\n"
        "  - agents/nope.yaml\nextra: 1\n",
        {
            "agents/one.yaml": AGENT.format(name="one").replace("tier: small", "tier: tiny"),
            "agents/two.yaml": AGENT.format(name="two").replace("tools: [Read]", "tools: 1"),
        },
    )
    assert sorted(where(app_errors(root))) == [
        ("app.yaml", 1, 16, "formatVersion"),
        ("app.yaml", 6, 5, "agents[2]"),
        ("app.yaml", 7, 1, "extra"),
        ("one.yaml", 3, 7, "tier"),
        ("two.yaml", 5, 8, "tools"),
    ]


def test_agent_files_are_checked_even_when_app_yaml_is_invalid(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        APP.replace("id: demo", "id: Bad"),
        {"agents/one.yaml": AGENT.format(name="one") + "x: 1\n"},
    )
    assert sorted(where(app_errors(root))) == [
        ("app.yaml", 2, 5, "id"),
        ("one.yaml", 7, 1, "x"),
    ]


def test_warnings_of_a_valid_app_are_kept(tmp_path: Path) -> None:
    root = make_app(
        tmp_path, agents={"agents/one.yaml": AGENT.format(name="one") + "maxTurns: 3\n"}
    )
    app = load_app(root)
    assert [(d.field, d.severity) for d in app.warnings] == [("maxTurns", "warning")]
    assert app.agent("one").warnings == app.warnings


def test_the_documented_example_app_loads() -> None:
    app = load_app(EXAMPLE_APP)
    assert app.id == "research-app"
    researcher, sentinel = app.agent("researcher").spec, app.agent("sentinel").spec
    assert researcher.id == "research-app:researcher"
    assert researcher.model.tier == "medium" and researcher.reasoning_effort == "high"
    assert researcher.allowed_subagents == ("research-app:sentinel",)
    assert sentinel.output_schema is not None
    assert sentinel.output_schema["properties"]["decision"]["enum"] == [
        "REPLY",
        "ESCALATE",
        "IGNORE",
    ]
    # the sentinel opens every action: a warning, not an error
    assert [(Path(d.file).name, d.field) for d in app.warnings] == [("sentinel.yaml", "actions[0]")]


def test_the_example_app_ships_with_the_package() -> None:
    assert example_app_path().resolve() == EXAMPLE_APP.resolve()
    assert (example_app_path() / "app.yaml").is_file()


def test_app_action_decorator_registers_canonical_ids(tmp_path: Path) -> None:
    app = load_app(make_app(tmp_path))

    @app.action("notes_create", {"type": "object"})
    async def create(args: dict[str, object], ctx: object) -> None:
        return None

    @app.action("demo:notes_delete")
    async def delete(args: dict[str, object], ctx: object) -> None:
        return None

    assert sorted(a.id for a in app.actions) == ["demo:notes_create", "demo:notes_delete"]
    with pytest.raises(ValueError, match="apps register only their own actions"):
        app.action("other:thing")


def test_a_duplicate_key_in_app_yaml_does_not_hide_its_other_errors(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        "formatVersion: 2\nformatVersion: 2\nid: demo\nversion: 1 0\nagents:\n"
        "  - agents/one.yaml\n  - agents/nope.yaml\n",
        {"agents/one.yaml": AGENT.format(name="one") + "x: 1\n"},
    )
    assert sorted(where(app_errors(root))) == [
        ("app.yaml", 2, 1, "formatVersion"),
        ("app.yaml", 4, 10, "version"),
        ("app.yaml", 7, 5, "agents[1]"),
        ("one.yaml", 7, 1, "x"),
    ]


def with_server(name: str, command: str) -> str:
    return AGENT.format(name=name) + f"mcpServers:\n  db:\n    command: {command}\n"


def test_one_mcp_server_name_with_two_configs_is_an_error_at_the_second_file(
    tmp_path: Path,
) -> None:
    root = make_app(
        tmp_path,
        APP + "  - agents/two.yaml\n",
        {
            "agents/one.yaml": with_server("one", "/usr/bin/server-a"),
            "agents/two.yaml": with_server("two", "/usr/bin/server-b"),
        },
    )
    (error,) = app_errors(root)
    assert where([error]) == [("two.yaml", 8, 3, "mcpServers.db")]
    assert f"configured differently in {root / 'agents' / 'one.yaml'}" in error.message


def test_agents_may_share_an_mcp_server_with_the_same_config(tmp_path: Path) -> None:
    root = make_app(
        tmp_path,
        APP + "  - agents/two.yaml\n",
        {
            "agents/one.yaml": with_server("one", "/usr/bin/server-a"),
            "agents/two.yaml": with_server("two", "/usr/bin/server-a"),
        },
    )
    app = load_app(root)
    assert app.agent("two").mcp_servers == {"db": {"command": "/usr/bin/server-a"}}
