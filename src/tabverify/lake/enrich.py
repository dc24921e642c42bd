"""Table enrichment from a lake: DLTE's three stages on one table.

1. Retrieve: the ``k`` nearest lake tables by table vector, plus tables holding a column that
   contains most of the values of one of the table's key-like columns (MinHash containment).
2. Align and decide: Hungarian column alignment and the union/join/none rule
   (:mod:`tabverify.lake.align`, :func:`tabverify.lake.related.assess`).
3. Match rows and fill: each UNION candidate's rows are appended (its aligned cells under the
   table's columns; rows already present are skipped), then each JOIN candidate's unaligned
   columns are added and filled for the rows matched to its rows (equal key values, then CSLS
   reciprocal nearest neighbours of row vectors over the key and the columns the table already
   has, those aligned at cosine ``same_sim`` or more, which are not added again). A join needs a
   key: its query column must hold mostly distinct values.

The result keeps the table's rows and columns first and in place: appended rows come after them,
added columns after them. The provenance says, for every added cell, the lake table, row and
column it came from, and for every candidate the decision and its reason.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tabverify.lake.align import DEFAULT_THRESHOLDS, JOIN, UNION, Thresholds, match_rows
from tabverify.lake.related import Candidate, Related, assess, candidates_from_lake, key_like_columns
from tabverify.lake.sketch import normalize_value
from tabverify.table.model import Table

__all__ = ["MAX_JOINS", "MAX_UNIONS", "AddedCell", "Enrichment", "enrich_table", "enrich_with_candidates"]

MAX_UNIONS = 3
"""The most union candidates whose rows are appended (the best ones)."""

MAX_JOINS = 3
"""The most join candidates whose columns are added (the best ones)."""

MAX_NEW_ROWS = 100_000
"""Bound on appended rows (a hostile lake must not blow memory up)."""


@dataclass(frozen=True)
class AddedCell:
    """An added cell at (``row``, ``column``) of the enriched table, copied from ``source`` (a lake
    table id), its row ``source_row`` and column ``source_column`` (a header name), by ``operation``."""

    row: int
    column: int
    text: str
    source: str
    source_row: int
    source_column: str
    operation: str


@dataclass
class Enrichment:
    """The enriched table, the provenance of every added cell, and the decision on each candidate."""

    table: Table
    provenance: list[AddedCell]
    decisions: list[Related]
    original_rows: int = 0
    original_columns: int = 0
    matches: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)

    @property
    def added_rows(self) -> int:
        """Rows appended by unions."""
        return self.table.n_rows - self.original_rows

    @property
    def added_columns(self) -> int:
        """Columns added by joins."""
        return self.table.n_columns - self.original_columns

    def report(self) -> dict[str, Any]:
        """The provenance report as a JSON-ready dict."""
        return {
            "rows": self.table.n_rows,
            "columns": self.table.n_columns,
            "original_rows": self.original_rows,
            "original_columns": self.original_columns,
            "added_rows": self.added_rows,
            "added_columns": self.added_columns,
            "added_cells": len(self.provenance),
            "candidates": [d.to_dict() for d in self.decisions],
            "row_matches": {
                tid: [{"row": q, "source_row": c, "how": how} for q, c, how in pairs]
                for tid, pairs in self.matches.items()
            },
            "cells": [
                {
                    "row": c.row,
                    "column": c.column,
                    "text": c.text,
                    "source": c.source,
                    "source_row": c.source_row,
                    "source_column": c.source_column,
                    "operation": c.operation,
                }
                for c in self.provenance
            ],
        }


def _texts(table: Table) -> list[list[str]]:
    return [[c.text for c in row] for row in table.rows]


def _project(rows: Sequence[Sequence[str]], columns: Sequence[int], names: Sequence[str]) -> Table:
    return Table.from_rows(list(names), [[r[j] for j in columns] for r in rows])


def enrich_with_candidates(
    table: Table,
    query_columns: np.ndarray,
    candidates: Sequence[Candidate],
    encoder: Any,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    max_unions: int = MAX_UNIONS,
    max_joins: int = MAX_JOINS,
    decisions: Sequence[Related] | None = None,
) -> Enrichment:
    """Stages 2 and 3 on given candidates (stage 1 done): decide each candidate (or use
    ``decisions``, one per candidate), append the rows of the best unions, add and fill the columns
    of the best joins. ``encoder`` (a table encoder) embeds the rows for row matching."""
    if decisions is None:
        decisions = [assess(table, query_columns, c, thresholds) for c in candidates]
    by_id = {c.id: c for c in candidates}
    header = list(table.header)
    rows = _texts(table)
    n0, m0 = len(rows), len(header)
    provenance: list[AddedCell] = []
    matches: dict[str, list[tuple[int, int, str]]] = {}
    unions = sorted((d for d in decisions if d.operation == UNION), key=lambda d: -d.score)[:max_unions]
    joins = sorted((d for d in decisions if d.operation == JOIN), key=lambda d: -d.score)[:max_joins]
    seen = {tuple(normalize_value(v) for v in r) for r in rows}
    for decision in unions:
        cand = by_id[decision.id]
        crows = _texts(cand.table)
        mapping = {a.query: a.candidate for a in decision.alignment}
        for ci, crow in enumerate(crows):
            if len(rows) - n0 >= MAX_NEW_ROWS:
                break
            new = [crow[mapping[j]] if j in mapping else "" for j in range(m0)]
            if not any(v.strip() for v in new):
                continue
            norm = tuple(normalize_value(v) for v in new)
            if norm in seen:
                continue
            seen.add(norm)
            r = len(rows)
            rows.append(new + [""] * (len(header) - m0))
            for j in sorted(mapping):
                if new[j].strip():
                    provenance.append(
                        AddedCell(r, j, new[j], cand.id, ci, cand.table.header[mapping[j]], UNION)
                    )
    for decision in joins:
        cand = by_id[decision.id]
        crows = _texts(cand.table)
        aligned = [a for a in decision.alignment if a.query < m0]
        if not aligned:
            continue
        key = max(aligned, key=lambda a: a.similarity)
        if decision.key is not None and decision.key[0] in header and decision.key[1] in cand.table.header:
            qk, ck = header.index(decision.key[0]), cand.table.header.index(decision.key[1])
            key = next((a for a in aligned if a.query == qk and a.candidate == ck), key)
        if key.query not in key_like_columns(table, text_only=False):
            continue  # a join needs a key: a query column of mostly distinct values
        same = [key, *(a for a in aligned if a is not key and a.similarity >= thresholds.same_sim)]
        used = {a.candidate for a in same}
        new_cols = [j for j in range(cand.table.n_columns) if j not in used]
        if not new_cols:
            continue
        names = [header[a.query] for a in same]
        q_proj = _project(rows, [a.query for a in same], names)
        c_proj = _project(crows, [a.candidate for a in same], names)
        q_emb, c_emb = encoder.encode([q_proj, c_proj], rows=True)
        pairs = match_rows(
            q_emb.rows,
            c_emb.rows,
            [r[key.query] for r in rows],
            [r[key.candidate] for r in crows],
            thresholds,
        )
        if not pairs:
            continue
        matches[cand.id] = [(p.query, p.candidate, p.how) for p in pairs]
        start = len(header)
        for j in new_cols:
            name = cand.table.header[j] or f"column {j + 1}"
            while name in header:
                name = f"{name} ({cand.id.rsplit('/', 1)[-1]})" if "(" not in name else f"{name}'"
            header.append(name)
        for r in rows:
            r.extend([""] * len(new_cols))
        for p in pairs:
            for offset, j in enumerate(new_cols):
                value = crows[p.candidate][j]
                if value.strip():
                    rows[p.query][start + offset] = value
                    provenance.append(
                        AddedCell(
                            p.query, start + offset, value, cand.id, p.candidate, cand.table.header[j], JOIN
                        )
                    )
    width = len(header)
    rows = [r + [""] * (width - len(r)) for r in rows]
    enriched = Table.from_rows(header, rows, caption=table.caption, name=table.name)
    return Enrichment(enriched, provenance, list(decisions), n0, m0, matches)


def enrich_table(
    lake: Any,
    table: Table,
    k: int = 10,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    allow: Collection[str] | None = None,
    exclude: Collection[str] = (),
    max_unions: int = MAX_UNIONS,
    max_joins: int = MAX_JOINS,
) -> Enrichment:
    """Enrich ``table`` from ``lake`` (the three stages in the module docstring): the enriched
    table, the provenance of each added cell and the decision on each candidate."""
    embedding = lake.encoder.encode([table])[0]
    candidates = candidates_from_lake(lake, table, embedding.table, k, allow, exclude)
    return enrich_with_candidates(
        table, embedding.columns, candidates, lake.encoder, thresholds, max_unions, max_joins
    )
