"""The verdict model: decides ENTAILED / REFUTED from what the search found.

The ranker orders readings of a statement; this model reads the whole picture: whether the
linked values sit in one row, which kinds of program came out True or False when they consumed
every linked entity, how much of the statement was linked, and the ranker's vote. It is a
logistic regression on sparse features, trained on train-split labels.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tabverify.errors import ModelError
from tabverify.models import check_array, not_a_model, read_arrays
from tabverify.program.ranker import comparison_order
from tabverify.program.search import Candidate
from tabverify.program.tree import Call
from tabverify.program.triggers import TRIGGER_WORDS, active_families
from tabverify.table import Table
from tabverify.text.linking import Linking

MODEL_FILE = "verdict_model.npz"
_LIGHT_WORDS = frozenset("the a an be of in and for to at on with by that there have as".split())


def _shape(program: Call) -> str:
    return program.func + "(" + ",".join(a.func for a in program.args if isinstance(a, Call)) + ")"


def statement_features(
    table: Table, linking: Linking, candidates: Sequence[Candidate], probabilities: np.ndarray
) -> dict[str, float]:
    """Features of one statement. ``candidates`` are ranked best first with their probabilities."""
    f: dict[str, float] = {"bias": 1.0}
    families = active_families(linking.tokens)
    for family in families:
        f[f"fam:{family}"] = 1.0
    # do the linked values sit in one row? (the core of single-row facts)
    rows_of_span: dict[object, set[int]] = defaultdict(set)
    for link in linking.cells:
        rows_of_span[link.span].update(ref.row for ref in link.cells)
    if rows_of_span:
        rows = Counter(r for rs in rows_of_span.values() for r in rs)
        best = max(rows.values())
        f["row_cov"] = best / len(rows_of_span)
        f["row_all"] = float(best == len(rows_of_span))
        f[f"n_cell_spans:{min(len(rows_of_span), 4)}"] = 1.0
        # numbers of the statement found in the best row
        best_rows = [r for r, n in rows.items() if n == best]
        numbers = [n for n in linking.numbers if n.span not in rows_of_span]
        if numbers:
            fetch = getattr(table.rows, "fetch", None)  # a database table reads the rows in one query
            if fetch is not None:
                fetch(best_rows)
            found = 0
            for number in numbers:
                literal = number.literal.lower()
                if any(
                    literal in table.rows[r][c].text.lower()
                    for r in best_rows
                    for c in range(table.n_columns)
                ):
                    found += 1
            f["num_in_row"] = found / len(numbers)
    else:
        f["no_cell_link"] = 1.0
    words = [t for t in linking.tokens if t.text[0].isalnum()]
    covered = set()
    for link in linking.cells + linking.headers + linking.numbers:
        covered.update(t.span for t in words if link.span.contains(t.span))
    content = [t for t in words if t.stem not in _LIGHT_WORDS]
    f["unlinked"] = 1 - sum(1 for t in content if t.span in covered) / max(1, len(content))
    partial = sum(1 for link in linking.cells if not link.exact)
    f["partial_links"] = min(partial, 4) / 4
    entities = {link.span for link in linking.cells} | {link.span for link in linking.numbers}
    if not candidates:
        f["no_candidates"] = 1.0
        return _crossed(f, families)
    f["top_true"] = float(candidates[0].value)
    f[f"top:{_shape(candidates[0].program)}|{candidates[0].value}"] = 1.0
    f["vote"] = float(sum(p for c, p in zip(candidates, probabilities, strict=True) if c.value))
    most = max(len(c.used) for c in candidates)
    f["full_cover"] = float(most == len(entities))
    covering = [(c, p) for c, p in zip(candidates, probabilities, strict=True) if len(c.used) == most]
    mass = sum(p for _, p in covering)
    if mass > 0:
        f["vote_max_cover"] = float(sum(p for c, p in covering if c.value) / mass)
    groups: dict[str, list[bool]] = defaultdict(list)
    for candidate in candidates:
        coverage = (
            "full"
            if len(candidate.used) == len(entities)
            else ("max" if len(candidate.used) == most else "part")
        )
        groups[f"{_shape(candidate.program)}|{coverage}"].append(candidate.value)
        groups[f"{candidate.program.func}|{coverage}"].append(candidate.value)
        order = comparison_order(candidate.program, linking)
        if order is not None:
            groups[f"{_shape(candidate.program)}:{order}|{coverage}"].append(candidate.value)
    cues = sorted({t.stem for t in linking.tokens if t.stem in TRIGGER_WORDS and t.stem not in _LIGHT_WORDS})
    for key, values in groups.items():
        f[f"anyT:{key}"] = float(any(values))
        f[f"allT:{key}"] = float(all(values))
        if not key.endswith("part"):
            for family in families:
                f[f"{family}|anyT:{key}"] = float(any(values))
                f[f"{family}|allT:{key}"] = float(all(values))
            # direction words ("highest", "fewer", "only") against what each program shape found
            for cue in cues:
                f[f"w:{cue}|anyT:{key}"] = float(any(values))
                f[f"w:{cue}|allT:{key}"] = float(all(values))
    # how many of the statement's entities some true program accounts for
    if entities:
        supported = set().union(*(c.used for c in candidates if c.value))
        refuting = set().union(*(c.used for c in candidates if not c.value))
        f["supported_frac"] = len(supported & entities) / len(entities)
        f["refuted_only_frac"] = len((refuting - supported) & entities) / len(entities)
        numbers = {n.span for n in linking.numbers} - {c.span for c in linking.cells}
        if numbers:
            f["numbers_supported"] = len(supported & numbers) / len(numbers)
    return _crossed(f, families)


# summary features that mean different things for different kinds of statement
_SUMMARY = (
    "row_all",
    "row_cov",
    "num_in_row",
    "supported_frac",
    "vote",
    "top_true",
    "full_cover",
    "unlinked",
    "vote_max_cover",
    "numbers_supported",
    "refuted_only_frac",
    "no_cell_link",
    "partial_links",
)


def _crossed(f: dict[str, float], families: frozenset[str]) -> dict[str, float]:
    present = [k for k in _SUMMARY if k in f]
    for key in present:
        for family in families:
            f[f"fam:{family}|{key}"] = f[key]
    for i, a in enumerate(present):
        for b in present[i + 1 :]:
            f[f"{a}*{b}"] = f[a] * f[b]
    return f


class VerdictModel:
    """Logistic regression over sparse statement features (full-batch Adam, L2)."""

    def __init__(
        self, l2: float = 1e-4, iterations: int = 800, learning_rate: float = 0.05, min_count: int = 10
    ) -> None:
        self.l2 = l2
        self.iterations = iterations
        self.learning_rate = learning_rate
        self.min_count = min_count
        self.vocabulary: dict[str, int] = {}
        self.weights = np.zeros(0)

    def _sparse(self, rows: Sequence[dict[str, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        indices, values, offsets = [], [], [0]
        for row in rows:
            for key, value in row.items():
                j = self.vocabulary.get(key)
                if j is not None and value:
                    indices.append(j)
                    values.append(value)
            offsets.append(len(indices))
        return (
            np.array(indices, dtype=np.int64),
            np.array(values, dtype=np.float64),
            np.array(offsets, dtype=np.int64),
        )

    def _logits(self, indices: np.ndarray, values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        out = np.zeros(len(offsets) - 1)
        if len(indices):
            nonempty = offsets[:-1] < offsets[1:]
            sums = np.add.reduceat(self.weights[indices] * values, offsets[:-1][nonempty])
            out[nonempty] = sums
        return out

    def fit(
        self,
        rows: Sequence[dict[str, float]],
        labels: Sequence[int],
        progress: Callable[[int, int], None] | None = None,
    ) -> VerdictModel:
        """Learn from feature dicts and 0/1 labels."""
        counts = Counter(key for row in rows for key, value in row.items() if value)
        self.vocabulary = {
            key: i for i, key in enumerate(sorted(k for k, n in counts.items() if n >= self.min_count))
        }
        indices, values, offsets = self._sparse(rows)
        y = np.asarray(labels, dtype=np.float64)
        lengths = np.diff(offsets)
        self.weights = np.zeros(len(self.vocabulary))
        m = np.zeros_like(self.weights)
        v = np.zeros_like(self.weights)
        for step in range(1, self.iterations + 1):
            p = 1 / (1 + np.exp(-self._logits(indices, values, offsets)))
            residual = np.repeat(p - y, lengths)
            grad = np.bincount(indices, weights=residual * values, minlength=len(self.weights)) / len(y)
            grad += self.l2 * self.weights
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            self.weights -= (
                self.learning_rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
            )
            if progress is not None and step % 50 == 0:
                progress(step, self.iterations)
        return self

    def probability(self, row: dict[str, float]) -> float:
        """P(ENTAILED) for one statement's features."""
        indices, values, offsets = self._sparse([row])
        return float(1 / (1 + np.exp(-self._logits(indices, values, offsets)[0])))

    def save(self, path: str | Path) -> None:
        """Write vocabulary and weights to one compressed .npz file."""
        keys = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        np.savez_compressed(
            path,
            weights=self.weights.astype(np.float32),
            vocabulary=np.frombuffer(json.dumps(keys).encode(), dtype=np.uint8),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> VerdictModel:
        """Load from ``path`` or the model shipped with the package.

        The file must hold ``weights`` (finite floats, 1-D) and ``vocabulary`` (bytes of a UTF-8
        JSON list of distinct feature names, one per weight).

        Raises:
            ModelError: the file is missing, unreadable, or not a verdict model file (missing
                arrays, wrong dtypes or shapes, a vocabulary that does not decode or does not
                match the weights).
        """

        def fail(reason: str) -> ModelError:
            return not_a_model(MODEL_FILE, path, "verdict", reason)

        data = read_arrays(MODEL_FILE, path)
        weights = check_array(data, "weights", "f", 1, fail)
        vocabulary = check_array(data, "vocabulary", "u", 1, fail)
        if vocabulary.dtype.itemsize != 1:
            raise fail(f"'vocabulary' has dtype {vocabulary.dtype}, expected bytes (uint8)")
        try:
            keys = json.loads(vocabulary.tobytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise fail(f"'vocabulary' is not UTF-8 JSON: {exc}") from exc
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise fail("'vocabulary' is not a JSON list of feature names")
        if len(set(keys)) != len(keys):
            raise fail("'vocabulary' names a feature twice")
        if len(keys) != len(weights):
            raise fail(f"{len(keys)} feature names but {len(weights)} weights")
        if not np.all(np.isfinite(weights)):
            raise fail("weights that are not finite numbers")
        model = cls()
        model.vocabulary = {k: i for i, k in enumerate(keys)}
        model.weights = weights.astype(np.float64)
        return model
