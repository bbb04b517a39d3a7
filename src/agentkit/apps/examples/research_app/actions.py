"""The research app's actions, registered under `research-app:<name>`.

`agentkit run --app examples/research-app ...` imports this module and calls `register(app)`.
"""

from __future__ import annotations

from typing import Any

from agentkit.actions import ActionContext, ActionResult
from agentkit.apps import App

NOTES: list[dict[str, str]] = []


def register(app: App) -> None:
    """Register the app's actions on `app`."""

    @app.action(
        "notes_create",
        {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 1},
                "body": {"type": "string"},
            },
            "required": ["title"],
            "additionalProperties": False,
        },
        description="Save a research note with a title and an optional body.",
    )
    async def notes_create(args: dict[str, Any], ctx: ActionContext) -> ActionResult:
        note = {"title": args["title"], "body": args.get("body", "")}
        NOTES.append(note)
        return ActionResult.ok({"saved": len(NOTES), "title": note["title"]})
