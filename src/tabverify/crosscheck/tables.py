"""Table matching: which of a source paper's tables the numbers of a target table come from.

Each candidate is aligned with the target (:func:`tabverify.crosscheck.cells.align`); its score is
the support of that alignment: the target numbers that sit in rows and columns corresponding to
the candidate's and agree with its values (exact 1, rounded 0.8, scaled 0.7), each counted fully
when its row label or column header shares a word with the source cell's, a quarter otherwise
(values alone coincide across unrelated tables; values under the same labels do not). Words break
ties: shared caption and header vocabulary. No candidate is chosen when the best support is below
``min_support`` (the citation credits a method but copies no numbers). With more than
:data:`MAX_ALIGNED_TABLES` source tables, only that many - those holding the most of the target's
numbers, found through an index of the sources' values built once - are aligned (:func:`shortlist`).
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from tabverify.crosscheck.cells import Alignment, NumberIndex, align, per_grid
from tabverify.table.grid import Grid
from tabverify.table.scientific import clean_latex

# calibrated on the arXiVeri development pairs (see docs/benchmarks.md): the smallest support that
# separates copied tables from incidental agreement
MIN_SUPPORT = 2.0

MAX_ALIGNED_TABLES = 20
"""The most source tables aligned in full with one target (an arXiVeri paper has at most 10):
beyond it the tables sharing the most values are, so that time grows with the number of tables,
not with its square when every table of a document is checked against every other."""

_WORD = re.compile(r"[a-z][a-z0-9]+|\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Candidate:
    """One source table scored against the target.

    Attributes:
        index: 0-based position of the table among the source tables (JSON output numbers tables
            from 1: ``index + 1``).
        support: summed agreement weight of the aligned cell pairs.
        text_similarity: Jaccard similarity of caption and header words, in [0, 1].
        alignment: the row/column correspondence found.
    """

    index: int
    support: float
    text_similarity: float
    alignment: Alignment

    @property
    def score(self) -> float:
        """Support plus the text similarity as a tie-breaker."""
        return self.support + self.text_similarity


def words(grid: Grid) -> set[str]:
    """Lower-case caption and header words of a grid (LaTeX removed), computed once per grid."""
    return per_grid(grid, "words", _words)


def _words(grid: Grid) -> set[str]:
    text = [grid.caption]
    for i in range(min(grid.header_row_count, grid.n_rows)):
        text.extend(c.text for c in grid.cells[i])
    text.extend(grid.text(i, 0) for i in range(grid.n_rows) if grid.n_columns)
    return {w for w in _WORD.findall(clean_latex(" ".join(text)).lower()) if not w[0].isdigit()}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


class _ValueTables:
    """For each value key (:class:`NumberIndex`), the source tables holding it: the inverted index
    that finds the tables sharing values with a target without aligning it with every table."""

    def __init__(self, sources: Sequence[Grid]) -> None:
        self.sources = tuple(sources)  # held, so that the ids the cache is keyed by stay valid
        tables: dict[Decimal, list[int]] = defaultdict(list)
        for number, source in enumerate(self.sources):
            for key in NumberIndex.of(source).positions:
                tables[key].append(number)
        self.tables = dict(tables)


_VALUE_TABLES: OrderedDict[tuple[int, ...], _ValueTables] = OrderedDict()
_KEPT_SOURCE_SETS = 4
_COMMON_VALUE_TABLES = 1000  # a value held by more source tables tells nothing apart


def _value_tables(sources: Sequence[Grid]) -> _ValueTables:
    """The inverted index of a list of source tables, built once while the same list is checked
    against target after target (as ``tabverify crosscheck`` does)."""
    key = tuple(map(id, sources))
    found = _VALUE_TABLES.get(key)
    if found is None:
        found = _VALUE_TABLES[key] = _ValueTables(sources)
        while len(_VALUE_TABLES) > _KEPT_SOURCE_SETS:
            _VALUE_TABLES.popitem(last=False)
    else:
        _VALUE_TABLES.move_to_end(key)
    return found


def shortlist(
    target: Grid, sources: Sequence[Grid], max_aligned: int = MAX_ALIGNED_TABLES
) -> tuple[list[int], str | None]:
    """The indices of the source tables to align with the target, and a note when a limit cut them.

    Up to ``max_aligned`` sources, every one is aligned. Beyond, the ``max_aligned`` tables holding
    the most of the target's numbers (in any writing that agrees) are, ties broken by shared caption
    and header words, then by position (tables sharing no number fill any places left, in order);
    the note says how many were left out.
    """
    if len(sources) <= max_aligned:
        return list(range(len(sources))), None
    index = _value_tables(sources)
    shared: Counter[int] = Counter()
    for keys in NumberIndex.of(target).variants.values():
        holding: set[int] = set()
        for key in keys:
            tables = index.tables.get(key, ())
            if len(tables) <= _COMMON_VALUE_TABLES:
                holding.update(tables)
        shared.update(holding)
    target_words = words(target)
    order = sorted(shared, key=lambda i: (-shared[i], -_jaccard(target_words, words(sources[i])), i))
    chosen = order[:max_aligned]
    if len(chosen) < max_aligned:  # too few share a value: the first others fill the places
        chosen.extend([i for i in range(len(sources)) if i not in shared][: max_aligned - len(chosen)])
    chosen.sort()
    note = (
        f"only {max_aligned} of the {len(sources):,} source tables were compared in full (the limit): "
        f"those holding the most of the target's numbers; {len(shared):,} hold any of them"
    )
    return chosen, note


def rank_tables(
    target: Grid, sources: Sequence[Grid], indices: Sequence[int] | None = None
) -> list[Candidate]:
    """Source tables scored against the target, best first (ties by position): every one, or only
    those at ``indices`` (see :func:`shortlist`)."""
    target_words = words(target)
    scored = []
    for i in range(len(sources)) if indices is None else indices:
        source = sources[i]
        alignment = align(target, source)
        scored.append(Candidate(i, alignment.support, _jaccard(target_words, words(source)), alignment))
    return sorted(scored, key=lambda c: (-c.score, c.index))


def match_table(
    target: Grid,
    sources: Sequence[Grid],
    min_support: float = MIN_SUPPORT,
    max_aligned: int = MAX_ALIGNED_TABLES,
) -> tuple[Candidate | None, list[Candidate]]:
    """The source table the target's numbers come from (None when none supports it) and the ranking
    of the source tables compared (at most ``max_aligned``, see :func:`shortlist`)."""
    indices, _ = shortlist(target, sources, max_aligned)
    ranking = rank_tables(target, sources, indices)
    best = ranking[0] if ranking and ranking[0].support >= min_support else None
    return best, ranking
