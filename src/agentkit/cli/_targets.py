"""What `agentkit run TARGET` names: an agent of a registered format (a definition, an
app's agent), or an `AgentSpec` in Python (`module:attribute`, `file.py:attribute`)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.cli._exit import UsageError

if TYPE_CHECKING:
    from agentkit.formats import RunnableAgent
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec
    from agentkit.stores import Store

__all__ = ["TARGET_FORMS", "PythonSpec", "load_run_target"]

TARGET_FORMS = (
    "TARGET is one of: a path to an agent definition (agent.md); module:attribute or "
    "path/to/file.py:attribute naming an AgentSpec (the module is imported from the "
    "current folder); <app-id>:<name> for an agent of the app in --app DIR (or in the "
    "current folder when it holds app.yaml)"
)


@dataclass(frozen=True)
class PythonSpec:
    """An `AgentSpec` found in Python: it runs alone in a runtime of its own."""

    spec: AgentSpec

    def make_runtime(self, *, provider: Provider, store: Store, working_dir: Path) -> Runtime:
        """A runtime holding the spec, with the built-in tools."""
        from agentkit.runtime import Runtime

        return Runtime(provider=provider, store=store, agents=[self.spec], working_dir=working_dir)


def load_run_target(target: str, app_dir: str | None) -> RunnableAgent:
    """The agent TARGET names, with `--app app_dir` if given.

    Raises:
        UsageError: when TARGET names nothing that can run, or its files are invalid.
    """
    from agentkit.formats import install_runtime_hooks, load_target

    folder = Path(app_dir) if app_dir is not None else None
    try:
        runnable = load_target(target, folder)
    except (LookupError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    if runnable is not None:
        return runnable
    head, sep, attribute = target.rpartition(":")
    if sep and head.endswith(".py"):
        spec = _load_from_file(Path(head), attribute, target)
    else:
        spec = _load_from_module(target)
    # A spec from Python may come from any format (a definition bound in the module):
    # every format's driver and resume check is there for it.
    install_runtime_hooks()
    return PythonSpec(spec)


def _load_from_module(target: str) -> AgentSpec:
    """`module:attribute`: import the module from the current folder and take the
    AgentSpec at `attribute`."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"TARGET {target!r} is not a form agentkit knows{_target_hint(target)}")
    sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        # Only when TARGET's own module is missing: a module that fails on one of its own
        # imports needs that package, not another TARGET.
        hint = _target_hint(target) if getattr(exc, "name", None) == module_name else ""
        raise UsageError(f"cannot import module {module_name!r}: {exc}{hint}") from None
    except Exception as exc:  # the user's module failed while importing
        raise UsageError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    return _attribute_spec(obj, attribute, f"module {module_name!r}", target)


def _target_hint(target: str) -> str:
    """What to write instead, for a TARGET that names nothing."""
    forms = f". {TARGET_FORMS}"
    if Path(target).is_dir():
        return f"; {target!r} is a folder: run an app's agent with --app {target} APP-ID:NAME"
    if target.endswith((".yaml", ".yml")):
        return "; an agent YAML file runs inside its app: --app APP-FOLDER APP-ID:NAME"
    if target.endswith(".py"):
        return f"; name the AgentSpec in the file too, as in {target}:agent"
    return forms


def _load_from_file(path: Path, attribute: str, target: str) -> AgentSpec:
    """`path/to/file.py:attribute`: import the file as a module (as `python file.py` would
    find its sibling modules) and take the AgentSpec at `attribute`."""
    if not attribute:
        raise UsageError(f"TARGET {target!r} names no attribute after ':'")
    if not path.is_file():
        raise UsageError(f"{path}: no such file. {TARGET_FORMS}")
    # The file's stem as module name, unless that would shadow a module already imported
    # (a file called json.py, say).
    name = path.stem if path.stem.isidentifier() else "_agentkit_target"
    if name in sys.modules:
        name = "_agentkit_target"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.path.insert(0, str(path.resolve().parent))
    # Registered before running it: pydantic and dataclasses look a class's module up.
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:  # the user's file failed while importing
        sys.modules.pop(name, None)
        raise UsageError(f"cannot import {str(path)!r}: {type(exc).__name__}: {exc}") from None
    return _attribute_spec(module, attribute, repr(str(path)), target)


def _attribute_spec(obj: Any, attribute: str, where: str, target: str) -> AgentSpec:
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{where} has no attribute {attribute!r}") from None
    from agentkit.spec import AgentSpec

    if not isinstance(obj, AgentSpec):
        raise UsageError(f"{target} is a {type(obj).__name__}, not an AgentSpec")
    return obj
