"""Readers that turn files and objects into :class:`Table`: TabFact CSV, CSV/TSV, JSON, DataFrame."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from tabverify import files
from tabverify.errors import TableError
from tabverify.table.model import Table


def read_text(path: Path) -> str:
    """The text of a table file, with clear errors for missing, folder, special, empty, huge, binary
    or non-UTF-8 files."""
    text = files.read_text(path, "table file", TableError)
    if not text.strip():
        raise TableError(f"{path}: the file is empty; expected a header row and data rows")
    if "\x00" in text[:4096]:
        raise TableError(f"{path}: looks like a binary file (NUL bytes); expected a text table")
    return text


def _from_grid(grid: list[list[str]], source: str, caption: str, name: str) -> Table:
    grid = [row for row in grid if any(cell.strip() for cell in row)]
    if not grid:
        raise TableError(f"{source}: no rows found")
    header = grid[0]
    if len(header) < 1 or not any(h.strip() for h in header):
        raise TableError(f"{source}: the header row is empty")
    for number, row in enumerate(grid[1:], start=2):
        if len(row) != len(header):
            raise TableError(
                f"{source}: line {number} has {len(row)} fields but the header has {len(header)} "
                "(ragged rows); check the delimiter and quoting"
            )
    return Table.from_rows(header, grid[1:], caption=caption, name=name)


def read_tabfact_csv(path: str | Path, caption: str = "") -> Table:
    """Read a table in the TabFact release format: '#'-delimited, first line is the header."""
    path = Path(path)
    text = read_text(path)
    grid = [line.split("#") for line in text.splitlines()]
    return _from_grid(grid, str(path), caption, path.name)


def read_csv(path: str | Path, delimiter: str | None = None, caption: str = "") -> Table:
    """Read an ordinary CSV or TSV file (delimiter sniffed when not given)."""
    path = Path(path)
    text = read_text(path)
    if delimiter is None:
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else sniff_delimiter(text)
    grid = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    return _from_grid(grid, str(path), caption, path.name)


def sniff_delimiter(text: str) -> str:
    """The most likely delimiter of a CSV-like text (comma when unsure)."""
    sample = text[:20000]
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|#").delimiter
    except csv.Error:
        return ","


def read_json(path: str | Path, caption: str = "") -> Table:
    """Read JSON records (``[{"col": value, ...}, ...]``) or ``{"header": [...], "rows": [[...]]}``."""
    path = Path(path)
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TableError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    return table_from_json(data, source=str(path), caption=caption, name=path.name)


def table_from_json(data: Any, source: str = "json", caption: str = "", name: str = "") -> Table:
    """Build a table from parsed JSON: a list of records or a ``{"header", "rows"}`` object."""
    if isinstance(data, dict) and "header" in data and "rows" in data:
        caption = caption or str(data.get("caption", ""))
        return _from_grid(
            [list(map(str, data["header"]))] + [[_str(v) for v in r] for r in data["rows"]],
            source,
            caption,
            name,
        )
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        header: list[str] = []
        for record in data:
            for key in record:
                if key not in header:
                    header.append(key)
        return Table.from_rows(header, [[_str(r.get(h)) for h in header] for r in data], caption, name)
    raise TableError(
        f"{source}: expected a list of records [{{...}}, ...] or an object with 'header' and 'rows'"
    )


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def from_dataframe(frame: Any, caption: str = "", name: str = "") -> Table:
    """Build a table from a pandas DataFrame (column names become the header)."""
    header = [str(c) for c in frame.columns]
    rows = [[_str(v) if v == v else "" for v in row] for row in frame.itertuples(index=False, name=None)]
    return Table.from_rows(header, rows, caption=caption, name=name)


def load_table(source: str | Path | Any, caption: str = "", fmt: str = "auto") -> Table:
    """Load a table from a file path or a pandas DataFrame.

    Args:
        source: a path (``.csv``, ``.tsv``, ``.json``, or a TabFact ``.html.csv``) or a DataFrame.
        caption: the table's caption, used by the verifier as context.
        fmt: ``auto`` (by extension and content), ``tabfact``, ``csv``, ``tsv`` or ``json``.

    Raises:
        TableError: the file is missing, empty, binary, not UTF-8, ragged, or of an unknown format.
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
            raise TableError(f"{path}: unknown table format; use .csv, .tsv, .json or pass fmt=")
    if fmt == "tabfact":
        return read_tabfact_csv(path, caption)
    if fmt == "csv":
        return read_csv(path, caption=caption)
    if fmt == "tsv":
        return read_csv(path, delimiter="\t", caption=caption)
    if fmt == "json":
        return read_json(path, caption)
    raise TableError(f"unknown table format {fmt!r}; use auto, tabfact, csv, tsv or json")
