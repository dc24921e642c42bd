"""The verdict model: decides ENTAILED / REFUTED from what the search found.

The ranker orders readings of a statement; this model reads the whole picture: whether the
linked values sit in one row, which kinds of program came out True or False when they consumed
every linked entity, how much of the statement was linked, the ranker's vote, and the statement's
words themselves. It is a
logistic regression on sparse features, or gradient-boosted trees over the same features (what
``tabverify train tabfact`` fits and ships), trained on train-split labels. Training the trees
needs scikit-learn (the ``lake``/``dev`` extras); reading them needs only numpy.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
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
from tabverify.verify.coverage import kinded_gaps, statement_cues

MODEL_FILE = "verdict_model.npz"
_LIGHT_WORDS = frozenset("the a an be of in and for to at on with by that there have as".split())


def _shape(program: Call) -> str:
    return program.func + "(" + ",".join(a.func for a in program.args if isinstance(a, Call)) + ")"


def statement_features(
    table: Table, linking: Linking, candidates: Sequence[Candidate], probabilities: np.ndarray
) -> dict[str, float]:
    """Features of one statement. ``candidates`` are ranked best first with their probabilities."""
    f: dict[str, float] = {"bias": 1.0}
    # the statement's words on their own: how a statement is phrased says something of its label
    # whatever the programs found (only words seen BOOSTED_MIN_COUNT times in training are kept)
    for token in linking.tokens:
        if token.text[:1].isalpha():
            f[f"word:{token.stem}"] = 1.0
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
    f = _crossed(f, families)
    f.update(_coverage_features(table, linking, candidates, probabilities))
    return f


def _coverage_features(
    table: Table, linking: Linking, candidates: Sequence[Candidate], probabilities: np.ndarray
) -> dict[str, float]:
    """What the coverage check (:mod:`tabverify.verify.coverage`) says of the ranked programs:
    the kinds of gap the top program has, the value and rank of the best-ranked program without
    gaps, the probability mass of such programs and its True share, whether some covering program
    is True and whether some is False (``c:none`` when no program covers the statement's words).
    On two hold-outs of train tables these added 0.74 and 0.34 points (docs/benchmarks.md)."""
    f: dict[str, float] = {}
    cues = statement_cues(linking, table)
    p = np.asarray(probabilities, dtype=float)
    cover = np.zeros(len(candidates), dtype=bool)
    for i, candidate in enumerate(candidates):
        gaps = kinded_gaps(candidate, cues)
        cover[i] = not gaps
        if i == 0:
            for kind, _ in gaps:
                f[f"c:top_gap:{kind}"] = 1.0
    true = np.array([bool(c.value) for c in candidates])
    f["c:top_covers"] = float(cover[0])
    if not cover.any():
        f["c:none"] = 1.0
        return f
    first = int(np.argmax(cover))
    mass = float(p[cover].sum())
    f["c:first_value"] = float(true[first])
    f["c:first_rank"] = min(first, 30) / 30
    f["c:mass"] = mass
    if mass > 0:
        f["c:vote"] = float(p[cover & true].sum() / mass)
    f["c:anyT"] = float((cover & true).any())
    f["c:anyF"] = float((cover & ~true).any())
    return f


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


BOOSTED = {"learning_rate": 0.1, "max_iter": 400, "max_leaf_nodes": 31, "l2_regularization": 1.0}
"""Settings of the boosted verdict model (scikit-learn's HistGradientBoostingClassifier, no early
stopping), with features seen at least :data:`BOOSTED_MIN_COUNT` times. Chosen on train tables
only, with the shipped ranker's features: fitted on the verdict-model tables 4,000-8,000 of
``train_models``' shuffle (28,082 statements) and scored on tables 3,000-4,000 (7,148; the split of
``scripts/bench_verdict_holdout.py --tables 5000``): 71.5% against 69.8% for the logistic
regression with its defaults (70.0% at L2 3e-4). A second random fifth of tables 3,000-8,000 gave
72.7% against 71.0%; learning rate 0.05 with 600 trees of 15 leaves was compared at tables
3,000-5,000 only (69.1% against 68.7% for 300 trees of 31 leaves)."""
BOOSTED_MIN_COUNT = 30


class FeatureRows:
    """Statements' feature dicts held compactly for training: one table of feature names and, per
    statement, an int32 array of name ids and a float64 array of values, in the dict's order. A
    full TabFact training holds 92,283 rows of about 300 features; as dicts (a string and a float
    object each) they took about 2.5 GB more at the training's peak (estimated from a smaller
    training, whose peak fell 2.17 -> 1.86 GB)."""

    def __init__(self, rows: Iterable[dict[str, float]] = ()) -> None:
        self.names: dict[str, int] = {}
        self._ids: list[np.ndarray] = []
        self._values: list[np.ndarray] = []
        self.extend(rows)

    def append(self, row: dict[str, float]) -> None:
        """Add one statement's features."""
        names = self.names
        self._ids.append(np.fromiter((names.setdefault(k, len(names)) for k in row), np.int32, len(row)))
        self._values.append(np.fromiter(row.values(), np.float64, len(row)))

    def extend(self, rows: Iterable[dict[str, float]]) -> None:
        """Add several statements' features."""
        for row in rows:
            self.append(row)

    def __len__(self) -> int:
        return len(self._ids)

    def nonzero_counts(self) -> Counter[str]:
        """How many rows give each feature a non-zero value."""
        if not self._ids:
            return Counter()
        ids, values = np.concatenate(self._ids), np.concatenate(self._values)
        counts = np.bincount(ids[values != 0], minlength=len(self.names))
        return Counter({name: int(counts[i]) for name, i in self.names.items() if counts[i]})

    def columns(self, vocabulary: dict[str, int]) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(row, vocabulary columns, values) of each row, features outside ``vocabulary`` left out."""
        column = np.full(len(self.names), -1, dtype=np.int64)
        for name, i in self.names.items():
            column[i] = vocabulary.get(name, -1)
        for r, (ids, values) in enumerate(zip(self._ids, self._values, strict=True)):
            cols = column[ids]
            keep = cols >= 0
            yield r, cols[keep], values[keep]


class VerdictModel:
    """Logistic regression over sparse statement features (full-batch Adam, L2), or, with
    ``boosted=True``, gradient-boosted trees over the features seen ``BOOSTED_MIN_COUNT`` times."""

    def __init__(
        self,
        l2: float = 1e-4,
        iterations: int = 800,
        learning_rate: float = 0.05,
        min_count: int = 10,
        boosted: bool = False,
        seed: int = 0,
    ) -> None:
        self.l2 = l2
        self.iterations = iterations
        self.learning_rate = learning_rate
        self.min_count = BOOSTED_MIN_COUNT if boosted and min_count == 10 else min_count
        self.boosted = boosted
        self.seed = seed
        self.vocabulary: dict[str, int] = {}
        self.weights = np.zeros(0)
        self.trees: dict[str, np.ndarray] | None = None

    def _sparse(self, rows: FeatureRows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        indices, values, offsets = [], [], [0]
        for _, cols, vals in rows.columns(self.vocabulary):
            nonzero = vals != 0
            indices.append(cols[nonzero])
            values.append(vals[nonzero])
            offsets.append(offsets[-1] + int(nonzero.sum()))
        return (
            np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64),
            np.concatenate(values) if values else np.zeros(0, dtype=np.float64),
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
        rows: Sequence[dict[str, float]] | FeatureRows,
        labels: Sequence[int],
        progress: Callable[[int, int], None] | None = None,
    ) -> VerdictModel:
        """Learn from feature dicts (or :class:`FeatureRows`) and 0/1 labels."""
        if not isinstance(rows, FeatureRows):
            rows = FeatureRows(rows)
        counts = rows.nonzero_counts()
        self.vocabulary = {
            key: i for i, key in enumerate(sorted(k for k, n in counts.items() if n >= self.min_count))
        }
        if self.boosted:
            self._fit_trees(rows, labels)
            if progress is not None:
                progress(1, 1)
            return self
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

    def _dense(self, rows: FeatureRows) -> np.ndarray:
        x = np.zeros((len(rows), len(self.vocabulary)), dtype=np.float64)
        for i, cols, values in rows.columns(self.vocabulary):
            x[i, cols] = values
        return x

    def _fit_trees(self, rows: FeatureRows, labels: Sequence[int]) -> VerdictModel:
        try:
            from sklearn.ensemble import HistGradientBoostingClassifier
        except ImportError as exc:
            raise ModelError(
                "training the boosted verdict model needs scikit-learn: pip install 'tabverify[lake]'"
            ) from exc
        y = np.asarray(labels, dtype=np.int64)
        if len(set(y.tolist())) < 2 or not self.vocabulary:
            self.trees = _constant_trees(float(np.mean(y)) if len(y) else 0.5)
            return self
        classifier = HistGradientBoostingClassifier(
            **BOOSTED, early_stopping=False, random_state=self.seed
        ).fit(self._dense(rows), y)
        feature, threshold, left, right, value, leaf, roots = [], [], [], [], [], [], []
        for (predictor,) in classifier._predictors:
            nodes, base = predictor.nodes, len(feature)
            roots.append(base)
            feature += nodes["feature_idx"].tolist()
            threshold += nodes["num_threshold"].tolist()
            left += (nodes["left"] + base).tolist()
            right += (nodes["right"] + base).tolist()
            value += nodes["value"].tolist()
            leaf += nodes["is_leaf"].tolist()
        self.trees = {
            "tree_feature": np.array(feature, dtype=np.int32),
            "tree_threshold": np.array(threshold, dtype=np.float64),
            "tree_left": np.array(left, dtype=np.int32),
            "tree_right": np.array(right, dtype=np.int32),
            "tree_value": np.array(value, dtype=np.float64),
            "tree_leaf": np.array(leaf, dtype=np.uint8),
            "tree_roots": np.array(roots, dtype=np.int32),
            "tree_baseline": np.array([float(np.ravel(classifier._baseline_prediction)[0])]),
        }
        return self

    def _tree_logit(self, x: np.ndarray) -> float:
        """The sum of the trees' leaves for one dense feature vector (every tree walked at once;
        a feature value at or below a node's threshold goes left, as in scikit-learn)."""
        t = self.trees
        assert t is not None
        node = t["tree_roots"].astype(np.int64)
        leaf = t["tree_leaf"].astype(bool)
        for _ in range(len(t["tree_feature"])):
            inner = ~leaf[node]
            if not inner.any():
                break
            at = node[inner]
            go_left = x[t["tree_feature"][at]] <= t["tree_threshold"][at]
            node[inner] = np.where(go_left, t["tree_left"][at], t["tree_right"][at])
        return float(t["tree_baseline"][0] + t["tree_value"][node].sum())

    def probability(self, row: dict[str, float]) -> float:
        """P(ENTAILED) for one statement's features."""
        rows = FeatureRows((row,))
        if self.trees is not None:
            return float(1 / (1 + np.exp(-self._tree_logit(self._dense(rows)[0]))))
        indices, values, offsets = self._sparse(rows)
        return float(1 / (1 + np.exp(-self._logits(indices, values, offsets)[0])))

    def save(self, path: str | Path) -> None:
        """Write vocabulary and weights (or trees) to one compressed .npz file."""
        keys = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        vocabulary = np.frombuffer(json.dumps(keys).encode(), dtype=np.uint8)
        if self.trees is not None:
            np.savez_compressed(path, vocabulary=vocabulary, **self.trees)
            return
        np.savez_compressed(path, weights=self.weights.astype(np.float32), vocabulary=vocabulary)

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
        boosted = "tree_roots" in data
        weights = np.zeros(0) if boosted else check_array(data, "weights", "f", 1, fail)
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
        if boosted:
            model = cls(boosted=True)
            model.vocabulary = {k: i for i, k in enumerate(keys)}
            model.trees = _checked_trees(data, len(keys), fail)
            return model
        if len(keys) != len(weights):
            raise fail(f"{len(keys)} feature names but {len(weights)} weights")
        if not np.all(np.isfinite(weights)):
            raise fail("weights that are not finite numbers")
        model = cls()
        model.vocabulary = {k: i for i, k in enumerate(keys)}
        model.weights = weights.astype(np.float64)
        return model


