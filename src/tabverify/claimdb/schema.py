"""Database schemas without the databases: a Spider-style ``tables.json`` (BIRD's
``dev_tables.json``) plus the BIRD ``database_description/<db_id>/<table>.csv`` files, read into the
same :class:`tabverify.database.Schema` objects that :meth:`Database.schema` returns.

This is what NOT ENOUGH INFO detection needs (it never reads rows), and what a benchmark run uses
when the 1.5 GB of BIRD databases are not downloaded (``--schema-only``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tabverify.database.schema import (
    DESCRIPTION_FOLDER,
    ColumnSchema,
    ForeignKey,
    Schema,
    TableSchema,
    attach_descriptions,
)
from tabverify.errors import DatabaseError, DatasetError
from tabverify.files import read_json

TABLES_FILES = ("dev_tables.json", "tables.json", "train_tables.json")
"""The Spider/BIRD schema file names looked for in a schema folder, in this order."""

LAYOUT_HELP = (
    "a schema folder holds dev_tables.json (Spider/BIRD format: db_id, table_names_original, "
    "column_names_original, column_types, primary_keys, foreign_keys) and optionally "
    "database_description/<db_id>/<table>.csv"
)


def _entry_schema(entry: dict, descriptions: Path | None) -> Schema:
    db_id = str(entry["db_id"])
    tables = [str(t) for t in entry["table_names_original"]]
    columns = entry["column_names_original"]
    types = entry.get("column_types") or []
    primary: set[int] = set()
    for key in entry.get("primary_keys") or []:
        primary.update(key if isinstance(key, list) else [key])
    per_table: list[list[ColumnSchema]] = [[] for _ in tables]
    names: dict[int, tuple[int, str]] = {}
    for index, pair in enumerate(columns):
        table_index, name = int(pair[0]), str(pair[1])
        if table_index < 0 or table_index >= len(tables):
            continue  # the "*" pseudo-column
        names[index] = (table_index, name)
        kind = str(types[index]) if index < len(types) else ""
        per_table[table_index].append(ColumnSchema(name, kind, primary_key=index in primary))
    foreign: list[list[ForeignKey]] = [[] for _ in tables]
    for pair in entry.get("foreign_keys") or []:
        source, target = int(pair[0]), int(pair[1])
        if source in names and target in names:
            (s_table, s_name), (t_table, t_name) = names[source], names[target]
            foreign[s_table].append(ForeignKey((s_name,), tables[t_table], (t_name,)))
    result = [
        TableSchema(
            name,
            tuple(per_table[i]),
            primary_key=tuple(c.name for c in per_table[i] if c.primary_key),
            foreign_keys=tuple(foreign[i]),
            row_count=None,
        )
        for i, name in enumerate(tables)
    ]
    warnings: list[str] = []
    if descriptions is not None:
        result, warnings = attach_descriptions(result, descriptions / db_id, explicit=False)
    return Schema(target=db_id, dialect="sqlite", tables=tuple(result), warnings=tuple(warnings))


@dataclass
class SchemaSet:
    """The schemas of every database in a schema folder, by ``db_id``."""

    folder: Path
    schemas: dict[str, Schema] = field(default_factory=dict)

    def __contains__(self, db_id: str) -> bool:
        return db_id in self.schemas

    def get(self, db_id: str) -> Schema:
        """The schema of ``db_id`` (DatasetError naming the known databases when absent)."""
        try:
            return self.schemas[db_id]
        except KeyError:
            known = ", ".join(sorted(self.schemas)) or "none"
            raise DatasetError(f"unknown db_id {db_id!r}: {self.folder} describes {known}") from None


def load_schemas(folder: str | Path) -> SchemaSet:
    """Every schema of a Spider/BIRD schema folder (or of a ``tables.json`` file given directly)."""
    folder = Path(folder)
    if folder.is_file():
        tables_file, root = folder, folder.parent
    elif folder.is_dir():
        found = [folder / name for name in TABLES_FILES if (folder / name).is_file()]
        if not found:
            raise DatasetError(f"{folder}: no {' or '.join(TABLES_FILES)}; {LAYOUT_HELP}")
        tables_file, root = found[0], folder
    else:
        raise DatasetError(f"{folder}: no such schema folder; {LAYOUT_HELP}")
    data = read_json(tables_file, "Spider/BIRD tables.json", DatasetError)
    if not isinstance(data, list):
        raise DatasetError(f"{tables_file}: expected a JSON list of databases; {LAYOUT_HELP}")
    descriptions = root / DESCRIPTION_FOLDER
    result = SchemaSet(root)
    for number, entry in enumerate(data, start=1):
        try:
            schema = _entry_schema(entry, descriptions if descriptions.is_dir() else None)
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise DatasetError(
                f"{tables_file}: database {number} is not in the Spider/BIRD layout ({type(exc).__name__}: {exc}); "
                f"{LAYOUT_HELP}"
            ) from None
        except DatabaseError as exc:
            raise DatasetError(str(exc)) from None
        result.schemas[schema.target] = schema
    return result
