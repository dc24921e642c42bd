"""A query adapter for claim retrieval: a linear map, learned on TabFact *train* statements, that
moves a statement's sentence vector towards the vectors of the tables that hold its evidence.

The lake's table vectors stay as the encoder made them (nothing is re-encoded); only the query side
moves: ``q' = normalise(q + q W)``. A statement ("the dayton river game in week 3 have an
attendance of 5100") and the text the encoder saw for its table (caption, headers, a few values)
are different kinds of text, and a frozen sentence encoder places them apart; ``W`` (dim x dim,
initialised at zero, so the untrained adapter is the identity) learns that gap.

:func:`fit_adapter` trains it (needs torch: the ``minilm`` extra) with a softmax over the tables of
its own statements; :func:`tabverify.bench.trl.claims.fit_adapter_for_lake` chooses those
statements so that no table of the reranker's fitting sample or of the held-out fifth is among them
(command in that module's docstring). The shipped adapter for the ``minilm`` encoder is
``models/claim_adapter_minilm.npz`` (550 KB).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tabverify.errors import ModelError, TabverifyError
from tabverify.models import check_array, not_a_model, read_arrays

__all__ = ["QueryAdapter", "fit_adapter"]

ADAPTER_HINT = (
    "reinstall tabverify, or refit it with `python scripts/bench_check_lake.py fit-adapter --lake LAKE "
    "--out FILE` and then the reranker with `fit --adapter NAME`"
)

EPOCHS = 12
"""Passes over the adapter's statements; the epoch kept is the one with the best Recall@50 on the
inner check tables (ties broken by Recall@10, then @1)."""
LEARNING_RATE = 1e-3
L2 = 1e-3
"""Penalty on ``|W|^2`` (added to the mean cross-entropy)."""
BATCH = 512
TEMPERATURE = 0.05
"""The softmax temperature the fit starts from (it is learned with ``W``)."""


@dataclass(frozen=True)
class QueryAdapter:
    """``q -> normalise(q + q @ weights)`` for statement vectors of encoder ``encoder``."""

    weights: np.ndarray
    encoder: str

    @property
    def dim(self) -> int:
        """The vector dimension it maps."""
        return int(self.weights.shape[0])

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """The adapted, L2-normalised vectors of ``vectors`` ``(n, dim)``.

        Raises:
            ModelError: the vectors are not of the adapter's dimension.
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ModelError(
                f"the {self.encoder} query adapter maps {self.dim}-dimensional vectors, "
                f"got shape {vectors.shape}"
            )
        moved = vectors + vectors @ self.weights
        norms = np.linalg.norm(moved, axis=1, keepdims=True)
        return (moved / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    def save(self, path: str | Path) -> None:
        """Write the adapter as a compressed .npz."""
        np.savez_compressed(path, weights=self.weights.astype(np.float32), encoder=np.array([self.encoder]))

    @classmethod
    def load(cls, filename: str, path: str | Path | None = None) -> QueryAdapter:
        """Read ``path``, or the package's ``models/filename``.

        Raises:
            ModelError: the file is missing or does not hold a square float weight matrix and an
                encoder name.
        """
        data = read_arrays(filename, path, ADAPTER_HINT)

        def fail(reason: str) -> ModelError:
            return not_a_model(filename, path, "query adapter", reason, ADAPTER_HINT)

        weights = check_array(data, "weights", "f", 2, fail)
        encoder = check_array(data, "encoder", "U", 1, fail)
        if weights.shape[0] != weights.shape[1] or not 1 <= weights.shape[0] <= 8192 or encoder.shape != (1,):
            raise fail(f"weights must be square (got {weights.shape}) and one encoder name given")
        if not np.isfinite(weights).all():
            raise fail("weights hold NaN or infinite values")
        return cls(weights.astype(np.float32), str(encoder[0]))


def fit_adapter(
    statements: np.ndarray,
    tables: np.ndarray,
    targets: Sequence[int],
    check_statements: np.ndarray,
    check_targets: Sequence[int],
    all_tables: np.ndarray,
    encoder: str,
    *,
    epochs: int = EPOCHS,
    learning_rate: float = LEARNING_RATE,
    seed: int = 0,
    progress: Callable[[int, dict[str, float]], None] | None = None,
) -> QueryAdapter:
    """Fit ``W`` so that each statement vector's adapted form is nearest its own table among
    ``tables`` (a softmax over all of them; only tables the statements come from, so tables the
    adapter must later meet unseen are never pushed away as negatives).

    ``targets[i]``: the row of ``tables`` holding statement ``i``'s table. After each epoch the
    check statements (of other tables) are ranked against ``all_tables`` (``check_targets``: rows
    of ``all_tables``), and the epoch with the best Recall@50 there is kept. Adam with
    ``learning_rate``; seeded; needs torch.

    Raises:
        TabverifyError: torch is not installed, or the inputs disagree in size.
    """
    try:
        import torch
    except ImportError:
        raise TabverifyError(
            "fitting the query adapter needs torch: pip install 'tabverify[minilm]'"
        ) from None
    if (
        len(statements) != len(targets)
        or len(check_statements) != len(check_targets)
        or not len(targets)
        or not len(check_targets)
    ):
        raise TabverifyError("the adapter needs fit and check statements, with one target table each")
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    dim = statements.shape[1]
    q = torch.tensor(statements, dtype=torch.float32)
    t = torch.tensor(tables, dtype=torch.float32)
    y = torch.tensor(list(targets), dtype=torch.long)
    qc = torch.tensor(check_statements, dtype=torch.float32)
    yc = torch.tensor(list(check_targets), dtype=torch.long)
    everything = torch.tensor(all_tables, dtype=torch.float32)
    weights = torch.zeros(dim, dim, requires_grad=True)
    log_temperature = torch.tensor(float(np.log(TEMPERATURE)), requires_grad=True)
    optimiser = torch.optim.Adam([weights, log_temperature], lr=learning_rate)

    def adapt(x: torch.Tensor) -> torch.Tensor:
        moved = x + x @ weights
        return moved / moved.norm(dim=1, keepdim=True)

    best: tuple[tuple[float, ...], np.ndarray] = ((-1.0,), np.zeros((dim, dim), dtype=np.float32))
    for epoch in range(epochs):
        order = torch.randperm(len(y), generator=generator)
        for start in range(0, len(y), BATCH):
            batch = order[start : start + BATCH]
            logits = adapt(q[batch]) @ t.T / log_temperature.exp()
            loss = torch.nn.functional.cross_entropy(logits, y[batch]) + L2 * (weights**2).sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        with torch.no_grad():
            scores = adapt(qc) @ everything.T
            ranks = (scores > scores[torch.arange(len(yc)), yc][:, None]).sum(1) + 1
            recall = {f"recall@{k}": float((ranks <= k).float().mean()) for k in (1, 10, 50)}
        if progress is not None:
            progress(epoch + 1, recall)
        score = (recall["recall@50"], recall["recall@10"], recall["recall@1"])
        if score > best[0]:
            best = (score, weights.detach().numpy().copy())
    return QueryAdapter(best[1].astype(np.float32), encoder)
