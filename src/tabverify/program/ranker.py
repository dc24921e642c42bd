"""The program ranker: a log-linear model over (statement, program) features, trained with weak
supervision (programs whose result equals the statement's label are weak positives).

Training maximises the marginal likelihood of the weak positives among each statement's
candidates (listwise), which spreads credit over consistent programs instead of trusting any
single spurious one. Features are hashed, so the model is a single small weight vector.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tabverify.errors import ModelError
from tabverify.models import check_array, not_a_model, read_arrays
from tabverify.program.search import Candidate
from tabverify.program.tree import AllRows, Call, Header, Literal, Node
from tabverify.program.triggers import TRIGGER_WORDS
from tabverify.table import Table
from tabverify.text.linking import STOP_WORDS, Linking
from tabverify.text.spans import Span

N_FEATURES = 1 << 18
WEIGHTS_FILE = "ranker_weights.npz"


def _template(node: Node) -> str:
    if isinstance(node, Call):
        return f"{node.func}{{{';'.join(_template(a) for a in node.args)}}}"
    if isinstance(node, Header):
        return "H"
    if isinstance(node, AllRows):
        return "all"
    return "V"


def _skeleton(node: Node, depth: int = 2) -> str:
    if isinstance(node, Call):
        if depth == 0:
            return node.func
        return f"{node.func}({','.join(_skeleton(a, depth - 1) for a in node.args if isinstance(a, Call))})"
    return ""


CUE_WORDS = (
    TRIGGER_WORDS
    | STOP_WORDS
    | frozenset("while but same different exact exactly approximately about around least most as per".split())
)


@dataclass(frozen=True)
class _StatementFacts:
    """What every candidate's features read from the statement and table, computed once."""

    linking: Linking
    cue_words: list[str]
    entities: frozenset[Span]
    numbers: frozenset[Span]
    named: frozenset[str]
    cell_columns: frozenset[str]
    columns_of_span: dict[Span, frozenset[int | None]]


def _statement_facts(linking: Linking, table: Table) -> _StatementFacts:
    # only cue words (triggers and function words) are crossed with the program, so the model
    # learns how statements are phrased, not which entities appeared in training tables
    columns_of_span: dict[Span, set[int | None]] = {}
    for link in linking.cells:
        columns_of_span.setdefault(link.span, set()).add(link.column)
    return _StatementFacts(
        linking=linking,
        cue_words=sorted({t.stem for t in linking.tokens if t.stem in CUE_WORDS}),
        entities=frozenset(link.span for link in linking.cells + linking.numbers),
        numbers=frozenset(link.span for link in linking.numbers),
        named=frozenset(table.header[link.column] for link in linking.headers if link.column is not None),
        cell_columns=frozenset(
            table.header[link.column] for link in linking.cells if link.column is not None
        ),
        columns_of_span={span: frozenset(columns) for span, columns in columns_of_span.items()},
    )


def features(linking: Linking, candidate: Candidate, table: Table) -> list[str]:
    """The feature strings of one (statement, program) pair."""
    return _features(_statement_facts(linking, table), candidate, table)


