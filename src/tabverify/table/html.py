"""HTML tables to :class:`Grid`: rowspan/colspan expanded, header rows kept, captions found.

Parsing uses the standard library's tolerant ``html.parser``: it never resolves external entities,
loads DTDs or fetches anything, and it survives malformed markup (unclosed cells and rows, stray
tags). Tables nested inside a cell become part of that cell's text. Constructs that can never be
closed (a ``<`` after the last ``>``, a comment opener after the last ``-->``) are read as text
before parsing: ``html.parser`` would otherwise rescan the rest of the page for each of them.
Spans are capped at :data:`~tabverify.table.grid.MAX_SPAN` (as browsers cap ``colspan``) and a page's
tables at :data:`~tabverify.table.grid.MAX_GRID_CELLS` expanded cells.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape, unescape
from html import parser as _parser
from html.parser import HTMLParser

from tabverify.errors import TableError, TableSizeError
from tabverify.table.grid import MAX_GRID_CELLS, MAX_SPAN, CellBudget, Grid, GridCell, check_columns

_SKIP = {"script", "style", "head", "title", "annotation", "annotation-xml"}
_BREAKS = {"br", "p", "div", "li"}


@dataclass
class _RawCell:
    text: list[str] = field(default_factory=list)
    header: bool = False
    rowspan: int = 1
    colspan: int = 1


@dataclass
class _RawTable:
    rows: list[list[_RawCell]] = field(default_factory=list)
    row_is_head: list[bool] = field(default_factory=list)
    caption: list[str] = field(default_factory=list)


class _TableParser(HTMLParser):
    def __init__(self, source: str = "html") -> None:
        super().__init__(convert_charrefs=True)
        self.source = source
        self._parts = 0  # rows and cells read, bounded like the expanded grid
        self.tables: list[_RawTable] = []
        self._stack: list[_RawTable] = []  # open tables (only the outermost is structured)
        self._cell: _RawCell | None = None
        self._in_head = False
        self._in_caption = False
        self._skip = 0
        self._depth = 0
        self._figures: list[tuple[int, list[str], list[_RawTable]]] = []  # (depth, caption, tables)
        self._in_figcaption: list[str] | None = None
        self._row_open = False

    # structure -----------------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self._skip += 1
            return
        self._depth += 1
        if tag == "figure":
            self._figures.append((self._depth, [], []))
        elif tag == "figcaption" and self._figures and not self._stack:
            self._in_figcaption = self._figures[-1][1]
        elif tag == "table":
            if self._stack:  # nested table: its text joins the enclosing cell
                self._stack.append(self._stack[-1])
                return
            table = _RawTable()
            self._row_open = False
            self._stack.append(table)
            self.tables.append(table)
            if self._figures:
                self._figures[-1][2].append(table)
        elif not self._stack or len(self._stack) > 1:
            if tag in _BREAKS:
                self._text(" ")
            return
        elif tag == "thead":
            self._in_head = True
        elif tag in ("tbody", "tfoot"):
            self._in_head = False
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr":
            self._close_cell()
            self._new_row()
        elif tag in ("td", "th"):
            self._close_cell()
            table = self._stack[-1]
            if not table.rows or not self._row_open:  # a cell outside any <tr> starts a row
                self._new_row()
            values = dict(attrs)
            self._cell = _RawCell(
                header=tag == "th",
                rowspan=_span(values.get("rowspan")),
                colspan=_span(values.get("colspan")),
            )
            self._count(self._cell.colspan)
            table.rows[-1].append(self._cell)
        elif tag in _BREAKS:
            self._text(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BREAKS:
            self._text(" ")
        elif tag not in _SKIP:
            self.handle_starttag(tag, attrs)
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if tag == "figure" and self._figures:
            depth, caption, tables = self._figures.pop()
            for table in tables:
                if not table.caption:
                    table.caption = caption
        elif tag == "figcaption":
            self._in_figcaption = None
        elif tag == "table" and self._stack:
            if len(self._stack) == 1:
                self._close_cell()
                self._in_head = False
            self._stack.pop()
        elif len(self._stack) == 1:
            if tag in ("td", "th"):
                self._close_cell()
            elif tag == "tr":
                self._close_cell()
                self._row_open = False
            elif tag == "thead":
                self._in_head = False
            elif tag == "caption":
                self._in_caption = False
        self._depth = max(0, self._depth - 1)

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self._text(data)

    # helpers -------------------------------------------------------------------------------------
    def _text(self, data: str) -> None:
        if self._stack:
            if self._in_caption and len(self._stack) == 1:
                self._stack[-1].caption.append(data)
            elif self._cell is not None:
                self._cell.text.append(data)
        elif self._in_figcaption is not None:
            self._in_figcaption.append(data)

    def _count(self, cells: int = 1) -> None:
        # a cell fills at least its colspan in its first row, so this never exceeds the expanded grid
        self._parts += cells
        if self._parts > MAX_GRID_CELLS:
            raise TableSizeError(
                f"{self.source}: more than {MAX_GRID_CELLS:,} table rows and cells (colspan expanded), the "
                "most tabverify reads from one document; check the spans, or pass only the table you need"
            )

    def _new_row(self) -> None:
        self._count()
        table = self._stack[-1]
        table.rows.append([])
        table.row_is_head.append(self._in_head)
        self._row_open = True

    def _close_cell(self) -> None:
        self._cell = None


_SPAN_VALUE = re.compile(r"[\t\n\f\r ]*\+?0*([0-9]{1,12})")


def _span(value: str | None) -> int:
    """A ``rowspan``/``colspan`` value read as browsers do: ASCII digits after optional spaces and
    ``+``, anything after them ignored ("3px" is 3); none, zero or a sign ``-`` is 1, and a span is
    capped at :data:`~tabverify.table.grid.MAX_SPAN`. Other scripts' digits ("٣") are not digits here,
    as in a browser; Python's ``int`` would read them."""
    match = _SPAN_VALUE.match(value or "")
    if match is None:
        return 1
    number = int(match.group(1))
    return min(number, MAX_SPAN) if number >= 1 else 1


