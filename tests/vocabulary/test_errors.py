"""One root for every error agentkit raises on purpose, kept in one module."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import agentkit
import agentkit.errors
from agentkit.errors import AgentkitError


def _public_modules() -> list[str]:
    names = ["agentkit"]
    for info in pkgutil.walk_packages(agentkit.__path__, "agentkit."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def _public_errors() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in _public_modules():
        module = importlib.import_module(name)
        for attribute in getattr(module, "__all__", ()):
            value = getattr(module, attribute)
            if isinstance(value, type) and issubclass(value, BaseException):
                found[f"{name}.{attribute}"] = value
    return found


def test_every_public_error_has_the_one_root_and_lives_in_agentkit_errors() -> None:
    errors = _public_errors()
    assert len(errors) > 25  # the walk found the packages' exports
    for where, cls in errors.items():
        assert issubclass(cls, AgentkitError), f"{where} is not an AgentkitError"
        assert cls.__module__ == "agentkit.errors", f"{where} is defined in {cls.__module__}"


def test_agentkit_errors_lists_every_error_it_defines() -> None:
    defined = {
        name
        for name, value in vars(agentkit.errors).items()
        if isinstance(value, type) and issubclass(value, AgentkitError)
    }
    assert defined == set(agentkit.errors.__all__)


@pytest.mark.parametrize(
    ("name", "standard"),
    [
        ("SpecError", ValueError),
        ("LoadError", ValueError),
        ("SessionNotFoundError", LookupError),
        ("SessionBusyError", RuntimeError),
        ("NoProviderError", LookupError),
        ("OffsetError", ValueError),
        ("StoreLocationError", ValueError),
        ("AgentNotFoundError", LookupError),
    ],
)
def test_errors_keep_the_standard_base_of_their_kind(
    name: str, standard: type[BaseException]
) -> None:
    assert issubclass(getattr(agentkit.errors, name), standard)


def test_importing_the_errors_costs_nothing_heavy() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agentkit.errors; "
        "print(sorted(m for m in ('pydantic', 'anyio') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
