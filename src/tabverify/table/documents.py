"""Documents to grids: every table of an HTML page, a LaTeX source, a Markdown file, a CSV file or
an arXiVeri paper record, with captions; one entry point, :func:`read_tables`."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from tabverify.errors import TableError
from tabverify.table.grid import Grid
from tabverify.table.html import read_html_tables
from tabverify.table.latex import read_latex_tables
from tabverify.table.readers import read_text, sniff_delimiter

_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
DOCUMENT_FORMATS = ("html", "latex", "markdown", "csv", "tsv", "json")


def _md_cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [c.replace("\\|", "|").strip() for c in re.split(r"(?<!\\)\|", line)]


def read_markdown_tables(text: str, source: str = "markdown") -> list[Grid]:
    """Every pipe table of a Markdown text; rows above the ``|---|`` line are header rows, and a
    line right above the table starting with "Table" is taken as its caption.

    Raises:
        TableError: when no pipe table is found.
    """
    lines = text.splitlines()
    grids = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and "|" in lines[i] and _MD_SEPARATOR.match(lines[i + 1]):
            header = [_md_cells(lines[i])]
            j = i + 2
            body = []
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                body.append(_md_cells(lines[j]))
                j += 1
            caption = ""
            above = [ln.strip() for ln in lines[max(0, i - 2) : i] if ln.strip()]
            if above and re.match(r"^(\*\*)?table\b", above[-1], re.I):
                caption = above[-1].strip("* ")
            grids.append(Grid.from_rows(header + body, 1, caption, f"{source}#table{len(grids) + 1}"))
            i = j
        else:
            i += 1
    if not grids:
        raise TableError(f"{source}: no Markdown pipe table (a header line, then a |---| line) found")
    return grids


def read_delimited(text: str, delimiter: str, source: str = "csv") -> Grid:
    """A CSV/TSV text as one grid whose first row is the header."""
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in r)]
    if not rows:
        raise TableError(f"{source}: no rows found")
    return Grid.from_rows(rows, 1, "", source)


def read_paper_json(data: object, source: str = "json") -> list[Grid]:
    """The tables of a paper record in the arXiVeri layout:
    ``{"list_table_and_caption": [{"table": "<table>...", "caption": ...}, ...]}``."""
    if isinstance(data, dict) and "list_table_and_caption" in data:
        entries = data["list_table_and_caption"]
    elif isinstance(data, list) and all(isinstance(e, dict) and "table" in e for e in data):
        entries = data
    else:
        raise TableError(
            f'{source}: JSON is not a paper record; expected {{"list_table_and_caption": [{{"table": '
            '"<table>...", "caption": "..."}]}'
        )
    grids = []
    for number, entry in enumerate(entries, start=1):
        name = f"{source}#table{number}"
        try:
            grid = read_html_tables(str(entry.get("table", "")), name)[0]
        except TableError:
            continue  # an empty or figure-only entry: not a table
        grids.append(Grid(grid.cells, " ".join(str(entry.get("caption", "")).split()), name))
    if not grids:
        raise TableError(f"{source}: the paper record holds no readable table")
    return grids


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
    if any(_MD_SEPARATOR.match(line) for line in head.splitlines()):
        return "markdown"
    return "csv"


def read_tables(path: str | Path, fmt: str = "auto") -> list[Grid]:
    """Every table of a document file, as grids with captions.

    Args:
        path: an HTML page or fragment, a ``.tex`` file, a Markdown file, a CSV/TSV table, or an
            arXiVeri paper record (``.json``).
        fmt: ``auto`` (by extension, then content) or one of ``html, latex, markdown, csv, tsv, json``.

    Raises:
        TableError: the file is missing, empty, not text, or holds no table.
    """
    path = Path(path)
    text = read_text(path)
    if fmt == "auto":
        fmt = detect_format(path, text)
    source = path.name
    if fmt == "html":
        return read_html_tables(text, source)
    if fmt == "latex":
        return read_latex_tables(text, source)
    if fmt == "markdown":
        return read_markdown_tables(text, source)
    if fmt in ("csv", "tsv"):
        delimiter = "\t" if fmt == "tsv" else sniff_delimiter(text)
        return [read_delimited(text, delimiter, source)]
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TableError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
        return read_paper_json(data, source)
    raise TableError(f"unknown document format {fmt!r}; use one of auto, {', '.join(DOCUMENT_FORMATS)}")
