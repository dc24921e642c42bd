"""The claim-retrieval query adapter (tabverify.lake.adapter): applying, saving, loading untrusted
files, fitting on a small synthetic set, and the shipped one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tabverify.errors import ModelError
from tabverify.lake.adapter import QueryAdapter, fit_adapter
from tabverify.lake.retrieve import MODELS


def test_a_zero_adapter_only_normalises_and_a_wrong_width_is_refused() -> None:
    adapter = QueryAdapter(np.zeros((4, 4), dtype=np.float32), "toy")
    vectors = np.array([[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    assert np.allclose(adapter.apply(vectors), [[0.6, 0.8, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    assert np.all(np.isfinite(adapter.apply(np.zeros((1, 4)))))  # a zero vector stays finite
    with pytest.raises(ModelError, match="4-dimensional"):
        adapter.apply(np.ones((2, 3)))


def test_the_adapter_round_trips_and_bad_files_are_refused(tmp_path: Path) -> None:
    weights = np.random.default_rng(0).normal(size=(6, 6)).astype(np.float32)
    QueryAdapter(weights, "toy").save(tmp_path / "a.npz")
    loaded = QueryAdapter.load("a.npz", tmp_path / "a.npz")
    assert loaded.encoder == "toy" and loaded.dim == 6 and np.array_equal(loaded.weights, weights)
    np.savez(tmp_path / "wide.npz", weights=np.zeros((3, 4), dtype=np.float32), encoder=np.array(["toy"]))
    with pytest.raises(ModelError, match="square"):
        QueryAdapter.load("wide.npz", tmp_path / "wide.npz")
    nan = np.full((2, 2), np.nan, dtype=np.float32)
    np.savez(tmp_path / "nan.npz", weights=nan, encoder=np.array(["toy"]))
    with pytest.raises(ModelError, match="NaN"):
        QueryAdapter.load("nan.npz", tmp_path / "nan.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    with pytest.raises(ModelError, match="cannot load"):
        QueryAdapter.load("junk.npz", tmp_path / "junk.npz")
    with pytest.raises(ModelError, match="cannot load"):
        QueryAdapter.load("missing.npz", tmp_path / "missing.npz")


def test_fitting_moves_statements_towards_their_tables() -> None:
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    dim, n_tables = 16, 40
    tables = rng.normal(size=(n_tables, dim)).astype(np.float32)
    tables /= np.linalg.norm(tables, axis=1, keepdims=True)
    mix = (np.eye(dim) + 0.8 * rng.normal(size=(dim, dim))).astype(np.float32)  # statements: a skewed space

    def statements(targets: np.ndarray) -> np.ndarray:
        noisy = tables[targets] @ mix + 0.3 * rng.normal(size=(len(targets), dim))
        return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)

    def recall_at_1(vectors: np.ndarray, targets: np.ndarray) -> float:
        return float(np.mean(np.argmax(vectors @ tables.T, axis=1) == targets))

    train = rng.integers(0, 30, size=3000)  # the last 10 tables are never trained on
    check = rng.integers(30, n_tables, size=300)
    train_vectors, check_vectors = statements(train), statements(check)
    inputs = (train_vectors, tables[:30], train.tolist(), check_vectors, check.tolist(), tables, "toy")
    adapter = fit_adapter(*inputs, learning_rate=0.05)
    before = recall_at_1(check_vectors, check)
    after = recall_at_1(adapter.apply(check_vectors), check)
    assert after > before + 0.2, (before, after)  # it generalises to tables it never saw
    again = fit_adapter(*inputs, learning_rate=0.05)
    assert np.array_equal(again.weights, adapter.weights)  # seeded


def test_the_shipped_minilm_reranker_names_a_loadable_adapter_for_its_vectors() -> None:
    model = MODELS["minilm"]
    assert model.adapter is not None and model.dense
    adapter = QueryAdapter.load(model.adapter)
    assert adapter.encoder == "minilm" and adapter.dim == 384
    assert 0 < float(np.abs(adapter.weights).mean()) < 1  # trained, not the identity
    assert MODELS["lexical"].adapter is None and MODELS["keywords"].adapter is None
