"""Value-overlap sketches of columns, for joinability: MinHash (datasketch) over a column's
distinct normalised values, with the distinct count, so that containment can be estimated.

A column ``Q`` joins a column ``X`` when much of ``Q``'s values appear in ``X``: the containment
``|Q & X| / |Q|``. MinHash estimates the Jaccard similarity ``J``; with the two set sizes,
``|Q & X| = J (|Q| + |X|) / (1 + J)``. :class:`SketchIndex` finds, among many columns, those whose
containment of a query column passes a threshold without comparing against each
(datasketch's LSH Ensemble, Zhu et al., VLDB 2016).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tabverify.errors import ModelError
from tabverify.table.model import Table

__all__ = ["NUM_PERM", "ColumnSketch", "SketchIndex", "normalize_value", "sketch_column", "sketch_table"]

NUM_PERM = 64
"""MinHash permutations per column: a Jaccard estimate's standard error is about 1/sqrt(64) = 0.125
at worst (J = 0.5), far less near 0 and 1, for 512 bytes a column."""

_SEED = 1
_SCHEME = "affine32"  # datasketch 2.0's scheme, fixed so stored sketches keep their meaning
_SPACE = re.compile(r"\s+")


def _datasketch():
    try:
        import datasketch
    except ImportError as exc:  # pragma: no cover - the lake extra is part of the dev install
        raise ModelError(
            "value-overlap sketches need the lake extra (datasketch is not installed): "
            "pip install 'tabverify[lake]'"
        ) from exc
    return datasketch


def normalize_value(text: str) -> str:
    """A cell's text as compared for overlap: NFKC, case-folded, spaces collapsed, trimmed."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


@dataclass(frozen=True, eq=False)
class ColumnSketch:
    """A column's MinHash signature (``NUM_PERM`` unsigned 64-bit values) and its distinct count."""

    hashvalues: np.ndarray
    size: int

    def to_bytes(self) -> bytes:
        """8 bytes of size, then the signature (little-endian): what a lake stores."""
        return int(self.size).to_bytes(8, "little") + self.hashvalues.astype("<u8").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes) -> ColumnSketch:
        """The sketch :meth:`to_bytes` wrote. ValueError when ``data`` has the wrong length."""
        if len(data) != 8 + 8 * NUM_PERM:
            raise ValueError(f"a column sketch is {8 + 8 * NUM_PERM} bytes, not {len(data)}")
        return cls(np.frombuffer(data[8:], dtype="<u8").astype(np.uint64), int.from_bytes(data[:8], "little"))

    def jaccard(self, other: ColumnSketch) -> float:
        """Estimated Jaccard similarity of the two value sets (0 when either is empty)."""
        if self.size == 0 or other.size == 0:
            return 0.0
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / NUM_PERM

    def containment_in(self, other: ColumnSketch) -> float:
        """Estimated share of this column's distinct values found in ``other`` (0..1)."""
        j = self.jaccard(other)
        if j == 0.0:
            return 0.0
        return min(1.0, j * (self.size + other.size) / (1.0 + j) / self.size)

    def minhash(self):
        """The datasketch LeanMinHash of this sketch (for :class:`SketchIndex`)."""
        return _datasketch().LeanMinHash(seed=_SEED, hashvalues=self.hashvalues, scheme=_SCHEME)


def sketch_column(values: Iterable[str]) -> ColumnSketch:
    """The sketch of a column's cell texts (empty cells ignored, values normalised and deduplicated)."""
    distinct = {normalize_value(v) for v in values}
    distinct.discard("")
    minhash = _datasketch().MinHash(num_perm=NUM_PERM, seed=_SEED, scheme=_SCHEME)
    minhash.update_batch([v.encode("utf-8") for v in sorted(distinct)])
    return ColumnSketch(np.asarray(minhash.hashvalues, dtype=np.uint64), len(distinct))


def sketch_table(table: Table) -> list[ColumnSketch]:
    """One sketch per column of ``table``."""
    return [sketch_column(cell.text for cell in table.column(j)) for j in range(table.n_columns)]


class SketchIndex:
    """Columns by containment: ``query(sketch, threshold)`` gives the keys of the indexed columns
    that contain at least about ``threshold`` of the query's values (LSH Ensemble; approximate,
    so callers re-check with :meth:`ColumnSketch.containment_in`). Built once from all entries."""

    def __init__(self, entries: Sequence[tuple[Hashable, ColumnSketch]], threshold: float = 0.5):
        self.threshold = threshold
        entries = [(key, s) for key, s in entries if s.size > 0]
        self._index = None
        if entries:
            ds = _datasketch()
            self._index = ds.MinHashLSHEnsemble(threshold=threshold, num_perm=NUM_PERM, num_part=8)
            self._index.index((key, s.minhash(), s.size) for key, s in entries)

    def query(self, sketch: ColumnSketch) -> list[Hashable]:
        """Keys of the columns that likely contain ``threshold`` of ``sketch``'s values."""
        if self._index is None or sketch.size == 0:
            return []
        return list(self._index.query(sketch.minhash(), sketch.size))
