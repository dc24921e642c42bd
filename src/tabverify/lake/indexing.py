"""Building a lake: :func:`build_lake` encodes every table of a source once and stores it.

Resumable and incremental: tables are read (in worker processes with ``jobs > 1``), encoded in
batches by the main process, and each batch is committed to the lake's SQLite file in one
transaction with the fingerprint of its source. A run that is interrupted (Ctrl-C, a kill, an
encoder failure) keeps every committed batch; the next run skips every table whose fingerprint is
unchanged, encodes only new and changed tables, and drops tables whose source is gone. The FAISS
indexes are rebuilt from the stored vectors at the end of a run (and on open when stale). A lock
file keeps two index runs off one lake.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tabverify.errors import LakeError, ModelError, TabverifyError
from tabverify.lake.sketch import sketch_table
from tabverify.lake.sources import (
    SourceTable,
    TableRef,
    check_source,
    enumerate_source,
    fingerprint_content,
    load_captions,
    load_ref,
)
from tabverify.lake.store import (
    COLUMN_BITS,
    COLUMNS_INDEX,
    INDEX_STATE,
    LAKE_FILE,
    LOCK_FILE,
    META_FILE,
    TABLES_INDEX,
    build_faiss,
    check_encoder,
    compress_rows,
    connect_meta,
    index_state,
    keyword_text,
    read_lake_json,
    vector_bytes,
    write_lake_json,
)
from tabverify.table.model import Table

__all__ = ["IndexSummary", "build_lake"]

Progress = Callable[[str, int, int], None]

TEMPORARY_PREFIXES = (f".{LAKE_FILE}.", f".{TABLES_INDEX}.", f".{COLUMNS_INDEX}.", f".{INDEX_STATE}.")

_CHUNK = 16
"""Tables one worker task reads."""


@dataclass(frozen=True)
class IndexSummary:
    """What an index run did: tables added, re-encoded because their source changed, left as they
    were, removed because their source is gone or can no longer be read (the lake mirrors its
    source: an unreadable table is also listed as skipped, with the reason), and skipped (id,
    one-line reason)."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    tables: int = 0

    def line(self) -> str:
        """One line for people: ``12 added, 0 updated, 3 unchanged, 1 removed, 2 skipped (17 tables in the lake)``."""
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed, "
            f"{len(self.skipped)} skipped ({self.tables} tables in the lake)"
        )


@dataclass
class _Prepared:
    """One table read and made ready to store (everything but its vectors)."""

    id: str
    source: str
    fingerprint: str
    table: Table
    data: bytes
    stored_rows: int
    capped: bool
    keywords: str
    sketches: list[bytes]


def _prepare(items: Sequence[tuple[str, str, str, TableRef]]) -> list[_Prepared | tuple[str, str]]:
    """Read and prepare tables (in a worker process or in the main one): a table that cannot be
    read becomes ``(id, reason)``."""
    out: list[_Prepared | tuple[str, str]] = []
    for table_id, source, fingerprint, ref in items:
        try:
            table = load_ref(ref)
            if table.n_columns > (1 << COLUMN_BITS):
                raise LakeError(f"{table.n_columns} columns is more than a lake stores")
            data, stored, capped = compress_rows(table)
            sketches = [s.to_bytes() for s in sketch_table(table)]
            out.append(
                _Prepared(
                    table_id, source, fingerprint, table, data, stored, capped, keyword_text(table), sketches
                )
            )
        except (TabverifyError, OSError, ValueError, UnicodeError, RecursionError, MemoryError) as exc:
            out.append((table_id, _reason(exc)))
    return out


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _worker_init() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _prepared_stream(todo: Sequence[SourceTable], jobs: int) -> Iterator[_Prepared | tuple[str, str]]:
    """The tables of ``todo`` read and prepared, in order; ``jobs > 1``: in worker processes, a
    bounded number of chunks ahead of the consumer."""
    items = [(t.id, t.source, t.fingerprint, t.ref) for t in todo]
    chunks = [tuple(items[i : i + _CHUNK]) for i in range(0, len(items), _CHUNK)]
    if jobs <= 1 or len(chunks) <= 1 or any(t.ref.kind == "database" for t in todo):
        for chunk in chunks:
            yield from _prepare(chunk)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(
        jobs, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init
    )
    try:
        pending: deque[Any] = deque()
        remaining = iter(chunks)
        for chunk in remaining:
            pending.append(pool.submit(_prepare, chunk))
            if len(pending) >= jobs * 4:
                break
        while pending:
            results = pending.popleft().result()
            following = next(remaining, None)
            if following is not None:
                pending.append(pool.submit(_prepare, following))
            yield from results
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold the lake's lock file for the run (LakeError when another index run holds it)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    try:
        handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - held for the whole run
    except OSError as exc:
        raise LakeError(f"{path}: cannot write the lake ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise LakeError(
                f"{path}: another `tabverify lake index` run is writing this lake; wait for it to finish"
            ) from None
        yield
    finally:
        handle.close()


