"""Rendering of ``JaxprView``: coloured text (rich) and source-linked HTML.

The HTML puts the user's source lines beside the equations (the ``%%cython -a`` /
Compiler Explorer idea): hovering or clicking a source line highlights its equations
and the reverse. Nested jaxprs are ``<details>`` elements, long runs of equations are
elided into ``<details>`` that expand on click, and the whole fragment is capped so a
10,000-equation program never floods a notebook. Every user string is escaped.
"""

from __future__ import annotations

import html as _html
import itertools
import os
from typing import Any

from jaxscope._bundles import inline_script
from jaxscope._display import (
    html,
    plain,
    plain_text,
    printable,
    rich_renderable,
    terminal_width,
)
from jaxscope._format import plural
from jaxscope._jaxpr.layout import (
    closing_text,
    display_lines,
    shared_refs,
    shown_indices,
)
from jaxscope._jaxpr.params import eqn_parts
from jaxscope._jaxpr.records import Region
from jaxscope._jaxpr.view import JaxprView
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import full_loc, short_loc

# Equation rows written into one HTML fragment at most (elided runs beyond it say so).
HTML_MAX_ROWS = 2000
# Elided runs expand in chunks of this many equations.
HTML_CHUNK = 500
# Nested jaxprs with more equations than this start collapsed when no depth is given.
HTML_OPEN_MAX_EQNS = 200
# Source-line rows of the side panel: this many shown, as many more behind a click.
HTML_SOURCE_ROWS = 200
HTML_SOURCE_MORE_ROWS = 500

_ids = itertools.count()


# --------------------------------------------------------------------------- rich

_STYLES = {
    "outs": "cyan",
    "prim": "bold magenta",
    "params": "dim",
    "ins": "green",
    "source": "yellow",
    "frame": "bold blue",
    "note": "dim italic",
}


@rich_renderable.register
def _(view: JaxprView) -> Any:
    from rich.text import Text

    out = Text(no_wrap=False)
    if view.by_source:
        for raw in view.display_text().splitlines():
            style = "" if raw.startswith("    ") else _STYLES["source"]
            out.append(plain(raw + "\n", style))
        out.rstrip()
        return out
    lines = display_lines(
        view.model,
        max_depth=view.display_depth(),
        max_eqns_per_region=view.display_max_eqns,
        width=terminal_width(),
    )
    for line in lines:
        out.append(" " * line.indent)
        if line.kind == "eqn" and line.info is not None:
            _rich_eqn(out, line.info, view.show_source, dict(line.refs))
        elif line.kind in ("fold", "elided"):
            out.append(plain(line.text, _STYLES["note"]))
        else:
            out.append(plain(line.text, _STYLES["frame"]))
        out.append("\n")
    note = view.fold_note()
    if note:
        out.append(plain(note, _STYLES["note"]))
    out.rstrip()
    return out


@plain_text.register
def _(view: JaxprView, width: int) -> str:
    # The characters of the rich rendering above, ten times faster on long jaxprs;
    # binder lines wrap at the terminal's width either way.
    return printable(view.display_text())


def _rich_eqn(out: Any, info: EqnInfo, show_source: bool, refs: dict[str, str]) -> None:
    outs, prim, params, ins = eqn_parts(info, nested=False, refs=refs)
    out.append(plain(outs, _STYLES["outs"]))
    out.append(" = ")
    out.append(plain(prim, _STYLES["prim"]))
    if params:
        out.append(plain(params, _STYLES["params"]))
    if ins:
        out.append(plain(" " + ins, _STYLES["ins"]))
    if show_source and info.source is not None:
        out.append(plain(f"  # {short_loc(info.source)}", _STYLES["source"]))


# --------------------------------------------------------------------------- HTML

