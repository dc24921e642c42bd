"""Maximum-weight one-to-one assignment (the Hungarian method), for CEAF and mention alignment.

A dependency-free O(n^3) implementation of the shortest augmenting path method on a square cost
matrix; rectangular problems are padded with zeros. Ties resolve to the lowest indices first, so
the result is deterministic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence


def max_weight_assignment(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """The pairs (row, column) of a one-to-one assignment maximising the summed weight.

    Every row and column appears at most once; pairs with weight 0 that only pad the assignment are
    included when they are real cells, so callers drop zero-weight pairs if they must.
    """
    rows = len(weights)
    columns = max((len(r) for r in weights), default=0)
    if rows == 0 or columns == 0:
        return []
    n = max(rows, columns)
    top = max((w for r in weights for w in r), default=0.0)
    cost = [
        [top - (weights[i][j] if i < rows and j < len(weights[i]) else 0.0) for j in range(n)]
        for i in range(n)
    ]
    # potentials u (rows), v (columns); p[j] = row matched to column j (1-based, 0 = none)
    u = [0.0] * (n + 1)
    v = [0.0] * (n + 1)
    p = [0] * (n + 1)
    way = [0] * (n + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [float("inf")] * (n + 1)
        used = [False] * (n + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = float("inf")
            j1 = 0
            row = cost[i0 - 1]
            for j in range(1, n + 1):
                if not used[j]:
                    current = row[j - 1] - u[i0] - v[j]
                    if current < minv[j] - 1e-12:
                        minv[j] = current
                        way[j] = j0
                    if minv[j] < delta - 1e-12:
                        delta = minv[j]
                        j1 = j
            for j in range(n + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    pairs = [(p[j] - 1, j - 1) for j in range(1, n + 1) if p[j] and p[j] - 1 < rows and j - 1 < columns]
    return sorted(pairs)


def sparse_max_weight_assignment(weights: Mapping[tuple[int, int], float]) -> list[tuple[int, int]]:
    """The same assignment for sparse positive weights ``{(row, column): weight}``: solved on each
    connected group of rows and columns separately, which keeps large, sparse problems fast (the
    best assignment never pairs across groups, where every weight is 0)."""
    parent: dict[tuple[str, int], tuple[str, int]] = {}

    def find(x: tuple[str, int]) -> tuple[str, int]:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for (i, j), w in weights.items():
        if w > 0:
            parent[find(("r", i))] = find(("c", j))
    groups: dict[tuple[str, int], tuple[set[int], set[int]]] = defaultdict(lambda: (set(), set()))
    for (i, j), w in weights.items():
        if w > 0:
            rows, columns = groups[find(("r", i))]
            rows.add(i)
            columns.add(j)
    pairs = []
    for rows, columns in groups.values():
        row_list, column_list = sorted(rows), sorted(columns)
        if len(row_list) == 1 and len(column_list) == 1:
            pairs.append((row_list[0], column_list[0]))
            continue
        dense = [[weights.get((i, j), 0.0) for j in column_list] for i in row_list]
        pairs.extend(
            (row_list[a], column_list[b]) for a, b in max_weight_assignment(dense) if dense[a][b] > 0
        )
    return sorted(pairs)
