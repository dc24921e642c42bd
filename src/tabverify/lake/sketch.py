"""Value-overlap sketches of columns, for joinability: MinHash (datasketch) over a column's
distinct normalised values, with the distinct count, so that containment can be estimated.

A column ``Q`` joins a column ``X`` when much of ``Q``'s values appear in ``X``: the containment
``|Q & X| / |Q|``. MinHash estimates the Jaccard similarity ``J``; with the two set sizes,
``|Q & X| = J (|Q| + |X|) / (1 + J)``. :class:`SketchIndex` finds, among many columns, those whose
containment of a query column passes a threshold.

:class:`SketchIndex` compares the query's signature with every stored signature (a vectorised
scan of an ``(n, NUM_PERM)`` array: about 20 ms per query column over the 104,942 columns of all
TabFact tables). It replaced datasketch's LSH Ensemble (Zhu et al., VLDB 2016), which had to be
rebuilt in every process (it cannot be stored without pickle, and opening a lake must never run
code) and took 50 s and 3 GB to build for that lake, far more than scanning costs; the scan is
also exact with respect to the MinHash estimate, where LSH misses some columns above the threshold.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from tabverify.errors import ModelError
from tabverify.table.model import Table

__all__ = [
    "NUM_PERM",
    "SKETCH_BYTES",
    "ColumnSketch",
    "SketchIndex",
    "normalize_value",
    "sketch_column",
    "sketch_table",
]

NUM_PERM = 64
"""MinHash permutations per column: a Jaccard estimate's standard error is about 1/sqrt(64) = 0.125
at worst (J = 0.5), far less near 0 and 1, for 512 bytes a column."""

SKETCH_BYTES = 8 + 8 * NUM_PERM
"""A stored sketch: the distinct count, then the signature, each value 8 bytes little-endian."""

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
        if len(data) != SKETCH_BYTES:
            raise ValueError(f"a column sketch is {SKETCH_BYTES} bytes, not {len(data)}")
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
    """Columns by containment: :meth:`query` gives the keys of the indexed columns estimated to
    contain at least ``threshold`` of a query column's distinct values, with that estimate.
    Built once from all entries; the signatures sit in one array, so a query is a scan."""

    _CHUNK = 65_536
    """Signatures compared per step: bounds the scan's scratch memory to a few MB."""

    def __init__(self, keys: Sequence[Hashable], signatures: np.ndarray, sizes: np.ndarray):
        signatures = np.asarray(signatures, dtype=np.uint64)
        sizes = np.asarray(sizes, dtype=np.int64)
        if signatures.ndim != 2 or signatures.shape[1] != NUM_PERM or len(signatures) != len(keys):
            raise ValueError(
                f"SketchIndex needs one {NUM_PERM}-value signature per key: "
                f"{len(keys)} keys, signatures of shape {signatures.shape}"
            )
        if sizes.shape != (len(keys),):
            raise ValueError(f"SketchIndex needs one size per key: {len(keys)} keys, {sizes.shape} sizes")
        keep = sizes > 0
        self._keys = [key for key, k in zip(keys, keep, strict=True) if k]
        self._signatures = np.ascontiguousarray(signatures[keep])
        self._sizes = sizes[keep].astype(np.float64)

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[Hashable, ColumnSketch]]) -> SketchIndex:
        """The index of ``(key, sketch)`` pairs."""
        pairs = list(entries)
        signatures = np.zeros((len(pairs), NUM_PERM), dtype=np.uint64)
        for i, (_, s) in enumerate(pairs):
            signatures[i] = s.hashvalues
        return cls([k for k, _ in pairs], signatures, np.array([s.size for _, s in pairs], dtype=np.int64))

    def __len__(self) -> int:
        return len(self._keys)

    def query(self, sketch: ColumnSketch, threshold: float = 0.5) -> list[tuple[Hashable, float]]:
        """``(key, containment)`` of the columns estimated to contain at least ``threshold`` of
        ``sketch``'s values (:meth:`ColumnSketch.containment_in`, computed for all at once),
        highest first (ties by position in the index)."""
        if sketch.size == 0 or not self._keys:
            return []
        query = np.asarray(sketch.hashvalues, dtype=np.uint64)
        found: list[tuple[int, float]] = []
        for start in range(0, len(self._keys), self._CHUNK):
            block = self._signatures[start : start + self._CHUNK]
            j = np.count_nonzero(block == query, axis=1) / NUM_PERM
            sizes = self._sizes[start : start + len(block)]
            share = np.minimum(1.0, j * (sketch.size + sizes) / (1.0 + j) / sketch.size)
            hits = np.flatnonzero((j > 0) & (share >= threshold))
            found += [(start + int(i), float(share[i])) for i in hits]
        found.sort(key=lambda item: (-item[1], item[0]))
        return [(self._keys[i], share) for i, share in found]