def _features(facts: _StatementFacts, candidate: Candidate, table: Table) -> list[str]:
    linking, cue_words, named = facts.linking, facts.cue_words, facts.named
    program = candidate.program
    funcs = program.functions
    fset = sorted(set(funcs))
    out = [
        f"t:{_template(program)}",
        f"sk:{_skeleton(program)}",
        f"top:{program.func}",
        f"size:{min(program.size, 8)}",
    ]
    out += [f"f:{f}" for f in fset]
    out += [f"w:{w}|f:{f}" for w in cue_words for f in fset]
    out += [f"w:{w}|top:{program.func}" for w in cue_words]
    out += [f"w:{w}|sk:{_skeleton(program, 1)}" for w in cue_words]
    # entity coverage
    unused = len(facts.entities - candidate.used)
    out.append(f"unused:{min(unused, 4)}")
    out.append(f"used:{min(len(candidate.used), 4)}")
    out.append(f"unused:{min(unused, 4)}|top:{program.func}")
    numbers_unused = len(facts.numbers - candidate.used)
    out.append(f"num_unused:{min(numbers_unused, 3)}")
    # do the columns the program reads match the columns the statement names?
    for header in dict.fromkeys(program.headers):
        out.append("col:named" if header in named else "col:unnamed")
        out.append("col:celllinked" if header in facts.cell_columns else "col:notcelllinked")
    # partial vs whole-cell literals
    literal_texts = set(program.literals)
    for link in linking.cells:
        if link.literal in literal_texts:
            out.append("lit:exact" if link.exact else "lit:partial")
            out.append(f"lit:ncols{min(len(facts.columns_of_span[link.span]), 3)}")
    # which way round a comparison reads: the left argument's entities first in the statement?
    for node in program.walk():
        order = comparison_order(node, linking) if isinstance(node, Call) else None
        if order is not None:
            out.append(f"order:{node.func}:{order}")  # type: ignore[union-attr]
            out += [f"w:{w}|order:{node.func}:{order}" for w in cue_words]  # type: ignore[union-attr]
    for node in program.walk():
        if isinstance(node, Call) and node.func == "hop":
            out.append(f"hop_named:{table.header[table.column_index(node.args[1].name) or 0] in named}")  # type: ignore[union-attr]
        if isinstance(node, Literal) and node.text[:1].isdigit():
            out.append(f"numlit|top:{program.func}")
    return out


_ORDERED = frozenset({"greater", "less", "diff", "before", "after"})


def _first_literal_position(node: Node, linking: Linking) -> int | None:
    """Where in the statement the first linked literal of a sub-program sits."""
    positions = []
    literals = set(node.literals) if isinstance(node, Call) else set()
    for link in linking.cells + linking.numbers:
        if link.literal in literals:
            positions.append(link.span.start)
    return min(positions) if positions else None


def comparison_order(node: Call, linking: Linking) -> str | None:
    """For a comparison of two sub-programs (greater, diff, before...): "fwd" when the left one's
    entities come first in the statement, "bwd" when they come last, None otherwise. For an eq
    whose first argument is such a comparison (eq{diff{..}; n}), the inner order."""
    if node.func == "eq" and isinstance(node.args[0], Call) and node.args[0].func in _ORDERED:
        node = node.args[0]
    if node.func not in _ORDERED or not all(isinstance(a, Call) for a in node.args[:2]):
        return None
    left, right = (_first_literal_position(a, linking) for a in node.args[:2])
    if left is None or right is None or left == right:
        return None
    return "fwd" if left < right else "bwd"


def hash_features(names: Sequence[str]) -> np.ndarray:
    """Stable hashing of feature strings into indices (crc32, not Python's salted hash)."""
    return np.fromiter((zlib.crc32(n.encode()) % N_FEATURES for n in names), dtype=np.int64, count=len(names))


@dataclass
class Group:
    """The candidates of one training statement: hashed features, results, and the gold label."""

    indices: np.ndarray  # concatenated feature indices
    offsets: np.ndarray  # start of each candidate in indices (len = n_candidates + 1)
    results: np.ndarray  # bool per candidate
    label: bool


def make_group(linking: Linking, candidates: Sequence[Candidate], table: Table, label: bool) -> Group:
    """Featurize a statement's candidates for training."""
    facts = _statement_facts(linking, table)
    hashed = [hash_features(_features(facts, c, table)) for c in candidates]
    offsets = np.zeros(len(hashed) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(h) for h in hashed])
    indices = np.concatenate(hashed) if hashed else np.zeros(0, dtype=np.int64)
    return Group(indices, offsets, np.array([c.value for c in candidates], dtype=bool), label)


