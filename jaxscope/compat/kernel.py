"""The IPython kernel's side of widget messages (``jaxscope._stepper.widget``).

A widget announces its model with a ``comm_open`` message on IOPub whose parent is
the request running (the cell). nbclient, which ``jupyter nbconvert --execute`` runs,
records the state of every model opened by a cell into the notebook, and nbconvert's
HTML then shows those models' widgets, which need the widget manager from a CDN:
offline, and for a widget whose commands need its kernel, a blank output. A live
front-end (JupyterLab, Notebook 7, VS Code) opens a model from any ``comm_open``,
whatever its parent. ``comm_open_unparented`` announces one with no parent, so that
nbclient keeps no state for it and the export shows the output's static HTML.

The kernel's ``get_parent`` is a documented method of ipykernel 6 and 7, which its
``Comm.publish_msg`` reads; it is replaced on the kernel instance only while the
comm opens, and restored on every exit path.
"""

# pyright: strict

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def comm_open_unparented() -> Iterator[None]:
    """While active, comm messages of the kernel's shell channel carry no parent.

    Outside a kernel (a terminal, a script, a test) it does nothing."""
    kernelbase = sys.modules.get("ipykernel.kernelbase")
    kernel_class: Any = getattr(kernelbase, "Kernel", None)
    if kernel_class is None or not kernel_class.initialized():
        yield
        return
    kernel = kernel_class.instance()
    original = kernel.get_parent
    had_own = "get_parent" in vars(kernel)

    def get_parent(channel: str | None = None) -> dict[str, Any]:
        return original(channel) if channel == "control" else {}

    kernel.get_parent = get_parent
    try:
        yield
    finally:
        if had_own:
            kernel.get_parent = original
        else:
            del kernel.get_parent
