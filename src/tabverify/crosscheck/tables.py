"""Table matching: which of a source paper's tables the numbers of a target table come from.

Each candidate is aligned with the target (:func:`tabverify.crosscheck.cells.align`) and ranked by
the support of that alignment: the target numbers that sit in rows and columns corresponding to the
candidate's and agree with its values (exact 1, rounded 0.8, scaled 0.7), each counted fully when
its row label or column header shares a word with the source cell's, ``unlabelled_factor`` of that
otherwise (values alone coincide across unrelated tables; values under the same labels do not).
Shared caption and header words break ties.

Whether the best candidate is the source at all, or the citation credits a method but copies no
numbers ("no match"), is decided by a small logistic model (:class:`MatchModel`) over three
measures of :class:`Evidence`, fixed a priori (they are the ones issue 13 proposed; none was
selected by its score on the development pairs) and free of absolute counts of rows: the share of the
target's numbers found, how much of the agreement is in specific values (three significant digits
or more: "100", "12" or "0.5" agree by chance across unrelated tables, "40.6" seldom does) and the
caption and header similarity. :data:`DEFAULT_MODEL` was fitted on the arXiVeri development pairs; the
benchmark cross-validates the whole choice (model and ``unlabelled_factor``) by target paper
(:mod:`tabverify.bench.arxiveri`).

With more than :data:`MAX_ALIGNED_TABLES` source tables, only that many - those holding the most of
the target's numbers, found through an index of the sources' values built once - are aligned
(:func:`shortlist`).
"""

from __future__ import annotations

import math
import re
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from tabverify.crosscheck.cells import (
    AGREEMENT_WEIGHT,
    MAX_LABEL_TEXT,
    UNLABELLED_FACTOR,
    Alignment,
    NumberIndex,
    align,
    check_time,
    per_grid,
)
from tabverify.table.grid import Grid
from tabverify.table.scientific import clean_latex

