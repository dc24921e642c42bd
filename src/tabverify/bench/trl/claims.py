"""TRL-Bench suite ``claim-retrieval``: each TabFact statement of a split against every TabFact
table (16,573 in ``data/all_csv``); Recall@1/5/10/50 and MRR of the statement's own table.

The lake over ``all_csv`` (captions from ``data/table_to_page.json``, then the ``[statements,
labels, caption]`` entries of the train and val example files for tables the page map lacks) is
built once with the encoder and reused (``lake=``). Retrieval is :class:`tabverify.lake.retrieve.Retriever`.

The reranker's weights are chosen on TabFact *train* statements only (never on val or test):
:func:`fit_model` samples 3,000 train statements (seed 0), collects their candidate pools and fits
a logistic regression (C=10, the best of 0.1/1/10 on a held-out third of a train sample). The
weights shipped in :data:`tabverify.lake.retrieve.MODELS` were printed by::

    .venv/bin/python scripts/bench_check_lake.py fit --lake LAKE --data ../shared/datasets/tabfact

``run(..., fit=True)`` refits on train inside the run instead of using the shipped weights.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tabverify.bench.tabfact import Example, load_examples
from tabverify.errors import DatasetError
from tabverify.lake.retrieve import _DENSE_INDEX, FEATURES, RankModel, Retriever

__all__ = ["KS", "build_tabfact_lake", "default_lake_path", "fit_model", "run", "tabfact_captions"]

KS = (1, 5, 10, 50)
"""The cut-offs of Recall@k."""

FIT_STATEMENTS = 3_000
FIT_SEED = 0
FIT_C = 10.0
BATCH = 256

Progress = Callable[[int, int], None]


def tabfact_captions(data_dir: str | Path) -> dict[str, str]:
    """Captions by table file name: ``data/table_to_page.json`` first, then the captions of the train
    and val example files for tables it lacks (the same page titles, shipped with the statements).

    Raises:
        DatasetError: ``table_to_page.json`` is missing or not an object.
    """
    root = Path(data_dir)
    page_file = root / "data" / "table_to_page.json"
    try:
        pages = json.loads(page_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{page_file}: cannot read the table captions ({exc})") from None
    if not isinstance(pages, dict):
        raise DatasetError(f"{page_file}: expected an object {{table file: [title, url]}}")
    captions = {
        str(k): str(v[0] if isinstance(v, list) and v else v) for k, v in pages.items() if v is not None
    }
    for split in ("train", "val"):
        try:
            examples = load_examples(root, split)
        except DatasetError:
            continue
        for example in examples:
            captions.setdefault(example.table_id, example.caption)
    return captions


def default_lake_path(data_dir: str | Path, encoder_name: str) -> Path:
    """Where :func:`run` builds the lake when none is given: ``results/lakes/tabfact-<encoder>``."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in encoder_name)
    return Path("results") / "lakes" / f"tabfact-{safe}"


def build_tabfact_lake(
    data_dir: str | Path, out: str | Path, encoder: Any, progress: Progress | None = None
) -> Any:
    """Index every table of ``data/all_csv`` into the lake at ``out`` (resumable; a complete lake
    is only reopened) and open it."""
    from tabverify.lake.indexing import build_lake
    from tabverify.lake.store import Lake

    tables = Path(data_dir) / "data" / "all_csv"
    if not tables.is_dir():
        raise DatasetError(f"{tables}: not a folder; give the TabFact release folder (with data/all_csv)")
    report = None if progress is None else (lambda _stage, done, total: progress(done, total))
    build_lake(tables, out, encoder, captions=tabfact_captions(data_dir), progress=report)
    return Lake.open(out, encoder)


def _open_lake(encoder: Any, data: Path, lake: Any, progress: Progress | None) -> Any:
    from tabverify.lake.store import Lake

    if lake is None:
        lake = default_lake_path(data, encoder.name)
    if isinstance(lake, str | Path):
        if (Path(lake) / "lake.json").is_file():
            return Lake.open(lake, encoder)  # reused as it is (rebuild with `lake index` to refresh)
        return build_tabfact_lake(data, lake, encoder, progress)
    return lake


def _ranks(
    retriever: Retriever, examples: Sequence[Example], progress: Progress | None, k: int
) -> list[int | None]:
    """The 1-based rank of each statement's table among its top ``k`` (None: not among them)."""
    ranks: list[int | None] = []
    for start in range(0, len(examples), BATCH):
        batch = examples[start : start + BATCH]
        vectors = retriever.embed([e.statement for e in batch])
        for i, example in enumerate(batch):
            found = retriever.retrieve(example.statement, k, None if vectors is None else vectors[i])
            ids = [c.id for c in found]
            ranks.append(ids.index(example.table_id) + 1 if example.table_id in ids else None)
        if progress is not None:
            progress(len(ranks), len(examples))
    return ranks


