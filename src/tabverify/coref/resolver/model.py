"""A hashed-feature logistic model: string features -> a probability, numpy only at run time.

Features are strings hashed with CRC-32 (stable across runs and machines) into a weight vector.
Training (scikit-learn's SGD logistic regression, seeded) is only imported by :func:`fit`.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tabverify.errors import ModelError
from tabverify.models import check_array, not_a_model, read_arrays

TRAIN_HINT = "train them with `tabverify train coref --data DIR --out DIR`"


def hash_features(features: Sequence[str], bits: int) -> np.ndarray:
    """Column indices of string features in a ``2**bits`` weight vector."""
    mask = (1 << bits) - 1
    return np.fromiter((zlib.crc32(f.encode("utf-8")) & mask for f in features), np.int64, len(features))


@dataclass(frozen=True)
class LinearModel:
    """Weights over hashed features, a bias and the decision thresholds chosen on held-out train data
    (the links use two: for nominal anaphors, then for pronouns)."""

    weights: np.ndarray
    bias: float
    thresholds: tuple[float, ...] = (0.0,)

    @property
    def threshold(self) -> float:
        """The first decision threshold (log-odds)."""
        return self.thresholds[0]

    def with_thresholds(self, *thresholds: float) -> LinearModel:
        """The same weights with other thresholds."""
        return LinearModel(self.weights, self.bias, tuple(float(t) for t in thresholds))

    @property
    def bits(self) -> int:
        """log2 of the number of weights."""
        return int(self.weights.shape[0]).bit_length() - 1

    def scores(self, rows: Sequence[Sequence[str]]) -> np.ndarray:
        """Log-odds for each row of features."""
        if not rows:
            return np.zeros(0)
        lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
        flat = hash_features([f for r in rows for f in r], self.bits)
        owner = np.repeat(np.arange(len(rows)), lengths)
        return np.bincount(owner, weights=self.weights[flat], minlength=len(rows)) + self.bias

    def save(self, path: str | Path) -> None:
        """Write the model as a compressed .npz."""
        np.savez_compressed(
            path, weights=self.weights.astype(np.float32), bias=np.array([self.bias, *self.thresholds])
        )

    @classmethod
    def load(cls, filename: str, path: str | Path | None = None) -> LinearModel:
        """Read ``path``, or the package's ``models/filename`` (ModelError when it is not a model)."""
        data = read_arrays(filename, path, TRAIN_HINT)

        def fail(reason: str) -> ModelError:
            return not_a_model(filename, path, "coreference", reason, TRAIN_HINT)

        weights = check_array(data, "weights", "f", 1, fail)
        bias = check_array(data, "bias", "f", 1, fail)
        size = weights.shape[0]
        if size < 2 or size & (size - 1) or not 2 <= bias.shape[0] <= 4:
            raise fail("weights must number a power of two and bias hold a bias and 1-3 thresholds")
        return cls(weights.astype(np.float64), float(bias[0]), tuple(float(t) for t in bias[1:]))


def encode(rows: Sequence[Sequence[str]], bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Hashed rows as (column indices, features per row), the compact form :func:`fit` takes."""
    lengths = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    return hash_features([f for r in rows for f in r], bits), lengths


def fit(
    batches: Sequence[tuple[np.ndarray, np.ndarray]],
    labels: np.ndarray,
    bits: int,
    seed: int = 0,
    alpha: float = 1e-6,
    epochs: int = 10,
) -> LinearModel:
    """Train a seeded logistic model on :func:`encode`-d batches (threshold 0; the caller chooses one)."""
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import SGDClassifier

    indices = np.concatenate([b[0] for b in batches])
    lengths = np.concatenate([b[1] for b in batches])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    matrix = csr_matrix((np.ones(len(indices)), indices, indptr), shape=(len(lengths), 1 << bits))
    matrix.sum_duplicates()
    classifier = SGDClassifier(
        loss="log_loss", alpha=alpha, max_iter=epochs, tol=None, random_state=seed, average=True
    )
    classifier.fit(matrix, labels)
    return LinearModel(classifier.coef_[0].astype(np.float64), float(classifier.intercept_[0]))
