"""What a database holds: tables, columns, keys, row counts, and the BIRD-layout column
descriptions (``database_description/<table>.csv``) attached to the columns; and
:func:`render_schema`, a schema as bounded text for a language model's prompt."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tabverify.errors import DatabaseError
from tabverify.files import read_bytes
from tabverify.text.normalize import letter_words, one_line

DESCRIPTION_FOLDER = "database_description"
"""The folder of BIRD column descriptions, looked for next to a database file."""

MAX_DESCRIPTION_FILES = 1000


@dataclass(frozen=True)
class ColumnSchema:
    """One column: its name, declared type, nullability, primary-key flag and, when a description
    folder was read, its BIRD ``column_description`` and ``value_description``."""

    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    description: str | None = None
    value_description: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "nullable": self.nullable,
            "primary_key": self.primary_key,
            "description": self.description,
            "value_description": self.value_description,
        }


@dataclass(frozen=True)
class ForeignKey:
    """``columns`` of a table refer to ``ref_columns`` of ``ref_table``."""

    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "ref_table": self.ref_table,
            "ref_columns": list(self.ref_columns),
        }


@dataclass(frozen=True)
class TableSchema:
    """One table or view. ``row_count`` is None when counting took too long; ``row_count_exact`` is
    False when it is the planner's estimate (large PostgreSQL tables)."""

    name: str
    columns: tuple[ColumnSchema, ...]
    primary_key: tuple[str, ...] = ()
    foreign_keys: tuple[ForeignKey, ...] = ()
    row_count: int | None = None
    row_count_exact: bool = True
    kind: str = "table"

    def column(self, name: str) -> ColumnSchema:
        """The column called ``name`` (case-insensitive); DatabaseError naming the columns if none."""
        wanted = name.strip().casefold()
        for column in self.columns:
            if column.name.casefold() == wanted:
                return column
        names = ", ".join(c.name for c in self.columns)
        raise DatabaseError(f"no column named '{name}' in table {self.name}; its columns are: {names}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "columns": [c.to_dict() for c in self.columns],
            "primary_key": list(self.primary_key),
            "foreign_keys": [f.to_dict() for f in self.foreign_keys],
            "row_count": self.row_count,
            "row_count_exact": self.row_count_exact,
        }


@dataclass(frozen=True)
class Schema:
    """Every table and view of a database, in name order, with notes on descriptions not read."""

    target: str
    dialect: str
    tables: tuple[TableSchema, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def table_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables)

    def table(self, name: str) -> TableSchema:
        """The table called ``name`` (exact first, then case-insensitive); DatabaseError naming the
        tables if there is none."""
        for table in self.tables:
            if table.name == name:
                return table
        wanted = name.strip().casefold()
        for table in self.tables:
            if table.name.casefold() == wanted:
                return table
        names = ", ".join(self.table_names) or "(none)"
        raise DatabaseError(f"no table named '{name}' in {self.target}; its tables are: {names}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "dialect": self.dialect,
            "tables": [t.to_dict() for t in self.tables],
            "warnings": list(self.warnings),
        }


def decode_description(data: bytes) -> str:
    """BIRD description files come in UTF-8 (with or without BOM) and Windows-1252/Latin-1."""
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


def read_description_file(path: Path) -> dict[str, tuple[str | None, str | None]]:
    """Column name (normalised) -> (column_description, value_description) from one BIRD file."""
    text = decode_description(read_bytes(path, "column description CSV", DatabaseError))
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [_key(h) for h in next(reader)]
    except StopIteration:
        return {}
    except csv.Error as exc:
        raise DatabaseError(f"{path}: not a readable CSV file ({exc})") from None
    if "original_column_name" not in header:
        raise DatabaseError(
            f"{path}: no original_column_name column; a BIRD description file starts with "
            "original_column_name,column_name,column_description,data_format,value_description"
        )
    position = {name: i for i, name in enumerate(header)}

    def cell(row: list[str], name: str) -> str | None:
        i = position.get(name)
        if i is None or i >= len(row):
            return None
        value = " ".join(row[i].split())
        return value or None

    found: dict[str, tuple[str | None, str | None]] = {}
    try:
        for row in reader:
            original = cell(row, "original_column_name")
            if not original:
                continue
            description = cell(row, "column_description") or cell(row, "column_name")
            found[_key(original)] = (description, cell(row, "value_description"))
    except csv.Error as exc:
        raise DatabaseError(f"{path}: not a readable CSV file ({exc})") from None
    return found