def metrics(ranks: Sequence[int | None]) -> dict[str, float]:
    """Recall@k for :data:`KS` and MRR (over the retrieved list) of 1-based ranks (None: missed)."""
    n = max(1, len(ranks))
    out = {f"recall@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in KS}
    out["mrr"] = sum(1.0 / r for r in ranks if r is not None) / n
    return {key: round(value, 4) for key, value in out.items()}


def fit_model(
    lake: Any,
    data: str | Path,
    *,
    statements: int = FIT_STATEMENTS,
    seed: int = FIT_SEED,
    c: float = FIT_C,
    dense: bool = True,
    progress: Progress | None = None,
) -> RankModel:
    """Fit the reranker on ``statements`` TabFact *train* statements (sampled with ``seed``): a
    logistic regression (``C=c``) over :data:`~tabverify.lake.retrieve.FEATURES` of every candidate
    of each statement's pool, the statement's own table the positive.

    Raises:
        DatasetError: the train statements cannot be read, or no pool holds its table.
    """
    from sklearn.linear_model import LogisticRegression

    examples = load_examples(data, "train")
    rng = random.Random(seed)
    sample = rng.sample(examples, min(statements, len(examples)))
    retriever = Retriever(
        lake, model=RankModel((0.0,) * len(FEATURES), 0.0, dense=dense), cache=len(lake) + 1
    )
    blocks, labels = [], []
    for start in range(0, len(sample), BATCH):
        batch = sample[start : start + BATCH]
        vectors = retriever.embed([e.statement for e in batch])
        for i, example in enumerate(batch):
            pool = retriever.pool(example.statement, None if vectors is None else vectors[i])
            if not pool.ids:
                continue
            features = pool.features
            if not dense:
                features = features.copy()
                features[:, _DENSE_INDEX] = 0.0
            blocks.append(features)
            labels.append(np.array([i == example.table_id for i in pool.ids], dtype=bool))
        if progress is not None:
            progress(min(start + BATCH, len(sample)), len(sample))
    if not blocks or not any(y.any() for y in labels):
        raise DatasetError("no candidate pool of the train sample holds its table; check the lake")
    model = LogisticRegression(C=c, max_iter=5000).fit(np.vstack(blocks), np.concatenate(labels))
    return RankModel(
        tuple(round(float(w), 5) for w in model.coef_[0]), round(float(model.intercept_[0]), 5), dense=dense
    )


def run(
    encoder: Any,
    data: str | Path,
    *,
    split: str = "val",
    lake: Any = None,
    progress: Progress | None = None,
    limit: int | None = None,
    fit: bool = False,
    model: RankModel | None = None,
) -> dict[str, Any]:
    """Retrieve the table of each statement of ``split`` among all TabFact tables.

    ``lake``: a lake over ``data/all_csv`` built with ``encoder`` (an open Lake, or a folder: a lake
    there is reused as it is, else one is built there); None: the folder :func:`default_lake_path`. ``limit``: only the first N statements.
    ``fit``: refit the reranker on train statements first (:func:`fit_model`); ``model``: use these
    weights. Returns the suite's result with ``metrics`` (``recall@1/5/10/50``, ``mrr``).

    Raises:
        DatasetError: the split is train (the reranker's weights come from it) or cannot be read.
    """
    if split == "train":
        raise DatasetError(
            "the reranker is fitted on train statements; evaluate claim-retrieval on val or test"
        )
    data = Path(data)
    examples = load_examples(data, split)
    if limit is not None:
        examples = examples[: max(0, limit)]
    opened = _open_lake(encoder, data, lake, None)
    started = time.perf_counter()
    if fit and model is None:
        model = fit_model(opened, data)
    retriever = Retriever(opened, model=model, cache=len(opened) + 1)
    ranks = _ranks(retriever, examples, progress, k=max(KS))
    elapsed = time.perf_counter() - started
    return {
        "benchmark": "trl",
        "suite": "claim-retrieval",
        "encoder": encoder.name,
        "split": split,
        "n": len(examples),
        "tables": len(opened),
        "metrics": metrics(ranks),
        "reranker": {
            "features": list(FEATURES),
            "coef": list(retriever.model.coef) if retriever.model else None,
            "intercept": retriever.model.intercept if retriever.model else None,
            "dense": bool(retriever.dense_pool),
            "fitted_in_run": bool(fit),
        },
        "seconds": round(elapsed, 1),
    }
