"""Checked by `mypy --strict` in tests/agent/test_agent_typing.py (never imported by pytest)."""

from typing import Any, assert_type

from pydantic import BaseModel

from agentkit import Agent, Run, RunOutcome, tool


class Forecast(BaseModel):
    city: str


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return city


async def typed() -> None:
    forecaster = Agent("test", output_type=Forecast, tools=[lookup])
    assert_type(forecaster, Agent[Forecast])
    outcome = await forecaster.run("x")
    assert_type(outcome, RunOutcome[Forecast])
    assert_type(outcome.output, Forecast)
    assert_type(forecaster.run_sync("x").output, Forecast)
    plain = Agent("test")
    assert_type((await plain.run("x")).output, str)
    numbers = Agent("test", output_type=int)
    assert_type(numbers.run_sync("x").output, int)
    run = await forecaster.start("x")
    assert_type(run, Run)
    assert_type(forecaster.output_of(await run.wait()), Forecast)
    untyped: RunOutcome = await plain.run("x")
    assert_type(untyped.output, Any)
