"""TRL-Bench's light heads on frozen embeddings: a linear probe and an MLP probe, identical for
every encoder, both always trained, each run with the five protocol seeds.

- Linear (:func:`linear_probe`): features z-scored (the scaler is fitted on the rows the model is
  fitted on); logistic regression (lbfgs, L2, ``max_iter`` 5000) for classification, ridge for
  regression; C (or alpha) swept over :data:`GRID` by fitting on train and scoring on validation
  (positive-class F1 for binary tasks with ``select="f1"``, ties broken by log-loss; R2 for
  regression); then refitted on train + validation with the chosen value, which is reported.
- MLP (:func:`mlp_probe`): ``Linear(d, 256) -> ReLU -> Dropout(0.1) -> Linear(256, out)`` in torch
  on the CPU, z-scored inputs (scaler fitted on train), AdamW (lr 1e-3), mini-batches of 256,
  early stopping on validation (F1 - ties broken by loss - or loss, with a patience of 10 epochs,
  not before 300 updates, at most 200 epochs), best weights restored. Trained on train only; validation picks the epoch.
- Validation: the given split; when there is none, a stratified 10% of train drawn with the seed
  (:func:`stratified_split`), so both probes see the same split for a seed.
- Decisions: a binary probe predicts the positive class when its probability is >= 0.5 (the
  probe's own threshold; nothing is tuned on test, and test rows are never used for fitting or
  selection).
- Seeds: :data:`SEEDS` (72, 62, 52, 82, 42). A seed fixes every random choice of one run: the MLP's
  initialisation, dropout and batch order, and the validation split when one is drawn. With a given
  validation split the linear probe has no randomness (lbfgs is deterministic), so it is fitted once
  and its score repeated for every seed (spread 0).

:func:`evaluate_probes` runs both probes for every seed and reports, per probe, the mean and the
spread (population standard deviation) over seeds, and the average of the two probes' means.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "GRID",
    "SEEDS",
    "ProbeOutput",
    "evaluate_probes",
    "linear_probe",
    "mlp_probe",
    "positive_f1",
    "score",
    "stratified_split",
]

SEEDS: tuple[int, ...] = (72, 62, 52, 82, 42)
"""The protocol's seeds, in its order."""

GRID: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0, 100.0)
"""The values of C (logistic regression) or alpha (ridge) the linear probe chooses from."""

VALID_FRACTION = 0.1
"""The share of train held out for validation when a task has no validation split."""

THRESHOLD = 0.5
"""A binary probe predicts the positive class when its probability is at least this."""

MAX_ITER = 5000
HIDDEN = 256
DROPOUT = 0.1
LEARNING_RATE = 1e-3
BATCH_SIZE = 256
MAX_EPOCHS = 200
PATIENCE = 10
MIN_STEPS = 300
"""Early stopping waits for at least this many updates: on a train set of a few hundred rows an
epoch is one or two batches, and ten epochs are too few updates to leave the initialisation."""


@dataclass(frozen=True)
class ProbeOutput:
    """A probe's output on the test rows: ``predictions`` (labels, or values for regression),
    ``proba`` (n, n_classes) class probabilities in the order of ``classes`` (None for regression),
    ``chosen`` (the linear probe's C or alpha) and ``epochs`` (the MLP's best epoch, 1-based)."""

    predictions: np.ndarray
    proba: np.ndarray | None = None
    classes: np.ndarray | None = None
    chosen: float | None = None
    epochs: int | None = None


# --- metrics ------------------------------------------------------------------------------------


def positive_f1(
    y_true: Sequence[Any] | np.ndarray, y_pred: Sequence[Any] | np.ndarray, positive: Any = 1
) -> float:
    """F1 of the ``positive`` class: 0.0 when there is no true and no predicted positive."""
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    tp = float(np.sum((y_true == positive) & (y_pred == positive)))
    predicted = float(np.sum(y_pred == positive))
    actual = float(np.sum(y_true == positive))
    return 0.0 if predicted + actual == 0 else 2.0 * tp / (predicted + actual)


def score(metric: str, y_true: np.ndarray, output: ProbeOutput) -> float:
    """``output``'s test score under ``metric``: ``f1`` (positive-class F1, label 1), ``macro_f1``,
    ``accuracy`` or ``r2``."""
    y_true = np.asarray(y_true)
    if metric == "f1":
        return positive_f1(y_true, output.predictions)
    if metric == "macro_f1":
        labels = np.unique(y_true)
        return float(np.mean([positive_f1(y_true, output.predictions, label) for label in labels]))
    if metric == "accuracy":
        return float(np.mean(y_true == output.predictions))
    if metric == "r2":
        residual = float(np.sum((y_true - output.predictions) ** 2))
        total = float(np.sum((y_true - y_true.mean()) ** 2))
        return 0.0 if total == 0 else 1.0 - residual / total
    raise ValueError(f"unknown metric {metric!r}; use f1, macro_f1, accuracy or r2")


