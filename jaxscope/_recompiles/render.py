"""Rendering of recompile logs: a summary table, one compact line per event.

Text goes through rich (imported lazily), every user string (function names, paths,
values, hints quoting them) as ``plain`` text: never markup, control characters spelled
out. HTML escapes every user string and puts each event's causes, hints and argument
types in a ``<details>`` block.
"""

from __future__ import annotations

import html as _html
from typing import Any

from jaxscope._display import html, plain, printable, rich_renderable
from jaxscope._format import plural
from jaxscope._recompiles.records import (
    RecompileEvent,
    RecompileEvents,
    RecompileSummary,
    SummaryRow,
    describe_cause,
    event_hints,
)
from jaxscope._recompiles.watcher import RecompileLog
from jaxscope._records import SourceLoc
from jaxscope._source import full_loc, short_loc, short_path

# A display shows at most this many events (the log keeps them all).
MAX_EVENTS_SHOWN = 50

_TIMES = "\N{MULTIPLICATION SIGN}"  # between a cause kind and its count

_CSS = (
    "<style>.jaxscope-recompiles{font-family:monospace;font-size:12px}"
    ".jaxscope-recompiles table{border-collapse:collapse}"
    ".jaxscope-recompiles td,.jaxscope-recompiles th{padding:1px 8px;"
    "text-align:left;border-bottom:1px solid #ddd}"
    ".jaxscope-recompiles .fn{font-weight:bold}"
    ".jaxscope-recompiles .cause{color:#a15c00}"
    ".jaxscope-recompiles .hint{color:#555}"
    ".jaxscope-recompiles details{margin:1px 0}</style>"
)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _top_causes(row: SummaryRow) -> str:
    return ", ".join(f"{kind}{_TIMES}{n}" for kind, n in row.top_causes)


def _shown(text: str, event: RecompileEvent) -> str:
    """A cause or hint as views show it: the event's files (quoted in the cause's
    text, which keeps them in full) shortened by ``short_path``."""
    for loc in (event.defined_at, event.call_site):
        if loc is not None and loc.file in text:
            text = text.replace(loc.file, short_path(loc.file))
    return text


def _causes(event: RecompileEvent) -> str:
    causes = "; ".join(describe_cause(c) for c in event.causes) or "unknown cause"
    return _shown(causes, event)


def _event_text(event: RecompileEvent) -> Any:
    from rich.text import Text

    out = Text()
    out.append_text(plain(event.function, style="bold"))
    if event.call_site is not None:
        out.append_text(plain(f" at {short_loc(event.call_site)}", style="dim"))
    out.append(": ")
    out.append_text(plain(_causes(event), style="yellow"))
    if not event.traced:
        out.append(" [compile only, no retrace]", style="magenta")
    elif not event.compiled:
        out.append(" [trace only]", style="magenta")
    out.append(f" ({_ms(event.seconds)})", style="dim")
    return out


def _events_text(
    events: list[RecompileEvent], title: str = "", hints: bool = True
) -> Any:
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = []
    if title:
        parts.append(plain(title, style="bold"))
    shown = events[-MAX_EVENTS_SHOWN:]
    if len(events) > len(shown):
        parts.append(
            Text(f"... {len(events) - len(shown)} earlier events", style="dim")
        )
    for event in shown:
        parts.append(_event_text(event))
        if hints:
            for hint in event_hints(event):
                parts.append(plain(f"    hint: {_shown(hint, event)}", style="dim"))
    return Group(*parts)


