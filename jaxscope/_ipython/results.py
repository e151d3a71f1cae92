"""How a view magic's result is shown: once, whether the cell ends with the magic, stores
its result or drops it (read from the caller's bytecode, see ``_result_fate``)."""

from __future__ import annotations

import dis
import sys
from typing import Any

from IPython.core.interactiveshell import InteractiveShell


def show(obj: Any) -> None:
    """Display ``obj`` through IPython's display machinery (HTML in Jupyter, text otherwise)."""
    from IPython.display import display

    display(obj)


# What the code that called ``run_line_magic`` does with the result, read from the
# instruction after its call: the displayhook shows it (the cell's last expression),
# it is stored (``v = %magic``), or it is dropped (a statement mid-cell).
_DISPLAYED = frozenset({"PRINT_EXPR"})
_DROPPED = frozenset({"POP_TOP"})


def _result_fate() -> str:
    """``"displayed"``, ``"dropped"`` or ``"kept"`` (also when it cannot be told)."""
    frame = sys._getframe(1)
    run_line_magic = InteractiveShell.run_line_magic.__code__
    while frame is not None and frame.f_code is not run_line_magic:
        frame = frame.f_back
    caller = frame.f_back if frame is not None else None
    if caller is None:
        return "kept"
    # f_lasti is the call, or (Python 3.11) one of its inline cache entries
    for instruction in dis.get_instructions(caller.f_code):
        if instruction.offset <= caller.f_lasti:
            continue
        if instruction.opname in _DISPLAYED or (
            instruction.opname == "CALL_INTRINSIC_1"
            and instruction.argrepr == "INTRINSIC_PRINT"
        ):
            return "displayed"
        return "dropped" if instruction.opname in _DROPPED else "kept"
    return "kept"


def present(view: Any, line: str) -> Any:
    """A view magic's result: returned, so ``v = %magic ...`` keeps the object.

    IPython's displayhook shows a result that ends a cell; a magic mid-cell, whose
    result is dropped, shows it here, so it is displayed exactly once either way. A
    trailing ``;`` on the magic's ``line`` hides it (IPython reads the ``;`` of a
    cell only, and a magic's line is a string to it).
    """
    fate = _result_fate()
    if line.rstrip().endswith(";"):
        return None if fate == "displayed" else view
    if fate == "dropped":
        show(view)
    return view
