"""Column alignment, the union/join/none decision and row matching: DLTE's stages 2 and 3 on
plain arrays (no lake needed).

- :func:`align_columns`: a one-to-one alignment of a query table's columns with a candidate's,
  maximising the summed cosine of the column vectors (the Hungarian method,
  :func:`tabverify.coref.assignment.max_weight_matching`); pairs below ``min_sim`` are never aligned.
- :func:`decide`: TRL-DLTE's rule on an alignment. UNION when the share of query columns aligned
  (the match ratio) is at least ``union_ratio`` and their mean cosine at least ``union_sim``; JOIN
  when the match ratio is at most ``join_ratio``, 1 to ``max_join_columns`` columns are aligned and
  the best aligned pair reaches ``key_sim``; otherwise NONE. :class:`Thresholds` holds the rule's
  constants; its defaults were chosen on DLTE dev (lexical encoder) for operation macro-F1; the DLTE
  bench grid-searches them on the dev split for each encoder.
- :func:`match_rows`: query rows to candidate rows. Equal key values (normalised strings) match
  first (an extra signal beside the spec's vectors: exact, and cheap); the remaining rows match by
  CSLS-normalised reciprocal nearest neighbours on row vectors (k = 5): a pair is kept when each is
  the other's best CSLS neighbour, its CSLS score is ``row_z`` standard deviations above the query
  row's mean CSLS score, it beats the row's second best by ``row_margin`` and its cosine reaches
  ``row_min_cosine``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher

import numpy as np

from tabverify.coref.assignment import max_weight_matching
from tabverify.lake.sketch import normalize_value

__all__ = [
    "JOIN",
    "NONE",
    "OPERATIONS",
    "UNION",
    "DEFAULT_THRESHOLDS",
    "AlignedColumn",
    "Decision",
    "RowMatch",
    "Thresholds",
    "align_columns",
    "csls",
    "decide",
    "match_rows",
]

UNION, JOIN, NONE = "union", "join", "none"

MAX_CSLS_PAIRS = 4_000_000
"""Row pairs (query rows x candidate rows) beyond which rows match by key only: the CSLS matrix
is dense (a 20,000-row table against another would take gigabytes)."""
OPERATIONS = (UNION, JOIN, NONE)


@dataclass(frozen=True)
class Thresholds:
    """The constants of alignment, decision and row matching. The decision defaults are the
    thresholds ``bench trl --suite dlte --encoder lexical`` chose on the DLTE dev split (TabFact,
    seed 0) for operation macro-F1 (the spec's stage 2): a union needs 80% of the query's columns
    aligned at cosine 0.2 or more with a mean of 0.3; a join found by vectors one to three aligned
    columns, at most 25% of the query's, the best at 0.7 (joins found by value containment need
    no threshold). The bench re-chooses them on dev for every encoder, and also chooses a more
    liberal pipeline for UJ-H (more unions: higher recall, lower precision).

    Attributes:
        min_sim: the least cosine for two columns to be aligned at all.
        union_ratio: tau_u, the least share of query columns aligned for a UNION.
        union_sim: tau_us, the least mean cosine of the aligned pairs for a UNION.
        join_ratio: tau_jm, the largest share of query columns aligned for a JOIN.
        key_sim: tau_key, the least cosine of the best aligned pair (the key) for a JOIN.
        max_join_columns: the most aligned columns a JOIN may have (1-3 in the spec).
        same_sim: the least cosine for a join candidate's column to count as one the query already
            has (not added; used with the key to match rows).
        row_k: CSLS neighbourhood size.
        row_z: least z-score of a row pair's CSLS score within the query row's scores.
        row_margin: least CSLS gap between a query row's best and second-best candidate row.
        row_min_cosine: least cosine of a matched row pair.
    """

    min_sim: float = 0.2
    union_ratio: float = 0.8
    union_sim: float = 0.3
    join_ratio: float = 0.25
    key_sim: float = 0.7
    max_join_columns: int = 3
    same_sim: float = 0.7
    row_k: int = 5
    row_z: float = 1.0
    row_margin: float = 0.0
    row_min_cosine: float = 0.3

    def to_dict(self) -> dict[str, float]:
        """The thresholds as a plain dict (for reports)."""
        return asdict(self)


DEFAULT_THRESHOLDS = Thresholds()
"""The default thresholds (what the CLI uses unless told otherwise)."""


@dataclass(frozen=True)
class AlignedColumn:
    """Query column ``query`` aligned with candidate column ``candidate`` at cosine ``similarity``."""

    query: int
    candidate: int
    similarity: float


@dataclass(frozen=True)
class Decision:
    """The operation for one candidate and the numbers it was decided on."""

    operation: str
    match_ratio: float
    mean_sim: float
    max_sim: float
    n_matched: int


@dataclass(frozen=True)
class RowMatch:
    """Query row ``query`` matched with candidate row ``candidate``; ``how`` is ``key`` (equal key
    values) or ``csls`` (row vectors)."""

    query: int
    candidate: int
    score: float
    how: str


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    if a.size == 0 or b.size == 0:
        return np.zeros((len(a), len(b)), dtype=np.float32)
    a, b = a.reshape(len(a), -1), b.reshape(len(b), -1)
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    a = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    b = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    return a @ b.T


def align_columns(
    query_columns: np.ndarray, candidate_columns: np.ndarray, min_sim: float = Thresholds.min_sim
) -> list[AlignedColumn]:
    """The one-to-one alignment of query columns with candidate columns maximising the summed
    cosine over all positive cosines (Hungarian), then the pairs whose cosine is below ``min_sim``
    dropped; sorted by query column."""
    sims = _cosines(query_columns, candidate_columns)
    weights = {
        (i, j): float(sims[i, j])
        for i in range(sims.shape[0])
        for j in range(sims.shape[1])
        if sims[i, j] > 0
    }
    matching = max_weight_matching(weights)
    return [AlignedColumn(i, j, weights[(i, j)]) for i, j in matching.pairs if weights[(i, j)] >= min_sim]


def decide(
    alignment: Sequence[AlignedColumn], n_query_columns: int, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> Decision:
    """UNION, JOIN or NONE for a candidate aligned with a query of ``n_query_columns`` columns
    (the rule in the module docstring)."""
    n = len(alignment)
    ratio = n / n_query_columns if n_query_columns else 0.0
    sims = [a.similarity for a in alignment]
    mean_sim = float(np.mean(sims)) if sims else 0.0
    max_sim = max(sims) if sims else 0.0
    if n and ratio >= thresholds.union_ratio and mean_sim >= thresholds.union_sim:
        op = UNION
    elif (
        1 <= n <= thresholds.max_join_columns
        and ratio <= thresholds.join_ratio
        and max_sim >= thresholds.key_sim
    ):
        op = JOIN
    else:
        op = NONE
    return Decision(op, ratio, mean_sim, float(max_sim), n)


def csls(sims: np.ndarray, k: int = 5) -> np.ndarray:
    """Cross-domain similarity local scaling: ``2 cos(x, y) - r(x) - r(y)``, with ``r`` the mean
    cosine of a point's ``k`` nearest neighbours on the other side (Conneau et al., 2018)."""
    sims = np.asarray(sims, dtype=np.float64)
    if sims.size == 0:
        return sims
    kq = min(k, sims.shape[1])
    kc = min(k, sims.shape[0])
    r_query = np.sort(sims, axis=1)[:, -kq:].mean(axis=1)
    r_cand = np.sort(sims, axis=0)[-kc:, :].mean(axis=0)
    return 2 * sims - r_query[:, None] - r_cand[None, :]


