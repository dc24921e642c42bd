"""Tables of a lake related to a given table: candidates to extend it with rows (union) or with
columns (join), each with its aligned columns and a one-line reason.

Candidates come from two places: the nearest tables by table vector (FAISS inner product over the
lake's table vectors) and, for joins, the lake's columns that contain most of the values of one of
the table's key-like columns (MinHash containment estimated from the two sketches, against every
column of the lake). Each candidate's columns are aligned with the table's
(:func:`tabverify.lake.align.align_columns`) and an operation decided
(:func:`tabverify.lake.align.decide`); a table found by containment is a join whatever the vectors
say (it holds the query's entities; a union would add new ones), with the containment as its reason.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tabverify.lake.align import (
    DEFAULT_THRESHOLDS,
    JOIN,
    NONE,
    UNION,
    AlignedColumn,
    Decision,
    Thresholds,
    align_columns,
    decide,
)
from tabverify.lake.sketch import ColumnSketch, normalize_value, sketch_column
from tabverify.table.model import Table

__all__ = [
    "CONTAINMENT",
    "Candidate",
    "Related",
    "assess",
    "candidates_from_lake",
    "key_like_columns",
    "related_tables",
]

CONTAINMENT = 0.5
"""Least estimated share of a query column's values that a lake column must hold to be a join key."""


@dataclass(frozen=True)
class Candidate:
    """A lake table considered for a query: its id, a stored copy, its column vectors, its rank
    score in retrieval (cosine of table vectors; 0 when found by containment only) and the best
    containment found for it ((query column, candidate column, containment), or None)."""

    id: str
    table: Table
    columns: np.ndarray
    score: float = 0.0
    containment: tuple[int, int, float] | None = None


@dataclass(frozen=True)
class Related:
    """One related table: its id, the operation (union, join or none), a score, the aligned columns
    ``[(query column, candidate column, similarity)]`` as header names, the key columns of a join
    ``(query column, candidate column)``, a one-line reason, and the alignment and decision it
    rests on (column indexes)."""

    id: str
    operation: str
    score: float
    aligned: list[tuple[str, str, float]]
    key: tuple[str, str] | None
    reason: str
    alignment: list[AlignedColumn] = field(default_factory=list, repr=False)
    decision: Decision | None = field(default=None, repr=False)
    retrieval_score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "operation": self.operation,
            "score": round(self.score, 4),
            "aligned": [[q, c, round(s, 4)] for q, c, s in self.aligned],
            "key": list(self.key) if self.key else None,
            "reason": self.reason,
            "retrieval_score": round(self.retrieval_score, 4),
        }


def key_like_columns(table: Table, min_distinct: float = 0.8, text_only: bool = True) -> list[int]:
    """Columns that could be join keys: non-empty in most rows, mostly distinct values, and (with
    ``text_only``, as for containment search) mostly not numbers or dates (a column of ranks or
    years is contained in too many others)."""
    out = []
    for j in range(table.n_columns):
        cells = table.column(j)
        values = [normalize_value(c.text) for c in cells]
        filled = [v for v in values if v]
        numbers = sum(c.quantity is not None for c in cells)
        if (
            filled
            and len(filled) >= 0.8 * len(values)
            and len(set(filled)) >= min_distinct * len(filled)
            and (not text_only or numbers * 2 <= len(cells))
        ):
            out.append(j)
    return out