SPECIFIC_DIGITS = 3
"""Values written with at least this many significant digits are specific evidence (set a priori,
not fitted): two unrelated cells rarely agree on "40.6", often on "100", "12" or "0.5"."""

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
        support: summed agreement weight of the aligned cell pairs (pairs whose labels disagree
            weighted by the ranking's ``unlabelled_factor``).
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


@dataclass(frozen=True)
class Evidence:
    """Evidence that a candidate is the source of the target's numbers.

    Attributes:
        share: agreement weight of the pairs whose row or column labels agree, over the number of
            the target's numbers (the part of the target the candidate explains, in [0, 1]).
        specific: agreement weight of the label-agreeing pairs whose target value has at least
            :data:`SPECIFIC_DIGITS` significant digits.
        text: caption and header word similarity (:attr:`Candidate.text_similarity`).
    """

    share: float
    specific: float
    text: float

    def features(self) -> tuple[float, float, float]:
        """The model's inputs: the share and the text similarity as they are, the specific
        agreement on a log scale (the tenth specific value adds less than the second)."""
        return (self.share, self.text, math.log1p(self.specific))


def significant_digits(value: Decimal) -> int:
    """Significant digits of a value as written, trailing zeros of an integer part not counted
    ("40.6" -> 3, "100" -> 1, "0.50" -> 1, "12.05" -> 4)."""
    return len(value.normalize().as_tuple().digits)


def evidence(target: Grid, candidate: Candidate) -> Evidence:
    """The :class:`Evidence` a candidate's alignment gives for it being the target's source."""
    numbers = NumberIndex.of(target).numbers
    labelled = specific = 0.0
    for pair in candidate.alignment.pairs:
        weight = AGREEMENT_WEIGHT.get(pair.agreement, 0.0)
        if pair.labelled:
            labelled += weight
            measured = numbers.get(pair.target)
            if measured is not None and significant_digits(measured.value) >= SPECIFIC_DIGITS:
                specific += weight
    return Evidence(labelled / max(1, len(numbers)), specific, candidate.text_similarity)


@dataclass(frozen=True)
class MatchModel:
    """A logistic model of "the best-ranked candidate is the target's source", over standardised
    :meth:`Evidence.features`, with the ranking's weight of pairs whose labels disagree.

    Attributes:
        mean, scale: per-feature standardisation (of the examples it was fitted on).
        weights: one per feature; ``bias`` the intercept.
        unlabelled_factor: the ranking's weight of pairs whose labels disagree (:func:`rank_tables`).
    """

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    unlabelled_factor: float = UNLABELLED_FACTOR

    def logit(self, found: Evidence) -> float:
        """Log-odds that the candidate with this evidence is the source."""
        z = ((x - m) / s for x, m, s in zip(found.features(), self.mean, self.scale, strict=True))
        return self.bias + sum(w * v for w, v in zip(self.weights, z, strict=True))

    def accepts(self, found: Evidence) -> bool:
        """The candidate is more likely the source than not (probability >= 0.5)."""
        return self.logit(found) >= 0.0

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (rounded for reading)."""
        return {
            "features": ["share", "text", "log1p(specific)"],
            "mean": [round(v, 4) for v in self.mean],
            "scale": [round(v, 4) for v in self.scale],
            "weights": [round(v, 4) for v in self.weights],
            "bias": round(self.bias, 4),
            "unlabelled_factor": self.unlabelled_factor,
        }


L2_PENALTY = 1.0
"""Ridge penalty of :func:`fit_model` on standardised features (set a priori, not tuned)."""


def fit_model(
    examples: Sequence[Evidence],
    labels: Sequence[bool],
    unlabelled_factor: float = UNLABELLED_FACTOR,
    l2: float = L2_PENALTY,
) -> MatchModel:
    """Fit a :class:`MatchModel` by penalised maximum likelihood (Newton steps; deterministic).

    Args:
        examples: the evidence of each pair's best-ranked candidate.
        labels: True where that candidate is the gold source table.
        unlabelled_factor: stored in the model (the ranking the examples were ranked with).
        l2: ridge penalty on the weights (not on the bias).
    """
    x = np.array([e.features() for e in examples], dtype=float).reshape(len(examples), -1)
    y = np.array(labels, dtype=float)
    if len(x) == 0:
        raise ValueError("fit_model needs at least one example")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    penalty = np.diag(np.r_[np.full(z.shape[1] - 1, l2), 0.0])
    w = np.zeros(z.shape[1])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        step = np.linalg.solve((z * (p * (1 - p))[:, None]).T @ z + penalty + 1e-9 * np.eye(len(w)),
                               z.T @ (p - y) + penalty @ w)  # fmt: skip
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    return MatchModel(
        tuple(map(float, mean)),
        tuple(map(float, scale)),
        tuple(map(float, w[:-1])),
        float(w[-1]),
        unlabelled_factor,
    )


DEFAULT_MODEL = MatchModel(
    mean=(0.2293, 0.2378, 1.6522),
    scale=(0.2565, 0.1422, 1.3997),
    weights=(1.3209, 1.4668, 1.5228),
    bias=2.2997,
    unlabelled_factor=0.5,
)
"""Fitted on the 66 arXiVeri development pairs (``tabverify bench arxiveri --data DIR --cv 5``
prints it as ``cv.full_model``); its cross-validated accuracy is in docs/benchmarks.md."""


def words(grid: Grid) -> set[str]:
    """Lower-case caption and header words of a grid (LaTeX removed), computed once per grid."""
    return per_grid(grid, "words", _words)


def _words(grid: Grid) -> set[str]:
    # each cell read to MAX_LABEL_TEXT characters, as labels are (a 45 MB first column of words
    # would otherwise be held as a set for the whole run)
    check_time()
    text = [grid.caption]
    for i in range(min(grid.header_row_count, grid.n_rows)):
        text.extend(c.text[:MAX_LABEL_TEXT] for c in grid.cells[i])
    text.extend(grid.text(i, 0)[:MAX_LABEL_TEXT] for i in range(grid.n_rows) if grid.n_columns)
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
            check_time()
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
    target: Grid,
    sources: Sequence[Grid],
    indices: Sequence[int] | None = None,
    unlabelled_factor: float = UNLABELLED_FACTOR,
) -> list[Candidate]:
    """Source tables scored against the target, best first (ties by position): every one, or only
    those at ``indices`` (see :func:`shortlist`); pairs whose labels disagree count
    ``unlabelled_factor`` of their agreement weight."""
    target_words = words(target)
    scored = []
    for i in range(len(sources)) if indices is None else indices:
        source = sources[i]
        alignment = align(target, source)
        scored.append(Candidate(i, alignment.support, _jaccard(target_words, words(source)), alignment))
    return rerank(scored, unlabelled_factor)


def rerank(candidates: Sequence[Candidate], unlabelled_factor: float) -> list[Candidate]:
    """The candidates with their support recomputed for ``unlabelled_factor``, best first (ties by
    position); the alignments are kept (they do not depend on it)."""
    scored = [
        Candidate(
            c.index,
            sum(
                AGREEMENT_WEIGHT.get(p.agreement, 0.0) * (1.0 if p.labelled else unlabelled_factor)
                for p in c.alignment.pairs
            ),
            c.text_similarity,
            c.alignment,
        )
        for c in candidates
    ]
    return sorted(scored, key=lambda c: (-c.score, c.index))


_OWN_STUDY = re.compile(r"\bablat(?:ions?|ing|ed|ive)\b", re.IGNORECASE)

OWN_STUDY_NOTE = (
    "the caption calls this table an ablation, the paper's own experiments: no source table is taken as "
    "the source of its numbers (values it shares with one are not read as copies)"
)
"""Why an ablation table is answered "no match" (:func:`own_study`)."""


def own_study(target: Grid) -> bool:
    """Whether the target's caption calls it an ablation ("Ablation study on ...", "ablated
    versions"): the citing paper's own experiments, whose numbers are not copies (a rule set a priori,
    like the row rule for "ours", re-implemented and reproduced results; see docs/benchmarks.md)."""
    return bool(_OWN_STUDY.search(clean_latex(target.caption)))


def choose(target: Grid, ranking: Sequence[Candidate], model: MatchModel = DEFAULT_MODEL) -> Candidate | None:
    """The best-ranked candidate when ``model`` accepts its evidence, else None ("no match"); always
    None for an ablation table (:func:`own_study`)."""
    if not ranking or not ranking[0].alignment.pairs or own_study(target):
        return None
    return ranking[0] if model.accepts(evidence(target, ranking[0])) else None


def match_table(
    target: Grid,
    sources: Sequence[Grid],
    model: MatchModel = DEFAULT_MODEL,
    max_aligned: int = MAX_ALIGNED_TABLES,
) -> tuple[Candidate | None, list[Candidate]]:
    """The source table the target's numbers come from (None when none supports it) and the ranking
    of the source tables compared (at most ``max_aligned``, see :func:`shortlist`)."""
    indices, _ = shortlist(target, sources, max_aligned)
    ranking = rank_tables(target, sources, indices, model.unlabelled_factor)
    return choose(target, ranking, model), ranking
