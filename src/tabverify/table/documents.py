"""Documents to grids: every table of an HTML page, a LaTeX source, a Markdown file, a CSV file or
an arXiVeri paper record, with captions; one entry point, :func:`read_tables`.

Tables are numbered from 1 in the order :func:`read_tables` returns them (the numbers
``tabverify tables`` prints and ``--table`` takes; grids are named ``SOURCE#tableN``). A document's
tables expand to at most :data:`~tabverify.table.grid.MAX_GRID_CELLS` cells, spans included.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from html import unescape
from pathlib import Path
from typing import Any

from tabverify import files
from tabverify.errors import TableError, TableSizeError
from tabverify.table.grid import MAX_GRID_CELLS, CellBudget, Grid
from tabverify.table.html import read_html_tables
from tabverify.table.latex import read_latex_tables
from tabverify.table.model import Table
from tabverify.table.readers import (
    MAX_TABLE_CELLS,
    delimited_rows,
    header_and_rows,
    read_text,
    sniff_delimiter,
    table_from_grid,
    table_from_json,
)

_MD_DELIMITER_CELL = re.compile(r":?-+:?")


def _is_md_separator(line: str, hyphens: int = 1) -> bool:
    """A pipe table's delimiter row: cells of at least ``hyphens`` hyphens with optional colons
    (``|:-|--:|``), split on pipes in one linear pass; one hyphen a cell is enough where the line
    has a pipe (a lone ``-`` is a list item)."""
    body = line.strip()
    if "|" not in body and "--" not in body:
        return False
    body = body.removeprefix("|")
    if body.endswith("|"):
        body = body[:-1]
    cells = [cell.strip() for cell in body.split("|")]
    return all(cell.count("-") >= hyphens and _MD_DELIMITER_CELL.fullmatch(cell) for cell in cells)


DOCUMENT_FORMATS = ("html", "latex", "markdown", "csv", "tsv", "json")
"""The formats :func:`read_tables` and :func:`read_table_text` read (besides ``auto``)."""


# inline markup of a Markdown cell: HTML tags (``<sub>44.5</sub>``, ``<br>``), code spans, bold and
# underscore emphasis, links; a tag is at most 200 characters (a longer ``<`` run is text)
_MD_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_MD_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]{0,200})?/?>")
_MD_STRONG = re.compile(r"\*\*([^*]+)\*\*|__([^_]+)__|`([^`]+)`")
_MD_LINK = re.compile(r"!?\[([^\[\]]*)\]\([^()\s]*\)")
_MD_SUPERSCRIPT = re.compile(r"(?<=\S)<sup>([^<>]{1,20})</sup>", re.IGNORECASE)
_MD_LEADING_NUMBER = re.compile(r"\s*(?:\*\*|__)?[~≈<>]?\s*[-+]?\d")
_MD_NOTE_LINK = re.compile(r"\(\s*!?\[[^\[\]]*\]\([^()\s]*\)\s*\)|!?\[[^\[\]]*\]\([^()\s]*\)")
_HTML_TABLE_OPEN = re.compile(r"<table\b", re.IGNORECASE)
_HTML_BLOCK_START = re.compile(r" {0,3}<table\b", re.IGNORECASE)  # a line opening an HTML table block
_MD_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_HTML_TABLE_TAG = re.compile(r"<(/)?table\b[^<>]{0,200}>?", re.IGNORECASE)


def _md_text(cell: str) -> str:
    """A Markdown cell's text without its inline markup: ``<sub><b>44.5</b></sub>`` is ``44.5``,
    ``**81.3**`` is ``81.3``, ``[Swin-T](url)`` is ``Swin-T``, ``&dagger;`` is ``†``. A superscript
    right after some text is a mark (``46.9<sup>4</sup>`` is ``46.9^{4}``, not 46.94), and a link
    after a number is a note, not part of the value (``76.8% ([ckpt](url))`` is ``76.8%``)."""
    if "<" in cell:
        cell = _MD_SUPERSCRIPT.sub(r"^{\1}", cell)
        cell = _MD_TAG.sub("", _MD_BREAK.sub(" ", cell))
    if "&" in cell:
        cell = unescape(cell)
    if "](" in cell:
        if _MD_LEADING_NUMBER.match(cell):
            cell = _MD_NOTE_LINK.sub("", cell)
        cell = _MD_LINK.sub(r"\1", cell)
    if "**" in cell or "__" in cell or "`" in cell:
        cell = _MD_STRONG.sub(lambda m: m.group(1) or m.group(2) or m.group(3), cell)
    return " ".join(cell.split())


def _md_cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [_md_text(c.replace("\\|", "|")) for c in re.split(r"(?<!\\)\|", line)]


_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*)$")


def _md_caption(lines: list[str], at: int, headings: list[tuple[int, str]]) -> str:
    """The caption of the table starting on line ``at``: the line right above it (blank lines
    skipped, two lines at most) when it starts with "Table", else the nearest section heading above
    it (``## Results on COCO``), else nothing. ``headings``: (line number, text) in line order."""
    above = [ln.strip() for ln in lines[max(0, at - 2) : at] if ln.strip()]
    if above and re.match(r"^(\*\*)?table\b", above[-1], re.I):
        return above[-1].strip("* ")
    before = bisect_left(headings, (at, ""))
    return headings[before - 1][1] if before else ""


def _lines_without_comments(text: str) -> list[str]:
    """The text's lines with its HTML comments (``<!-- ... -->``; unclosed: to the end) removed: a
    README comments out rows and tables it does not show. A line left blank by a comment is
    dropped, so a table with commented-out rows goes on after them."""
    if "<!--" not in text:
        return text.splitlines()
    lines: list[str] = []
    inside = False
    for line in text.splitlines():
        kept, at, touched = [], 0, inside
        while at <= len(line):
            if inside:
                end = line.find("-->", at)
                if end < 0:
                    break
                at, inside = end + 3, False
            start = line.find("<!--", at)
            if start < 0:
                kept.append(line[at:])
                break
            kept.append(line[at:start])
            at, inside, touched = start + 4, True, True
        rest = "".join(kept)
        if not (touched and not rest.strip()):
            lines.append(rest)
    return lines


def _html_block_ends(lines: list[str]) -> dict[int, int]:
    """For each line where a ``<table>`` opens, the line after the ``</table>`` that closes the first
    one opened there (tables nested inside counted), in one pass over the text; a block never
    closed ends at its first blank line, as a Markdown HTML block does, so a stray ``<table>`` does
    not swallow the rest of the text."""
    ends: dict[int, int] = {}
    unclosed: list[int] = []  # where each open <table> is, innermost last; -1 for all but a line's first
    for j, line in enumerate(lines):
        first = True
        for tag in _HTML_TABLE_TAG.finditer(line):
            if tag.group(1) is None:
                unclosed.append(j if first else -1)
                first = False
            elif unclosed and (opened := unclosed.pop()) >= 0:
                ends[opened] = j + 1
    blank = len(lines)
    for j in range(len(lines) - 1, -1, -1):
        if j in ends or not _HTML_TABLE_OPEN.search(lines[j]):
            blank = j if not lines[j].strip() else blank
            continue
        ends[j] = blank
    return ends


def _fenced(lines: list[str]) -> list[bool]:
    """Which lines are inside fenced code blocks (``` or ~~~, their fence lines included): code, not
    tables. An unclosed fence runs to the end, as Markdown renders it."""
    inside, fence, flags = False, "", []
    for line in lines:
        m = _MD_FENCE.match(line)
        flags.append(inside or m is not None)
        if not inside and m:
            inside, fence = True, m.group(1)
        elif (
            inside
            and m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and not m.group(2).strip()
        ):
            inside = False
    return flags


def read_markdown_tables(text: str, source: str = "markdown", budget: CellBudget | None = None) -> list[Grid]:
    """Every table of a Markdown text, in document order: pipe tables, whose rows above the
    ``|---|`` line are header rows, and HTML ``<table>`` blocks (a line starting with ``<table``:
    READMEs often write results tables in HTML), read as
    :func:`~tabverify.table.html.read_html_tables` reads them. Fenced code blocks are code, not
    tables. A line right above a table starting with "Table" is taken as its caption, else the
    nearest section heading above it (an HTML table's own ``<caption>`` first). Inline markup in
    pipe cells (HTML tags such as ``<sub>``, bold, code, links, entities) is removed, so
    ``<sub>44.5</sub>`` reads as the number 44.5; HTML comments (rows or tables a README hides)
    are not read.

    Raises:
        TableError: when no table is found, or the tables hold more cells than ``budget``
            (default: :data:`~tabverify.table.grid.MAX_GRID_CELLS`) allows.
    """
    budget = budget or CellBudget(source)
    lines = _lines_without_comments(text)
    headings = [
        (n, _md_text(m.group(1).rstrip(" \t#")))
        for n, ln in enumerate(lines)
        if (m := _MD_HEADING.match(ln[:1000]))
    ]
    code = _fenced(lines)
    block_ends = _html_block_ends(lines) if "<" in text else {}
    grids: list[Grid] = []
    i = 0
    while i < len(lines):
        if code[i]:
            i += 1
        elif _HTML_BLOCK_START.match(lines[i]):
            end = block_ends.get(i, len(lines))
            try:
                found = read_html_tables("\n".join(lines[i:end]), source, budget)
            except TableSizeError:
                raise
            except TableError:
                found = []  # a <table> without rows, or markup html.parser refuses: not a table
            for grid in found:
                caption = grid.caption or _md_caption(lines, i, headings)
                grids.append(Grid(grid.cells, caption, f"{source}#table{len(grids) + 1}"))
            i = end
        elif i + 1 < len(lines) and "|" in lines[i] and not code[i + 1] and _is_md_separator(lines[i + 1]):
            pending = lines[i].count("|")  # cells are counted before they are split out
            budget.check(pending)
            header = [_md_cells(lines[i])]
            j = i + 2
            body = []
            while j < len(lines) and "|" in lines[j] and lines[j].strip() and not code[j]:
                pending += lines[j].count("|")
                budget.check(pending)
                body.append(_md_cells(lines[j]))
                j += 1
            caption = _md_caption(lines, i, headings)
            grids.append(Grid.from_rows(header + body, 1, caption, f"{source}#table{len(grids) + 1}", budget))
            i = j
        else:
            i += 1
    if not grids:
        raise TableError(
            f"{source}: no Markdown pipe table (a header line, then a |---| line) or <table> found"
        )
    return grids


def read_delimited(text: str, delimiter: str, source: str = "csv", budget: CellBudget | None = None) -> Grid:
    """A CSV/TSV text as one grid whose first line is the header (blank lines skipped).

    Raises:
        TableError: no rows, a header line without names, a line the CSV reader rejects, or more
            cells than ``budget`` (default: :data:`~tabverify.table.grid.MAX_GRID_CELLS`) allows.
    """
    budget = budget or CellBudget(source)
    header, rows = header_and_rows(
        delimited_rows(text, delimiter, source, budget.limit - budget.used), source
    )
    return Grid.from_rows([header, *rows], 1, "", source, budget)


_PAPER_LAYOUT = '{"list_table_and_caption": [{"table": "<table>...</table>", "caption": "..."}, ...]}'


def read_paper_json(data: object, source: str = "json", budget: CellBudget | None = None) -> list[Grid]:
    """The tables of a paper record in the arXiVeri layout:
    ``{"list_table_and_caption": [{"table": "<table>...", "caption": ...}, ...]}`` (or the list alone).

    Numbering: every top-level ``<table>`` (with at least one row) of every entry is a table, in
    list order and, within an entry, in document order, named ``SOURCE#tableN`` with N from 1 - the
    numbers ``tabverify tables`` lists and ``--table N`` / ``target_table`` use, as for an HTML page
    holding the same tables. An entry whose HTML holds no table (a figure, an empty string,
    ``null``) gives no table, and an entry holding two gives two, each with the entry's caption; so
    table N is list entry N only while every earlier entry holds exactly one table (true of every
    entry of the arXiVeri release).

    Raises:
        TableError: JSON of another shape (an entry that is not an object, a table or caption that
            is not text), no readable table, or more cells than ``budget`` allows.
    """
    if isinstance(data, dict) and "list_table_and_caption" in data:
        entries = data["list_table_and_caption"]
    elif isinstance(data, list) and data and all(isinstance(e, dict) and "table" in e for e in data):
        entries = data
    else:
        raise TableError(f"{source}: JSON is not a paper record; expected {_PAPER_LAYOUT}")
    if not isinstance(entries, list):
        raise TableError(f'{source}: "list_table_and_caption" must be a list; expected {_PAPER_LAYOUT}')
    budget = budget or CellBudget(source)
    grids: list[Grid] = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise TableError(
                f"{source}: entry {number} of the table list is {_kind(entry)}, expected an object "
                f'with "table" and "caption"; expected {_PAPER_LAYOUT}'
            )
        html, caption = (
            _text_field(entry, "table", number, source),
            _text_field(entry, "caption", number, source),
        )
        try:
            found = read_html_tables(html, f"{source} entry {number}", budget)
        except TableSizeError:
            raise
        except TableError:
            continue  # an empty or figure-only entry: not a table
        for grid in found:
            grids.append(Grid(grid.cells, " ".join(caption.split()), f"{source}#table{len(grids) + 1}"))
    if not grids:
        raise TableError(f"{source}: the paper record holds no readable table")
    return grids


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _text_field(entry: dict[str, Any], key: str, number: int, source: str) -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TableError(
            f'{source}: entry {number} of the table list has a "{key}" that is {_kind(value)}, expected text'
        )
    return value


def detect_format(path: Path, text: str) -> str:
    """The document format from the file name, else from the content."""
    suffix = path.suffix.lower()
    by_suffix = {
        ".html": "html", ".htm": "html", ".xhtml": "html", ".tex": "latex", ".latex": "latex",
        ".md": "markdown", ".markdown": "markdown", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
        ".json": "json",
    }  # fmt: skip
    if suffix in by_suffix:
        return by_suffix[suffix]
    head = text[:5000].lower()
    if "<table" in head or "<html" in head:
        return "html"
    if "\\begin{" in head:
        return "latex"
    if head.lstrip().startswith(("{", "[")):
        return "json"
    if any(_is_md_separator(line, hyphens=2) for line in head.splitlines()):
        return "markdown"
    return "csv"


def read_tables(path: str | Path, fmt: str = "auto") -> list[Grid]:
    """Every table of a document file, as grids with captions.

    Args:
        path: an HTML page or fragment, a ``.tex`` file, a Markdown file, a CSV/TSV table, or an
            arXiVeri paper record (``.json``).
        fmt: ``auto`` (by extension, then content) or one of ``html, latex, markdown, csv, tsv, json``.

    Raises:
        TableError: the file is missing, empty, not text, holds no table, is malformed, or its
            tables expand to more than :data:`~tabverify.table.grid.MAX_GRID_CELLS` cells.
    """
    path = Path(path)
    return read_tables_text(read_text(path), path.name, fmt, str(path))


def read_tables_text(text: str, name: str, fmt: str = "auto", where: str | None = None) -> list[Grid]:
    """Every table of a document given as text (an upload, say), as :func:`read_tables` reads a file.

    Args:
        text: the document's text.
        name: its file name: names the grids (``NAME#tableN``) and, with ``fmt="auto"``, its suffix
            picks the format. Never opened: it may be any string a user sent.
        fmt: as for :func:`read_tables`.
        where: how messages name the document [default: ``name``].

    Raises:
        TableError: the text is empty, holds NUL bytes, holds no table, is malformed, or its tables
            expand to more than :data:`~tabverify.table.grid.MAX_GRID_CELLS` cells.
    """
    where = name if where is None else where
    if not text.strip():
        raise TableError(f"{where}: the document is empty; expected a document with a table")
    if "\x00" in text[:4096]:
        raise TableError(f"{where}: looks like a binary file (NUL bytes); expected a text document")
    if fmt == "auto":
        fmt = detect_format(Path(name), text)
    budget = CellBudget(name, MAX_GRID_CELLS)
    if fmt == "html":
        return read_html_tables(text, name, budget)
    if fmt == "latex":
        return read_latex_tables(text, name, budget)
    if fmt == "markdown":
        return read_markdown_tables(text, name, budget)
    if fmt in ("csv", "tsv"):
        delimiter = "\t" if fmt == "tsv" else sniff_delimiter(text)
        return [read_delimited(text, delimiter, name, budget)]
    if fmt == "json":
        return read_paper_json(files.parse_json(text, where, TableError), name, budget)
    raise TableError(f"unknown document format {fmt!r}; use one of auto, {', '.join(DOCUMENT_FORMATS)}")


def read_table_text(text: str, fmt: str = "auto", name: str = "table", number: int = 1) -> tuple[Table, int]:
    """Table ``number`` (from 1) of a document given as text - pasted into a form or uploaded - and
    how many tables the document holds (so a caller can say which one it read).

    Args:
        text: CSV or TSV (first line the header), JSON (records, ``{"header", "rows"}`` or an arXiVeri
            paper record), an HTML page or fragment, a LaTeX source, or Markdown with a pipe table.
        fmt: ``auto`` (by the suffix of ``name``, then by content) or one of :data:`DOCUMENT_FORMATS`.
        name: the table's name, used in messages and as ``Table.name`` (e.g. the uploaded file's name).
        number: which table of a document holding several.

    Raises:
        TableError: empty or binary text, no table, a ragged CSV/TSV or JSON table, malformed input,
            a table number the document does not have, or more cells than the readers accept.
    """
    if not text.strip():
        raise TableError(f"{name}: the table is empty; expected a header row and data rows")
    if "\x00" in text[:4096]:
        raise TableError(f"{name}: looks like binary data (NUL bytes); expected a text table")
    if fmt == "auto":
        fmt = detect_format(Path(name), text)
    if fmt in ("csv", "tsv"):
        # a CSV/TSV text is one table whose rows must all be as long as the header (a ragged row is
        # an error here, where a document's grid would pad it)
        delimiter = "\t" if fmt == "tsv" else sniff_delimiter(text)
        return table_from_grid(delimited_rows(text, delimiter, name, MAX_TABLE_CELLS), name, name=name), 1
    if fmt == "json":
        data = files.parse_json(text, name, TableError)
        if not (isinstance(data, dict) and "list_table_and_caption" in data):
            return table_from_json(data, source=name, name=name), 1
        grids = read_paper_json(data, name, CellBudget(name))
    else:
        grids = read_tables_text(text, name, fmt)
    if not 1 <= number <= len(grids):
        raise TableError(f"{name}: table {number} asked for, but the document holds {len(grids)}")
    return grids[number - 1].to_table(), len(grids)
