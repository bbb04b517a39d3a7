"""Agent and app files for the apps tests: a good agent file, a good app.yaml, and the
table of broken variants of each with the exact location and message they get."""

from __future__ import annotations

from support.paths import EXAMPLES

EXAMPLE_APP = EXAMPLES / "research-app"
"""The research app of the examples."""

GOOD_AGENT = """\
name: researcher
description: Researches a topic
tier: medium
permissionMode: acceptEdits
maxTurns: 30
tools: [Read]
systemPromptPrefix: You research.
"""
"""An agent file every field of which is valid."""


def good_agent_with(line_prefix: str, new: str | None) -> str:
    """GOOD_AGENT with the line starting with `line_prefix` replaced (or dropped)."""
    lines = []
    for line in GOOD_AGENT.splitlines():
        if line.startswith(line_prefix):
            if new is not None:
                lines.append(new)
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


# (case id, file text, line, column, field, message fragment)
AGENT_CASES: list[tuple[str, str, int, int, str, str]] = [
    # unknown fields
    ("unknown-field", GOOD_AGENT + "colour: red\n", 8, 1, "colour", "unknown field 'colour'"),
    (
        "typo-suggests",
        GOOD_AGENT + "descripton: x\n",
        8,
        1,
        "descripton",
        "did you mean 'description'",
    ),
    ("non-string-key", GOOD_AGENT + "1: x\n", 8, 1, "1", "keys must be strings"),
    # name
    ("name-missing", good_agent_with("name:", None), 1, 1, "name", "required field is missing"),
    (
        "name-colon",
        good_agent_with("name:", "name: app:researcher"),
        1,
        7,
        "name",
        "must not contain ':'",
    ),
    ("name-space", good_agent_with("name:", "name: my agent"), 1, 7, "name", "invalid agent name"),
    ("name-leading-dash", good_agent_with("name:", "name: -x"), 1, 7, "name", "invalid agent name"),
    ("name-not-string", good_agent_with("name:", "name: 12"), 1, 7, "name", "must be a string"),
    ("name-empty", good_agent_with("name:", "name: ''"), 1, 7, "name", "must not be empty"),
    ("name-null", good_agent_with("name:", "name:"), 1, 1, "name", "must be a string, not null"),
    # description
    ("description-missing", good_agent_with("description:", None), 1, 1, "description", "required"),
    (
        "description-empty",
        good_agent_with("description:", 'description: " "'),
        2,
        14,
        "description",
        "must not be empty",
    ),
    (
        "description-list",
        good_agent_with("description:", "description: [a]"),
        2,
        14,
        "description",
        "must be a string, not a list",
    ),
    # tier / model
    ("tier-missing", good_agent_with("tier:", None), 1, 1, "tier", "required field is missing"),
    (
        "tier-bad",
        good_agent_with("tier:", "tier: huge"),
        3,
        7,
        "tier",
        "must be one of large, medium or small, not 'huge'",
    ),
    ("tier-number", good_agent_with("tier:", "tier: 1"), 3, 7, "tier", "not an integer (1)"),
    (
        "model-bad",
        good_agent_with("tier:", "model: gpt-4"),
        3,
        8,
        "model",
        "must be one of opus, sonnet or haiku",
    ),
    (
        "model-and-tier",
        GOOD_AGENT + "model: opus\n",
        8,
        1,
        "model",
        "'model' and 'tier' are both set",
    ),
    # reasoningEffort
    (
        "effort-bad",
        GOOD_AGENT + "reasoningEffort: medium\n",
        8,
        18,
        "reasoningEffort",
        "must be one of low, high or xhigh",
    ),
    # systemPromptPrefix
    (
        "prompt-missing",
        good_agent_with("systemPromptPrefix:", None),
        1,
        1,
        "systemPromptPrefix",
        "required field is missing",
    ),
    (
        "prompt-empty",
        good_agent_with("systemPromptPrefix:", "systemPromptPrefix: ''"),
        7,
        21,
        "systemPromptPrefix",
        "must not be empty",
    ),
    (
        "prompt-mapping",
        good_agent_with("systemPromptPrefix:", "systemPromptPrefix: {a: 1}"),
        7,
        21,
        "systemPromptPrefix",
        "must be a string, not a mapping",
    ),
    # tools
    ("tools-missing", good_agent_with("tools:", None), 1, 1, "tools", "required field is missing"),
    ("tools-string", good_agent_with("tools:", "tools: Read"), 6, 8, "tools", "must be a list"),
    (
        "tools-item-number",
        good_agent_with("tools:", "tools: [Read, 3]"),
        6,
        15,
        "tools[1]",
        "must be a non-empty string",
    ),
    (
        "tools-empty-specifier",
        good_agent_with("tools:", "tools: [Read, Bash()]"),
        6,
        15,
        "tools[1]",
        "invalid tool entry 'Bash()'",
    ),
    (
        "tools-bad-name",
        good_agent_with("tools:", "tools: ['Web Fetch']"),
        6,
        9,
        "tools[0]",
        "invalid tool entry",
    ),
    (
        "tools-duplicate",
        good_agent_with("tools:", "tools:\n  - Read\n  - Read"),
        8,
        5,
        "tools[1]",
        "listed twice",
    ),
    # actions
    (
        "actions-not-canonical",
        GOOD_AGENT + "actions: [notes_create]\n",
        8,
        11,
        "actions[0]",
        "not a canonical '<app-id>:<name>' action id",
    ),
    (
        "actions-bad-app",
        GOOD_AGENT + "actions: ['Notes:create']\n",
        8,
        11,
        "actions[0]",
        "not a canonical",
    ),
    ("actions-not-list", GOOD_AGENT + "actions: '*'\n", 8, 10, "actions", "must be a list"),
    (
        "actions-duplicate",
        GOOD_AGENT + "actions: [a:b, a:b]\n",
        8,
        16,
        "actions[1]",
        "listed twice",
    ),
    # permissionMode
    (
        "permission-missing",
        good_agent_with("permissionMode:", None),
        1,
        1,
        "permissionMode",
        "required field is missing",
    ),
    (
        "permission-bad",
        good_agent_with("permissionMode:", "permissionMode: yolo"),
        4,
        17,
        "permissionMode",
        "must be one of acceptEdits, bypassPermissions or default",
    ),
    # maxTurns
    (
        "maxturns-zero",
        good_agent_with("maxTurns:", "maxTurns: 0"),
        5,
        11,
        "maxTurns",
        "must be a positive integer, not 0",
    ),
    (
        "maxturns-negative",
        good_agent_with("maxTurns:", "maxTurns: -3"),
        5,
        11,
        "maxTurns",
        "must be a positive integer",
    ),
    (
        "maxturns-bool",
        good_agent_with("maxTurns:", "maxTurns: true"),
        5,
        11,
        "maxTurns",
        "not a boolean (true)",
    ),
    (
        "maxturns-string",
        good_agent_with("maxTurns:", "maxTurns: '30'"),
        5,
        11,
        "maxTurns",
        "not '30'",
    ),
    (
        "maxturns-float",
        good_agent_with("maxTurns:", "maxTurns: 30.5"),
        5,
        11,
        "maxTurns",
        "not a number (30.5)",
    ),
    # allowedSubagents
    (
        "subagents-not-canonical",
        GOOD_AGENT + "allowedSubagents: [explore]\n",
        8,
        20,
        "allowedSubagents[0]",
        "write '<app-id>:explore'",
    ),
    (
        "subagents-star",
        GOOD_AGENT + "allowedSubagents: ['*']\n",
        8,
        20,
        "allowedSubagents[0]",
        "not a canonical",
    ),
    (
        "subagents-not-list",
        GOOD_AGENT + "allowedSubagents: a:b\n",
        8,
        19,
        "allowedSubagents",
        "must be a list",
    ),
    # outputSchema
    (
        "schema-not-mapping",
        GOOD_AGENT + "outputSchema: [1]\n",
        8,
        15,
        "outputSchema",
        "must be a JSON Schema mapping",
    ),
    (
        "schema-bad-type",
        GOOD_AGENT + "outputSchema:\n  type: object\n  properties:\n    x: {type: strin}\n",
        11,
        15,
        "outputSchema.properties.x.type",
        "not a valid JSON Schema: 'strin' is not one of",
    ),
    (
        "schema-bad-required",
        GOOD_AGENT + "outputSchema:\n  type: object\n  required: x\n",
        10,
        13,
        "outputSchema.required",
        "not a valid JSON Schema",
    ),
    (
        "schema-date",
        GOOD_AGENT + "outputSchema:\n  default: 2024-01-01\n",
        9,
        12,
        "outputSchema.default",
        "a date is not a JSON value",
    ),
    (
        "schema-int-key",
        GOOD_AGENT + "outputSchema:\n  properties:\n    1: {type: string}\n",
        10,
        5,
        "outputSchema.properties",
        "key 1 is not a string",
    ),
    # mcpServers
    ("mcp-not-mapping", GOOD_AGENT + "mcpServers: [a]\n", 8, 13, "mcpServers", "must be a mapping"),
    (
        "mcp-server-not-mapping",
        GOOD_AGENT + "mcpServers:\n  fs: npx\n",
        9,
        7,
        "mcpServers.fs",
        "must be a mapping",
    ),
    (
        "mcp-unknown-key",
        GOOD_AGENT + "mcpServers:\n  fs: {command: npx, port: 1}\n",
        9,
        22,
        "mcpServers.fs.port",
        "unknown field 'port'",
    ),
    (
        "mcp-stdio-no-command",
        GOOD_AGENT + "mcpServers:\n  fs: {args: [x]}\n",
        9,
        7,
        "mcpServers.fs.command",
        "required field is missing (type: stdio)",
    ),
    (
        "mcp-http-no-url",
        GOOD_AGENT + "mcpServers:\n  web: {type: http}\n",
        9,
        8,
        "mcpServers.web.url",
        "required field is missing (type: http)",
    ),
    (
        "mcp-bad-type",
        GOOD_AGENT + "mcpServers:\n  web: {type: ws, url: x}\n",
        9,
        15,
        "mcpServers.web.type",
        "must be one of stdio, http or sse",
    ),
    (
        "mcp-stdio-with-url",
        GOOD_AGENT + "mcpServers:\n  fs: {command: npx, url: http://x}\n",
        9,
        22,
        "mcpServers.fs.url",
        "a stdio server does not take 'url'",
    ),
    (
        "mcp-env-not-string",
        GOOD_AGENT + "mcpServers:\n  fs:\n    command: npx\n    env: {A: 1}\n",
        11,
        14,
        "mcpServers.fs.env.A",
        "must be a string",
    ),
    # networkDiscovery / codeBacked
    (
        "network-not-bool",
        GOOD_AGENT + "networkDiscovery: 'yes'\n",
        8,
        19,
        "networkDiscovery",
        "must be true or false",
    ),
    (
        "codebacked-not-bool",
        GOOD_AGENT + "codeBacked: 1\n",
        8,
        13,
        "codeBacked",
        "must be true or false",
    ),
    # the file itself
    ("yaml-syntax", GOOD_AGENT + "tools: [Read\nx: 1\n", 9, 2, "(root)", "YAML syntax error"),
    ("top-level-list", "- a\n- b\n", 1, 1, "(root)", "must be a mapping of fields, not a list"),
    ("empty-file", "", 1, 1, "(root)", "must be a mapping of fields, not null"),
    ("duplicate-key", GOOD_AGENT + "tier: small\n", 8, 1, "tier", "duplicate key 'tier'"),
    ("two-documents", GOOD_AGENT + "---\nname: b\n", 8, 1, "(root)", "expected a single document"),
    (
        "tagged-value",
        good_agent_with("name:", "name: !custom a"),
        1,
        7,
        "name",
        "not a value tagged !custom",
    ),
    (
        "schema-nan",
        GOOD_AGENT + "outputSchema: {type: number, maximum: .nan}\n",
        8,
        39,
        "outputSchema.maximum",
        "nan is not a JSON number",
    ),
]