def _open_out(out: Path, encoder: Any) -> None:
    """Create the lake folder and its ``lake.json``, or check an existing lake's encoder."""
    if (out / LAKE_FILE).exists():
        check_encoder(out, read_lake_json(out), encoder)
        return
    if out.exists() and not out.is_dir():
        raise LakeError(f"--out {out}: is a file, not a lake folder; name a new folder")
    if out.is_dir() and any(entry.name != LOCK_FILE for entry in out.iterdir()):
        raise LakeError(f"--out {out}: a folder that is not a lake and is not empty; name a new folder")
    if not out.parent.is_dir():
        raise LakeError(f"--out {out}: the folder {out.parent} does not exist; create it first")
    try:
        out.mkdir(exist_ok=True)
        write_lake_json(out, encoder)
    except OSError as exc:
        raise LakeError(f"--out {out}: cannot create the lake ({exc.strerror or exc})") from None


def _check_embedding(embedding: Any, table: Table, dim: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    vector = np.asarray(embedding.table, dtype=np.float32).reshape(-1)
    columns = np.asarray(embedding.columns, dtype=np.float32)
    if vector.shape != (dim,) or columns.shape != (table.n_columns, dim):
        raise ModelError(
            f"encoder {name} returned vectors of shape {vector.shape} and {columns.shape} for a table of "
            f"{table.n_columns} columns; expected ({dim},) and ({table.n_columns}, {dim})"
        )
    if not (np.isfinite(vector).all() and np.isfinite(columns).all()):
        raise ModelError(f"encoder {name} returned NaN or infinite values for table {table.name!r}")
    return vector, columns


def _store(connection: Any, prepared: list[_Prepared], encoder: Any, dim: int, stale: Sequence[str]) -> None:
    """Encode ``prepared`` and commit it (and the removal of ``stale`` ids) in one transaction."""
    embeddings = encoder.encode([p.table for p in prepared]) if prepared else []
    if len(embeddings) != len(prepared):
        raise ModelError(
            f"encoder {encoder.name} returned {len(embeddings)} embeddings for {len(prepared)} tables"
        )
    checked = [
        _check_embedding(e, p.table, dim, encoder.name) for e, p in zip(embeddings, prepared, strict=True)
    ]
    with connection:  # one transaction: all of the batch or none of it
        connection.execute("BEGIN IMMEDIATE")
        for table_id in [*stale, *(p.id for p in prepared)]:
            _delete(connection, table_id)
        for p, (vector, columns) in zip(prepared, checked, strict=True):
            t = p.table
            cursor = connection.execute(
                "INSERT INTO tables (id, source, fingerprint, name, caption, header, n_rows, n_columns, "
                "stored_rows, capped, data, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (p.id, p.source, p.fingerprint, t.name or p.id, t.caption, _json(list(t.header)), t.n_rows,
                 t.n_columns, p.stored_rows, int(p.capped), p.data, vector_bytes(vector)),
            )  # fmt: skip
            rowid = cursor.lastrowid
            connection.executemany(
                "INSERT INTO columns (table_rowid, j, vector, sketch) VALUES (?, ?, ?, ?)",
                [(rowid, j, vector_bytes(columns[j]), p.sketches[j]) for j in range(t.n_columns)],
            )
            connection.execute(
                "INSERT INTO keywords (rowid, caption, headers, cells) VALUES (?, ?, ?, ?)",
                (rowid, t.caption, " ".join(t.header), p.keywords),
            )
        _bump(connection)


def _delete(connection: Any, table_id: str) -> None:
    row = connection.execute("SELECT rowid FROM tables WHERE id = ?", (table_id,)).fetchone()
    if row is None:
        return
    connection.execute("DELETE FROM columns WHERE table_rowid = ?", (row[0],))
    connection.execute("DELETE FROM keywords WHERE rowid = ?", (row[0],))
    connection.execute("DELETE FROM tables WHERE rowid = ?", (row[0],))


def _bump(connection: Any) -> None:
    connection.execute(
        "INSERT INTO state (key, value) VALUES ('generation', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (uuid.uuid4().hex,),
    )