# Highlights are translucent: the line keeps the theme's background and text colour
# under them, readable in light and dark themes alike.
_CSS = """
#ID{font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.45}
#ID .jxs-head{margin:2px 0 6px 0;color:#555}
#ID .jxs-cols{display:flex;gap:12px;align-items:flex-start}
#ID .jxs-code{flex:3;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;min-width:0}
#ID .jxs-src{flex:2;max-height:40em;overflow:auto;border-left:2px solid #ddd;padding-left:8px}
#ID .jxs-e,#ID .jxs-s{cursor:pointer;border-radius:2px}
#ID .jxs-e{display:flex;align-items:baseline}
#ID .jxs-q{min-width:0}
#ID .jxs-e>.jxs-l{flex-shrink:0}
#ID .jxs-e:hover,#ID .jxs-s:hover,#ID .jxs-hl{background:rgba(255,200,0,.2)}
#ID .jxs-pin{background:rgba(255,180,0,.3);box-shadow:inset 3px 0 0 #f5a000}
#ID .jxs-o{color:#00838f}#ID .jxs-p{color:#8e24aa}
#ID .jxs-a{color:#888}#ID .jxs-i{color:#2e7d32}
#ID .jxs-l{color:#b26a00;margin-left:2em}
#ID .jxs-f,#ID summary{color:#1a4fa0}
#ID .jxs-n{color:#888;font-style:italic}
#ID details>summary{cursor:pointer;white-space:pre-wrap}
#ID .jxs-f{white-space:pre-wrap;overflow-wrap:anywhere}
#ID .jxs-s code{white-space:pre}
"""


def _esc(text: object) -> str:
    return _html.escape(printable(str(text)), quote=True)


class _HtmlWriter:
    """Writes the equation column, counting rows against ``HTML_MAX_ROWS``."""

    def __init__(self, view: JaxprView, keys: dict[tuple[str, int], int]) -> None:
        self.view = view
        self.keys = keys
        self.rows = 0
        self.parts: list[str] = []

    def region(self, region: Region, indent: int) -> None:
        view = self.view
        limit = view.display_max_eqns
        for index in shown_indices(len(region.eqns), limit):
            if index < 0 and limit is not None:  # only a limit elides
                self.elided(region, indent, -index, limit)
                continue
            self.eqn_and_children(region, index, indent)

    def eqn_and_children(self, region: Region, index: int, indent: int) -> None:
        info = region.eqns[index]
        refs, drawn = shared_refs(region.children.get(index, []))
        self.eqn(info, indent, refs)
        for child in drawn:
            self.child(child, indent + 6)

    def elided(self, region: Region, indent: int, count: int, limit: int) -> None:
        pad = f' style="padding-left:{_ems(indent + 4)}"'
        start = limit // 2
        end = start + count
        while start < end:
            stop = min(end, start + HTML_CHUNK)
            if self.rows + (stop - start) > HTML_MAX_ROWS:
                self.parts.append(
                    f'<div class="jxs-n"{pad}>... {plural(end - start, "equation")} not shown '
                    "here (see <code>.text</code>) ...</div>"
                )
                return
            self.parts.append(
                f'<details class="jxs-x"><summary{pad}>... '
                f"{plural(stop - start, 'equation')} elided (#{start} to #{stop - 1}; click to expand) ...</summary>"
            )
            for index in range(start, stop):
                self.eqn_and_children(region, index, indent)
            self.parts.append("</details>")
            start = stop

    def child(self, child: Region, indent: int) -> None:
        view = self.view
        if view.depth is not None:
            is_open = child.depth <= view.depth
        else:
            is_open = child.total <= HTML_OPEN_MAX_EQNS
        pad = f' style="padding-left:{_ems(indent)}"'
        if child.shared and indent == 0:
            label = f"let {child.shared} = "
        else:
            label = f"{child.label}=" if child.label else ""
        head = f"{label}{{ lambda {_binders(child.constvars, child.invars)}. let"
        if self.rows + child.total > HTML_MAX_ROWS and not is_open:
            self.parts.append(
                f'<div class="jxs-n"{pad}>{_esc(label)}{{ ... '
                f"{plural(child.total, 'equation')} "
                "not shown here (see <code>.text</code>) }</div>"
            )
            return
        self.parts.append(
            f'<details class="jxs-r"{" open" if is_open else ""}>'
            f'<summary{pad}>{_esc(head)} <span class="jxs-n">'
            f"({plural(child.total, 'equation')})</span></summary>"
        )
        self.region(child, indent)
        self.close(child, indent)
        self.parts.append("</details>")

    def close(self, region: Region, indent: int) -> None:
        tail = " in" if region.shared and indent == 0 else ""
        self.parts.append(
            f'<div class="jxs-f" style="padding-left:{_ems(indent + 2)}">'
            f"{_esc(closing_text(region) + tail)}</div>"
        )

    def eqn(self, info: EqnInfo, indent: int, refs: dict[str, str]) -> None:
        self.rows += 1
        key = self.keys.get(info.source.key) if info.source is not None else None
        self.parts.append(_eqn_row(info, key, indent, self.view.show_source, refs))


