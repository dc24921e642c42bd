"""Table encoders: tables in, table/column/row vectors out (TRL-Bench's three granularities).

The protocol is MTEB-style, small enough for any encoder to meet: a ``name``, a ``dim``, a
``version`` and two batched methods,

- ``encode(tables, rows=False) -> list[TableEmbedding]``: for each table its table vector
  ``(dim,)``, its column vectors ``(n_columns, dim)`` and, when ``rows`` is true, its row vectors
  ``(n_rows, dim)``; every vector L2-normalised (a column or row with no content may be a zero
  vector);
- ``encode_text(texts) -> array (len(texts), dim)``: query texts in the same space as the table
  vectors (what ``lake search --query`` and claim retrieval embed); encoders without a text side
  raise :class:`~tabverify.errors.ModelError`.

Encoders are frozen: the same table gives the same vectors every time, whatever the batch, and
nothing trains them during an evaluation. (A self-supervised per-table encoder fits on the rows of
the tables it is given, unlabelled, before it encodes them; that is part of encoding.) ``name``
and ``version`` are recorded in a lake, which refuses vectors of another encoder or version.

A third-party encoder needs no subclassing::

    import numpy as np
    from tabverify.lake.encoders import TableEmbedding, column_text, table_text, row_text

    class MyEncoder:
        name, dim, version = "my-encoder", 384, "1"

        def __init__(self, model):          # e.g. a SentenceTransformer
            self._model = model

        def _embed(self, texts):
            return np.asarray(self._model.encode(list(texts), normalize_embeddings=True), np.float32)

        def encode(self, tables, rows=False):
            out = []
            for t in tables:
                columns = self._embed([column_text(t, j) for j in range(t.n_columns)])
                out.append(TableEmbedding(
                    table=self._embed([table_text(t)])[0],
                    columns=columns.reshape(t.n_columns, self.dim),
                    rows=self._embed([row_text(t, i) for i in range(t.n_rows)]) if rows else None))
            return out

        def encode_text(self, texts):
            return self._embed(texts)

    # tabverify lake index DIR --encoder my_package:MyEncoder ... or, in Python:
    # build_lake(source, out, encoder=MyEncoder(model)); run_suite("linkage", MyEncoder(model))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from tabverify.table.model import Table

__all__ = [
    "MAX_COLUMN_VALUES",
    "TableEmbedding",
    "TableEncoder",
    "column_text",
    "column_values",
    "normalize_rows",
    "row_text",
    "table_text",
]

MAX_COLUMN_VALUES = 20
"""Distinct values of a column that its text shows (the first ones, in table order)."""

MAX_TEXT_CHARS = 2000
"""Longest text built for one table, column or row (longer ones are cut: encoders truncate anyway)."""


@dataclass(frozen=True)
class TableEmbedding:
    """One table's vectors: ``table`` (dim,), ``columns`` (n_columns, dim) and ``rows``
    (n_rows, dim), or None when rows were not asked for or the encoder has no row side."""

    table: np.ndarray
    columns: np.ndarray
    rows: np.ndarray | None = None


class TableEncoder(Protocol):
    """Tables to vectors at three granularities (see the module docstring for the contract)."""

    name: str
    dim: int
    version: str

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]: ...

    def encode_text(self, texts: Sequence[str]) -> np.ndarray: ...


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS]


def column_values(table: Table, j: int, limit: int = MAX_COLUMN_VALUES) -> list[str]:
    """The first ``limit`` distinct non-empty cell texts of column ``j``, in table order."""
    seen: dict[str, None] = {}
    for row in table.rows:
        text = row[j].text.strip()
        if text and text not in seen:
            seen[text] = None
            if len(seen) >= limit:
                break
    return list(seen)


def column_text(table: Table, j: int, limit: int = MAX_COLUMN_VALUES) -> str:
    """A column as text: ``"header: v1, v2, ..."`` (its first distinct values)."""
    return _cut(f"{table.header[j]}: {', '.join(column_values(table, j, limit))}")


def row_text(table: Table, i: int) -> str:
    """A row as text: ``"h1: v1; h2: v2; ..."`` (empty cells left out)."""
    row = table.rows[i]
    return _cut("; ".join(f"{h}: {c.text}" for h, c in zip(table.header, row, strict=True) if c.text.strip()))


def table_text(table: Table) -> str:
    """A table as text: its caption, then its headers (``"caption. h1, h2, ..."``)."""
    headers = ", ".join(h for h in table.header if h)
    return _cut(f"{table.caption}. {headers}" if table.caption else headers)


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as float32 with each row L2-normalised (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
