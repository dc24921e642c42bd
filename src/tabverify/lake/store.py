"""The table lake on disk, and :class:`Lake`, its read side.

A lake is a folder:

- ``lake.json``: the format version, the encoder's name and version, the vector dimension and
  when the lake was created. A lake holds the vectors of one encoder: :meth:`Lake.open` and
  :func:`~tabverify.lake.indexing.build_lake` refuse another encoder or version, saying how to rebuild.
- ``meta.sqlite``: every table (id, source, fingerprint, name, caption, header, sizes, a
  compressed copy of at most :data:`MAX_STORED_ROWS` rows, its vector), every column (vector and
  MinHash sketch) and an FTS5 index over captions, headers and distinct cell values (BM25 keyword
  search). An index run commits one batch of tables per transaction, so an interrupted run loses
  at most the batch it was encoding.
- ``tables.faiss`` and ``columns.faiss`` (``faiss.IndexIDMap2`` over ``IndexFlatIP``: exact inner
  product over L2-normalised vectors) and ``faiss.json`` (what they were built from). The FAISS
  ids are the SQLite row ids of tables and columns. When the files are missing or stale on open,
  they are rebuilt from the stored vectors - nothing is re-encoded.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
import threading
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from tabverify.errors import LakeError, ModelError
from tabverify.lake.sketch import NUM_PERM, SKETCH_BYTES, ColumnSketch, SketchIndex
from tabverify.table.model import Table

__all__ = [
    "FORMAT_VERSION",
    "MAX_STORED_ROWS",
    "ColumnHit",
    "Hit",
    "Lake",
    "TableInfo",
    "rebuild_command",
]

FORMAT_VERSION = 2
"""The on-disk layout's version; a lake of another version is refused (rebuild it). Version 2: the
keyword index stems English words (FTS5 ``porter``), so ``win`` finds ``wins`` and ``entry`` finds
``entries``."""

MAX_STORED_ROWS = 20_000
"""Rows of a table a lake keeps a copy of (``TableInfo.n_rows`` is the full count)."""

MAX_KEYWORD_CHARS = 20_000
"""Text of one table (caption, headers, distinct cell values) that keyword search indexes."""

MAX_QUERY_TERMS = 64

LAKE_FILE = "lake.json"
META_FILE = "meta.sqlite"
TABLES_INDEX = "tables.faiss"
COLUMNS_INDEX = "columns.faiss"
INDEX_STATE = "faiss.json"
LOCK_FILE = ".lock"

PAGE_SIZE = 16384

COLUMN_BITS = 10
"""A column's FAISS id is ``table_rowid << COLUMN_BITS | j`` (tables have at most 1,000 columns)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    name TEXT NOT NULL,
    caption TEXT NOT NULL,
    header TEXT NOT NULL,
    n_rows INTEGER NOT NULL,
    n_columns INTEGER NOT NULL,
    stored_rows INTEGER NOT NULL,
    capped INTEGER NOT NULL,
    data BLOB NOT NULL,
    vector BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS columns (
    table_rowid INTEGER NOT NULL REFERENCES tables(rowid) ON DELETE CASCADE,
    j INTEGER NOT NULL,
    vector BLOB NOT NULL,
    sketch BLOB NOT NULL,
    PRIMARY KEY (table_rowid, j)
);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS keywords USING fts5(
    caption, headers, cells, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


@dataclass(frozen=True)
class TableInfo:
    """What a lake knows of a table without loading it (``n_rows``: all rows of the source table;
    ``capped``: the stored copy holds only the first :data:`MAX_STORED_ROWS`)."""

    id: str
    source: str
    name: str
    caption: str
    header: tuple[str, ...]
    n_rows: int
    n_columns: int
    capped: bool = False


@dataclass(frozen=True)
class Hit:
    """A table found by a search, with its score (inner product, or BM25 for keyword search: higher is better)."""

    id: str
    score: float


@dataclass(frozen=True)
class ColumnHit:
    """A column found by a search: table id, column index and score."""

    id: str
    column: int
    score: float


def rebuild_command(encoder: str, lake: str | Path, source: str = "SOURCE") -> str:
    """The command that builds ``lake`` again with ``encoder``."""
    return f"tabverify lake index {source} --encoder {encoder} --out {lake}"


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - the lake extra is part of the dev install
        raise ModelError(
            "the table lake needs the lake extra (faiss is not installed): pip install 'tabverify[lake]'"
        ) from exc
    return faiss


def vector_bytes(vector: np.ndarray) -> bytes:
    """A vector as stored: little-endian float32, or ``z`` and the zlib-compressed float32 when that
    is smaller by a tenth (sparse vectors, such as the lexical encoder's, shrink about six times)."""
    raw = np.asarray(vector, dtype="<f4").tobytes()
    packed = zlib.compress(raw, 1)
    return b"z" + packed if len(packed) + 1 < 0.9 * len(raw) else raw


def _vector_raw(blob: bytes, dim: int) -> bytes:
    if len(blob) == 4 * dim:
        return blob
    if blob[:1] == b"z":
        raw = zlib.decompress(blob[1:])
        if len(raw) == 4 * dim:
            return raw
    raise LakeError(
        f"a stored vector of {len(blob)} bytes does not hold {dim} float32 values; rebuild the lake"
    )


def _vectors(blobs: Iterable[bytes], dim: int) -> np.ndarray:
    data = b"".join(_vector_raw(blob, dim) for blob in blobs)
    if not data:
        return np.zeros((0, dim), dtype=np.float32)
    return np.frombuffer(data, dtype="<f4").astype(np.float32).reshape(-1, dim)


def compress_rows(table: Table, max_rows: int | None = None) -> tuple[bytes, int, bool]:
    """A table's first ``max_rows`` rows (default :data:`MAX_STORED_ROWS`) as zlib-compressed JSON,
    how many were kept, and whether rows were left out."""
    max_rows = MAX_STORED_ROWS if max_rows is None else max_rows
    rows = [[cell.text for cell in row] for row in table.rows[:max_rows]]
    data = zlib.compress(json.dumps(rows, ensure_ascii=False).encode("utf-8", "backslashreplace"), 6)
    return data, len(rows), table.n_rows > max_rows


def keyword_text(table: Table, limit: int = MAX_KEYWORD_CHARS) -> str:
    """Distinct cell values of ``table`` joined by spaces, at most ``limit`` characters."""
    seen: dict[str, None] = {}
    size = 0
    for row in table.rows:
        for cell in row:
            value = cell.text.strip()
            if value and value not in seen:
                seen[value] = None
                size += len(value) + 1
                if size >= limit:
                    return " ".join(seen)[:limit]
    return " ".join(seen)


_TERM = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    "a an the and or but of in on at to for from by with as than that this these those there it its is "
    "are was were be been being has have had do does did not no all any each more most less least only "
    "which who whom whose what when where how".split()
)
"""Words left out of keyword queries: they match nearly every table (slow, and BM25 gives them
almost no weight anyway). A query of stopwords alone keeps them."""


