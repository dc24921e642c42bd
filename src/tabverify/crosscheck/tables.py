"""Table matching: which of a source paper's tables the numbers of a target table come from.

Each candidate is aligned with the target (:func:`tabverify.crosscheck.cells.align`); its score is
the support of that alignment: the target numbers that sit in rows and columns corresponding to
the candidate's and agree with its values (exact 1, rounded 0.8, scaled 0.7), each counted fully
when its row label or column header shares a word with the source cell's, a quarter otherwise
(values alone coincide across unrelated tables; values under the same labels do not). Words break
ties: shared caption and header vocabulary. No candidate is chosen when the best support is below
``min_support`` (the citation credits a method but copies no numbers).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tabverify.crosscheck.cells import Alignment, align
from tabverify.table.grid import Grid
from tabverify.table.scientific import clean_latex

# calibrated on the arXiVeri development pairs (see docs/benchmarks.md): the smallest support that
# separates copied tables from incidental agreement
MIN_SUPPORT = 2.0

_WORD = re.compile(r"[a-z][a-z0-9]+|\d+(?:\.\d+)?")


@dataclass(frozen=True)
class Candidate:
    """One source table scored against the target.

    Attributes:
        index: position of the table among the source tables.
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
    """Lower-case caption and header words of a grid (LaTeX removed)."""
    text = [grid.caption]
    for i in range(min(grid.header_row_count, grid.n_rows)):
        text.extend(c.text for c in grid.cells[i])
    text.extend(grid.text(i, 0) for i in range(grid.n_rows) if grid.n_columns)
    return {w for w in _WORD.findall(clean_latex(" ".join(text)).lower()) if not w[0].isdigit()}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def rank_tables(target: Grid, sources: Sequence[Grid]) -> list[Candidate]:
    """Every source table scored against the target, best first (ties by position)."""
    target_words = words(target)
    scored = []
    for i, source in enumerate(sources):
        alignment = align(target, source)
        scored.append(Candidate(i, alignment.support, _jaccard(target_words, words(source)), alignment))
    return sorted(scored, key=lambda c: (-c.score, c.index))


def match_table(
    target: Grid, sources: Sequence[Grid], min_support: float = MIN_SUPPORT
) -> tuple[Candidate | None, list[Candidate]]:
    """The source table the target's numbers come from (None when none supports it) and the ranking."""
    ranking = rank_tables(target, sources)
    best = ranking[0] if ranking and ranking[0].support >= min_support else None
    return best, ranking
