"""The IPython extension: load registers every feature's magics and hooks; unload undoes it.

Each feature folder that has a ``magic.py`` (``jaxscope._<feature>.magic``) takes part:
the module defines ``MAGICS`` (a ``Magics`` subclass, or None) and may define
``on_load(shell, state)`` / ``on_unload(shell, state)``. Hooks are registered through
``ExtensionState`` so unload removes every one.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any


class ExtensionState:
    """What the extension installed into one shell, so that unload can remove it."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.magics: list[Any] = []
        self.events: list[tuple[str, Callable[..., Any]]] = []
        self.formatters_by_name: list[tuple[str, str, str, Any]] = []
        self.features: list[Any] = []
        self.data: dict[str, Any] = {}

    def register_event(self, name: str, callback: Callable[..., Any]) -> None:
        """``shell.events.register`` that unload will undo."""
        self.shell.events.register(name, callback)
        self.events.append((name, callback))

    def register_formatter_by_name(
        self, mime: str, module: str, name: str, func: Callable[..., Any]
    ) -> None:
        """A display formatter for the class ``module.name`` that unload will remove,
        registered without importing ``module`` (IPython resolves it on first use)."""
        formatter = self.shell.display_formatter.formatters[mime]
        previous = formatter.for_type_by_name(module, name, func)
        self.formatters_by_name.append((mime, module, name, previous))


_STATES: dict[int, ExtensionState] = {}


def _feature_modules() -> list[Any]:
    from .._features import feature_modules

    return feature_modules("magic")


def load(shell: Any) -> None:
    """Register magics, events and formatters of every feature (idempotent)."""
    if id(shell) in _STATES:
        return
    from jaxscope._ipython.magics import keep_user_exception

    state = ExtensionState(shell)
    _STATES[id(shell)] = state
    state.register_event("post_run_cell", keep_user_exception)
    for module in _feature_modules():
        state.features.append(module)
        magics_cls = getattr(module, "MAGICS", None)
        if magics_cls is not None:
            magics = magics_cls(shell=shell, state=state)
            shell.register_magics(magics)
            state.magics.append(magics)
        on_load = getattr(module, "on_load", None)
        if on_load is not None:
            on_load(shell, state)
    from jaxscope._ipython.help import HelpMagics

    help_magics = HelpMagics(shell=shell, state=state)
    shell.register_magics(help_magics)
    state.magics.append(help_magics)


def unload(shell: Any) -> None:
    """Remove everything ``load`` installed into ``shell``."""
    state = _STATES.pop(id(shell), None)
    if state is None:
        return
    for module in reversed(state.features):
        on_unload = getattr(module, "on_unload", None)
        if on_unload is not None:
            on_unload(shell, state)
    for name, callback in reversed(state.events):
        with contextlib.suppress(ValueError):  # already gone
            shell.events.unregister(name, callback)
    for mime, module, name, previous in reversed(state.formatters_by_name):
        formatter = shell.display_formatter.formatters[mime]
        formatter.deferred_printers.pop((module, name), None)
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None:  # IPython moved it to its type table on first use
            formatter.type_printers.pop(cls, None)
        if previous is not None:
            formatter.for_type_by_name(module, name, previous)
    magics_manager = shell.magics_manager
    for magics in state.magics:
        for kind, names in magics.magics.items():
            for name in names:
                magics_manager.magics[kind].pop(name, None)
        magics_manager.registry.pop(type(magics).__name__, None)