def _log_loss(y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> float:
    index = np.searchsorted(classes, y)
    index = np.clip(index, 0, len(classes) - 1)
    found = classes[index] == y
    p = np.where(found, proba[np.arange(len(y)), index], 0.0)
    return float(-np.mean(np.log(np.clip(p, 1e-12, 1.0))))


def _decide(proba: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Labels from class probabilities: the positive class (1) at probability >= :data:`THRESHOLD`
    for a binary {0, 1} task, else the most probable class."""
    if len(classes) == 2 and classes[1] == 1:
        return np.where(proba[:, 1] >= THRESHOLD, classes[1], classes[0])
    return classes[np.argmax(proba, axis=1)]


def _selection_key(select: str, y: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> tuple[float, float]:
    """Higher is better: (the validation score, minus the log-loss) for classification."""
    loss = _log_loss(y, proba, classes)
    if select == "loss":
        return (-loss, 0.0)
    output = ProbeOutput(predictions=_decide(proba, classes), proba=proba, classes=classes)
    return (score(select, y, output), -loss)


# --- splits -------------------------------------------------------------------------------------


def stratified_split(
    y: Sequence[Any] | np.ndarray, seed: int, fraction: float = VALID_FRACTION, stratify: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, validation) holding out ``fraction`` of ``y``, drawn with ``seed``.

    Stratified: every class gives round(fraction x its size) rows, at least one when it has two or
    more and never all of them, so a rare class is in both parts. Unstratified (regression) draws
    round(fraction x n) rows, at least one when n >= 2.
    """
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(y == label) for label in np.unique(y)] if stratify else [np.arange(len(y))]
    held: list[np.ndarray] = []
    for members in groups:
        members = members.copy()
        rng.shuffle(members)
        k = int(round(fraction * len(members)))
        if len(members) >= 2:
            k = min(max(k, 1), len(members) - 1)
        else:
            k = 0
        held.append(members[:k])
    valid = np.sort(np.concatenate(held)) if held else np.zeros(0, dtype=np.int64)
    mask = np.ones(len(y), dtype=bool)
    mask[valid] = False
    return np.flatnonzero(mask), valid.astype(np.int64)


# --- the linear probe ---------------------------------------------------------------------------


def _check(x: np.ndarray, y: np.ndarray | None, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"{what}: features must be a 2-D array, got shape {x.shape}")
    if y is not None and len(y) != len(x):
        raise ValueError(f"{what}: {len(x)} feature rows but {len(y)} labels")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: features contain NaN or infinite values")
    return x


def _constant(y_train: np.ndarray, n_test: int, task: str) -> ProbeOutput:
    """The output of a probe whose training labels hold one class (or one value)."""
    if task == "regression":
        return ProbeOutput(predictions=np.full(n_test, float(np.mean(y_train))))
    classes = np.unique(y_train)
    return ProbeOutput(predictions=np.full(n_test, classes[0]), proba=np.ones((n_test, 1)), classes=classes)


def _linear_model(task: str, value: float) -> Any:
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if task == "regression":
        return make_pipeline(StandardScaler(), Ridge(alpha=value))
    return make_pipeline(StandardScaler(), LogisticRegression(C=value, solver="lbfgs", max_iter=MAX_ITER))


def _fit_quietly(model: Any, x: np.ndarray, y: np.ndarray) -> Any:
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(x, y)


def linear_probe(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_valid: np.ndarray,
    y_valid: np.ndarray,
    x_test: np.ndarray,
    *,
    task: str = "classification",
    select: str = "f1",
    grid: Sequence[float] = GRID,
) -> ProbeOutput:
    """Z-score + logistic regression (``task="classification"``) or ridge (``"regression"``): each
    value of ``grid`` fitted on train and scored on validation (``select``: ``f1``, ``macro_f1``,
    ``accuracy`` or ``loss`` for classification, ties broken by log-loss; R2 for regression), the
    best refitted on train + validation and applied to ``x_test``. Test rows are used for nothing
    but the final prediction."""
    y_train = np.asarray(y_train)
    y_valid = np.asarray(y_valid)
    x_train = _check(x_train, y_train, "train")
    x_valid = _check(x_valid, y_valid, "validation")
    x_test = _check(x_test, None, "test")
    x_all = np.concatenate([x_train, x_valid])
    y_all = np.concatenate([y_train, y_valid])
    if len(np.unique(y_all)) < 2:
        return _constant(y_all, len(x_test), task)
    best: tuple[tuple[float, float], float] | None = None
    can_select = len(y_valid) > 0 and len(np.unique(y_train)) >= 2
    for value in grid if can_select else ():
        model = _fit_quietly(_linear_model(task, value), x_train, y_train)
        if task == "regression":
            prediction = model.predict(x_valid)
            key = (score("r2", y_valid, ProbeOutput(predictions=prediction)), 0.0)
        else:
            key = _selection_key(select, y_valid, model.predict_proba(x_valid), model.classes_)
        if best is None or key > best[0]:
            best = (key, value)
    chosen = best[1] if best is not None else 1.0  # no usable validation: sklearn's default C
    model = _fit_quietly(_linear_model(task, chosen), x_all, y_all)
    if task == "regression":
        return ProbeOutput(predictions=model.predict(x_test), chosen=chosen)
    proba = model.predict_proba(x_test)
    return ProbeOutput(
        predictions=_decide(proba, model.classes_), proba=proba, classes=model.classes_, chosen=chosen
    )


# --- the MLP probe ------------------------------------------------------------------------------


def mlp_probe(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_valid: np.ndarray,
    y_valid: np.ndarray,
    x_test: np.ndarray,
    *,
    seed: int,
    task: str = "classification",
    stop: str = "loss",
    max_epochs: int | None = None,
    patience: int | None = None,
    min_steps: int | None = None,
    batch_size: int | None = None,
    threads: int = 1,
) -> ProbeOutput:
    """``Linear(d, 256) -> ReLU -> Dropout(0.1) -> Linear(256, out)`` trained with AdamW (lr 1e-3)
    on z-scored train rows; after every epoch the validation rows are scored (``stop``: ``f1``,
    ``macro_f1`` or ``accuracy`` - ties broken by loss - or ``loss``) and training stops after
    ``patience`` epochs without improvement; the best epoch's weights are restored. Cross-entropy
    for classification, mean squared error on standardised targets for regression. ``seed`` fixes
    the initialisation, dropout and batch order; torch runs on the CPU with ``threads`` threads.
    The training constants default to :data:`MAX_EPOCHS`, :data:`PATIENCE`, :data:`MIN_STEPS` and
    :data:`BATCH_SIZE`, read when called."""
    import torch
    from torch import nn

    max_epochs = MAX_EPOCHS if max_epochs is None else max_epochs
    patience = PATIENCE if patience is None else patience
    min_steps = MIN_STEPS if min_steps is None else min_steps
    batch_size = BATCH_SIZE if batch_size is None else batch_size
    y_train = np.asarray(y_train)
    y_valid = np.asarray(y_valid)
    x_train = _check(x_train, y_train, "train")
    x_valid = _check(x_valid, y_valid, "validation")
    x_test = _check(x_test, None, "test")
    if len(np.unique(y_train)) < 2:
        return _constant(y_train, len(x_test), task)
    mean = x_train.mean(axis=0)
    std = x_train.std(axis=0)
    std[std == 0] = 1.0

    def tensor(x: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(((x - mean) / std).astype(np.float32))

    regression = task == "regression"
    if regression:
        classes = None
        y_mean, y_std = float(y_train.mean()), float(y_train.std()) or 1.0
        target_train = torch.from_numpy(((y_train - y_mean) / y_std).astype(np.float32))[:, None]
        target_valid = torch.from_numpy(((y_valid - y_mean) / y_std).astype(np.float32))[:, None]
        outputs = 1
        loss_fn: nn.Module = nn.MSELoss()
    else:
        classes = np.unique(y_train)
        target_train = torch.from_numpy(np.searchsorted(classes, y_train).astype(np.int64))
        known = np.isin(y_valid, classes)
        target_valid = torch.from_numpy(np.searchsorted(classes, y_valid).clip(0, len(classes) - 1))
        outputs = len(classes)
        loss_fn = nn.CrossEntropyLoss()
    xt, xv, xs = tensor(x_train), tensor(x_valid), tensor(x_test)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            generator = torch.Generator().manual_seed(seed)
            model = nn.Sequential(
                nn.Linear(xt.shape[1], HIDDEN), nn.ReLU(), nn.Dropout(DROPOUT), nn.Linear(HIDDEN, outputs)
            )
            optimiser = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
            best_key: tuple[float, float] | None = None
            best_state: dict[str, torch.Tensor] = {}
            best_epoch = steps = 0
            for epoch in range(1, max_epochs + 1):
                model.train()
                order = torch.randperm(len(xt), generator=generator)
                for start in range(0, len(xt), batch_size):
                    batch = order[start : start + batch_size]
                    optimiser.zero_grad()
                    loss = loss_fn(model(xt[batch]), target_train[batch])
                    loss.backward()
                    optimiser.step()
                    steps += 1
                if len(xv) == 0:
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                    best_epoch = epoch
                    continue
                model.eval()
                with torch.no_grad():
                    logits = model(xv)
                if regression:
                    key = (-float(loss_fn(logits, target_valid)), 0.0)
                else:
                    proba = torch.softmax(logits, dim=1).numpy().astype(np.float64)
                    if not np.all(known):  # validation classes unseen in training count as wrong
                        proba = np.where(known[:, None], proba, 0.0)
                    key = _selection_key(stop, y_valid, proba, classes)
                if best_key is None or key > best_key:
                    best_key, best_epoch = key, epoch
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                elif epoch - best_epoch >= patience and steps >= min_steps:
                    break
            model.load_state_dict(best_state)
            model.eval()
            with torch.no_grad():
                logits = model(xs)
    finally:
        torch.set_num_threads(previous_threads)
    if regression:
        return ProbeOutput(
            predictions=logits[:, 0].numpy().astype(np.float64) * y_std + y_mean, epochs=best_epoch
        )
    proba = torch.softmax(logits, dim=1).numpy().astype(np.float64)
    return ProbeOutput(predictions=_decide(proba, classes), proba=proba, classes=classes, epochs=best_epoch)


# --- both probes, every seed ----------------------------------------------------------------------


def _summary(values: Sequence[float]) -> dict[str, Any]:
    return {
        "mean": float(np.mean(values)),
        "std": float(np.std(values)),
        "per_seed": [round(float(v), 6) for v in values],
    }


def evaluate_probes(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_valid: np.ndarray | None,
    y_valid: np.ndarray | None,
    x_test: np.ndarray,
    y_test: np.ndarray,
    *,
    task: str = "classification",
    metric: str = "f1",
    select: str | None = None,
    seeds: Sequence[int] = SEEDS,
    threads: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Both probes for every seed, scored on test with ``metric``.

    ``x_valid``/``y_valid`` None: each seed holds out a stratified :data:`VALID_FRACTION` of train
    (:func:`stratified_split`). ``select`` is what picks C and the MLP's epoch (default: ``metric``
    for classification - F1 for linkage - and ``loss``/R2 otherwise). Returns ``{"linear": {mean,
    std, per_seed, chosen}, "mlp": {mean, std, per_seed, epochs}, "probe_mean", "validation",
    "seeds"}``. ``progress(done, total)`` is called after each seed.
    """
    if not seeds:
        raise ValueError("at least one seed is needed")
    y_train = np.asarray(y_train)
    y_test = np.asarray(y_test)
    classification = task != "regression"
    if select is None:
        select = metric if classification and metric != "accuracy" else ("loss" if classification else "r2")
    stop = select if classification else "loss"
    given = x_valid is not None and y_valid is not None
    linear: list[float] = []
    chosen: list[float | None] = []
    mlp: list[float] = []
    epochs: list[int | None] = []
    cached: ProbeOutput | None = None
    for done, seed in enumerate(seeds, start=1):
        if given:
            xa, ya, xb, yb = x_train, y_train, x_valid, np.asarray(y_valid)
        else:
            train_idx, valid_idx = stratified_split(y_train, seed, stratify=classification)
            xa, ya = x_train[train_idx], y_train[train_idx]
            xb, yb = x_train[valid_idx], y_train[valid_idx]
        if cached is None or not given:
            cached = linear_probe(xa, ya, xb, yb, x_test, task=task, select=select)
        linear.append(score(metric, y_test, cached))
        chosen.append(cached.chosen)
        output = mlp_probe(xa, ya, xb, yb, x_test, seed=seed, task=task, stop=stop, threads=threads)
        mlp.append(score(metric, y_test, output))
        epochs.append(output.epochs)
        if progress is not None:
            progress(done, len(seeds))
    result_linear = _summary(linear) | {"chosen": chosen}
    result_mlp = _summary(mlp) | {"epochs": epochs}
    probe_mean = (result_linear["mean"] + result_mlp["mean"]) / 2
    return {
        "linear": result_linear,
        "mlp": result_mlp,
        "probe_mean": probe_mean if math.isfinite(probe_mean) else 0.0,
        "validation": "given" if given else f"stratified {VALID_FRACTION:.0%} of train per seed",
        "seeds": list(seeds),
    }