def _layout(raw: _RawTable, name: str, budget: CellBudget) -> Grid:
    rows = [r for r in raw.rows]
    placed: dict[tuple[int, int], tuple[GridCell, int, int]] = {}
    width = 0
    for i, row in enumerate(rows):
        j = 0
        for cell in row:
            while (i, j) in placed:
                j += 1
            text = "".join(cell.text)
            header = cell.header or raw.row_is_head[i]
            grid_cell = GridCell(text, header, (i, j))
            # a rowspan past the last row does not add rows
            budget.spend(min(cell.rowspan, len(rows) - i) * cell.colspan)
            for di in range(min(cell.rowspan, len(rows) - i)):
                for dj in range(cell.colspan):
                    placed[(i + di, j + dj)] = (grid_cell, i, j)
            j += cell.colspan
            width = max(width, j)
            check_columns(width, name)
    width = max([width] + [j + 1 for (_, j) in placed])
    budget.spend(len(rows) * width - len(placed))  # the fillers that pad short rows
    cells = []
    for i in range(len(rows)):
        line = []
        for j in range(width):
            entry = placed.get((i, j))
            line.append(entry[0] if entry is not None else GridCell("", False, (i, j), filler=True))
        cells.append(tuple(line))
    caption = " ".join("".join(raw.caption).split())
    return Grid(tuple(cells), caption, name)


def read_html_tables(html: str, source: str = "html", budget: CellBudget | None = None) -> list[Grid]:
    """Every top-level ``<table>`` of an HTML page or fragment, in document order.

    Captions come from the table's ``<caption>`` or, failing that, the ``<figcaption>`` of the
    ``<figure>`` around it (the ar5iv/arXiv HTML layout). Tables without rows are skipped; the
    others are named ``SOURCE#tableN``, numbered from 1 in the order returned.

    Raises:
        TableError: when the text holds no table with at least one row, or its tables expand to
            more cells than ``budget`` (default: :data:`~tabverify.table.grid.MAX_GRID_CELLS`) allows.
    """
    parser = _TableParser(source)
    try:
        parser.feed(_defuse(html))
        parser.close()
    except (AssertionError, ValueError) as exc:  # html.parser raises these on some broken markup
        raise TableError(f"{source}: the HTML could not be parsed ({exc}); check that it is HTML") from exc
    budget = budget or CellBudget(source)
    grids: list[Grid] = []
    for raw in parser.tables:
        if any(raw.rows):
            grids.append(_layout(raw, f"{source}#table{len(grids) + 1}", budget))
    if not grids:
        raise TableError(f"{source}: no <table> with rows found in the HTML")
    return grids


def read_html_table(html: str, source: str = "html", budget: CellBudget | None = None) -> Grid:
    """The first table of an HTML fragment (see :func:`read_html_tables`)."""
    return read_html_tables(html, source, budget)[0]