def attach_descriptions(
    tables: list[TableSchema], folder: Path, explicit: bool
) -> tuple[list[TableSchema], list[str]]:
    """Tables with the descriptions of ``folder/<table>.csv`` attached to their columns.

    A file that cannot be read raises DatabaseError when the folder was named by the user
    (``explicit``) and is skipped with a warning when it was found next to the database."""
    warnings: list[str] = []
    if not folder.is_dir():
        if explicit:
            raise DatabaseError(
                f"descriptions {folder}: not a folder; name a folder of <table>.csv description files"
            )
        return tables, warnings
    files = {}
    for path in sorted(folder.iterdir())[:MAX_DESCRIPTION_FILES]:
        if path.suffix.lower() == ".csv" and path.is_file():
            files[_key(path.stem)] = path
    result = []
    for table in tables:
        path = files.get(_key(table.name))
        if path is None:
            result.append(table)
            continue
        try:
            described = read_description_file(path)
        except DatabaseError as exc:
            if explicit:
                raise
            warnings.append(str(exc))
            result.append(table)
            continue
        columns = []
        for column in table.columns:
            description, values = described.get(_key(column.name), (None, None))
            columns.append(replace(column, description=description, value_description=values))
        result.append(replace(table, columns=tuple(columns)))
    return result, warnings


# ---- schema text for prompts ----------------------------------------------------------------


def _identifier(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class _TableText:
    """A table's schema text, prepared once: the head line, per column its line start and its
    description and value description (whitespace normalised), and the foreign-key lines."""

    head: str
    columns: tuple[tuple[str, str, str], ...]
    keys: tuple[str, ...]

    @staticmethod
    def of(table: TableSchema) -> _TableText:
        rows = f"{table.row_count:,}" if table.row_count is not None else "unknown"
        if table.row_count is not None and not table.row_count_exact:
            rows = "~" + rows
        kind = "view" if table.kind == "view" else "table"
        head = f"{kind} {_identifier(table.name)} ({rows} rows)"
        if table.primary_key:
            head += "; primary key: " + ", ".join(_identifier(c) for c in table.primary_key)
        columns = []
        for column in table.columns:
            description = " ".join((column.description or "").split())
            if letter_words(description) == letter_words(column.name):
                description = ""  # BIRD repeats the column name when there is no description
            values = " ".join((column.value_description or "").split())
            if letter_words(values) == letter_words(description):
                values = ""  # BIRD often repeats the description as the value description
            columns.append(
                (f"  - {_identifier(column.name)} ({column.type or 'untyped'})", description, values)
            )
        keys = tuple(
            f"  foreign key ({', '.join(_identifier(c) for c in key.columns)}) -> "
            f"{_identifier(key.ref_table)}({', '.join(_identifier(c) for c in key.ref_columns)})"
            for key in table.foreign_keys
        )
        return _TableText(head, tuple(columns), keys)

    def render(self, description_chars: int, value_chars: int) -> str:
        lines = [self.head]
        for start, description, values in self.columns:
            line = start
            described = one_line(description, description_chars)
            if described:
                line += f": {described}"
            shown = one_line(values, value_chars)
            if shown:
                line += f"; values: {shown}"
            lines.append(line)
        lines.extend(self.keys)
        return "\n".join(lines)


_DESCRIPTION_LEVELS = (
    (400, 400), (300, 200), (200, 150), (150, 100), (100, 60), (70, 40), (50, 0), (30, 0), (0, 0)
)  # fmt: skip
"""Description and value-description lengths tried in turn until the schema fits its bound."""


def render_schema(schema: Schema, max_chars: int = 20_000) -> str:
    """The schema as a language model reads it in a prompt: tables with row counts and keys, columns
    with types and BIRD column/value descriptions, at most about ``max_chars`` characters. On big schemas the
    descriptions are cut shorter step by step, then dropped; tables that still do not fit are
    listed by name only."""
    prepared = [_TableText.of(t) for t in schema.tables]
    for description_chars, value_chars in _DESCRIPTION_LEVELS:
        text = "\n".join(t.render(description_chars, value_chars) for t in prepared)
        if len(text) <= max_chars:
            if (description_chars, value_chars) != _DESCRIPTION_LEVELS[0]:
                text += "\n(descriptions shortened to fit)"
            return text
    # the names of the tables matter more than the columns of one more table: reserve room for them
    all_names = ", ".join(_identifier(t.name) for t in schema.tables)
    budget = max_chars - min(len(all_names), max_chars // 2) - 120
    shown: list[str] = []
    used = 0
    for table in prepared:
        part = table.render(0, 0)
        if used + len(part) + 1 > budget:
            break
        shown.append(part)
        used += len(part) + 1
    rest = [t.name for t in schema.tables[len(shown) :]]
    names = one_line(", ".join(_identifier(n) for n in rest), max(200, max_chars // 2))
    shown.append(
        f"({len(rest)} more tables, columns not shown: {names}; see one with SELECT * FROM <table> LIMIT 3)"
    )
    return "\n".join(shown)