def keyword_query(text: str) -> str:
    """Free text as an FTS5 query: its words (stopwords left out), each quoted, joined by OR (no
    FTS5 syntax gets through)."""
    words = list(dict.fromkeys(t.casefold() for t in _TERM.findall(text)))
    terms = [t for t in words if t not in STOPWORDS] or words
    return " OR ".join(f'"{t}"' for t in terms[:MAX_QUERY_TERMS])


def read_lake_json(path: Path) -> dict[str, Any]:
    """The lake's ``lake.json`` (LakeError: not a lake, or corrupt)."""
    file = path / LAKE_FILE
    if not path.is_dir():
        if path.exists():
            raise LakeError(f"{path}: not a lake (a lake is a folder written by `tabverify lake index`)")
        raise LakeError(f"{path}: no such lake; build one with: {rebuild_command('NAME', path)}")
    if not file.is_file():
        raise LakeError(
            f"{path}: not a lake (no {LAKE_FILE}); build one with: {rebuild_command('NAME', path)}"
        )
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LakeError(
            f"{path}: a corrupt lake ({LAKE_FILE} is unreadable: {exc}); delete it and rebuild"
        ) from None
    keys = ("format", "encoder", "encoder_version", "dim")
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise LakeError(
            f"{path}: a corrupt lake ({LAKE_FILE} lacks {', '.join(keys)}); delete it and rebuild"
        )
    if not isinstance(data["dim"], int) or data["dim"] <= 0:
        raise LakeError(f"{path}: a corrupt lake (dim {data['dim']!r} in {LAKE_FILE}); delete it and rebuild")
    return data


