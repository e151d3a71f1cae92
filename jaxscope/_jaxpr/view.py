"""``JaxprView``: a traced jaxpr as data (``eqns``, ``by_line``) plus display."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from jaxscope._checks import check_count, check_flag
from jaxscope._display import Renderable, printable, terminal_width
from jaxscope._format import plural
from jaxscope._jaxpr.layout import fold_depth, render_by_line, render_text
from jaxscope._jaxpr.records import JaxprModel, Region
from jaxscope._records import EqnInfo


class _Keep:
    """The default of ``with_options``' arguments: keep the current value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unchanged>"


_KEEP = _Keep()


def _check_depth(value: Any, where: str, example: str) -> None:
    check_count(value, "depth", low=0, where=where, example=example, none_ok=True)


def _check_max_eqns(value: Any, where: str, example: str) -> None:
    check_count(value, "max_eqns", low=2, where=where, example=example, none_ok=True)


#: The default ``max_eqns``: displays keep the first and last equations of longer
#: regions (``.text`` has all).
DEFAULT_MAX_EQNS = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class JaxprDisplay:
    """How a ``JaxprView`` displays (``str``, terminal, HTML); ``.text`` never changes.

    Attributes:
        depth: fold nested jaxprs deeper than this (None: automatic, to stay under
            ``JaxprView.display_max_lines`` lines).
        show_source: end equation lines with ``# file:line``.
        by_source: group the equations under their source lines.
        max_eqns: keep the first and last equations of regions longer than this
            (None: every equation; ``%jaxpr --max-eqns N`` / ``--all``).

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
        >>> v.with_options(depth=0, show_source=False).options
        JaxprDisplay(depth=0, show_source=False, by_source=False, max_eqns=200)
    """

    depth: int | None = None
    show_source: bool = True
    by_source: bool = False
    max_eqns: int | None = DEFAULT_MAX_EQNS

    def __post_init__(self) -> None:
        _check_depth(self.depth, "JaxprDisplay", "JaxprDisplay(depth=1)")
        _check_max_eqns(self.max_eqns, "JaxprDisplay", "JaxprDisplay(max_eqns=400)")
        check_flag(
            self.show_source,
            "show_source",
            where="JaxprDisplay",
            example="JaxprDisplay(show_source=False)",
        )
        check_flag(
            self.by_source,
            "by_source",
            where="JaxprDisplay",
            example="JaxprDisplay(by_source=True)",
        )


