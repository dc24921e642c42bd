"""The TRL-Bench light heads: they learn what is learnable, not what is not, choose C on validation
only, and are reproducible per seed."""

from __future__ import annotations

import numpy as np
import pytest

from tabverify.bench.trl import probes
from tabverify.bench.trl.probes import (
    GRID,
    SEEDS,
    evaluate_probes,
    linear_probe,
    mlp_probe,
    positive_f1,
    stratified_split,
)


def separable(n: int = 600, d: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two classes (about a quarter positive) separated by a wide margin along a random direction."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    direction = rng.normal(size=d)
    direction /= np.linalg.norm(direction)
    y = (rng.random(n) < 0.25).astype(np.int64)
    x += np.outer(np.where(y == 1, 2.5, -2.5), direction)
    return x, y


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer MLP updates where the test is not about how well the MLP learns."""
    monkeypatch.setattr(probes, "MIN_STEPS", 40)


def parts(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    return x[:400], y[:400], x[400:500], y[400:500], x[500:], y[500:]


def test_positive_f1() -> None:
    assert positive_f1([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.5)
    assert positive_f1([1, 1, 0], [1, 1, 0]) == 1.0
    assert positive_f1([0, 0], [0, 0]) == 0.0
    assert positive_f1([1, 0], [0, 0]) == 0.0


def test_probes_learn_separable_data_and_not_shuffled_labels() -> None:
    x, y = separable()
    xa, ya, xb, yb, xt, yt = parts(x, y)
    real = evaluate_probes(xa, ya, xb, yb, xt, yt, seeds=(72,))
    assert real["linear"]["mean"] > 0.9
    assert real["mlp"]["mean"] > 0.9
    rng = np.random.default_rng(1)
    shuffled = evaluate_probes(xa, rng.permutation(ya), xb, rng.permutation(yb), xt, yt, seeds=(72,))
    # about a quarter positive: guessing cannot beat F1 0.4 in expectation
    assert shuffled["linear"]["mean"] < 0.55
    assert shuffled["mlp"]["mean"] < 0.55
    assert real["probe_mean"] == pytest.approx((real["linear"]["mean"] + real["mlp"]["mean"]) / 2)


def test_the_sweep_picks_the_best_value_of_the_grid_on_validation() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 30))
    y = (x[:, 0] + 1.5 * rng.normal(size=300) > 0.8).astype(np.int64)  # noisy: C matters
    output = linear_probe(x[:150], y[:150], x[150:250], y[150:250], x[250:])
    assert output.chosen in GRID
    best = None
    for c in GRID:
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000)).fit(x[:150], y[:150])
        proba = model.predict_proba(x[150:250])
        key = (
            positive_f1(y[150:250], (proba[:, 1] >= 0.5).astype(int)),
            np.mean(np.log(proba[np.arange(100), y[150:250]])),
        )
        if best is None or key > best[0]:
            best = (key, c)
    assert output.chosen == best[1]


def test_the_sweep_and_the_refit_never_see_test_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = separable()
    xa, ya, xb, yb, xt, _ = parts(x, y)
    marked = xt.copy()
    marked[:, 0] = 1e6  # no train or validation row has this value
    fitted: list[np.ndarray] = []
    real_fit = probes._fit_quietly

    def spy(model, features, labels):
        fitted.append(np.asarray(features))
        return real_fit(model, features, labels)

    monkeypatch.setattr(probes, "_fit_quietly", spy)
    with_marks = linear_probe(xa, ya, xb, yb, marked)
    plain = linear_probe(xa, ya, xb, yb, xt)
    assert len(fitted) == 2 * (len(GRID) + 1)  # the sweep, then one refit on train + validation
    assert all(not np.any(f[:, 0] == 1e6) for f in fitted)
    assert fitted[len(GRID)].shape[0] == len(xa) + len(xb)
    assert with_marks.chosen == plain.chosen  # what test holds cannot move the choice


def test_seeds_change_the_mlp_and_the_same_seed_reproduces_it(quick: None) -> None:
    x, y = separable(n=600, seed=5)
    xa, ya, xb, yb, xt, _ = parts(x, y)
    ya = ya.copy()
    ya[:60] = 1 - ya[:60]  # label noise: runs differ in what they fit
    first = mlp_probe(xa, ya, xb, yb, xt, seed=72, stop="f1")
    again = mlp_probe(xa, ya, xb, yb, xt, seed=72, stop="f1")
    other = mlp_probe(xa, ya, xb, yb, xt, seed=62, stop="f1")
    assert np.array_equal(first.proba, again.proba)
    assert first.epochs == again.epochs
    assert not np.allclose(first.proba, other.proba)


def test_without_validation_each_seed_draws_a_stratified_tenth() -> None:
    y = np.array([0] * 90 + [1] * 30)
    train, valid = stratified_split(y, seed=72)
    assert sorted(np.concatenate([train, valid]).tolist()) == list(range(120))
    assert (y[valid] == 1).sum() == 3 and (y[valid] == 0).sum() == 9
    again = stratified_split(y, seed=72)[1]
    assert np.array_equal(valid, again)
    assert not np.array_equal(valid, stratified_split(y, seed=62)[1])
    # a class of one row stays in train; a class of two gives one row to validation
    tiny = np.array([0] * 20 + [1] + [2, 2])
    _, held = stratified_split(tiny, seed=1)
    assert 20 not in held and int(np.sum(tiny[held] == 2)) == 1


def test_evaluate_probes_reports_seeds_spread_and_drawn_validation(quick: None) -> None:
    x, y = separable(n=600, seed=7)
    xa, ya, _, _, xt, yt = parts(x, y)
    given = evaluate_probes(xa, ya, x[400:500], y[400:500], xt, yt, seeds=(72, 62, 52))
    assert given["validation"] == "given" and given["seeds"] == [72, 62, 52]
    assert given["linear"]["std"] == 0.0 and len(set(given["linear"]["chosen"])) == 1
    assert len(given["mlp"]["per_seed"]) == 3
    drawn = evaluate_probes(xa, ya, None, None, xt, yt, seeds=(72, 62))
    assert drawn["validation"].startswith("stratified 10%")
    assert all(c in GRID for c in drawn["linear"]["chosen"])
    assert drawn["linear"]["mean"] > 0.9
    assert SEEDS == (72, 62, 52, 82, 42)


def test_regression_uses_ridge_and_the_mlp_regresses() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(500, 8))
    target = x @ rng.normal(size=8) + 0.1 * rng.normal(size=500)
    result = evaluate_probes(
        x[:300], target[:300], x[300:400], target[300:400], x[400:], target[400:],
        task="regression", metric="r2", seeds=(72,),
    )  # fmt: skip
    assert result["linear"]["mean"] > 0.95
    assert result["mlp"]["mean"] > 0.7
    assert result["linear"]["chosen"][0] in GRID


def test_one_class_in_training_predicts_that_class() -> None:
    x = np.random.default_rng(0).normal(size=(30, 4))
    y = np.zeros(30, dtype=np.int64)
    output = linear_probe(x[:20], y[:20], x[20:25], y[20:25], x[25:])
    assert output.predictions.tolist() == [0] * 5
    assert mlp_probe(x[:20], y[:20], x[20:25], y[20:25], x[25:], seed=1).predictions.tolist() == [0] * 5