class Ranker:
    """Scores candidate programs for a statement; higher is more likely the intended reading.

    Hyper-parameters are set in ``__init__``; ``fit`` learns from weakly labelled groups;
    ``score`` ranks new candidates.
    """

    def __init__(self, epochs: int = 4, learning_rate: float = 0.2, l2: float = 1e-6, seed: int = 0) -> None:
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.l2 = l2
        self.seed = seed
        self.weights = np.zeros(N_FEATURES, dtype=np.float64)

    def _scores(self, group: Group) -> np.ndarray:
        if len(group.indices) == 0:
            return np.zeros(len(group.offsets) - 1)
        sums = np.add.reduceat(self.weights[group.indices], group.offsets[:-1])
        empty = group.offsets[:-1] == group.offsets[1:]
        sums[empty] = 0.0
        return sums

    def fit(self, groups: Sequence[Group], progress=None) -> Ranker:
        """Learn weights by maximising the likelihood of the weak positives (Adagrad)."""
        rng = np.random.default_rng(self.seed)
        usable = [
            g
            for g in groups
            if len(g.results) and g.results.any() != g.results.all() and (g.results == g.label).any()
        ]
        accumulator = np.full(N_FEATURES, 1e-8)
        for epoch in range(self.epochs):
            order = rng.permutation(len(usable))
            for step, k in enumerate(order):
                group = usable[k]
                scores = self._scores(group)
                scores -= scores.max()
                p = np.exp(scores)
                p /= p.sum()
                positive = group.results == group.label
                q = np.where(positive, p, 0.0)
                q /= q.sum()
                coefficient = p - q  # gradient of -log sum_{positive} p wrt each candidate's score
                lengths = np.diff(group.offsets)
                idx = group.indices
                grad = np.repeat(coefficient, lengths)
                np.add.at(accumulator, idx, grad * grad)
                update = self.learning_rate * grad / np.sqrt(accumulator[idx])
                np.subtract.at(self.weights, idx, update)
                if self.l2 and step % 1000 == 0:
                    self.weights *= 1 - self.l2 * 1000
                if progress is not None:
                    progress(epoch, step, len(usable))
        return self

    def score(self, linking: Linking, candidates: Sequence[Candidate], table: Table) -> np.ndarray:
        """One score per candidate (higher is better)."""
        if not candidates:
            return np.zeros(0)
        return self._scores(make_group(linking, candidates, table, False))

    def save(self, path: str | Path) -> None:
        """Write the non-zero weights to a compressed .npz file (small enough to ship)."""
        nonzero = np.flatnonzero(np.abs(self.weights) > 1e-4)
        np.savez_compressed(
            path,
            indices=nonzero.astype(np.int32),
            values=self.weights[nonzero].astype(np.float16),
            n_features=np.array([N_FEATURES]),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> Ranker:
        """Load weights from ``path``, or the ones shipped with the package.

        The file must hold ``indices`` (integers below the feature size, 1-D), ``values`` (finite
        floats, one per index) and ``n_features`` (one integer, the feature size this code hashes to).

        Raises:
            ModelError: the file is missing, unreadable, or not a ranker model file (missing
                arrays, wrong dtypes or shapes, indices out of range, another feature size).
        """

        def fail(reason: str) -> ModelError:
            return not_a_model(WEIGHTS_FILE, path, "ranker", reason)

        data = read_arrays(WEIGHTS_FILE, path)
        indices = check_array(data, "indices", "iu", 1, fail)
        values = check_array(data, "values", "f", 1, fail)
        n_features = check_array(data, "n_features", "iu", 1, fail)
        if n_features.shape != (1,):
            raise fail(f"'n_features' has shape {n_features.shape}, expected (1,)")
        if int(n_features[0]) != N_FEATURES:
            raise fail(f"trained with {int(n_features[0])} hashed features, this version uses {N_FEATURES}")
        if len(indices) != len(values):
            raise fail(f"{len(indices)} indices but {len(values)} values")
        if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= N_FEATURES):
            raise fail(f"indices outside 0..{N_FEATURES - 1}")
        if not np.all(np.isfinite(values)):
            raise fail("values that are not finite numbers")
        ranker = cls()
        ranker.weights[indices.astype(np.int64)] = values.astype(np.float64)
        return ranker