class JaxprView(Renderable):
    """The jaxpr of one call, every equation mapped to the user's source line.

    Attributes:
        text: the jaxpr; each equation line ends with ``# file:line`` where known.
            Always complete; displays (``str``, rich, HTML) fold and elide instead.
        eqns: every equation at every nesting level, depth-first (``EqnInfo``).
        by_line: ``{(file, line): [EqnInfo, ...]}``.
        source_text: ``{(file, line): code}`` where the source is known.
        closed_jaxpr: the JAX ``ClosedJaxpr`` itself (it holds the program's
            constants, as ``jax.make_jaxpr``'s result does).
        options: how displays look, a frozen ``JaxprDisplay``; ``with_options``
            gives a view that displays differently.
        depth, show_source, by_source, max_eqns: the fields of ``options``;
            assigning one (``view.depth = 1``) replaces ``options``.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
        >>> print(v.text_at(source=False))
        { lambda ; a:f32[3]. let
            b:f32[3] = sin a
            c:f32[3] = mul b 2.0:f32[]
          in (c,) }
    """

    __slots__ = (
        "_auto_depth",
        "_text",
        "closed_jaxpr",
        "function_name",
        "model",
        "options",
    )

    #: Its renderer wraps long binder lines itself; every other line prints whole,
    #: so each "# file:line" stays on its equation's line.
    wrap_text = False

    #: The default ``max_eqns``: displays keep the first and last equations of
    #: longer regions (``.text`` has all).
    default_max_eqns = DEFAULT_MAX_EQNS
    #: Displays fold nested jaxprs (when no depth is set) to stay under this many lines.
    display_max_lines = 1000

    def __init__(
        self,
        closed_jaxpr: Any,
        model: JaxprModel,
        *,
        function_name: str = "",
        options: JaxprDisplay | None = None,
    ) -> None:
        self.closed_jaxpr = closed_jaxpr
        self.model = model
        self.function_name = function_name
        self.options = options if options is not None else JaxprDisplay()
        self._text: str | None = None
        # the automatic depth for each max_eqns asked so far
        self._auto_depth: dict[int | None, int | None] = {}

    def with_options(
        self,
        *,
        depth: int | _Keep | None = _KEEP,
        show_source: bool | _Keep = _KEEP,
        by_source: bool | _Keep = _KEEP,
        max_eqns: int | _Keep | None = _KEEP,
    ) -> JaxprView:
        """This view displaying with the given options changed (the trace is shared;
        this view is unchanged).

        Example:
            >>> import jax.numpy as jnp, jaxscope as js
            >>> v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
            >>> print(v.with_options(show_source=False))
            { lambda ; a:f32[3]. let
                b:f32[3] = sin a
                c:f32[3] = mul b 2.0:f32[]
              in (c,) }
        """
        where = "JaxprView.with_options"
        if not isinstance(depth, _Keep):
            _check_depth(depth, where, "view.with_options(depth=1)")
        if not isinstance(max_eqns, _Keep):
            _check_max_eqns(max_eqns, where, "view.with_options(max_eqns=400)")
        for name, flag in (("show_source", show_source), ("by_source", by_source)):
            if not isinstance(flag, _Keep):
                check_flag(
                    flag, name, where=where, example=f"view.with_options({name}=True)"
                )
        changes = {
            name: value
            for name, value in (
                ("depth", depth),
                ("show_source", show_source),
                ("by_source", by_source),
                ("max_eqns", max_eqns),
            )
            if not isinstance(value, _Keep)
        }
        view = JaxprView(
            self.closed_jaxpr,
            self.model,
            function_name=self.function_name,
            options=dataclasses.replace(self.options, **changes),
        )
        view._text = self._text
        view._auto_depth = self._auto_depth
        return view

    @property
    def depth(self) -> int | None:
        return self.options.depth

    @depth.setter
    def depth(self, value: int | None) -> None:
        _check_depth(value, "JaxprView.depth", "view.depth = 1")
        self.options = dataclasses.replace(self.options, depth=value)

    @property
    def max_eqns(self) -> int | None:
        return self.options.max_eqns

    @max_eqns.setter
    def max_eqns(self, value: int | None) -> None:
        _check_max_eqns(value, "JaxprView.max_eqns", "view.max_eqns = 400")
        self.options = dataclasses.replace(self.options, max_eqns=value)

    @property
    def show_source(self) -> bool:
        return self.options.show_source

    @show_source.setter
    def show_source(self, value: bool) -> None:
        self.options = dataclasses.replace(self.options, show_source=value)

    @property
    def by_source(self) -> bool:
        return self.options.by_source

    @by_source.setter
    def by_source(self, value: bool) -> None:
        self.options = dataclasses.replace(self.options, by_source=value)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = render_text(self.model)
        return self._text

    @property
    def eqns(self) -> list[EqnInfo]:
        return self.model.eqns

    @property
    def by_line(self) -> dict[tuple[str, int], list[EqnInfo]]:
        return self.model.by_line

    @property
    def top(self) -> Region:
        """The top-level region (nested regions hang off ``children``)."""
        return self.model.top

    @property
    def arg_names(self) -> tuple[str, ...] | None:
        return self.model.arg_names

    @property
    def source_text(self) -> dict[tuple[str, int], str]:
        """``{(file, line): the text of that line}`` where Python's linecache has it."""
        return self.model.source_text

    def text_at(
        self,
        *,
        depth: int | None = None,
        max_eqns: int | None = None,
        source: bool = True,
        width: int | None = None,
    ) -> str:
        """The text with nested jaxprs deeper than ``depth`` folded, long runs
        elided, binder lines wider than ``width`` wrapped."""
        _check_depth(depth, "JaxprView.text_at", "view.text_at(depth=1)")
        _check_max_eqns(max_eqns, "JaxprView.text_at", "view.text_at(max_eqns=400)")
        check_count(
            width,
            "width",
            low=20,
            where="JaxprView.text_at",
            example="view.text_at(width=100)",
            none_ok=True,
        )
        return render_text(
            self.model,
            max_depth=depth,
            max_eqns_per_region=max_eqns,
            source=source,
            width=width,
        )

    def text_by_line(self, *, max_eqns: int | None = None) -> str:
        """The equations grouped under each source line (with its code), in order."""
        _check_max_eqns(
            max_eqns, "JaxprView.text_by_line", "view.text_by_line(max_eqns=50)"
        )
        return render_by_line(self.model, max_eqns_per_line=max_eqns)

    @property
    def display_max_eqns(self) -> int | None:
        """The equations a display keeps per region (``max_eqns``)."""
        return self.max_eqns

    def display_depth(self) -> int | None:
        """The depth displays fold at: ``depth``, or when it is None the deepest
        level that keeps the display under ``display_max_lines`` lines."""
        if self.depth is not None:
            return self.depth
        found = self._auto_depth.get(self.max_eqns, -1)
        if found == -1:
            found = self._auto_depth[self.max_eqns] = fold_depth(
                self.model, self.max_eqns, self.display_max_lines
            )
        return found

    def fold_note(self) -> str:
        """A line saying nested jaxprs were folded automatically, or ``""``."""
        depth = self.display_depth()
        if self.depth is not None or depth is None:
            return ""
        return (
            f"# nested jaxprs deeper than {depth} are folded to keep this short; "
            "see .text, or %jaxpr --depth N"
        )

    def display_text(self) -> str:
        """What a display shows: folded at ``depth``, long regions elided."""
        if self.by_source:
            return self.text_by_line(max_eqns=self.display_max_eqns)
        text = self.text_at(
            depth=self.display_depth(),
            max_eqns=self.display_max_eqns,
            source=self.show_source,
            width=terminal_width(),
        )
        note = self.fold_note()
        return f"{text}\n{note}" if note else text

    def graph(self) -> Any:
        """The dataflow graph of this jaxpr (a ``GraphView``)."""
        from jaxscope._graph.view import graph_from_jaxpr_view

        return graph_from_jaxpr_view(self)

    def __repr__(self) -> str:
        name = f" of {self.function_name}" if self.function_name else ""
        return printable(f"<JaxprView{name}: {plural(len(self.eqns), 'equation')}>")