def check_encoder(path: Path, meta: dict[str, Any], encoder: Any) -> None:
    """Refuse a lake written in another format, or by another encoder or encoder version."""
    if meta["format"] != FORMAT_VERSION:
        raise LakeError(
            f"{path}: lake format version {meta['format']} (this tabverify reads {FORMAT_VERSION}); "
            f"delete it and rebuild with: {rebuild_command(meta['encoder'], path)}"
        )
    if encoder is None:
        return
    name, version = str(encoder.name), str(getattr(encoder, "version", ""))
    if name != meta["encoder"] or (version and version != str(meta["encoder_version"])):
        given = f"{name} version {version}" if version else name
        raise LakeError(
            f"{path}: built with encoder {meta['encoder']} version {meta['encoder_version']}, not {given}; "
            f"rebuild with: {rebuild_command(name, path)} (or delete {path}, or use --encoder {meta['encoder']})"
        )
    if int(encoder.dim) and int(encoder.dim) != int(meta["dim"]):
        raise LakeError(
            f"{path}: vectors of dimension {meta['dim']}, but encoder {name} gives {encoder.dim}; "
            f"rebuild with: {rebuild_command(name, path)}"
        )


def write_lake_json(path: Path, encoder: Any) -> dict[str, Any]:
    """Write a new lake's ``lake.json`` (atomically)."""
    meta = {
        "format": FORMAT_VERSION,
        "encoder": str(encoder.name),
        "encoder_version": str(getattr(encoder, "version", "")),
        "dim": int(encoder.dim),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _atomic_write(path / LAKE_FILE, json.dumps(meta, indent=2).encode())
    return meta


def _atomic_write(target: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)  # as a plain write would create it, not mkstemp's 0600
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def connect_meta(path: Path, readonly: bool) -> sqlite3.Connection:
    """The lake's SQLite file (created, with its schema, when writing)."""
    file = path / META_FILE
    if readonly and not file.is_file():
        raise LakeError(f"{path}: a corrupt lake (no {META_FILE}); delete it and rebuild")
    try:
        if readonly:
            connection = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True, timeout=30,
                                         check_same_thread=False)  # fmt: skip
        else:
            connection = sqlite3.connect(file, timeout=30, check_same_thread=False)
            # a column row (vector and sketch) is about 2 KB: 16 KB pages hold seven, 4 KB pages one
            # (half of each page wasted); set before the first table, a no-op on an existing file
            connection.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            connection.executescript(SCHEMA)
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("SELECT count(*) FROM tables").fetchone()
        connection.execute("SELECT count(*) FROM columns").fetchone()
    except sqlite3.Error as exc:
        raise LakeError(f"{path}: a corrupt lake ({META_FILE}: {exc}); delete it and rebuild") from None
    return connection


def generation(connection: sqlite3.Connection) -> str:
    """The lake's content generation (changed by every committed batch)."""
    row = connection.execute("SELECT value FROM state WHERE key = 'generation'").fetchone()
    return row[0] if row else "0"


def build_faiss(path: Path, connection: sqlite3.Connection, dim: int, write: bool = True) -> tuple[Any, Any]:
    """FAISS indexes of the stored table and column vectors (written to the lake when ``write``
    and the folder is writable). Nothing is encoded: the vectors come from SQLite."""
    faiss = _faiss()
    tables = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
    columns = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
    state = generation(connection)
    rows = connection.execute("SELECT rowid, vector FROM tables ORDER BY rowid").fetchall()
    if rows:
        tables.add_with_ids(
            _vectors((r[1] for r in rows), dim), np.array([r[0] for r in rows], dtype=np.int64)
        )
    cursor = connection.execute("SELECT table_rowid, j, vector FROM columns ORDER BY table_rowid, j")
    while chunk := cursor.fetchmany(50_000):
        ids = np.array([(r[0] << COLUMN_BITS) | r[1] for r in chunk], dtype=np.int64)
        columns.add_with_ids(_vectors((r[2] for r in chunk), dim), ids)
    if write:
        try:
            for index, name in ((tables, TABLES_INDEX), (columns, COLUMNS_INDEX)):
                _atomic_write(path / name, faiss.serialize_index(index).tobytes())
            record = {"generation": state, "tables": int(tables.ntotal), "columns": int(columns.ntotal)}
            _atomic_write(path / INDEX_STATE, json.dumps(record).encode())
        except OSError:
            pass  # a read-only lake: the indexes live in memory for this session
    return tables, columns