def _summary_table(summary: RecompileSummary) -> Any:
    from rich.table import Table

    table = Table(
        title="jaxscope: recompiles by function",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for name, justify in (
        ("function", "left"),
        ("defined at", "left"),
        ("calls", "right"),
        ("traces", "right"),
        ("compiles", "right"),
        ("seconds", "right"),
        ("top causes", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in summary.rows:
        table.add_row(
            plain(r.function),
            plain(short_loc(r.defined_at) if r.defined_at is not None else ""),
            str(r.calls),
            str(r.traces),
            str(r.compiles),
            f"{r.seconds:.3f}",
            _top_causes(r),
        )
    return table


@rich_renderable.register
def _(event: RecompileEvent) -> Any:
    return _event_text(event)


@rich_renderable.register
def _(events: RecompileEvents) -> Any:
    return _events_text(events.events, events.title)


@rich_renderable.register
def _(summary: RecompileSummary) -> Any:
    from rich.console import Group
    from rich.text import Text

    if not summary.rows:
        return Text("jaxscope: no recompiles recorded", style="dim")
    parts = [
        _summary_table(summary),
        Text(
            "calls: calls that missed JAX's C++ cache (cache hits never reach "
            "Python, so watching costs nothing there)",
            style="dim",
        ),
    ]
    if summary.internal_compiles:
        parts.append(
            Text(
                f"(+ {plural(summary.internal_compiles, 'compile')} of JAX's own "
                "eager ops, not counted)",
                style="dim",
            )
        )
    return Group(*parts)


@rich_renderable.register
def _(log: RecompileLog) -> Any:
    from rich.console import Group

    return Group(
        rich_renderable(log.summary()),
        _events_text(log.events, "events:" if log.events else "", hints=False),
    )


# ------------------------------------------------------------------ HTML


def _e(text: object) -> str:
    return _html.escape(printable(str(text)))


def _loc_html(loc: SourceLoc) -> str:
    """The short ``file:line``, the full path in its tooltip."""
    return f'<span title="{_e(full_loc(loc))}">{_e(short_loc(loc))}</span>'


def _event_html(event: RecompileEvent) -> str:
    where = (
        f' <span class="hint">at {_loc_html(event.call_site)}</span>'
        if event.call_site
        else ""
    )
    causes = _causes(event)
    extra = (
        " [compile only, no retrace]"
        if not event.traced
        else " [trace only]"
        if not event.compiled
        else ""
    )
    items = []
    hints = iter(event_hints(event, first_call=True))
    hinted: set[str] = set()
    for c in event.causes:
        hint = ""
        if c.hint and c.kind not in hinted:  # one hint per kind, as event_hints
            hinted.add(c.kind)
            hint = next(hints, "")
        items.append(
            f'<li><span class="cause">{_e(_shown(describe_cause(c), event))}</span>'
            + (
                f'<br><span class="hint">{_e(_shown(hint, event))}</span>'
                if hint
                else ""
            )
            + "</li>"
        )
    if event.defined_at is not None:
        items.append(f"<li>defined at {_loc_html(event.defined_at)}</li>")
    if event.signature:
        sig = ", ".join(f"{p}: {t}" for p, t in event.signature[:20])
        more = f" (+{len(event.signature) - 20})" if len(event.signature) > 20 else ""
        items.append(f"<li>arguments: {_e(sig)}{more}</li>")
    return (
        f'<details><summary><span class="fn">{_e(event.function)}</span>{where}: '
        f'<span class="cause">{_e(causes)}</span>{_e(extra)} '
        f'<span class="hint">({_ms(event.seconds)})</span></summary>'
        f"<ul>{''.join(items)}</ul></details>"
    )


def _events_html(events: list[RecompileEvent], title: str = "") -> str:
    shown = events[-MAX_EVENTS_SHOWN:]
    head = f"<b>{_e(title)}</b>" if title else ""
    more = (
        f"<div class='hint'>... {len(events) - len(shown)} earlier events</div>"
        if len(events) > len(shown)
        else ""
    )
    return head + more + "".join(_event_html(e) for e in shown)


def _summary_html(summary: RecompileSummary) -> str:
    if not summary.rows:
        return "<div>jaxscope: no recompiles recorded</div>"
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "function",
            "defined at",
            "calls",
            "traces",
            "compiles",
            "seconds",
            "top causes",
        )
    )
    rows = "".join(
        "<tr>"
        f'<td class="fn">{_e(r.function)}</td><td>{_loc_html(r.defined_at) if r.defined_at else ""}</td>'
        f"<td>{r.calls}</td><td>{r.traces}</td><td>{r.compiles}</td>"
        f"<td>{r.seconds:.3f}</td>"
        f'<td class="cause">{_e(_top_causes(r))}</td>'
        "</tr>"
        for r in summary.rows
    )
    note = (
        f"<div class='hint'>(+ {plural(summary.internal_compiles, 'compile')} of JAX's own "
        "eager ops, not counted)</div>"
        if summary.internal_compiles
        else ""
    )
    return (
        f"<b>jaxscope: recompiles by function</b><table><tr>{head}</tr>{rows}"
        f"</table>{note}"
    )


def _wrap(body: str) -> str:
    return f'{_CSS}<div class="jaxscope-recompiles">{body}</div>'


@html.register
def _(event: RecompileEvent) -> str:
    return _wrap(_event_html(event))


@html.register
def _(events: RecompileEvents) -> str:
    return _wrap(_events_html(events.events, events.title))


@html.register
def _(summary: RecompileSummary) -> str:
    return _wrap(_summary_html(summary))


@html.register
def _(log: RecompileLog) -> str:
    return _wrap(_summary_html(log.summary()) + _events_html(log.events))