def _remove_new_lake(out: Path, new_folder: bool) -> None:
    """Remove the files of a lake this run created and stored nothing in (and its folder, when the
    run created that too)."""
    for name in (
        LAKE_FILE,
        META_FILE,
        f"{META_FILE}-wal",
        f"{META_FILE}-shm",
        f"{META_FILE}-journal",
        LOCK_FILE,
    ):
        (out / name).unlink(missing_ok=True)
    if new_folder:
        try:
            out.rmdir()
        except OSError:
            pass


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def build_lake(
    source: str | Path,
    out: str | Path,
    encoder: Any,
    jobs: int = 1,
    captions: str | Path | dict[str, str] | None = None,
    progress: Progress | None = None,
    batch: int = 64,
) -> IndexSummary:
    """Index every table of ``source`` (a folder, a table file, a DuckDB/SQLite file or a
    ``postgresql://`` URL) into the lake at ``out`` with ``encoder`` (a name for
    :func:`~tabverify.lake.encoders.get_table_encoder` or an encoder object).

    ``jobs``: worker processes reading and parsing files while the main process encodes.
    ``captions``: a JSON file (or a dict) of captions by table file name. ``progress``:
    ``(stage, done, total)``. ``batch``: tables encoded and committed together.

    Re-running on the same source encodes only new and changed tables and removes tables whose
    source is gone; an interrupted run resumes where it stopped.

    Raises:
        LakeError: ``out`` is not a lake (or an empty/new folder), is of another encoder or
            version, or is being written by another run; the source cannot be listed, or is the
            lake itself.
    """
    from tabverify.lake.encoders import get_table_encoder

    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    encoder = get_table_encoder(encoder)
    out = Path(out).expanduser()
    caption_map = load_captions(captions) if isinstance(captions, str | Path) else dict(captions or {})
    check_source(source, out)  # before the lake is created: a mistyped SOURCE leaves no empty lake behind
    new_folder = not out.exists()
    created = not (out / LAKE_FILE).exists()
    _open_out(out, encoder)
    dim = int(encoder.dim)
    with _locked(out):
        for leftover in out.glob(".*.*"):  # temporary files of a run killed while writing
            if leftover.name != LOCK_FILE and leftover.name.startswith(TEMPORARY_PREFIXES):
                leftover.unlink(missing_ok=True)
        connection = connect_meta(out, readonly=False)
        try:
            try:
                listing = enumerate_source(source, caption_map, exclude=out)
            except LakeError:
                if created:  # a database that cannot be opened: no empty lake left behind
                    connection.close()
                    _remove_new_lake(out, new_folder)
                raise
            known = dict(connection.execute("SELECT id, fingerprint FROM tables").fetchall())
            found = {t.id for t in listing.tables}
            todo = [
                t
                for t in listing.tables
                if fingerprint_content(known.get(t.id, "")) != fingerprint_content(t.fingerprint)
            ]
            unchanged = len(listing.tables) - len(todo)
            todo_ids = {t.id for t in todo}
            for t in listing.tables:  # a touched file (same content): remember its new fingerprint
                if t.id in known and known[t.id] != t.fingerprint and t.id not in todo_ids:
                    connection.execute(
                        "UPDATE tables SET fingerprint = ? WHERE id = ?", (t.fingerprint, t.id)
                    )
            connection.commit()
            listed_skips = {s[0] for s in listing.skipped}
            gone = [i for i in known if i not in found and i not in listed_skips]
            unreadable = [s[0] for s in listing.skipped if s[0] in known]
            if gone or unreadable:
                with connection:
                    connection.execute("BEGIN IMMEDIATE")
                    for table_id in [*gone, *unreadable]:
                        _delete(connection, table_id)
                    _bump(connection)
            skipped = list(listing.skipped)
            removed = len(gone) + len(unreadable)
            added = updated = processed = 0
            pending: list[_Prepared] = []
            stale: list[str] = []
            total = len(todo)
            if progress is not None:
                progress("indexing", 0, total)
            for item in _prepared_stream(todo, jobs):
                processed += 1
                if isinstance(item, tuple):
                    skipped.append(item)
                    if item[0] in known:
                        stale.append(item[0])
                        removed += 1
                else:
                    pending.append(item)
                    if item.id in known:
                        updated += 1
                    else:
                        added += 1
                if len(pending) >= batch or (stale and len(stale) >= batch):
                    _store(connection, pending, encoder, dim, stale)
                    pending, stale = [], []
                    if progress is not None:
                        progress("indexing", processed, total)
            if pending or stale:
                _store(connection, pending, encoder, dim, stale)
            if progress is not None:
                progress("indexing", total, total)
            if index_state(out, connection) is None:  # something changed, or an earlier run was cut short
                build_faiss(out, connection, dim)
            count = connection.execute("SELECT count(*) FROM tables").fetchone()[0]
        finally:
            connection.close()
    return IndexSummary(added, updated, unchanged, removed, sorted(skipped), count)