def _eqn_row(
    info: EqnInfo,
    key: int | None,
    indent: int,
    show_source: bool,
    refs: dict[str, str] | None = None,
) -> str:
    """An equation's row, linked to source line ``key``, its scope as a tooltip."""
    data = f' data-s="{key}"' if key is not None else ""
    scope = f' title="{_esc(info.scope)}"' if info.scope else ""
    src = ""
    if info.source is not None and show_source:
        src = f'<span class="jxs-l">{_esc(short_loc(info.source))}</span>'
    return (
        f'<div class="jxs-e"{data}{scope} style="padding-left:{_ems(indent + 4)}">'
        f"{_eqn_spans(info, refs)}{src}</div>"
    )


def _eqn_spans(info: EqnInfo, refs: dict[str, str] | None = None) -> str:
    """An equation line's outputs, primitive, params and inputs, as styled spans in
    one that wraps: a long line wraps beside its source annotation, which stays in
    view (the row is a flex box), rather than pushing it out of the code column."""
    outs, prim, params, ins = eqn_parts(info, nested=False, refs=refs)
    # Tags kept short: a 50k-equation view writes this row thousands of times.
    params_html = f'<span class="jxs-a">{_esc(params)}</span>' if params else ""
    return (
        f'<span class="jxs-q"><span class="jxs-o">{_esc(outs)}</span> = '
        f'<b class="jxs-p">{_esc(prim)}</b>{params_html} '
        f'<span class="jxs-i">{_esc(ins)}</span></span>'
    )


def _ems(chars: int) -> str:
    """A monospaced indent of ``chars`` characters in em, which sanitizers keep
    (they drop ``ch``, so a ``ch`` width would need an em fallback on every row)."""
    return f"{chars * 0.6:g}em"


def _binders(consts: list[tuple[str, str]], invars: list[tuple[str, str]]) -> str:
    c = " ".join(f"{n}:{a}" for n, a in consts)
    i = " ".join(f"{n}:{a}" for n, a in invars)
    return f"{c}; {i}"


def _loc_span(loc: SourceLoc, style: str = "") -> str:
    """``file:line`` shortened (``short_loc``), the full path as its tooltip."""
    return f'<span class="jxs-l"{style} title="{_esc(full_loc(loc))}">{_esc(short_loc(loc))}</span>'


