"""An `Agent` with a function tool, run from the command line:
`agentkit run examples/weather.py:agent "Weather in Paris?" --provider test`, or served:
`agentkit serve --agents examples/weather.py:agent --provider test`."""

from agentkit import Agent


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


agent = Agent(name="weather", instructions="Forecast briefly.", tools=[get_weather])
