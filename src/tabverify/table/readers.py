"""Readers that turn files and objects into :class:`Table`: TabFact CSV, CSV/TSV, JSON, DataFrame.

Files are read through :mod:`tabverify.files` (regular files only, a byte cap, strict JSON with a
nesting cap). A table holds at most :data:`MAX_TABLE_COLUMNS` columns and :data:`MAX_TABLE_CELLS`
cells (header included), checked while reading, so a huge or hostile file is one clear
:class:`~tabverify.errors.TableError`. The first line is always the header: a header line whose
names are all empty is an error, never silently replaced by the first data row; blank data lines
are skipped.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tabverify import files
from tabverify.errors import TableError
from tabverify.table.model import Table

MAX_TABLE_COLUMNS = 1_000
"""The most columns a :class:`Table` reader accepts."""

MAX_TABLE_CELLS = 500_000
"""The most cells (rows x columns, header included) a :class:`Table` reader accepts."""


def read_text(path: Path) -> str:
    """The text of a table file, with clear errors for missing, folder, special, empty, huge, binary
    or non-UTF-8 files."""
    text = files.read_text(path, "table file", TableError)
    if not text.strip():
        raise TableError(f"{path}: the file is empty; expected a header row and data rows")
    if "\x00" in text[:4096]:
        raise TableError(f"{path}: looks like a binary file (NUL bytes); expected a text table")
    return text


def delimited_rows(text: str, delimiter: str, source: str, max_cells: int) -> list[list[str]]:
    """The rows of a CSV/TSV text as lists of fields, read lazily so that a file holding more than
    ``max_cells`` fields is refused before it is all in memory.

    Raises:
        TableError: more than ``max_cells`` fields, or a line the CSV reader rejects (a field longer
            than its 131,072-character limit - usually an unclosed quote - or a NUL byte).
    """
    rows: list[list[str]] = []
    cells = 0
    # newline="": lines end at \n, \r\n or a lone \r (old Mac files) alike
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    start = last_start = 1
    try:
        for row in reader:
            last_start, start = start, reader.line_num + 1
            cells += len(row)
            if cells > max_cells:
                raise TableError(
                    f"{source}: more than {max_cells:,} cells by line {reader.line_num}, the most "
                    "tabverify reads from one table file; pass a smaller table"
                )
            rows.append(row)
    except csv.Error as exc:
        reason = str(exc)
        if "field larger than field limit" in reason:
            reason = (
                f'a field longer than {csv.field_size_limit():,} characters - usually a quote (") that '
                "is never closed; check the quoting"
            )
        raise TableError(f"{source}: cannot read line {reader.line_num + 1} as CSV ({reason})") from None
    last = rows[-1] if rows else []
    if reader.line_num > last_start and last and any(ch in last[-1] for ch in "\r\n") and text.count('"') % 2:
        # the last row ran to the end of the text inside a quoted field
        raise TableError(
            f'{source}: unterminated quote (") starting at line {last_start}; close the quote or remove it'
        )
    return rows


def header_and_rows(grid: Iterable[list[str]], source: str) -> tuple[list[str], list[list[str]]]:
    """The header (the first line with any field; leading blank lines are skipped) and the data rows
    (blank lines skipped) of rows of fields.

    Raises:
        TableError: no rows, or a header line whose fields are all empty (``,,``): the data would
            otherwise be read with its first row as the header.
    """
    rows: Iterator[list[str]] = iter(grid)
    header: list[str] | None = None
    for row in rows:
        if len(row) > 1 or any(cell.strip() for cell in row):
            header = row
            break
    if header is None:
        raise TableError(f"{source}: no rows found")
    if not any(h.strip() for h in header):
        raise TableError(
            f"{source}: the header line has {len(header)} fields but no column names; the first line "
            "must name the columns (e.g. 'team,points'), add one above the data"
        )
    return header, [row for row in rows if any(cell.strip() for cell in row)]


def _check_size(columns: int, data_rows: int, source: str) -> None:
    if columns > MAX_TABLE_COLUMNS:
        raise TableError(
            f"{source}: {columns:,} columns, more than the {MAX_TABLE_COLUMNS:,} a table may have; "
            "check the delimiter, or pass fewer columns"
        )
    if (data_rows + 1) * columns > MAX_TABLE_CELLS:
        raise TableError(
            f"{source}: {data_rows + 1:,} rows of {columns} columns is more than the "
            f"{MAX_TABLE_CELLS:,} cells a table may have; pass a smaller table"
        )


def table_from_grid(
    grid: Iterable[list[str]], source: str, caption: str = "", name: str = "", json_rows: bool = False
) -> Table:
    """A table from rows of fields whose first non-blank row is the header (blank rows skipped).

    Raises:
        TableError: no rows, a header without names, a row longer or shorter than the header
            (``json_rows``: numbered as rows of a JSON ``"rows"`` list, else as lines of a file), or
            more than :data:`MAX_TABLE_CELLS` cells.
    """
    header, rows = header_and_rows(grid, source)
    _check_size(len(header), len(rows), source)
    for number, row in enumerate(rows, start=1 if json_rows else 2):
        if len(row) != len(header):
            if json_rows:
                raise TableError(
                    f'{source}: row {number} of "rows" has {len(row)} cells but "header" has {len(header)}; '
                    "make every row as long as the header"
                )
            raise TableError(
                f"{source}: line {number} has {len(row)} fields but the header has {len(header)} "
                "(ragged rows); check the delimiter and quoting"
            )
    return Table.from_rows(header, rows, caption=caption, name=name)


def read_tabfact_csv(path: str | Path, caption: str = "") -> Table:
    """Read a table in the TabFact release format: '#'-delimited, first line is the header.

    Raises:
        TableError: an unreadable, empty or ragged file, a header without names, or a table larger
            than :data:`MAX_TABLE_CELLS` cells.
    """
    path = Path(path)
    text = read_text(path)
    lines = text.splitlines()
    if len(lines) > MAX_TABLE_CELLS or text.count("#") > MAX_TABLE_CELLS:
        raise TableError(f"{path}: more than {MAX_TABLE_CELLS:,} cells, the most a table may have")
    return table_from_grid((line.split("#") for line in lines), str(path), caption, path.name)


def read_csv(path: str | Path, delimiter: str | None = None, caption: str = "") -> Table:
    """Read an ordinary CSV or TSV file (delimiter sniffed when not given); the first line is the header.

    Raises:
        TableError: an unreadable, empty or ragged file, a header without names, a line the CSV
            reader rejects, or a table larger than :data:`MAX_TABLE_CELLS` cells.
    """
    path = Path(path)
    text = read_text(path)
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else sniff_delimiter(text)
    grid = delimited_rows(text, delimiter, str(path), MAX_TABLE_CELLS)
    return table_from_grid(grid, str(path), caption, path.name)


def sniff_delimiter(text: str) -> str:
    """The most likely delimiter of a CSV-like text (comma when unsure)."""
    sample = text[:20000]
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|#").delimiter
    except csv.Error:
        return ","


def read_json(path: str | Path, caption: str = "") -> Table:
    """Read JSON records (``[{"col": value, ...}, ...]``) or ``{"header": [...], "rows": [[...]]}``.

    Raises:
        TableError: unreadable or invalid JSON (``NaN``/``Infinity`` and nesting deeper than
            :data:`tabverify.files.MAX_JSON_DEPTH` included), or JSON of another shape.
    """
    path = Path(path)
    data = files.parse_json(read_text(path), str(path), TableError)
    return table_from_json(data, source=str(path), caption=caption, name=path.name)


_SCALARS = (str, int, float, bool, type(None))


def table_from_json(data: Any, source: str = "json", caption: str = "", name: str = "") -> Table:
    """Build a table from parsed JSON: a list of records or a ``{"header", "rows"}`` object.

    Cells must be text, numbers, booleans or null (null is an empty cell).

    Raises:
        TableError: any other shape, a nested list or object as a cell, or a table larger than
            :data:`MAX_TABLE_CELLS` cells.
    """
    if isinstance(data, dict) and "header" in data and "rows" in data:
        header, rows = data["header"], data["rows"]
        if not isinstance(header, list) or not isinstance(rows, list):
            raise TableError(f'{source}: "header" and "rows" must be lists (["a", "b"] and [[1, 2], ...])')
        for number, row in enumerate(rows, start=1):
            if not isinstance(row, list):
                raise TableError(
                    f'{source}: row {number} of "rows" is {_kind(row)}, expected a list of cells'
                )
        caption = caption or _caption(data.get("caption"), source)
        _check_size(len(header), len(rows), source)
        return table_from_grid(
            [[_str(h, source, "header") for h in header]]
            + [[_str(v, source, f"row {i}") for v in r] for i, r in enumerate(rows, start=1)],
            source,
            caption,
            name,
            json_rows=True,
        )
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        columns: dict[str, None] = {}
        for record in data:
            columns.update(dict.fromkeys(record))
            if len(columns) > MAX_TABLE_COLUMNS:
                break
        header = list(columns)
        _check_size(len(header), len(data), source)
        return Table.from_rows(
            header,
            [[_str(r.get(h), source, f"record {i}") for h in header] for i, r in enumerate(data, start=1)],
            caption,
            name,
        )
    raise TableError(
        f"{source}: expected a list of records [{{...}}, ...] or an object with 'header' and 'rows'"
    )


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _caption(value: Any, source: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TableError(f'{source}: "caption" is {_kind(value)}, expected text')
    return value


def _str(value: Any, source: str = "table", where: str = "a cell") -> str:
    if value is None:
        return ""
    if not isinstance(value, _SCALARS):
        raise TableError(
            f"{source}: {where} holds {_kind(value)}; cells must be text, numbers, booleans or null"
        )
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def from_dataframe(frame: Any, caption: str = "", name: str = "") -> Table:
    """Build a table from a pandas DataFrame (column names become the header).

    Raises:
        TableError: a frame larger than :data:`MAX_TABLE_CELLS` cells or :data:`MAX_TABLE_COLUMNS` columns.
    """
    header = [str(c) for c in frame.columns]
    _check_size(len(header), len(frame), name or "DataFrame")
    rows = [[_frame_str(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    return Table.from_rows(header, rows, caption=caption, name=name)


def _frame_str(value: Any) -> str:
    try:
        if value is None or value != value:  # None, NaN, NaT: a missing value
            return ""
    except (TypeError, ValueError):  # pandas.NA and array-like cells have no truth value
        return "" if str(value) == "<NA>" else str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def load_table(source: str | Path | Any, caption: str = "", fmt: str = "auto") -> Table:
    """Load a table from a file path or a pandas DataFrame.

    Args:
        source: a path (``.csv``, ``.tsv``, ``.json``, or a TabFact ``.html.csv``) or a DataFrame.
        caption: the table's caption, used by the verifier as context.
        fmt: ``auto`` (by extension and content), ``tabfact``, ``csv``, ``tsv`` or ``json``.

    Raises:
        TableError: the file is missing, empty, binary, not UTF-8, ragged, too large, or of an
            unknown format.
    """
    if hasattr(source, "columns") and hasattr(source, "itertuples"):
        return from_dataframe(source, caption=caption)
    path = Path(source)
    if path.is_dir():
        raise TableError(f"{path}: is a folder, expected a table file")
    if fmt == "auto":
        name = path.name.lower()
        if name.endswith(".json"):
            fmt = "json"
        elif name.endswith((".tsv", ".tab")):
            fmt = "tsv"
        elif name.endswith(".html.csv"):
            fmt = "tabfact"
        elif name.endswith(".csv") or name.endswith(".txt"):
            text = read_text(path)
            first = text.splitlines()[0]
            fmt = (
                "tabfact"
                if first.count("#") > max(first.count(","), first.count(";"), first.count("\t"))
                else "csv"
            )
        else:
            raise TableError(
                f"{path}: unknown table format; use a .csv, .tsv, .json or TabFact .html.csv file"
            )
    if fmt == "tabfact":
        return read_tabfact_csv(path, caption)
    if fmt == "csv":
        return read_csv(path, caption=caption)
    if fmt == "tsv":
        return read_csv(path, delimiter="\t", caption=caption)
    if fmt == "json":
        return read_json(path, caption)
    raise TableError(f"unknown table format {fmt!r}; use auto, tabfact, csv, tsv or json")