APP = """\
formatVersion: 2
id: demo
agents:
  - agents/one.yaml
"""
"""An app.yaml listing one agent file, `agents/one.yaml`."""

# (case id, app.yaml text, line, column, field, fragment)
APP_CASES: list[tuple[str, str, int, int, str, str]] = [
    (
        "format-missing",
        APP.replace("formatVersion: 2\n", ""),
        1,
        1,
        "formatVersion",
        "required field is missing",
    ),
    (
        "format-1",
        APP.replace("formatVersion: 2", "formatVersion: 1"),
        1,
        16,
        "formatVersion",
        "must be 2, not an integer (1)",
    ),
    (
        "format-string",
        APP.replace("formatVersion: 2", "formatVersion: '2'"),
        1,
        16,
        "formatVersion",
        "must be 2, not '2'",
    ),
    (
        "format-bool",
        APP.replace("formatVersion: 2", "formatVersion: true"),
        1,
        16,
        "formatVersion",
        "must be 2",
    ),
    ("id-missing", APP.replace("id: demo\n", ""), 1, 1, "id", "required field is missing"),
    ("id-colon", APP.replace("id: demo", "id: demo:x"), 2, 5, "id", "must not contain ':'"),
    ("id-upper", APP.replace("id: demo", "id: Demo"), 2, 5, "id", "invalid app id 'Demo'"),
    ("id-double-hyphen", APP.replace("id: demo", "id: de--mo"), 2, 5, "id", "invalid app id"),
    ("id-trailing-hyphen", APP.replace("id: demo", "id: demo-"), 2, 5, "id", "invalid app id"),
    ("id-number", APP.replace("id: demo", "id: 7"), 2, 5, "id", "must be a string"),
    ("agents-missing", "formatVersion: 2\nid: demo\n", 1, 1, "agents", "required field is missing"),
    (
        "agents-string",
        "formatVersion: 2\nid: demo\nagents: agents/one.yaml\n",
        3,
        9,
        "agents",
        "must be a list",
    ),
    ("agents-item-number", APP + "  - 3\n", 5, 5, "agents[1]", "must be a relative file path"),
    (
        "agents-parent",
        APP + "  - ../outside.yaml\n",
        5,
        5,
        "agents[1]",
        "must not leave the app folder",
    ),
    (
        "agents-inner-parent",
        APP + "  - agents/../../x.yaml\n",
        5,
        5,
        "agents[1]",
        "must not leave the app folder",
    ),
    (
        "agents-absolute",
        APP + "  - /etc/agent.yaml\n",
        5,
        5,
        "agents[1]",
        "must be a path relative to the app folder",
    ),
    ("agents-home", APP + "  - ~/agent.yaml\n", 5, 5, "agents[1]", "relative"),
    (
        "agents-missing-file",
        APP + "  - agents/two.yaml\n",
        5,
        5,
        "agents[1]",
        "agent file 'agents/two.yaml' not found",
    ),
    ("agents-folder", APP + "  - agents\n", 5, 5, "agents[1]", "is a folder"),
    (
        "agents-listed-twice",
        APP + "  - agents/one.yaml\n",
        5,
        5,
        "agents[1]",
        "listed twice (first as agents[0])",
    ),
    ("name-not-string", APP + "name: [x]\n", 5, 7, "name", "must be a string"),
    ("description-not-string", APP + "description: 3\n", 5, 14, "description", "must be a string"),
    (
        "version-number",
        APP + "version: 1.0\n",
        5,
        10,
        "version",
        "must be a string, not a number (1.0); quote it",
    ),
    ("version-space", APP + "version: 1 0\n", 5, 10, "version", "without spaces"),
    ("unknown-key", APP + "agnets: []\n", 5, 1, "agnets", "did you mean 'agents'"),
    ("duplicate-key", APP + "id: other\n", 5, 1, "id", "duplicate key 'id'"),
    ("syntax", APP + "  - [\n", 6, 1, "(root)", "YAML syntax error"),
    ("not-mapping", "- a\n", 1, 1, "(root)", "must be a mapping"),
]