def assess(
    table: Table, query_columns: np.ndarray, candidate: Candidate, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> Related:
    """Align ``candidate`` with ``table`` (column vectors ``query_columns``), decide the operation
    and say why."""
    alignment = align_columns(query_columns, candidate.columns, thresholds.min_sim)
    decision = decide(alignment, table.n_columns, thresholds)
    op = decision.operation
    key: tuple[str, str] | None = None
    containment = candidate.containment
    if containment is not None and containment[2] < CONTAINMENT:
        containment = None
    if containment is not None:
        # the candidate holds the query's entities (its column contains most of the query's key
        # values): a join, whatever the vectors say - a union adds new entities
        qj, cj, _ = containment
        sim = float(np.asarray(query_columns)[qj] @ np.asarray(candidate.columns)[cj])
        alignment = sorted(
            [a for a in alignment if a.query != qj and a.candidate != cj] + [AlignedColumn(qj, cj, sim)],
            key=lambda a: a.query,
        )
        op = JOIN
    header, cheader = table.header, candidate.table.header
    aligned = [(header[a.query], cheader[a.candidate], a.similarity) for a in alignment]
    if op == UNION:
        score = sum(a.similarity for a in alignment) / max(1, table.n_columns)
        reason = f"union: {len(alignment)} of {table.n_columns} columns align (mean cosine {decision.mean_sim:.2f})"
    elif op == JOIN:
        if containment is not None:
            qj, cj, share = containment
            key = (header[qj], cheader[cj])
            score = max(share, decision.max_sim)
            reason = f"join: key {cheader[cj]!r} contains {share:.0%} of the query's {header[qj]!r} values"
        else:
            best = max(alignment, key=lambda a: a.similarity)
            key = (header[best.query], cheader[best.candidate])
            score = best.similarity
            reason = (
                f"join: key {cheader[best.candidate]!r} aligns with {header[best.query]!r} "
                f"(cosine {best.similarity:.2f}); {candidate.table.n_columns - len(alignment)} new columns"
            )
    else:
        score = decision.mean_sim * decision.match_ratio
        reason = (
            f"none: {decision.n_matched} of {table.n_columns} columns align "
            f"(mean cosine {decision.mean_sim:.2f}, best {decision.max_sim:.2f})"
        )
    return Related(candidate.id, op, float(score), aligned, key, reason, alignment, decision, candidate.score)


def _containment_hits(
    lake: Any, table: Table, allow: Collection[str] | None, exclude: Collection[str], limit: int
) -> dict[str, tuple[int, int, float]]:
    """Lake tables holding a column that contains most values of one of ``table``'s key-like
    columns: id -> (query column, lake column, containment), the best per table."""
    keys = key_like_columns(table)
    if not keys:
        return {}
    index = lake.join_index()
    best: dict[str, tuple[int, int, float]] = {}
    for qj in keys:
        sketch: ColumnSketch = sketch_column(c.text for c in table.column(qj))
        for (tid, cj), share in index.query(sketch, CONTAINMENT):
            if tid in exclude or (allow is not None and tid not in allow):
                continue
            if tid not in best or share > best[tid][2]:
                best[tid] = (qj, int(cj), share)
    ranked = sorted(best.items(), key=lambda item: (-item[1][2], item[0]))[:limit]
    return dict(ranked)


def candidates_from_lake(
    lake: Any,
    table: Table,
    table_vector: np.ndarray,
    k: int = 10,
    allow: Collection[str] | None = None,
    exclude: Collection[str] = (),
    containment: bool = True,
) -> list[Candidate]:
    """The ``k`` nearest lake tables by table vector, then up to ``k`` more found by value
    containment (join keys), as :class:`Candidate` objects. A lake table identical to ``table``
    (the query itself, indexed) is left out: it can add nothing."""
    hits = lake.search_vector(np.asarray(table_vector, dtype=np.float32), k, allow=allow, exclude=exclude)
    scores = {h.id: float(h.score) for h in hits}
    order = [h.id for h in hits]
    contained = _containment_hits(lake, table, allow, exclude, k) if containment else {}
    for tid in contained:
        if tid not in scores:
            order.append(tid)
            scores[tid] = 0.0
    out = []
    for tid in order:
        stored = lake.load(tid)
        if not _same_cells(stored, table):
            out.append(Candidate(tid, stored, lake.column_vectors(tid), scores[tid], contained.get(tid)))
    return out


def _same_cells(a: Table, b: Table) -> bool:
    """Whether two tables have the same header and the same cell texts, row by row."""
    if a.header != b.header or a.n_rows != b.n_rows:
        return False
    return all(
        [c.text for c in row_a] == [c.text for c in row_b]
        for row_a, row_b in zip(a.rows, b.rows, strict=True)
    )


def related_tables(
    lake: Any,
    table: Table,
    k: int = 10,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    allow: Collection[str] | None = None,
    exclude: Sequence[str] = (),
    include_none: bool = False,
) -> list[Related]:
    """The lake tables that extend ``table`` by rows (union) or columns (join), best first
    (unions before joins at equal score), each with its aligned columns and reason; with
    ``include_none`` the retrieved tables judged unrelated too."""
    embedding = lake.encoder.encode([table])[0]
    candidates = candidates_from_lake(lake, table, embedding.table, k, allow, exclude)
    out = [assess(table, embedding.columns, c, thresholds) for c in candidates]
    if not include_none:
        out = [r for r in out if r.operation != NONE]
    rank = {UNION: 0, JOIN: 1, NONE: 2}
    return sorted(out, key=lambda r: (rank[r.operation], -r.score, r.id))
