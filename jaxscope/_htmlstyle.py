# pyright: strict
"""A view's ``<style>`` block also written as ``style=`` attributes, so the view keeps
its layout where the block is removed.

JupyterLab sanitizes the HTML of untrusted notebooks (any notebook received from
someone else) and GitHub-like renderers strip ``<style>`` and ``<script>``; both keep
``style=`` attributes (Lab keeps the declarations its sanitizer knows, per property).
``inline_styles(page)`` copies every rule whose selector can be matched on the static
markup (type, class and id selectors, descendant and child combinators,
``:first-child``/``:last-child``) into the ``style=`` attribute of each element it
matches, in cascade order, with the element's own declarations last. Only layout is
copied (fonts, spacing, display, grid and flex, sizes, overflow, alignment, borders):
colours, backgrounds and decorations stay in the block, so a sanitized view takes the
theme's colours, readable in light and dark themes, and the copies stay small (an
element with a background of its own, such as a sharding tile, keeps its text colour). The block itself
stays for the front-ends that honour it: its rules that depend on state (``:hover``,
``[open]``, a class a script toggles, ``@media``) are made ``!important`` there so they
still beat the copied declarations, as they beat the static rules before.

Where a declaration uses ``var(--name, fallback)`` (a Jupyter theme variable) or a
``ch`` length, the copy holds the fallback (or the length in ``em``) first and the
value after it: a sanitizer that drops the value keeps the first, a browser uses the
second. One pass over the markup; no view has
to be written for it.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

_STYLE_BLOCK = re.compile(r"(<style\b[^>]*>)(.*?)(</style\s*>)", re.I | re.S)
# Tags outside raw-text elements. Every attribute value jaxscope writes is escaped
# (quotes and ``>`` included), so a ``>`` ends the tag.
_TAG = re.compile(
    r"<!--.*?-->|<(/?)([a-zA-Z][\w-]*)((?:\s[^>]*)?)>|<(script|style|textarea)\b",
    re.S,
)
_RAW_END = {
    "script": re.compile(r"</script\s*>", re.I),
    "style": re.compile(r"</style\s*>", re.I),
    "textarea": re.compile(r"</textarea\s*>", re.I),
}
_ATTR = re.compile(r"""([^\s=/>]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?""")
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
    ]
)
_COMPOUND = re.compile(
    r"(\*|[a-zA-Z][\w-]*)?((?:[.#][\w-]+|:first-child|:last-child)*)$"
)
_PART = re.compile(r"([.#])([\w-]+)|:(first|last)-child")
_VAR = re.compile(r"var\(\s*--[\w-]+\s*(?:,\s*((?:[^()]|\([^()]*\))*))?\)")
# Not copied: what only colours or decorates (a sanitized view shows the theme's own
# colours, readable in light and dark themes) or only serves a pointer. The
# stylesheet keeps them where it stays; the copies stay small.
_COSMETIC = re.compile(
    r"(color|background(-.*)?|cursor|border(-.*)?-radius|outline(-.*)?|box-shadow"
    r"|opacity|text-decoration(-.*)?|transition(-.*)?|animation(-.*)?|fill|stroke)$"
)
# A length in ``ch`` (JupyterLab's sanitizer drops it), and its ``em`` in monospace.
_CH = re.compile(r"(?<![\w.-])(\d+(?:\.\d+)?)ch\b")
_COLOUR_PROPS = frozenset(
    {"color", "background", "background-color", "outline-color", "fill", "stroke"}
)


@dataclass(slots=True, eq=False)
class _Element:
    tag: str
    ident: str
    classes: frozenset[str]
    start: int  # where its start tag's attributes end (before ">" or "/>")
    style: str  # its own style attribute, unescaped
    style_span: tuple[int, int] | None  # the attribute in the page, to replace
    parent: _Element | None
    children: list[_Element] = field(default_factory=lambda: [])


@dataclass(frozen=True, slots=True)
class _Compound:
    tag: str  # "" matches any
    ident: str
    classes: frozenset[str]
    first: bool
    last: bool

    def matches(self, el: _Element) -> bool:
        if self.tag and self.tag != el.tag:
            return False
        if self.ident and self.ident != el.ident:
            return False
        if not self.classes <= el.classes:
            return False
        siblings = el.parent.children if el.parent is not None else None
        if self.first and (siblings is None or siblings[0] is not el):
            return False
        return not (self.last and (siblings is None or siblings[-1] is not el))


@dataclass(frozen=True, slots=True)
class _Selector:
    # Right to left: the subject first, then (combinator, compound) pairs.
    subject: _Compound
    rest: tuple[tuple[str, _Compound], ...]
    specificity: tuple[int, int, int]

    def matches(self, el: _Element) -> bool:
        return self.subject.matches(el) and _match_rest(self.rest, el)


def _match_rest(rest: tuple[tuple[str, _Compound], ...], el: _Element) -> bool:
    if not rest:
        return True
    combinator, compound = rest[0]
    parent = el.parent
    if combinator == ">":
        return (
            parent is not None
            and compound.matches(parent)
            and _match_rest(rest[1:], parent)
        )
    while parent is not None:
        if compound.matches(parent) and _match_rest(rest[1:], parent):
            return True
        parent = parent.parent
    return False


def _compound(text: str) -> _Compound | None:
    m = _COMPOUND.match(text)
    if m is None or not text:
        return None
    tag = (m.group(1) or "").lower()
    ident = ""
    classes: set[str] = set()
    first = last = False
    for part in _PART.finditer(m.group(2)):
        if part.group(1) == "#":
            ident = part.group(2)
        elif part.group(1) == ".":
            classes.add(part.group(2))
        elif part.group(3) == "first":
            first = True
        else:
            last = True
    return _Compound(tag if tag != "*" else "", ident, frozenset(classes), first, last)


def _selector(text: str) -> _Selector | None:
    """A selector this module can match on static markup, or None."""
    tokens = re.sub(r"\s*>\s*", " > ", text.strip()).split()
    compounds: list[_Compound] = []
    combinators: list[str] = []
    for token in tokens:
        if token == ">":
            if len(combinators) != len(compounds) - 1 or not compounds:
                return None
            combinators.append(">")
            continue
        if len(combinators) < len(compounds):
            combinators.append(" ")
        compound = _compound(token)
        if compound is None:
            return None
        compounds.append(compound)
    if not compounds or len(combinators) != len(compounds) - 1:
        return None
    ids = sum(1 for c in compounds if c.ident)
    classes = sum(len(c.classes) + c.first + c.last for c in compounds)
    tags = sum(1 for c in compounds if c.tag)
    rest = tuple(zip(reversed(combinators), reversed(compounds[:-1]), strict=True))
    return _Selector(compounds[-1], rest, (ids, classes, tags))


def _declarations(block: str) -> list[tuple[str, str, bool]]:
    """``(property, value, important)`` of a declaration block."""
    out: list[tuple[str, str, bool]] = []
    for decl in _split_top(block, ";"):
        prop, colon, value = decl.partition(":")
        prop, value = prop.strip().lower(), value.strip()
        if not colon or not prop or not value:
            continue
        important = bool(re.search(r"!\s*important\s*$", value, re.I))
        if important:
            value = re.sub(r"\s*!\s*important\s*$", "", value, flags=re.I)
        out.append((prop, value, important))
    return out


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _important(block: str) -> str:
    return ";".join(f"{p}:{v} !important" for p, v, _ in _declarations(block))


@dataclass(frozen=True, slots=True)
class _Rule:
    selector: _Selector
    order: int
    declarations: tuple[tuple[str, str, bool], ...]


@dataclass(frozen=True, slots=True)
class _Chunk:
    prelude: str
    body: str  # an at-rule's body holds its nested rules
    selectors: tuple[tuple[str, int | None], ...]  # each with its static rule's order


def _parse_sheet(css: str, first_order: int) -> tuple[list[_Rule], list[_Chunk]]:
    """The static rules of ``css``, and every rule of it as a chunk."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rules: list[_Rule] = []
    chunks: list[_Chunk] = []
    i = 0
    order = first_order
    while i < len(css):
        open_at = css.find("{", i)
        if open_at < 0:
            break
        depth = 0
        j = open_at
        while j < len(css):
            if css[j] == "{":
                depth += 1
            elif css[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        prelude, body = css[i:open_at].strip(), css[open_at + 1 : j]
        selectors: list[tuple[str, int | None]] = []
        if not prelude.startswith("@"):
            decls = tuple(_declarations(body))
            for text in _split_top(prelude, ","):
                sel = _selector(text)
                if sel is None:
                    selectors.append((text, None))
                    continue
                rules.append(_Rule(sel, order, decls))
                selectors.append((text, order))
                order += 1
        chunks.append(_Chunk(prelude, body, tuple(selectors)))
        i = j + 1
    return rules, chunks


def _parse_markup(page: str) -> list[_Element]:
    elements: list[_Element] = []
    stack: list[_Element] = []
    pos = 0
    while True:
        m = _TAG.search(page, pos)
        if m is None:
            break
        pos = m.end()
        raw = m.group(4)
        if m.group(0).startswith("<!--"):
            continue
        closing, name, attrs = m.group(1), (m.group(2) or raw or "").lower(), m.group(3)
        if raw is not None:  # a raw-text element: skip its content
            end = _RAW_END[raw.lower()].search(page, pos)
            pos = end.end() if end is not None else len(page)
            continue
        if closing:
            for depth in range(len(stack) - 1, -1, -1):
                if stack[depth].tag == name:
                    del stack[depth:]
                    break
            continue
        ident = ""
        classes: frozenset[str] = frozenset()
        style = ""
        style_span: tuple[int, int] | None = None
        base = m.start(3)
        for a in _ATTR.finditer(attrs):
            key = a.group(1).lower()
            value = a.group(2) or ""
            if value[:1] in "\"'":
                value = value[1:-1]
            if key == "id":
                ident = _unescape(value)
            elif key == "class":
                classes = frozenset(_unescape(value).split())
            elif key == "style":
                style = _unescape(value)
                style_span = (base + a.start(), base + a.end())
        stripped = attrs.rstrip()
        self_closing = stripped.endswith("/")
        end = base + (len(stripped) - 1 if self_closing else len(attrs))
        parent = stack[-1] if stack else None
        el = _Element(name, ident, classes, end, style, style_span, parent)
        if parent is not None:
            parent.children.append(el)
        elements.append(el)
        if name not in _VOID and not self_closing:
            stack.append(el)
    return elements


def _unescape(text: str) -> str:
    return html.unescape(text)


def _fallback(prop: str, value: str) -> list[str]:
    """The declarations of the copy: first what a sanitizer keeps where it would drop
    the value (a ``var()``'s fallback, ``ch`` lengths in ``em``), then the value."""
    plain = value
    if "var(" in plain:
        plain = _VAR.sub(lambda m: (m.group(1) or "").strip(), plain).strip()
        if prop in _COLOUR_PROPS or "var(" in plain:
            plain = ""
    plain = _CH.sub(lambda m: f"{float(m.group(1)) * 0.6:g}em", plain)
    if not plain or plain == value:
        return [f"{prop}:{value}"]
    return [f"{prop}:{plain}", f"{prop}:{value}"]


def _serialized(decls: list[tuple[str, str, bool]]) -> str:
    return ";".join(f"{p}:{v}" + (" !important" if i else "") for p, v, i in decls)


def _inline(el: _Element, rules: list[_Rule]) -> str:
    matched = sorted(
        (r.selector.specificity, r.order, r.declarations)
        for r in rules
        if r.selector.matches(el)
    )
    chosen: dict[str, tuple[str, bool]] = {}
    for _, _, decls in matched:
        for prop, value, important in decls:
            if important or not chosen.get(prop, ("", False))[1]:
                chosen[prop] = (value, important)
    own = _declarations(el.style)
    mine = {prop for prop, _, _ in own}
    own_background = any(prop.startswith("background") for prop in mine)
    for prop, value, important in own:
        if important or not chosen.get(prop, ("", False))[1]:
            chosen[prop] = (value, important)
    out: list[str] = []
    for prop, (value, important) in chosen.items():
        # Text on a background of the element's own keeps its colour.
        kept = prop in mine or (prop == "color" and own_background)
        if _COSMETIC.match(prop) and not kept:
            continue
        for decl in _fallback(prop, value):
            out.append(decl + (" !important" if important else ""))
    return ";".join(out)


def inline_styles(page: str) -> str:
    """``page`` with its ``<style>`` rules copied into ``style=`` attributes (see the
    module's docstring); a page with no ``<style>`` comes back unchanged."""
    blocks = list(_STYLE_BLOCK.finditer(page))
    if not blocks:
        return page
    rules: list[_Rule] = []
    sheets: list[list[_Chunk]] = []
    for block in blocks:
        found, chunks = _parse_sheet(block.group(2), len(rules))
        rules.extend(found)
        sheets.append(chunks)
    elements = _parse_markup(page)
    by_key: dict[str, list[_Rule]] = {}
    for rule in rules:
        s = rule.selector.subject
        key = (
            f"#{s.ident}" if s.ident
            else f".{min(s.classes)}" if s.classes
            else s.tag or "*"
        )  # fmt: skip
        by_key.setdefault(key, []).append(rule)
    matched_rules: set[int] = set()
    edits: list[tuple[int, int, str]] = []
    for el in elements:
        candidates = [
            *by_key.get(f"#{el.ident}", ()),
            *(r for c in el.classes for r in by_key.get(f".{c}", ())),
            *by_key.get(el.tag, ()),
            *by_key.get("*", ()),
        ]
        hits = [r for r in candidates if r.selector.matches(el)]
        if not hits and not el.style:
            continue
        matched_rules.update(r.order for r in hits)
        style = _inline(el, hits)
        if style == _serialized(_declarations(el.style)):  # the markup stays as it was
            continue
        attr = f' style="{_escape_attr(style)}"'
        if el.style_span is not None:
            edits.append((el.style_span[0] - 1, el.style_span[1], attr))
        else:
            edits.append((el.start, el.start, attr))
    # The block: rules that matched nothing here (a toggled class, a state) win over
    # the copies, as they won over the static rules.
    for block, chunks in zip(blocks, sheets, strict=True):
        edits.append((block.start(2), block.end(2), _sheet_text(chunks, matched_rules)))
    edits.sort(key=lambda e: e[0])
    out: list[str] = []
    pos = 0
    for start, end, text in edits:
        out.append(page[pos:start])
        out.append(text)
        pos = end
    out.append(page[pos:])
    return "".join(out)


def _sheet_text(chunks: list[_Chunk], matched: set[int]) -> str:
    out: list[str] = []
    for chunk in chunks:
        if chunk.prelude.startswith("@"):
            _, nested = _parse_sheet(chunk.body, 0)
            inner = "".join(f"{c.prelude}{{{_important(c.body)}}}" for c in nested)
            out.append(f"{chunk.prelude}{{{inner}}}")
            continue
        dynamic = [t for t, order in chunk.selectors if order not in matched]
        static = [t for t, order in chunk.selectors if order in matched]
        if dynamic:
            out.append(f"{','.join(dynamic)}{{{_important(chunk.body)}}}")
        if static:
            out.append(f"{','.join(static)}{{{chunk.body}}}")
    return "\n".join(out)


def _escape_attr(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace('"', "&quot;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )
