"""TRL-Bench suite ``claim-retrieval``: each TabFact statement of a split against every TabFact
table (16,573 in ``data/all_csv``); Recall@1/5/10/50 and MRR of the statement's own table.

The lake over ``all_csv`` (captions from ``data/table_to_page.json``, then the ``[statements,
labels, caption]`` entries of the train and val example files for tables the page map lacks) is
built once with the encoder and reused (``lake=``). Retrieval is :class:`tabverify.lake.retrieve.Retriever`.

The reranker's weights are chosen on TabFact *train* statements only (never on val or test). The
train tables are split by a hash of their file name (:func:`held_out`): a fifth is held out for
choosing features and settings, the rest gives the fitting sample. :func:`fit_model` samples 3,000
train statements of the other tables (seed 0), collects their candidate pools and fits a softmax over
each pool (a conditional logit: the statement's own table against the rest of its pool; L2 penalty
3e-6 on the mean log-loss, barely any: a penalty of 0.01 gave Recall@1 0.630). :func:`evaluate_held_out`
scores 2,000 statements of the held-out tables (seed 1). There the row, lead and header features
(``row_words`` ... ``table_rows``) raised Recall@1 / @10 from 0.664 / 0.849 to 0.681 / 0.861 on the
lexical lake and from 0.675 / 0.862 to 0.689 / 0.867 on the minilm lake; a per-candidate gradient
boosted classifier over the same features gave 0.651 / 0.854 (minilm), below the linear softmax.
For the minilm lake, the query adapter (:func:`fit_adapter_for_lake`, trained on the train
statements of :func:`adapter_split`: no table of the reranker's sample or of the held-out fifth) and
the ``column_cosine`` and ``word_rarity`` features raised held-out Recall@10 from 0.867 to 0.877 (val: 0.840 to 0.851).
The weights shipped in :data:`tabverify.lake.retrieve.MODELS` were printed by::

    .venv/bin/python scripts/bench_check_lake.py fit --lake LAKE --data ../shared/datasets/tabfact
    # minilm: the adapter first, then the reranker on adapted vectors
    .venv/bin/python scripts/bench_check_lake.py fit-adapter --lake LAKE --out src/tabverify/models/claim_adapter_minilm.npz
    .venv/bin/python scripts/bench_check_lake.py fit --lake LAKE --adapter claim_adapter_minilm.npz

and their held-out numbers by ``scripts/bench_check_lake.py held-out --lake LAKE``.

``run(..., fit=True)`` refits on train inside the run instead of using the shipped weights.
"""

from __future__ import annotations

import json
import math
import random
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tabverify.bench.tabfact import Example, load_examples
from tabverify.errors import DatasetError
from tabverify.lake.retrieve import _DENSE_INDEX, FEATURES, MODELS, RankModel, Retriever

__all__ = [
    "KS",
    "adapter_split",
    "fit_adapter_for_lake",
    "build_tabfact_lake",
    "default_lake_path",
    "evaluate_held_out",
    "fit_model",
    "fit_models",
    "held_out",
    "run",
    "tabfact_captions",
    "train_sample",
]

KS = (1, 5, 10, 50)
"""The cut-offs of Recall@k."""

FIT_STATEMENTS = 3_000
"""Train statements the reranker is fitted on (3,000: fitting takes minutes on one core)."""
FIT_SEED = 0
FIT_L2 = 3e-6
"""The reranker's L2 penalty on the mean log-loss (0.01 underfit: held-out Recall@1 0.630 -> 0.653)."""
HELD_OUT_STATEMENTS = 2_000
"""Statements of the held-out train tables scored by :func:`evaluate_held_out`."""
HELD_OUT_SEED = 1
HELD_OUT_SHARE = 5
"""One train table in this many is held out (by a hash of its name) for choosing the reranker."""
BATCH = 256


def held_out(table_id: str) -> bool:
    """Whether a train table is held out of the reranker's fitting sample (a stable hash of its
    name: one in :data:`HELD_OUT_SHARE`), so its statements can choose features and settings."""
    return zlib.crc32(table_id.encode("utf-8")) % HELD_OUT_SHARE == 0


def train_sample(data: str | Path, held: bool, statements: int, seed: int) -> list[Example]:
    """``statements`` train statements (sampled with ``seed``) of the :func:`held_out` tables
    (``held``), or of the others (what the reranker is fitted on).

    Raises:
        DatasetError: the train statements cannot be read.
    """
    examples = [e for e in load_examples(data, "train") if held_out(e.table_id) == held]
    return random.Random(seed).sample(examples, min(statements, len(examples)))


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
    l2: float = FIT_L2,
    dense: bool = True,
    adapter: str | None = None,
    progress: Progress | None = None,
) -> RankModel:
    """Fit the reranker on ``statements`` TabFact *train* statements (sampled with ``seed`` from the
    tables that are not :func:`held_out`): a
    softmax over the :data:`~tabverify.lake.retrieve.FEATURES` of each statement's candidate pool
    that maximises the probability of the statement's own table (L2 penalty ``l2``); statements
    whose pool misses their table are left out. ``dense=False``: the keyword-only model.

    Raises:
        DatasetError: the train statements cannot be read, or no pool holds its table.
    """
    (model,) = fit_models(
        lake,
        data,
        statements=statements,
        seed=seed,
        l2=l2,
        dense=(dense,),
        adapter=adapter,
        progress=progress,
    )
    return model


def fit_models(
    lake: Any,
    data: str | Path,
    *,
    statements: int = FIT_STATEMENTS,
    seed: int = FIT_SEED,
    l2: float = FIT_L2,
    dense: Sequence[bool] = (True, False),
    adapter: str | None = None,
    progress: Progress | None = None,
) -> list[RankModel]:
    """:func:`fit_model` once for each of ``dense`` (with and without the dense features), from one
    collection of the train pools; ``adapter``: the file name, in the package's models, of the
    query adapter the statement vectors go through (the dense models record it).

    Raises:
        DatasetError: with an adapter, a sample other than :data:`FIT_STATEMENTS` statements of
            :data:`FIT_SEED` (the adapter was fitted on statements of every other table, see
            :func:`adapter_split`), or no pool holds its table.
    """
    if adapter is not None and (statements, seed) != (FIT_STATEMENTS, FIT_SEED):
        raise DatasetError(
            f"with a query adapter the reranker is fitted on the sample the adapter left out "
            f"({FIT_STATEMENTS} statements, seed {FIT_SEED}); other samples share statements with it"
        )
    sample = train_sample(data, False, statements, seed)
    retriever = Retriever(
        lake,
        model=RankModel((0.0,) * len(FEATURES), 0.0, dense=any(dense), adapter=adapter),
        cache=len(lake) + 1,
        column_cosine=True,
    )
    pools: list[tuple[np.ndarray, int]] = []
    for start in range(0, len(sample), BATCH):
        batch = sample[start : start + BATCH]
        vectors = retriever.embed([e.statement for e in batch])
        for i, example in enumerate(batch):
            pool = retriever.pool(example.statement, None if vectors is None else vectors[i])
            if example.table_id in pool.ids:
                pools.append((pool.features, pool.ids.index(example.table_id)))
        if progress is not None:
            progress(min(start + BATCH, len(sample)), len(sample))
    if not pools:
        raise DatasetError("no candidate pool of the train sample holds its table; check the lake")
    models = []
    for with_dense in dense:
        keep = np.ones(len(FEATURES), dtype=bool)
        if not with_dense:
            keep[_DENSE_INDEX] = False
        weights = np.zeros(len(FEATURES))
        weights[keep] = _fit_softmax([(f[:, keep], j) for f, j in pools], l2)
        models.append(
            RankModel(
                tuple(round(float(w), 5) for w in weights),
                0.0,
                dense=with_dense,
                listwise=True,
                adapter=adapter if with_dense else None,
            )
        )
    return models


def _fit_softmax(pools: Sequence[tuple[np.ndarray, int]], l2: float) -> np.ndarray:
    """Weights maximising the mean log-softmax of each pool's positive row, minus ``l2 * |w|^2``."""
    from scipy.optimize import minimize

    width = pools[0][0].shape[1]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = l2 * float(w @ w), 2.0 * l2 * w
        for features, positive in pools:
            scores = features @ w
            scores -= scores.max()
            shares = np.exp(scores)
            shares /= shares.sum()
            total -= (math.log(max(float(shares[positive]), 1e-300))) / len(pools)
            grad = grad - (features[positive] - shares @ features) / len(pools)
        return total, grad

    return minimize(loss, np.zeros(width), jac=True, method="L-BFGS-B").x


ADAPTER_CHECK_SHARE = 10
"""One in this many of the adapter's tables (by a hash of the name) checks its epochs instead of
training it."""


def adapter_split(data: str | Path) -> tuple[list[Example], list[Example]]:
    """The train statements the query adapter is fitted on and those that choose its epoch: every
    train statement whose table is neither :func:`held_out` nor in the reranker's fitting sample
    (:func:`train_sample` with :data:`FIT_STATEMENTS`, :data:`FIT_SEED`), so the reranker is fitted
    on adapted vectors of statements the adapter never saw; one table in
    :data:`ADAPTER_CHECK_SHARE` (by a hash of its name) goes to the check side.

    Raises:
        DatasetError: the train statements cannot be read.
    """
    reranker_tables = {e.table_id for e in train_sample(data, False, FIT_STATEMENTS, FIT_SEED)}
    usable = [
        e
        for e in load_examples(data, "train")
        if not held_out(e.table_id) and e.table_id not in reranker_tables
    ]
    check = [e for e in usable if zlib.crc32(f"adapt:{e.table_id}".encode()) % ADAPTER_CHECK_SHARE == 0]
    chosen = {id(e) for e in check}
    return [e for e in usable if id(e) not in chosen], check


def fit_adapter_for_lake(
    lake: Any,
    data: str | Path,
    *,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> Any:
    """Fit the lake encoder's query adapter (:func:`tabverify.lake.adapter.fit_adapter`) on the
    statements of :func:`adapter_split`, against the lake's own table vectors.

    Raises:
        DatasetError: the train statements cannot be read, or their tables are not in the lake.
        TabverifyError: the lake's encoder has no text side, or torch is not installed.
    """
    from tabverify.lake.adapter import EPOCHS, fit_adapter

    fit, check = adapter_split(data)
    fit = [e for e in fit if e.table_id in lake]
    check = [e for e in check if e.table_id in lake]
    if not fit or not check:
        raise DatasetError("no train statement of the adapter's tables has its table in the lake")
    encoder = lake.encoder

    def embed(examples: list[Example], stage: str) -> np.ndarray:
        parts = []
        for start in range(0, len(examples), 1024):
            texts = [e.statement for e in examples[start : start + 1024]]
            parts.append(np.asarray(encoder.encode_text(texts), dtype=np.float32))
            if progress is not None:
                progress(stage, min(start + 1024, len(examples)), len(examples))
        return np.concatenate(parts)

    all_ids = lake.ids()
    row_of = {table_id: i for i, table_id in enumerate(all_ids)}
    own = sorted({e.table_id for e in fit})
    own_row = {table_id: i for i, table_id in enumerate(own)}
    return fit_adapter(
        embed(fit, "adapter: encode"),
        lake.table_vectors(own),
        [own_row[e.table_id] for e in fit],
        embed(check, "adapter: encode check"),
        [row_of[e.table_id] for e in check],
        lake.table_vectors(all_ids),
        str(lake.meta.get("encoder")),
        seed=seed,
        progress=None
        if progress is None
        else (
            lambda epoch, recall: progress(
                f"adapter: epoch (check R@50 {recall['recall@50']:.3f})", epoch, EPOCHS
            )
        ),
    )


def evaluate_held_out(
    lake: Any,
    data: str | Path,
    *,
    model: RankModel | None = None,
    statements: int = HELD_OUT_STATEMENTS,
    seed: int = HELD_OUT_SEED,
    progress: Progress | None = None,
) -> dict[str, float]:
    """Recall@k and MRR (:func:`metrics`) of ``statements`` train statements of the :func:`held_out`
    tables (none of them in :func:`fit_model`'s sample) with ``model`` (default: the lake encoder's
    shipped weights): the numbers features and settings are chosen by.

    Raises:
        DatasetError: the train statements cannot be read.
    """
    sample = train_sample(data, True, statements, seed)
    retriever = Retriever(lake, model=model, cache=len(lake) + 1)
    return metrics(_ranks(retriever, sample, progress, k=max(KS)))


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
    missing = sum(1 for e in examples if e.table_id not in opened)
    if missing > 0.05 * len(examples):  # a lake of other tables: every number would be 0 without a word
        raise DatasetError(
            f"the tables of {missing:,} of the {len(examples):,} {split} statements are not in the lake "
            f"({len(opened):,} tables); give a lake of {data / 'data' / 'all_csv'}, or leave --lake out"
        )
    started = time.perf_counter()
    if fit and model is None:
        shipped = MODELS.get(encoder.name)
        model = fit_model(opened, data, adapter=shipped.adapter if shipped is not None else None)
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
            "adapter": retriever.model.adapter if retriever.model and retriever.adapter else None,
            "fitted_in_run": bool(fit),
        },
        "seconds": round(elapsed, 1),
    }