MAX_TAG_ATTRIBUTES = 4096
"""Characters of attributes a start tag keeps as written; a longer one keeps only what the reader
uses (``rowspan`` and ``colspan``). ``html.parser`` matches a tag with a pattern that keeps state
per attribute and then lists every attribute: one 7.5 MB tag of 1.5 million attributes took 1.2 GB
(74 MB shortened first)."""

# Where html.parser ends a start tag (its locatestarttagend_tolerant, quoted values may hold < and
# >), with each attribute an atomic group repeated possessively: the parser's own pattern keeps a
# backtracking point per attribute, so one tag of 1.5 million attributes took 1.2 GB to match.
_LOCATE_TAG_END = re.compile(
    r"""
  <[a-zA-Z][^\t\n\r\f />\x00]*+
  (?:[\s/]*+
    (?>(?<=['"\s/])[^\s/>][^\s/=>]*
      (?:\s*=+\s*
        (?:'[^']*'
          |"[^"]*"
          |(?!['"])[^>\s]*
         )
        \s*
       )?(?:\s|/(?!>))*
     )*+
   )?+
  \s*+
""",
    re.VERBOSE,
)
_FIND_ATTRIBUTE = getattr(_parser, "attrfind_tolerant", None)  # one attribute, as html.parser reads it
_TAG_NAME = re.compile(r"([a-zA-Z][^\t\n\r\f />\x00]*)(?:\s|/(?!>))*")  # html.parser's tagfind_tolerant
_TAG_OPEN = re.compile(r"<[a-zA-Z]")


def _shorten_long_tags(html: str) -> str:
    """``html`` with every start tag longer than :data:`MAX_TAG_ATTRIBUTES` written again with only
    its ``rowspan`` and ``colspan``, each as its last occurrence (the one ``html.parser`` keeps)."""
    if _FIND_ATTRIBUTE is None:  # a Python whose html.parser lacks it
        return html
    parts, done = [], 0
    for opening in _TAG_OPEN.finditer(html):
        start = opening.start()
        if start < done:
            continue
        end = _LOCATE_TAG_END.match(html, start).end()  # type: ignore[union-attr]  # always matches "<x"
        if end - start <= MAX_TAG_ATTRIBUTES:
            continue
        closing = "/>" if html.startswith("/>", end) else ">" if html.startswith(">", end) else None
        if closing is None:  # not a tag to html.parser either: left as it is
            continue
        name = _TAG_NAME.match(html, start + 1)
        assert name is not None  # _TAG_OPEN matched a letter
        spans: dict[str, str] = {}
        k = name.end()
        while k < end:
            attribute = _FIND_ATTRIBUTE.match(html, k, end)
            if attribute is None or attribute.end() == k:
                break
            key = attribute.group(1).lower()
            if key in ("rowspan", "colspan") and attribute.group(3) is not None:
                value = attribute.group(3)
                if value[:1] == value[-1:] and value[:1] in ("'", '"') and len(value) > 1:
                    value = value[1:-1]
                spans[key] = unescape(value)[:100]
            k = attribute.end()
        written = "".join(f' {key}="{escape(value, quote=True)}"' for key, value in spans.items())
        parts.append(html[done:start] + "<" + name.group(1) + written + closing)
        done = end + len(closing)
    return "".join(parts) + html[done:] if parts else html


_COMMENT_CLOSE = re.compile(r"--\s*>")
_SECTION_CLOSE = re.compile(r"]\s*]\s*>")


def _after_last(pattern: re.Pattern[str], text: str) -> int:
    end = 0
    for match in pattern.finditer(text):
        end = match.end()
    return end


def _defuse(html: str) -> str:
    """The page with the ``<`` of constructs that can never be closed written as ``&lt;`` (text, as
    ``html.parser`` reads them in the end), so that it does not rescan the rest of the page for
    each of them: tags after the last ``>``, comments after the last ``-->``, ``<![`` sections
    after the last ``]]>``. Start tags with more than :data:`MAX_TAG_ATTRIBUTES` characters of
    attributes keep only their spans."""
    last = html.rfind(">")
    head, tail = html[: last + 1], html[last + 1 :].replace("<", "&lt;")
    if "<!--" in head:
        cut = _after_last(_COMMENT_CLOSE, head)
        head = head[:cut] + head[cut:].replace("<!--", "&lt;!--")
    if "<![" in head:
        cut = _after_last(_SECTION_CLOSE, head)
        head = head[:cut] + head[cut:].replace("<![", "&lt;![")
    if len(head) > MAX_TAG_ATTRIBUTES:
        head = _shorten_long_tags(head)
    return head + tail