KEY_SIMILARITY = 0.7
"""Least difflib ratio of two normalised keys for a vector row match (chosen a priori: one typo in
a four-letter key, "heat"/"haet", is 0.75; two different short names, "knicks"/"heat", 0.2)."""


def keys_may_match(a: str, b: str) -> bool:
    """Whether two key values may name the same entity although they differ: either is empty
    (nothing to compare), one is a prefix of the other (a cut), or their difflib ratio reaches
    :data:`KEY_SIMILARITY` after normalisation (a typo, a case change)."""
    x, y = normalize_value(a), normalize_value(b)
    if not x or not y or x.startswith(y) or y.startswith(x):
        return True
    return SequenceMatcher(None, x, y).ratio() >= KEY_SIMILARITY


def match_rows(
    query_rows: np.ndarray | None,
    candidate_rows: np.ndarray | None,
    query_keys: Sequence[str] | None = None,
    candidate_keys: Sequence[str] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> list[RowMatch]:
    """Query rows matched one-to-one with candidate rows: equal non-empty key values first
    (when both key lists are given; a key value repeated on either side matches nothing), then
    CSLS reciprocal nearest neighbours on the row vectors among the rows left (when given, and
    at most :data:`MAX_CSLS_PAIRS` pairs of them). With keys, a vector match must also have
    similar keys (:func:`keys_may_match`: a typo, a case change or a cut, not another entity), so
    the last unmatched row on each side is never paired for want of a rival. Sorted by query row."""
    matches: dict[int, RowMatch] = {}
    used: set[int] = set()
    if query_keys is not None and candidate_keys is not None:
        cand_index: dict[str, list[int]] = {}
        for j, key in enumerate(candidate_keys):
            value = normalize_value(key)
            if value:
                cand_index.setdefault(value, []).append(j)
        query_count: dict[str, int] = {}
        for key in query_keys:
            value = normalize_value(key)
            query_count[value] = query_count.get(value, 0) + 1
        for i, key in enumerate(query_keys):
            value = normalize_value(key)
            hits = cand_index.get(value, [])
            if value and len(hits) == 1 and query_count[value] == 1:
                matches[i] = RowMatch(i, hits[0], 1.0, "key")
                used.add(hits[0])
    if query_rows is not None and candidate_rows is not None and len(query_rows) and len(candidate_rows):
        free_q = [i for i in range(len(query_rows)) if i not in matches]
        free_c = [j for j in range(len(candidate_rows)) if j not in used]
        if free_q and free_c and len(free_q) * len(free_c) <= MAX_CSLS_PAIRS:
            cos = _cosines(np.asarray(query_rows)[free_q], np.asarray(candidate_rows)[free_c])
            scores = csls(cos, thresholds.row_k)
            best_c = scores.argmax(axis=1)
            best_q = scores.argmax(axis=0)
            for a, i in enumerate(free_q):
                b = int(best_c[a])
                if int(best_q[b]) != a or cos[a, b] < thresholds.row_min_cosine:
                    continue
                if (
                    query_keys is not None
                    and candidate_keys is not None
                    and not keys_may_match(query_keys[i], candidate_keys[free_c[b]])
                ):
                    continue
                row = scores[a]
                if len(row) > 1:
                    spread = float(row.std())
                    z = (row[b] - row.mean()) / spread if spread > 0 else 0.0
                    second = float(np.partition(row, -2)[-2])
                    if z < thresholds.row_z or row[b] - second < thresholds.row_margin:
                        continue
                matches[i] = RowMatch(i, free_c[b], float(cos[a, b]), "csls")
    return [matches[i] for i in sorted(matches)]
