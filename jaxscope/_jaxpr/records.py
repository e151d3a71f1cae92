"""The records of a traced jaxpr: ``Region`` (one jaxpr, the nested ones inside it)
and ``JaxprModel`` (everything a view needs, as plain data)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxscope._records import EqnInfo


@dataclass(slots=True)
class Region:
    """One (possibly nested) jaxpr: its binders, equations and the regions inside them.

    ``path`` is the prefix its equations' paths extend; ``()`` for the top jaxpr.
    ``total`` counts its equations, nested ones included. ``function`` is the name of
    the Python function traced into it (``"rnn_cell"``, ``"<lambda>"``, or ``""``),
    ``function_file`` the file defining it,
    ``traced_for`` the API that traced it (``"scan"``, ``"fori_loop"``, ``"jit"``).
    """

    path: tuple[int, ...]
    label: str
    constvars: list[tuple[str, str]]
    invars: list[tuple[str, str]]
    outvars: list[tuple[str, str]]
    eqns: list[EqnInfo] = field(default_factory=list)
    children: dict[int, list[Region]] = field(default_factory=dict)
    total: int = 0
    function: str = ""
    traced_for: str = ""
    #: the file defining ``function`` (``""`` when unknown)
    function_file: str = ""
    #: the name displays print it under (``let relu = {...} in``) when the same
    #: jaxpr is used more than once, as JAX's printer does; ``""`` otherwise
    shared: str = ""

    @property
    def depth(self) -> int:
        return len(self.path) // 2


@dataclass(slots=True)
class JaxprModel:
    """Everything a view needs about a traced jaxpr, as plain data.

    ``source_text`` maps ``(file, line)`` keys of ``by_line`` to the text of that
    source line where Python's ``linecache`` knows it (IPython cells included).
    ``raw_files`` maps each shown file (``"In [3]"``) to the file name Python compiled
    it under, for reading more of its source: cells run without history share one
    ``In [N]`` name, but each has its own compiled file name.
    """

    top: Region
    eqns: list[EqnInfo]
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None
    by_line: dict[tuple[str, int], list[EqnInfo]]
    source_text: dict[tuple[str, int], str] = field(default_factory=dict)
    raw_files: dict[str, str] = field(default_factory=dict)
    shared: list[Region] = field(default_factory=list)
    """The first use of each shared jaxpr (``Region.shared``), inner ones first."""