def _constant_trees(p: float) -> dict[str, np.ndarray]:
    """One leaf that always says ``p`` (a training set of one label, or no features)."""
    p = min(max(p, 1e-6), 1 - 1e-6)
    return {
        "tree_feature": np.zeros(1, dtype=np.int32),
        "tree_threshold": np.zeros(1),
        "tree_left": np.zeros(1, dtype=np.int32),
        "tree_right": np.zeros(1, dtype=np.int32),
        "tree_value": np.zeros(1),
        "tree_leaf": np.ones(1, dtype=np.uint8),
        "tree_roots": np.zeros(1, dtype=np.int32),
        "tree_baseline": np.array([float(np.log(p / (1 - p)))]),
    }


def _checked_trees(
    data: dict[str, np.ndarray], n_features: int, fail: Callable[[str], ModelError]
) -> dict[str, np.ndarray]:
    """The tree arrays of a boosted model file, checked before they are trusted: node arrays of
    one length, children and roots inside it, features inside the vocabulary, finite numbers, and
    every walk from a root ending at a leaf (children come after their parent)."""
    kinds = {
        "tree_feature": "iu",
        "tree_threshold": "f",
        "tree_left": "iu",
        "tree_right": "iu",
        "tree_value": "f",
        "tree_leaf": "iub",
        "tree_roots": "iu",
        "tree_baseline": "f",
    }
    trees = {name: check_array(data, name, kind, 1, fail) for name, kind in kinds.items()}
    n = len(trees["tree_feature"])
    if n == 0 or any(len(trees[name]) != n for name in kinds if name not in ("tree_roots", "tree_baseline")):
        raise fail("tree node arrays of different lengths, or none")
    if trees["tree_baseline"].shape != (1,) or not len(trees["tree_roots"]):
        raise fail("no trees, or not one baseline")
    for name in ("tree_threshold", "tree_value", "tree_baseline"):
        if not np.all(np.isfinite(trees[name])):
            raise fail(f"'{name}' holds numbers that are not finite")
    inner = trees["tree_leaf"] == 0
    index = np.arange(n)
    for name in ("tree_left", "tree_right"):
        child = trees[name].astype(np.int64)
        if np.any((child[inner] <= index[inner]) | (child[inner] >= n)):
            raise fail(f"'{name}' points outside the nodes or backwards")
    feature = trees["tree_feature"].astype(np.int64)
    if np.any((feature[inner] < 0) | (feature[inner] >= n_features)):
        raise fail("a tree reads a feature outside the vocabulary")
    roots = trees["tree_roots"].astype(np.int64)
    if np.any((roots < 0) | (roots >= n)):
        raise fail("'tree_roots' points outside the nodes")
    return trees
