"""Maximum-weight one-to-one matching on a sparse graph, for CEAF and the mention alignments.

The problem is given by its positive weights only, ``{(row, column): weight}``: a pair without a
weight can never be chosen, and no matrix is ever built, so memory grows with the pairs, not with
rows x columns. Rows may stay unmatched (as if each row had a private column of weight 0).

The method is the Hungarian method as successive shortest augmenting paths (Dijkstra on reduced
costs with node potentials): rows are added one at a time, in index order, and each addition
augments along the cheapest path, which keeps the matching optimal for the rows added so far.
Each search only visits what it reaches, so sparse problems with short paths (the usual case) run
in near-linear time. Ties resolve deterministically: towards keeping earlier rows matched, and to
the lower column index.

Work is bounded: after ``budget`` edge relaxations the remaining rows are matched greedily (best
free column first) and the result says it is no longer exact, so a hostile input costs bounded
time and the caller can say so.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_BUDGET = 20_000_000
"""Edge relaxations allowed before the matching falls back to greedy (seconds of work, not minutes)."""

_UNMATCHED = -1  # a row that gave up: no column, now or later


@dataclass(frozen=True)
class Matching:
    """The chosen pairs (row, column), sorted, and whether they are provably optimal."""

    pairs: list[tuple[int, int]]
    exact: bool = True


def max_weight_matching(weights: Mapping[tuple[int, int], float], budget: int = DEFAULT_BUDGET) -> Matching:
    """A one-to-one matching of rows to columns maximising the summed weight.

    Only pairs with a positive, finite weight are considered (others never help). Every row and
    every column appears at most once in the result.
    """
    adjacency: dict[int, list[tuple[int, float]]] = {}
    for (i, j), w in weights.items():
        if w > 0 and math.isfinite(w):
            adjacency.setdefault(i, []).append((j, -w))  # costs: the negated weights
    for edges in adjacency.values():
        edges.sort()
    solver = _Solver(adjacency)
    rows = sorted(adjacency)
    for position, row in enumerate(rows):
        if solver.work > budget:
            solver.greedy(rows[position:])
            return Matching(solver.pairs(), exact=False)
        solver.add(row)
    return Matching(solver.pairs())


class _Solver:
    """The matching so far, with the potentials that certify it optimal.

    The reduced cost of row i -> column j is ``cost + row_pot[i] - col_pot[j] >= 0`` (0 on matched
    pairs); row i -> its private "stay unmatched" column costs ``row_pot[i] - stay_pot[i] >= 0``.
    """

    def __init__(self, adjacency: dict[int, list[tuple[int, float]]]) -> None:
        self.adjacency = adjacency
        self.row_pot = {i: -min(c for _, c in edges) for i, edges in adjacency.items()}
        self.col_pot: dict[int, float] = {}
        self.stay_pot: dict[int, float] = {}
        self.row_col: dict[int, int] = {}
        self.col_row: dict[int, int] = {}
        self.work = 0

    def pairs(self) -> list[tuple[int, int]]:
        return sorted((i, j) for i, j in self.row_col.items() if j != _UNMATCHED)

    def add(self, start: int) -> None:
        """Add row ``start`` along the cheapest augmenting path (Dijkstra on reduced costs)."""
        edges, col_pot = self.adjacency[start], self.col_pot
        self.work += len(edges)
        # the common case first: the row's cheapest column is free and beats staying unmatched
        # (the search below would pop that column first and stop there)
        d, j = min((cost - col_pot.get(j, 0.0), j) for j, cost in edges)
        d += self.row_pot[start]
        if j not in self.col_row and d < self.row_pot[start] - self.stay_pot.get(start, 0.0):
            self.row_pot[start] -= d
            self.row_col[start], self.col_row[j] = j, start
            return
        self.col_dist: dict[int, float] = {}
        self.previous: dict[int, int] = {}
        self.done_cols: dict[int, float] = {}
        done_rows: dict[int, float] = {start: 0.0}
        self.heap: list[tuple[float, int]] = []
        self.best_stay = (math.inf, start)
        self._visit(start, 0.0)
        end_col = -1
        while self.heap:
            d, j = heapq.heappop(self.heap)
            if j in self.done_cols or d > self.col_dist[j]:
                continue
            if self.best_stay[0] <= d:
                break
            self.done_cols[j] = d
            owner = self.col_row.get(j)
            if owner is None:
                end_col = j
                break
            done_rows[owner] = d
            self._visit(owner, d)
        total = self.done_cols[end_col] if end_col >= 0 else self.best_stay[0]
        for j, d in self.done_cols.items():
            col_pot[j] = col_pot.get(j, 0.0) + d - total
        for i, d in done_rows.items():
            self.row_pot[i] += d - total
        if end_col >= 0:
            self._augment(end_col, start)
            return
        row = self.best_stay[1]
        freed = self.row_col.get(row)
        self.row_col[row] = _UNMATCHED
        if row != start and freed is not None:
            self._augment(freed, start)

    def _visit(self, row: int, dist: float) -> None:
        stay = dist + self.row_pot[row] - self.stay_pot.get(row, 0.0)
        if stay < self.best_stay[0]:
            self.best_stay = (stay, row)
        base = dist + self.row_pot[row]
        for j, cost in self.adjacency[row]:
            if j in self.done_cols:
                continue
            self.work += 1
            d = base + cost - self.col_pot.get(j, 0.0)
            if d < self.col_dist.get(j, math.inf):
                self.col_dist[j] = d
                self.previous[j] = row
                heapq.heappush(self.heap, (d, j))

    def _augment(self, column: int, start: int) -> None:
        """Flip the alternating path that ends at the free ``column`` and began at row ``start``."""
        while True:
            row = self.previous[column]
            displaced = self.row_col.get(row)
            self.row_col[row] = column
            self.col_row[column] = row
            if row == start or displaced is None or displaced == _UNMATCHED:
                return
            column = displaced

    def greedy(self, rows: list[int]) -> None:
        """Match each row, in order, to its best free column (the fallback once the budget is spent)."""
        for row in rows:
            free = [(cost, j) for j, cost in self.adjacency[row] if j not in self.col_row]
            if free:
                _, j = min(free)
                self.row_col[row] = j
                self.col_row[j] = row
