"""Where a lake's tables come from: a folder of table files or a database.

:func:`enumerate_source` lists the tables of a SOURCE without loading them: each is a
:class:`SourceTable` with an id (the file's path relative to the folder, ``/``-separated, or the
database table's name), a fingerprint (file size, modification time and a hash of the content and
caption; for a database table a hash of its columns and its first rows) and a :class:`TableRef`
that :func:`load_ref` turns into a :class:`~tabverify.table.model.Table` (picklable, so worker
processes can load tables in parallel). A file that cannot be a table (a symlink, a device, a
file over the size limit) is recorded as skipped with a one-line reason; it never stops the run.

Folders: ``.csv``, ``.tsv``, ``.json``, TabFact ``.html.csv`` (read by
:func:`tabverify.table.readers.load_table`) and ``.parquet`` (read through DuckDB's
``read_parquet``), found recursively, in sorted order; hidden files and folders are left out.
Databases: anything :func:`tabverify.database.connect` opens (a DuckDB or SQLite file, a
``postgresql://`` URL); every table is read through the safe read-only layer, rows capped.

Captions: a JSON file ``{table file name: caption or [caption, url]}`` (the shape of TabFact's
``data/table_to_page.json``), applied by file name (or by database table name).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabverify import files
from tabverify.errors import DatabaseError, LakeError, TableError, TabverifyError
from tabverify.table.model import Table
from tabverify.table.readers import MAX_TABLE_CELLS, MAX_TABLE_COLUMNS

__all__ = [
    "MAX_DB_ROWS",
    "MAX_PARQUET_BYTES",
    "SourceTable",
    "TableRef",
    "check_source",
    "enumerate_source",
    "load_captions",
    "load_ref",
]

TABLE_SUFFIXES = (".html.csv", ".csv", ".tsv", ".json", ".parquet", ".pq")
"""File names a folder source reads as tables (other files are not tables and are passed over)."""

MAX_PARQUET_BYTES = 2 * 1024**3
"""The largest Parquet file read (its rows are capped anyway: DuckDB reads only what it needs)."""

MAX_DB_ROWS = 20_000
"""Rows read from one database or Parquet table (a lake stores at most this many of a table)."""

MAX_SOURCE_TABLES = 1_000_000
"""The most tables one source may list."""

MAX_CAPTION_CHARS = 2_000
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class TableRef:
    """How to load one table: ``kind`` is ``file``, ``parquet`` or ``database``; ``location`` the
    file path or the database target; ``table`` the database table name."""

    kind: str
    location: str
    id: str
    caption: str = ""
    table: str = ""


@dataclass(frozen=True)
class SourceTable:
    """One table of a source: its id, its fingerprint, where it came from (for people) and how to load it."""

    id: str
    fingerprint: str
    source: str
    ref: TableRef = field(repr=False)

    def load(self) -> Table:
        """The table (TableError / DatabaseError when it cannot be read)."""
        return load_ref(self.ref)


@dataclass
class Enumeration:
    """What :func:`enumerate_source` found: the tables, and the entries it could not use."""

    tables: list[SourceTable]
    skipped: list[tuple[str, str]]
    kind: str = "folder"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _cut_caption(text: str) -> str:
    text = _one_line(text)
    return text[:MAX_CAPTION_CHARS]


def load_captions(path: str | Path) -> dict[str, str]:
    """Captions by table file name from a JSON object ``{name: caption or [caption, url, ...]}``.

    Raises:
        LakeError: the file is missing, not JSON, or not an object of strings / lists.
    """
    data = files.read_json(path, "captions file", LakeError)
    if not isinstance(data, dict):
        raise LakeError(
            f"{path}: a captions file is a JSON object {{table file name: caption}}, not {type(data).__name__}"
        )
    captions: dict[str, str] = {}
    for name, value in data.items():
        if isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            captions[str(name)] = _cut_caption(value)
        elif value is not None and not isinstance(value, list):
            raise LakeError(
                f"{path}: the caption of {str(name)[:80]!r} is a {type(value).__name__}; "
                "give a string or [caption, url]"
            )
    return captions


def _is_table_file(name: str) -> bool:
    lower = name.lower()
    return lower.endswith(TABLE_SUFFIXES)


def _hash_file(path: Path, caption: str, size: int) -> str:
    """A hash of the file's content (all of it up to 50 MB; the first and last MB and the size
    beyond that) and its caption."""
    digest = hashlib.sha256()
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError("not a regular file")
        if size <= files.MAX_FILE_BYTES:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
        else:
            digest.update(handle.read(_HASH_CHUNK))
            handle.seek(max(0, size - _HASH_CHUNK))
            digest.update(handle.read(_HASH_CHUNK))
    digest.update(b"\x00caption\x00" + caption.encode("utf-8", "backslashreplace"))
    return digest.hexdigest()[:32]


def fingerprint_content(fingerprint: str) -> str:
    """The content part of a fingerprint (``size-mtime-hash`` -> ``hash``): a table whose file was
    only touched is unchanged."""
    return fingerprint.rsplit("-", 1)[-1]


def _walk(root: Path) -> Iterator[Path]:
    """Every non-hidden entry under ``root`` that looks like a table file, sorted, not following
    symlinked folders nor entering a lake folder (one holding ``lake.json`` and ``meta.sqlite``)."""
    stack = [root]
    found: list[Path] = []
    while stack:
        folder = stack.pop()
        if folder != root and (folder / "lake.json").is_file() and (folder / "meta.sqlite").is_file():
            continue  # another lake kept among the tables: its files are no tables
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif _is_table_file(entry.name):
                        found.append(Path(entry.path))
                        if len(found) > MAX_SOURCE_TABLES:
                            raise LakeError(
                                f"{root}: more than {MAX_SOURCE_TABLES:,} table files; index a smaller folder"
                            )
        except PermissionError:
            continue
    yield from sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _file_table(path: Path, root: Path, captions: dict[str, str]) -> SourceTable | tuple[str, str]:
    table_id = path.relative_to(root).as_posix() if path != root else path.name
    try:
        table_id.encode("utf-8")
    except UnicodeEncodeError:  # bytes the OS gave that are no UTF-8: no id can be stored for it
        shown = table_id.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return shown, "the file name is not valid UTF-8; rename the file to index it"
    try:
        info = path.lstat()
    except OSError as exc:
        return table_id, f"cannot read ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):
        return table_id, "a symbolic link (not followed)"
    if not stat.S_ISREG(info.st_mode):
        return table_id, "not a regular file (a device, FIFO or socket)"
    parquet = path.name.lower().endswith((".parquet", ".pq"))
    limit = MAX_PARQUET_BYTES if parquet else files.MAX_FILE_BYTES
    if info.st_size > limit:
        return table_id, f"{info.st_size:,} bytes is over the {limit:,}-byte limit"
    if info.st_size == 0:
        return table_id, "the file is empty"
    caption = captions.get(path.name, "")
    try:
        content = _hash_file(path, caption, info.st_size)
    except OSError as exc:
        return table_id, f"cannot read ({exc.strerror or exc})"
    fingerprint = f"{info.st_size}-{info.st_mtime_ns}-{content}"
    ref = TableRef("parquet" if parquet else "file", str(path), table_id, caption)
    return SourceTable(table_id, fingerprint, str(path), ref)


def enumerate_source(
    source: str | Path, captions: dict[str, str] | None = None, exclude: str | Path | None = None
) -> Enumeration:
    """The tables of ``source``: a folder (recursive), one table file, a DuckDB/SQLite file or a
    ``postgresql://`` URL. ``exclude``: a folder left out of a folder source (the lake itself,
    when it is written inside the source).

    Raises:
        LakeError: the source does not exist or is not something tables can be read from.
    """
    captions = captions or {}
    if isinstance(source, str) and source.lower().startswith(("postgresql://", "postgres://")):
        return _database_tables(source, captions)
    check_source(source)
    path = Path(source).expanduser()
    if path.is_dir():
        excluded = Path(exclude).resolve() if exclude is not None else None
        tables: list[SourceTable] = []
        skipped: list[tuple[str, str]] = []
        for file in _walk(path):
            # the folder, not the file: _walk does not follow symlinked folders, and resolving a
            # file that is a symlink loop raises
            folder = file.parent.resolve()
            if excluded is not None and (excluded == folder or excluded in folder.parents):
                continue
            found = _file_table(file, path, captions)
            if isinstance(found, SourceTable):
                tables.append(found)
            else:
                skipped.append(found)
        return Enumeration(tables, skipped, "folder")
    if _is_database_file(path):
        return _database_tables(str(path), captions)
    found = _file_table(path, path.parent, captions)
    if isinstance(found, SourceTable):
        return Enumeration([found], [], "file")
    return Enumeration([], [found], "file")


def _is_database_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError as exc:
        raise LakeError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return head.startswith(b"SQLite format 3\x00") or head[8:12] == b"DUCK"


def check_source(source: str | Path, lake: str | Path | None = None) -> None:
    """Refuse a SOURCE no table can come from, cheaply (nothing is hashed or loaded): a missing
    path, a device or FIFO, a file that is neither a table file nor a database, and (``lake``
    given) the lake's own folder or anything inside it, which holds no table, so indexing it would
    remove every table of the lake. A ``postgresql://`` URL passes (it is checked on connecting).

    Raises:
        LakeError: with what to give instead.
    """
    shown = str(source)
    if isinstance(source, str) and source.lower().startswith(("postgresql://", "postgres://")):
        return
    path = Path(source).expanduser()
    if not path.exists():
        raise LakeError(
            f"{shown}: no such file or folder; give a folder of tables, a database file or a postgresql:// URL"
        )
    if lake is not None:
        target, lake_folder = path.resolve(), Path(lake).expanduser().resolve()
        if target == lake_folder or lake_folder in target.parents:
            raise LakeError(
                f"{shown}: is the lake's --out folder {lake} (or inside it), not a source of tables; give "
                "the folder of tables (or the database) to index and a separate --out folder for the lake"
            )
    if path.is_dir():
        if (path / "lake.json").is_file() and (path / "meta.sqlite").is_file():
            raise LakeError(
                f"{shown}: is a lake, not a folder of tables; give the folder of tables it was built from"
            )
        return
    if not path.is_file():
        raise LakeError(f"{shown}: not a regular file or folder; give a folder of tables or a database file")
    if not _is_table_file(path.name) and not _is_database_file(path):
        raise LakeError(
            f"{shown}: not a folder, a table file (.csv .tsv .json .html.csv .parquet) or a DuckDB/SQLite database"
        )


# ---- databases -------------------------------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _cell_text(value: Any) -> str:
    """A database or Parquet value as cell text (None/NaN empty, whole floats without ``.0``)."""
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    text = str(value)
    return text if len(text) <= 10_000 else text[:10_000]


def _row_cap(n_columns: int) -> int:
    return max(1, min(MAX_DB_ROWS, MAX_TABLE_CELLS // max(n_columns, 1) - 1))


def _table_from_values(header: list[str], rows: list[tuple[Any, ...]] | tuple, ref: TableRef) -> Table:
    if not header:
        raise TableError(f"{ref.id}: the table has no columns")
    if len(header) > MAX_TABLE_COLUMNS:
        raise TableError(
            f"{ref.id}: {len(header):,} columns is more than the {MAX_TABLE_COLUMNS:,} a table may have"
        )
    texts = [[_cell_text(v) for v in row] for row in rows]
    return Table.from_rows([_cell_text(h) for h in header], texts, caption=ref.caption, name=ref.id)


def _database_tables(target: str, captions: dict[str, str]) -> Enumeration:
    from tabverify.database import connect

    try:
        database = connect(target)
    except DatabaseError as exc:
        raise LakeError(str(exc)) from None
    tables: list[SourceTable] = []
    skipped: list[tuple[str, str]] = []
    with database:
        try:
            schema = database.schema()
        except DatabaseError as exc:
            raise LakeError(str(exc)) from None
        for table in schema.tables:
            if table.kind != "table":
                continue
            caption = captions.get(table.name, "")
            ref = TableRef("database", target, table.name, caption, table.name)
            try:
                header, rows = _query_table(database, table.name, len(table.columns))
            except TabverifyError as exc:
                skipped.append((table.name, _one_line(str(exc))[:300]))
                continue
            digest = hashlib.sha256()
            digest.update(
                json.dumps([header, [[_cell_text(v) for v in row] for row in rows], caption]).encode()
            )
            fingerprint = f"{table.row_count or 0}-0-{digest.hexdigest()[:32]}"
            tables.append(SourceTable(table.name, fingerprint, f"{database.target} table {table.name}", ref))
    return Enumeration(tables, skipped, "database")


def _query_table(database: Any, name: str, n_columns: int) -> tuple[list[str], tuple]:
    if n_columns > MAX_TABLE_COLUMNS:
        raise TableError(f"{n_columns:,} columns is more than the {MAX_TABLE_COLUMNS:,} a table may have")
    cap = _row_cap(n_columns)
    result = database.query(
        f"SELECT * FROM {_quote(name)}", max_rows=cap, max_bytes=50_000_000, timeout_s=60.0
    )
    if not result.ok:
        raise DatabaseError(f"cannot read ({result.error})")
    return list(result.columns), result.rows


def _load_database(ref: TableRef) -> Table:
    from tabverify.database import connect

    with connect(ref.location) as database:
        table = database.table(ref.table)
        header, rows = _query_table(database, table.name, len(table.columns))
    return _table_from_values(header, rows, ref)


def _load_parquet(ref: TableRef) -> Table:
    import duckdb

    try:
        with open(ref.location, "rb") as handle:
            if handle.read(4) != b"PAR1":
                raise TableError(f"{ref.location}: not a Parquet file (it does not start with PAR1)")
        connection = duckdb.connect(
            config={
                "threads": 1,
                "memory_limit": "1024MB",
                "autoinstall_known_extensions": False,
                "autoload_known_extensions": False,
            }  # fmt: skip
        )
        try:
            relation = connection.execute("SELECT * FROM read_parquet(?) LIMIT 0", [ref.location])
            header = [d[0] for d in relation.description]
            cap = _row_cap(len(header))
            rows = connection.execute("SELECT * FROM read_parquet(?) LIMIT ?", [ref.location, cap]).fetchall()
        finally:
            connection.close()
    except duckdb.Error as exc:
        raise TableError(
            f"{ref.location}: not a readable Parquet file ({_one_line(str(exc).split('LINE 1:')[0])[:200]})"
        ) from None
    except OSError as exc:
        raise TableError(f"{ref.location}: cannot read ({exc.strerror or exc})") from None
    return _table_from_values(header, rows, ref)


def load_ref(ref: TableRef) -> Table:
    """Load the table ``ref`` names, its name the table id and its caption attached.

    Raises:
        TableError / DatabaseError: the table cannot be read (one line naming it).
    """
    if ref.kind == "file":
        from dataclasses import replace

        from tabverify.table.readers import load_table

        table = load_table(ref.location, caption=ref.caption)
        return replace(table, name=ref.id)
    if ref.kind == "parquet":
        return _load_parquet(ref)
    if ref.kind == "database":
        return _load_database(ref)
    raise ValueError(f"unknown table source kind {ref.kind!r}")