def _source_panel(view: JaxprView, keys: dict[tuple[str, int], int]) -> str:
    """The source lines, in order: the first ``HTML_SOURCE_ROWS`` shown, the next
    ``HTML_SOURCE_MORE_ROWS`` behind a ``<details>``, the count of the rest."""
    parts = ['<div class="jxs-src"><div class="jxs-n">source lines</div>']
    total = len(keys)
    for position, (key, index) in enumerate(keys.items()):
        if position == HTML_SOURCE_ROWS:
            more = min(total - position, HTML_SOURCE_MORE_ROWS)
            parts.append(
                f'<details class="jxs-more"><summary class="jxs-n">{more} more '
                f"source {'line' if more == 1 else 'lines'}</summary>"
            )
        elif position == HTML_SOURCE_ROWS + HTML_SOURCE_MORE_ROWS:
            break
        infos = view.by_line.get(key, [])
        loc = infos[0].source if infos else None
        code = view.source_text.get(key, "")
        where = _loc_span(loc, ' style="margin-left:0"') if loc is not None else ""
        parts.append(
            f'<div class="jxs-s" data-s="{index}">{where} '
            f"<code>{_esc(code)}</code> "
            f'<span class="jxs-n">{plural(len(infos), "eqn")}</span></div>'
        )
    if total > HTML_SOURCE_ROWS:
        parts.append("</details>")
    left = total - HTML_SOURCE_ROWS - HTML_SOURCE_MORE_ROWS
    if left > 0:
        parts.append(
            f'<div class="jxs-n">... {plural(left, "more source line")} not shown '
            "here (see <code>.by_line</code>)</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _by_source_html(view: JaxprView, keys: dict[tuple[str, int], int]) -> str:
    """Annotated source (``%%cython -a`` style): each line, its equations beneath."""
    parts: list[str] = []
    rows = 0
    groups: list[tuple[tuple[str, int] | None, list[EqnInfo]]] = list(
        view.by_line.items()
    )
    unmapped = [e for e in view.eqns if e.source is None]
    if unmapped:
        groups.append((None, unmapped))
    # A small program opens every line; a large one lists the lines, closed.
    opened = " open" if len(view.eqns) <= HTML_OPEN_MAX_EQNS // 4 else ""
    for key, infos in groups:
        if key is None:
            head = '<span class="jxs-n">(no source line)</span>'
            data = ""
        else:
            loc = infos[0].source
            code = view.source_text.get(key, "")
            where = _loc_span(loc, ' style="margin-left:0"') if loc is not None else ""
            head = f"{where} <code>{_esc(code)}</code>"
            data = f' data-s="{keys[key]}"'
        n = len(infos)
        parts.append(
            f'<details class="jxs-g"{opened}><summary class="jxs-s"{data}>{head} '
            f'<span class="jxs-n">{plural(n, "eqn")}</span></summary>'
        )
        for index in shown_indices(n, view.display_max_eqns):
            if index < 0 or rows >= HTML_MAX_ROWS:
                left = -index if index < 0 else n - index
                parts.append(
                    f'<div class="jxs-n" style="padding-left:2.4em">... {left} '
                    "equations not shown here (see <code>.text_by_line()</code>) ...</div>"
                )
                if index >= 0:
                    break
                continue
            info = infos[index]
            rows += 1
            parts.append(
                f'<div class="jxs-e"{data} style="padding-left:{_ems(4 + 2 * info.depth)}">'
                f"{_eqn_spans(info)}</div>"
            )
        parts.append("</details>")
    return "".join(parts)


@html.register
def _(view: JaxprView) -> str:
    uid = f"jxs-jaxpr-{os.getpid():x}-{next(_ids)}"
    keys = {key: i for i, key in enumerate(view.by_line)}
    if view.by_source:
        n = len(view.eqns)
        name = _esc(view.function_name) if view.function_name else "a function"
        return (
            f'<div class="jxs-jaxpr" id="{uid}"><style>{_CSS.replace("ID", uid)}</style>'
            f'<div class="jxs-head">jaxpr of <b>{name}</b> by source line: '
            f"{plural(n, 'equation')} from {plural(len(keys), 'line')}; "
            "click a line to see its equations</div>"
            f'<div class="jxs-code">{_by_source_html(view, keys)}</div></div>'
        )
    writer = _HtmlWriter(view, keys)
    for region in view.model.shared:
        writer.child(region, 0)
    top = view.model.top
    consts = top.constvars
    writer.parts.append(
        f'<div class="jxs-f">{_esc("{ lambda " + _binders(consts, top.invars))}. let'
        "</div>"
    )
    writer.region(top, 0)
    writer.close(top, 0)
    name = _esc(view.function_name) if view.function_name else "a function"
    n = len(view.eqns)
    head = (
        f'<div class="jxs-head">jaxpr of <b>{name}</b>: {plural(n, "equation")}, '
        f"{plural(len(keys), 'source line')}; hover or click a line to link the two"
        "</div>"
    )
    panel = _source_panel(view, keys) if view.show_source and keys else ""
    return (
        f'<div class="jxs-jaxpr" id="{uid}"><style>{_CSS.replace("ID", uid)}</style>'
        f'{head}<div class="jxs-cols"><div class="jxs-code">{"".join(writer.parts)}'
        f"</div>{panel}</div><script>{inline_script('jaxpr', uid)}</script></div>"
    )