def _read_index(file: Path, count: int, dim: int) -> Any | None:
    """A FAISS index file holding ``count`` vectors of ``dim``, or None (missing, unreadable, other)."""
    faiss = _faiss()
    try:
        index = faiss.deserialize_index(np.fromfile(file, dtype=np.uint8))
    except (OSError, ValueError, RuntimeError):
        return None
    return index if index.ntotal == count and index.d == dim else None


def index_state(path: Path, connection: sqlite3.Connection) -> dict[str, Any] | None:
    """``faiss.json`` when it records the lake's current content and both index files exist."""
    try:
        state = json.loads((path / INDEX_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(state, dict) or state.get("generation") != generation(connection):
        return None
    n_tables = connection.execute("SELECT count(*) FROM tables").fetchone()[0]
    n_columns = connection.execute("SELECT count(*) FROM columns").fetchone()[0]
    if state.get("tables") != n_tables or state.get("columns") != n_columns:
        return None
    if not (path / TABLES_INDEX).is_file() or not (path / COLUMNS_INDEX).is_file():
        return None
    return state


class Lake:
    """An open lake: table metadata, stored copies, vectors, sketches, and search.

    Open one with :meth:`Lake.open`. Reading is thread-safe (one SQLite connection behind a lock;
    FAISS searches are read-only)."""

    def __init__(
        self, path: Path, meta: dict[str, Any], connection: sqlite3.Connection, encoder: Any
    ) -> None:
        self.path = path
        self.meta = meta
        self.dim = int(meta["dim"])
        self._db = connection
        self._lock = threading.RLock()
        self._encoder = encoder
        rows = connection.execute("SELECT rowid, id FROM tables ORDER BY id").fetchall()
        self._ids = [r[1] for r in rows]
        self._rowid = {r[1]: r[0] for r in rows}
        self._id_of = {r[0]: r[1] for r in rows}
        # the table index is loaded now; the column index (larger) when a column search needs it
        self._state = index_state(path, connection)
        tables = None
        if self._state is not None:
            tables = _read_index(path / TABLES_INDEX, int(self._state["tables"]), self.dim)
        self._columns: Any = None
        if tables is None:
            tables, self._columns = build_faiss(path, connection, self.dim)
            self._state = None
        self._tables = tables
        self._matrix: np.ndarray | None = None
        self._join_index: SketchIndex | None = None

    @classmethod
    def open(cls, path: str | Path, encoder: Any = None) -> Lake:
        """Open the lake at ``path``. ``encoder`` (a name or an encoder object): checked against the
        encoder the lake was built with and used for text and table queries; None: the lake's own
        encoder, loaded by name when a query first needs it.

        Raises:
            LakeError: not a lake, a corrupt lake, or one built with another encoder or version
                (the message says how to rebuild).
        """
        path = Path(path).expanduser()
        meta = read_lake_json(path)
        if isinstance(encoder, str):
            if encoder.strip().lower().replace("_", "-") != str(meta["encoder"]).lower().replace("_", "-"):
                check_encoder(path, meta, _NamedEncoder(encoder))
            encoder = _get_encoder(encoder)
        check_encoder(path, meta, encoder)
        connection = connect_meta(path, readonly=True)
        try:
            return cls(path, meta, connection, encoder)
        except sqlite3.Error as exc:
            connection.close()
            raise LakeError(f"{path}: a corrupt lake ({META_FILE}: {exc}); delete it and rebuild") from None

    # ---- metadata --------------------------------------------------------------------------------

    @property
    def encoder(self) -> Any:
        """The lake's table encoder (loaded by name on first use when none was given to :meth:`open`)."""
        if self._encoder is None:
            self.check_encoder_name()
            encoder = _get_encoder(str(self.meta["encoder"]))
            check_encoder(self.path, self.meta, encoder)
            self._encoder = encoder
        return self._encoder

    def check_encoder_name(self) -> None:
        """Check, without loading a model, that :attr:`encoder` can load the lake's encoder by name.

        Raises:
            LakeError: the lake was built with a third-party encoder (``module:attribute``), which
                must be given to :meth:`open` (lake.json is data: reading it never imports code).
            UnknownEncoderError: no encoder has that name (another tabverify version's lake).
        """
        if self._encoder is not None:
            return
        from tabverify.lake.encoders import check_table_encoder_name

        name = str(self.meta["encoder"])
        if ":" in name and not name.strip().lower().startswith("sentence:"):
            raise LakeError(
                f"{self.path}: built with the third-party encoder {name!r}, which a lake does not import "
                "by itself; open it with that encoder (Lake.open(path, encoder=...))"
            )
        check_table_encoder_name(name)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, table_id: object) -> bool:
        return table_id in self._rowid

    def __repr__(self) -> str:
        return f"<Lake {self.path} ({len(self)} tables, {self.meta['encoder']})>"

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> Lake:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ids(self) -> list[str]:
        """Every table id, sorted."""
        return list(self._ids)

    def _row(self, table_id: str) -> int:
        try:
            return self._rowid[table_id]
        except KeyError:
            raise LakeError(f"{self.path}: no table {table_id!r} in the lake") from None

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def info(self, table_id: str) -> TableInfo:
        """What the lake knows of table ``table_id`` (LakeError when it holds no such table)."""
        rowid = self._row(table_id)
        (source, name, caption, header, n_rows, n_columns, capped), = self._fetch(
            "SELECT source, name, caption, header, n_rows, n_columns, capped FROM tables WHERE rowid = ?", (rowid,)
        )  # fmt: skip
        return TableInfo(
            table_id, source, name, caption, tuple(json.loads(header)), n_rows, n_columns, bool(capped)
        )

    def rows(self, table_id: str) -> tuple[str, tuple[str, ...], list[list[str]]]:
        """Caption, header and the cell texts of the stored rows of table ``table_id``, without
        parsing quantities (a fraction of :meth:`load`'s cost; LakeError when it holds no such table
        or its copy is corrupt)."""
        rowid = self._row(table_id)
        (caption, header, data), = self._fetch(
            "SELECT caption, header, data FROM tables WHERE rowid = ?", (rowid,)
        )  # fmt: skip
        try:
            rows = json.loads(zlib.decompress(data).decode("utf-8"))
            names = json.loads(header)
        except (zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LakeError(
                f"{self.path}: the stored copy of {table_id!r} is corrupt ({exc}); rebuild the lake"
            ) from None
        if not isinstance(rows, list) or not isinstance(names, list):
            raise LakeError(f"{self.path}: the stored copy of {table_id!r} is corrupt; rebuild the lake")
        cells = [[str(value) for value in row] for row in rows if isinstance(row, list)]
        return str(caption), tuple(str(name) for name in names), cells

    def fingerprints(self) -> dict[str, str]:
        """Table id -> the fingerprint of its source when it was indexed."""
        return dict(self._fetch("SELECT id, fingerprint FROM tables", ()))

    def load(self, table_id: str) -> Table:
        """The stored copy of table ``table_id`` (its first :data:`MAX_STORED_ROWS` rows)."""
        rowid = self._row(table_id)
        (name, caption, header, data), = self._fetch(
            "SELECT name, caption, header, data FROM tables WHERE rowid = ?", (rowid,)
        )  # fmt: skip
        try:
            rows = json.loads(zlib.decompress(data).decode("utf-8"))
        except (zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LakeError(
                f"{self.path}: the stored copy of {table_id!r} is corrupt ({exc}); rebuild the lake"
            ) from None
        return Table.from_rows(json.loads(header), rows, caption=caption, name=name)

    def table_vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The table vectors of ``ids``, in order: ``(len(ids), dim)``."""
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        rowids = [self._row(i) for i in ids]
        return np.vstack([self._tables.reconstruct(int(r)) for r in rowids]).astype(np.float32)

    def column_vectors(self, table_id: str) -> np.ndarray:
        """The column vectors of table ``table_id``: ``(n_columns, dim)``."""
        rowid = self._row(table_id)
        rows = self._fetch("SELECT vector FROM columns WHERE table_rowid = ? ORDER BY j", (rowid,))
        return _vectors((r[0] for r in rows), self.dim)

    def sketches(self, table_id: str) -> list[ColumnSketch]:
        """The MinHash sketches of the columns of table ``table_id``, in column order."""
        rowid = self._row(table_id)
        rows = self._fetch("SELECT sketch FROM columns WHERE table_rowid = ? ORDER BY j", (rowid,))
        return [ColumnSketch.from_bytes(r[0]) for r in rows]

    def join_index(self) -> SketchIndex:
        """Every column's sketch, keyed by ``(table id, column index)``, for containment queries
        (read once per opened lake: about 0.9 s and 60 MB for the 104,942 columns of all TabFact
        tables)."""
        with self._lock:
            if self._join_index is None:
                rows = self._db.execute("SELECT table_rowid, j, sketch FROM columns").fetchall()
                try:
                    blob = b"".join(r[2] for r in rows)
                    keys = [(self._id_of[r[0]], r[1]) for r in rows]
                except (TypeError, KeyError):
                    blob, keys = b"", []
                if len(blob) != len(rows) * SKETCH_BYTES:
                    raise LakeError(f"{self.path}: a stored column sketch is corrupt; rebuild the lake")
                packed = np.frombuffer(blob, dtype="<u8").reshape(len(rows), 1 + NUM_PERM)
                self._join_index = SketchIndex(keys, packed[:, 1:], packed[:, 0].astype(np.int64))
            return self._join_index

    # ---- search ----------------------------------------------------------------------------------

    def _column_index(self) -> Any:
        with self._lock:
            if self._columns is None:
                if self._state is not None:
                    self._columns = _read_index(
                        self.path / COLUMNS_INDEX, int(self._state["columns"]), self.dim
                    )
                if self._columns is None:
                    self._tables, self._columns = build_faiss(self.path, self._db, self.dim)
                    self._matrix = None
            return self._columns

    def _query_vector(self, vector: np.ndarray) -> np.ndarray:
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        if query.shape[1] != self.dim:
            raise LakeError(
                f"a query vector of dimension {query.shape[1]}; this lake's vectors have {self.dim}"
            )
        return np.ascontiguousarray(query)

    def _all_vectors(self) -> np.ndarray:
        if self._matrix is None:
            rowids = np.array([self._rowid[i] for i in self._ids], dtype=np.int64)
            self._matrix = (
                np.vstack([self._tables.reconstruct(int(r)) for r in rowids])
                if len(rowids)
                else np.zeros((0, self.dim), np.float32)
            )
        return self._matrix

    def search_vector(
        self, vector: np.ndarray, k: int = 10, allow: Iterable[str] | None = None, exclude: Iterable[str] = ()
    ) -> list[Hit]:
        """The ``k`` tables whose vectors have the largest inner product with ``vector`` (cosine,
        the vectors being normalised), best first; ``allow``: only these ids; ``exclude``: never these."""
        query = self._query_vector(vector)
        excluded = set(exclude)
        if k <= 0 or not self._ids:
            return []
        if allow is not None:
            wanted = [i for i in dict.fromkeys(allow) if i in self._rowid and i not in excluded]
            if not wanted:
                return []
            position = {table_id: n for n, table_id in enumerate(self._ids)}
            matrix = self._all_vectors()[[position[i] for i in wanted]]
            scores = matrix @ query[0]
            order = np.argsort(-scores, kind="stable")[:k]
            return [Hit(wanted[n], float(scores[n])) for n in order]
        fetch = min(len(self._ids), k + len(excluded))
        scores, rowids = self._tables.search(query, fetch)
        hits = [
            Hit(self._id_of[int(r)], float(s))
            for s, r in zip(scores[0], rowids[0], strict=True)
            if r >= 0 and self._id_of.get(int(r)) is not None and self._id_of[int(r)] not in excluded
        ]
        return hits[:k]

    def search_text(self, query: str, k: int = 10) -> list[Hit]:
        """Tables for a text query, embedded by the lake's encoder (ModelError when it has no text side)."""
        vector = np.asarray(self.encoder.encode_text([query]), dtype=np.float32)[0]
        return self.search_vector(vector, k)

    def search_table(self, table: Table, k: int = 10, exclude: Iterable[str] = ()) -> list[Hit]:
        """Tables whose vectors are nearest ``table``'s (encoded by the lake's encoder)."""
        vector = self.encoder.encode([table])[0].table
        return self.search_vector(vector, k, exclude=exclude)

    def search_columns(
        self, vector: np.ndarray, k: int = 10, exclude_tables: Iterable[str] = ()
    ) -> list[ColumnHit]:
        """The ``k`` columns nearest ``vector`` (inner product), best first, leaving out the columns
        of ``exclude_tables``."""
        query = self._query_vector(vector)
        excluded = {self._rowid[i] for i in exclude_tables if i in self._rowid}
        columns = self._column_index()
        total = int(columns.ntotal)
        if k <= 0 or total == 0:
            return []
        fetch = min(total, k * 2 + 16)
        while True:
            scores, ids = columns.search(query, fetch)
            hits = []
            for score, column_id in zip(scores[0], ids[0], strict=True):
                if column_id < 0:
                    continue
                rowid, j = int(column_id) >> COLUMN_BITS, int(column_id) & ((1 << COLUMN_BITS) - 1)
                if rowid in excluded or rowid not in self._id_of:
                    continue
                hits.append(ColumnHit(self._id_of[rowid], j, float(score)))
                if len(hits) == k:
                    return hits
            if fetch >= total:
                return hits
            fetch = min(total, fetch * 4)

    def search_keywords(self, text: str, k: int = 10) -> list[Hit]:
        """Tables by SQLite FTS5 BM25 over captions, headers and cell values (score: -bm25, higher is
        better); any word of ``text`` may match, and words match their inflected forms (the index and
        the query are stemmed by FTS5's ``porter`` tokenizer: ``entry`` finds ``entries``)."""
        query = keyword_query(text)
        if not query or k <= 0:
            return []
        try:
            rows = self._fetch(  # bm25 computed once per match (half the time of ORDER BY bm25(...))
                "SELECT rowid, -score FROM (SELECT rowid, bm25(keywords, 2.0, 2.0, 1.0) AS score FROM keywords "
                "WHERE keywords MATCH ?) ORDER BY score, rowid LIMIT ?",
                (query, int(k)),
            )
        except sqlite3.Error as exc:
            raise LakeError(f"{self.path}: keyword search failed ({exc})") from None
        return [Hit(self._id_of[r[0]], float(r[1])) for r in rows if r[0] in self._id_of]


class _NamedEncoder:
    """Stands for an encoder by name only (to check a name before loading a model)."""

    def __init__(self, name: str) -> None:
        self.name, self.version, self.dim = name, "", 0


def _get_encoder(name: str) -> Any:
    from tabverify.lake.encoders import get_table_encoder

    return get_table_encoder(name)


def search_record(
    lake: Lake, hits: Sequence[Hit], *, source: str, query: str | None, table: str | None, mode: str
) -> dict[str, Any]:
    """The JSON record of a lake search: ``tabverify lake search --json`` and the web API's
    ``POST /api/lakes/{name}/search`` print this. ``source`` names the lake (the CLI's path, the
    server's configured name); ``query`` or ``table`` is what was searched for; ``mode`` is
    ``vector`` or ``keywords``. Each hit carries its rank, id, score, caption and size."""
    rows = []
    for rank, hit in enumerate(hits, start=1):
        info = lake.info(hit.id)
        rows.append({
            "rank": rank,
            "id": hit.id,
            "score": round(float(hit.score), 6),
            "caption": info.caption,
            "n_rows": info.n_rows,
            "n_columns": info.n_columns,
        })  # fmt: skip
    return {"lake": source, "encoder": lake.meta["encoder"], "query": query, "table": table, "mode": mode,
            "hits": rows}  # fmt: skip
