"""The ``linkage`` suite: record linkage (entity matching) as row-to-row alignment across two tables,
scored as TRL-Bench's clean record linkage (positive-class F1 on test).

Data: the DeepMatcher literature splits in ../shared/datasets/entity-matching/deepmatcher, one folder
per dataset (``Structured__Beer``, ...) holding ``tables/tableA.csv`` and ``tables/tableB.csv``
(an ``id`` column and the record's attributes) and ``train.csv``, ``valid.csv``, ``test.csv``
(``ltable_id, rtable_id, label``). A folder whose two tables have no rows and which has no split
files (the empty ``Textual__Company`` of the source) is skipped and listed under ``skipped``.

Per dataset:

1. Rows: every row of tableA and tableB, without its ``id`` column, embedded by the encoder's row
   side in one call, ``encoder.encode([tableA, tableB], rows=True)`` (so a per-table self-supervised
   encoder puts both sides in one space). The vectors live in memory for this dataset only.
2. Cosine baseline (training-free): the cosine of the two rows of each pair; the threshold that
   maximises F1 on valid (the midpoint below the best cut) is applied to test.
3. Probes (:mod:`.probes`, seeds 72, 62, 52, 82, 42): the linear and MLP probes on the pair
   features, C and the MLP's epoch chosen by F1 on valid, positive class at probability >= 0.5.
   - ``concat``: [e1, e2], the TRL-Bench protocol. The headline ``f1_linear``, ``f1_mlp``,
     ``f1_probe_mean`` use these.
   - ``interaction``: [e1 * e2, |e1 - e2|] (SBERT-style), an EXTENSION outside the TRL protocol,
     reported separately under ``metrics["interaction"]``: a linear head on a concatenation cannot
     compute a similarity between its two halves, one on these features can.
   A dataset with no train split (DBLP-GoogleScholar in this release) trains the probes on a
   stratified 90% of valid drawn with each seed and validates on the other 10%; test is used only
   for scoring.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tabverify import files
from tabverify.bench.trl.probes import SEEDS, THRESHOLD, evaluate_probes, positive_f1
from tabverify.errors import DatasetError, ModelError, TableError
from tabverify.lake.encoders import TableEncoder, normalize_rows
from tabverify.table.model import Table
from tabverify.table.readers import read_csv

__all__ = [
    "PAIR_FEATURES",
    "LinkageData",
    "cosine_threshold",
    "find_datasets",
    "load_dataset",
    "pair_features",
    "run",
]

PAIR_FEATURES = ("concat", "interaction")
"""``concat`` is TRL-Bench's; ``interaction`` ([e1*e2, |e1-e2|]) is this project's extension."""

SPLIT_NAMES = ("train", "valid", "test")
MAX_SPLIT_BYTES = 20_000_000
"""The largest split file read (the biggest DeepMatcher split is about 0.2 MB)."""

LAYOUT = (
    "expected the DeepMatcher layout: <dataset>/tables/tableA.csv, tableB.csv (with an id column) and "
    "<dataset>/train.csv, valid.csv, test.csv (ltable_id, rtable_id, label)"
)


@dataclass(frozen=True)
class Pairs:
    """One split: row indices into tableA (``left``) and tableB (``right``), and 0/1 ``labels``."""

    left: np.ndarray
    right: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class LinkageData:
    """One dataset: its two tables (the id column dropped) and its splits (``train`` may be None)."""

    name: str
    table_a: Table
    table_b: Table
    splits: dict[str, Pairs | None]


# --- reading ------------------------------------------------------------------------------------


def _root(data: str | Path) -> Path:
    """The folder holding the dataset folders: ``data/deepmatcher`` or ``data`` itself."""
    path = Path(data)
    if not path.is_dir():
        raise DatasetError(f"{path}: no such folder; pass the entity-matching folder (holding deepmatcher/)")
    if (path / "deepmatcher").is_dir():
        return path / "deepmatcher"
    if any((child / "tables").is_dir() for child in path.iterdir() if child.is_dir()):
        return path
    raise DatasetError(f"{path}: no deepmatcher/ folder and no dataset folders in it; {LAYOUT}")


def _is_empty(folder: Path) -> bool:
    """A placeholder dataset: no split files and tables without data rows (or no tables at all)."""
    if any((folder / f"{split}.csv").exists() for split in SPLIT_NAMES):
        return False
    for side in ("tableA.csv", "tableB.csv"):
        path = folder / "tables" / side
        if path.is_file() and path.stat().st_size > 0:
            with path.open("rb") as handle:
                if len([line for line in handle.read(65536).splitlines() if line.strip()]) > 1:
                    return False
    return True


def find_datasets(data: str | Path) -> tuple[list[Path], list[str]]:
    """The dataset folders under ``data`` (sorted by name) and the names of the empty ones skipped."""
    root = _root(data)
    found: list[Path] = []
    skipped: list[str] = []
    for child in sorted(root.iterdir()):
        if child.is_dir() and (child / "tables").is_dir():
            (skipped.append(child.name) if _is_empty(child) else found.append(child))
    if not found:
        raise DatasetError(f"{root}: no dataset folders with data; {LAYOUT}")
    return found, skipped


def _select(folders: list[Path], names: Sequence[str] | str | None) -> list[Path]:
    if names is None:
        return folders
    if isinstance(names, str):
        names = [n for n in names.split(",") if n.strip()]
    by_name = {folder.name.lower(): folder for folder in folders}
    chosen: list[Path] = []
    for name in names:
        key = name.strip().replace("/", "__").lower()
        matches = [f for n, f in by_name.items() if n == key] or [
            f for n, f in by_name.items() if n.split("__")[-1] == key
        ]
        if len(matches) != 1:
            known = ", ".join(f.name for f in folders)
            what = "is ambiguous" if matches else "is not a dataset here"
            raise DatasetError(f"{name!r} {what}; choose from {known}")
        if matches[0] not in chosen:
            chosen.append(matches[0])
    if not chosen:
        raise DatasetError("no dataset named; pass dataset folder names such as Structured__Beer")
    return chosen


def _read_table(path: Path) -> tuple[Table, dict[str, int]]:
    """A side's table without its id column, and its ids -> row indices."""
    if not path.is_file():
        raise DatasetError(f"{path} is missing; {LAYOUT}")
    try:
        table = read_csv(path, delimiter=",")
    except TableError as exc:
        raise DatasetError(str(exc)) from None
    id_column = table.column_index("id")
    if id_column is None:
        raise DatasetError(f"{path}: no id column (header: {', '.join(table.header)}); {LAYOUT}")
    ids: dict[str, int] = {}
    for i, row in enumerate(table.rows):
        key = row[id_column].text.strip()
        if key in ids:
            raise DatasetError(f"{path}: id {key!r} appears twice (data rows {ids[key] + 1} and {i + 1})")
        ids[key] = i
    keep = [j for j in range(table.n_columns) if j != id_column]
    rows = [[row[j] for j in keep] for row in table.rows]
    return Table.from_rows(
        [table.header[j] for j in keep], rows, name=f"{path.parent.parent.name}/{path.stem}"
    ), ids


def _read_split(path: Path, ids_a: dict[str, int], ids_b: dict[str, int]) -> Pairs:
    text = files.read_text(path, "split file", DatasetError, max_bytes=MAX_SPLIT_BYTES)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip().lower() for h in next(reader, [])]
        missing = [c for c in ("ltable_id", "rtable_id", "label") if c not in header]
        if missing:
            raise DatasetError(
                f"{path}: no {', '.join(missing)} column (header: {', '.join(header)}); {LAYOUT}"
            )
        a, b, y = header.index("ltable_id"), header.index("rtable_id"), header.index("label")
        left: list[int] = []
        right: list[int] = []
        labels: list[int] = []
        for row in reader:
            if not any(field.strip() for field in row):
                continue
            line = reader.line_num
            if len(row) != len(header):
                raise DatasetError(f"{path}: line {line} has {len(row)} fields, the header {len(header)}")
            key_a, key_b, label = row[a].strip(), row[b].strip(), row[y].strip()
            if key_a not in ids_a:
                raise DatasetError(f"{path}: line {line}: ltable_id {key_a!r} is not an id of tableA.csv")
            if key_b not in ids_b:
                raise DatasetError(f"{path}: line {line}: rtable_id {key_b!r} is not an id of tableB.csv")
            if label not in ("0", "1"):
                raise DatasetError(f"{path}: line {line}: label {label!r} is not 0 or 1")
            left.append(ids_a[key_a])
            right.append(ids_b[key_b])
            labels.append(int(label))
    except csv.Error as exc:
        raise DatasetError(f"{path}: cannot read line {reader.line_num + 1} as CSV ({exc})") from None
    if not labels:
        raise DatasetError(f"{path}: no pairs")
    return Pairs(
        np.array(left, dtype=np.int64), np.array(right, dtype=np.int64), np.array(labels, dtype=np.int64)
    )


def load_dataset(folder: str | Path) -> LinkageData:
    """One dataset folder: tables and splits. ``train.csv`` may be missing (then ``splits["train"]``
    is None); ``valid.csv`` and ``test.csv`` may not.

    Raises:
        DatasetError: a missing or unreadable file, a missing column, an id not in its table, or a
            label other than 0/1 - naming the file (and line).
    """
    folder = Path(folder)
    table_a, ids_a = _read_table(folder / "tables" / "tableA.csv")
    table_b, ids_b = _read_table(folder / "tables" / "tableB.csv")
    splits: dict[str, Pairs | None] = {}
    for split in SPLIT_NAMES:
        path = folder / f"{split}.csv"
        if not path.exists() and split == "train":
            splits[split] = None
            continue
        if not path.exists():
            raise DatasetError(f"{path} is missing; {LAYOUT}")
        splits[split] = _read_split(path, ids_a, ids_b)
    return LinkageData(folder.name, table_a, table_b, splits)


# --- features and the cosine baseline -----------------------------------------------------------


def pair_features(left: np.ndarray, right: np.ndarray, kind: str) -> np.ndarray:
    """Features of row pairs from their vectors: ``concat`` [e1, e2] (TRL-Bench) or ``interaction``
    [e1 * e2, |e1 - e2|] (this project's extension)."""
    if kind == "concat":
        return np.concatenate([left, right], axis=1)
    if kind == "interaction":
        return np.concatenate([left * right, np.abs(left - right)], axis=1)
    raise ValueError(f"unknown pair features {kind!r}; use {' or '.join(PAIR_FEATURES)}")


def cosine_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The threshold on ``scores`` maximising positive-class F1 (positive when score >= threshold)
    and that F1. The threshold is the midpoint between the lowest score predicted positive and the
    next lower score (ties: the highest threshold among the best cuts)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    hits = np.cumsum(labels[order] == 1)
    positives = int(np.sum(labels == 1))
    # cut after position k (k + 1 predicted positive) only where the next score differs
    last = np.r_[sorted_scores[1:] != sorted_scores[:-1], True]
    k = np.flatnonzero(last)
    f1 = 2.0 * hits[k] / ((k + 1) + positives)
    best = int(k[int(np.argmax(f1))])
    below = sorted_scores[best + 1] if best + 1 < len(sorted_scores) else sorted_scores[best] - 1.0
    return float((sorted_scores[best] + below) / 2.0), float(np.max(f1))


def _row_vectors(encoder: TableEncoder, data: LinkageData) -> tuple[np.ndarray, np.ndarray]:
    embeddings = encoder.encode([data.table_a, data.table_b], rows=True)
    if len(embeddings) != 2:
        raise ModelError(f"encoder {encoder.name!r} returned {len(embeddings)} embeddings for 2 tables")
    out = []
    for embedding, table in zip(embeddings, (data.table_a, data.table_b), strict=True):
        rows = embedding.rows
        if rows is None:
            raise ModelError(f"encoder {encoder.name!r} has no row side (rows=True gave no row vectors)")
        rows = np.asarray(rows, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[0] != table.n_rows:
            raise ModelError(
                f"encoder {encoder.name!r} gave row vectors of shape {rows.shape} for {table.n_rows} rows"
            )
        if not np.all(np.isfinite(rows)):
            raise ModelError(f"encoder {encoder.name!r} gave NaN or infinite row vectors")
        out.append(rows)
    return out[0], out[1]


def _evaluate(
    data: LinkageData, a: np.ndarray, b: np.ndarray, seeds: Sequence[int], kinds: Sequence[str]
) -> dict[str, Any]:
    train, valid, test = data.splits["train"], data.splits["valid"], data.splits["test"]
    assert valid is not None and test is not None
    na, nb = normalize_rows(a), normalize_rows(b)

    def cosines(pairs: Pairs) -> np.ndarray:
        return np.sum(na[pairs.left] * nb[pairs.right], axis=1)

    threshold, valid_f1 = cosine_threshold(cosines(valid), valid.labels)
    test_f1 = positive_f1(test.labels, (cosines(test) >= threshold).astype(np.int64))
    result: dict[str, Any] = {
        "pairs": {split: (len(p) if p is not None else 0) for split, p in data.splits.items()},
        "positives": {
            split: (int(p.labels.sum()) if p is not None else 0) for split, p in data.splits.items()
        },
        "probe_train": "train (validation: valid)"
        if train is not None
        else "stratified 90% of valid per seed (validation: the other 10%; no train split)",
        "cosine": {"f1": test_f1, "threshold": threshold, "valid_f1": valid_f1},
    }
    for kind in kinds:

        def features(pairs: Pairs, kind: str = kind) -> np.ndarray:
            return pair_features(a[pairs.left], b[pairs.right], kind)

        if train is not None:
            probes = evaluate_probes(
                features(train), train.labels, features(valid), valid.labels, features(test), test.labels,
                metric="f1", seeds=seeds,
            )  # fmt: skip
        else:
            probes = evaluate_probes(
                features(valid),
                valid.labels,
                None,
                None,
                features(test),
                test.labels,
                metric="f1",
                seeds=seeds,
            )
        result[kind] = probes
    return result


def _aggregate(per_dataset: dict[str, dict[str, Any]], kind: str, seeds: Sequence[int]) -> dict[str, Any]:
    """Means over datasets of each probe's per-dataset mean F1, and the spread over seeds of the
    per-seed means over datasets."""
    out: dict[str, Any] = {"pair_features": kind}
    for probe in ("linear", "mlp"):
        means = [d[kind][probe]["mean"] for d in per_dataset.values()]
        by_seed = np.array([d[kind][probe]["per_seed"] for d in per_dataset.values()]).mean(axis=0)
        out[f"f1_{probe}"] = float(np.mean(means))
        out[f"f1_{probe}_std"] = float(np.std(by_seed))
    out["f1_probe_mean"] = (out["f1_linear"] + out["f1_mlp"]) / 2
    return out


def _protocol(seeds: Sequence[int], kinds: Sequence[str]) -> dict[str, Any]:
    return {
        "source": "TRL-Bench (arXiv 2606.09323) clean record linkage, on the 12 DeepMatcher datasets here",
        "rows": "encoder.encode([tableA, tableB], rows=True), the id column dropped; frozen",
        "metric": "positive-class F1 on test; per dataset the mean (and population std) over seeds; "
        "headline numbers are means over datasets",
        "pair_features": "concat" if "concat" in kinds else None,
        "pair_features_reported": list(kinds),
        "interaction": "EXTENSION outside the TRL protocol: probes on [e1*e2, |e1-e2|] (SBERT-style), "
        "reported under metrics.interaction, never in the headline f1_linear/f1_mlp/f1_probe_mean",
        "cosine": "training-free: cosine of the two row vectors, threshold maximising F1 on valid, applied to test",
        "linear": "z-score; logistic regression (lbfgs, L2, max_iter 5000); C in {0.01, 0.1, 1, 10, 100} chosen "
        "by F1 on valid (ties: log-loss); refit on train+valid; deterministic when valid is given",
        "mlp": "Linear(d,256)-ReLU-Dropout(0.1)-Linear(256,2), z-scored inputs, AdamW lr 1e-3, batch 256, "
        "early stopping on valid F1 (ties: loss), patience 10, at most 200 epochs, best weights restored",
        "decision": f"positive when the probe's probability >= {THRESHOLD} (nothing tuned on test)",
        "no_train_split": "probes train on a stratified 90% of valid drawn with each seed and validate on "
        "the other 10% (DBLP-GoogleScholar); the cosine threshold uses all of valid; test only scores",
        "seeds": list(seeds),
    }


def run(
    encoder: TableEncoder,
    data: str | Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    datasets: Sequence[str] | str | None = None,
    seeds: Sequence[int] = SEEDS,
    pair_features: Sequence[str] = PAIR_FEATURES,
) -> dict[str, Any]:
    """The linkage suite for a frozen ``encoder`` on ``data`` (the entity-matching folder holding
    ``deepmatcher/``, or ``deepmatcher/`` itself); ``datasets`` restricts it to some dataset folders
    (``Structured__Beer``, ``Structured/Beer`` or a unique short name such as ``Abt-Buy``).
    ``progress(done, total)`` is called as datasets finish.

    Returns ``{"benchmark": "trl", "suite": "linkage", "encoder", "metrics": {f1_linear, f1_mlp,
    f1_probe_mean, f1_cosine (means over datasets, concat features), interaction: {...} (the
    extension), datasets: {name: {cosine, concat, interaction, pairs, ...}}}, "protocol", ...}``.

    Raises:
        DatasetError: ``data`` not in the DeepMatcher layout, an unknown dataset name, or a missing
            or malformed file (one line naming it).
        ModelError: the encoder gives no row vectors or malformed ones.
    """
    kinds = [k for k in PAIR_FEATURES if k in set(pair_features)]
    unknown = sorted(set(pair_features) - set(PAIR_FEATURES))
    if unknown or not kinds:
        raise DatasetError(
            f"unknown pair features {', '.join(unknown) or '(none)'}; use {', '.join(PAIR_FEATURES)}"
        )
    if not seeds:
        raise DatasetError("no seeds given; the protocol's are 72, 62, 52, 82, 42")
    folders, skipped = find_datasets(data)
    folders = _select(folders, datasets)
    for folder in folders:  # a missing file is reported before hours of encoding, not after
        for part in ("tables/tableA.csv", "tables/tableB.csv", "valid.csv", "test.csv"):
            if not (folder / part).is_file():
                raise DatasetError(f"{folder / part} is missing; {LAYOUT}")
    started = time.monotonic()
    per_dataset: dict[str, dict[str, Any]] = {}
    if progress is not None:
        progress(0, len(folders))
    for done, folder in enumerate(folders, start=1):
        tick = time.monotonic()
        dataset = load_dataset(folder)
        a, b = _row_vectors(encoder, dataset)
        encoded = time.monotonic()
        result = _evaluate(dataset, a, b, seeds, kinds)
        result["seconds"] = {
            "encode": round(encoded - tick, 2),
            "probes": round(time.monotonic() - encoded, 2),
        }
        per_dataset[dataset.name] = result
        del a, b, dataset
        if progress is not None:
            progress(done, len(folders))
    metrics: dict[str, Any] = {}
    if "concat" in kinds:
        concat = _aggregate(per_dataset, "concat", seeds)
        metrics.update({k: v for k, v in concat.items()})
    metrics["f1_cosine"] = float(np.mean([d["cosine"]["f1"] for d in per_dataset.values()]))
    if "interaction" in kinds:
        metrics["interaction"] = _aggregate(per_dataset, "interaction", seeds) | {
            "note": "extension outside the TRL protocol: probes on [e1*e2, |e1-e2|] instead of concat(e1, e2)"
        }
    metrics["n_datasets"] = len(per_dataset)
    metrics["datasets"] = per_dataset
    return {
        "benchmark": "trl",
        "suite": "linkage",
        "encoder": encoder.name,
        "encoder_version": getattr(encoder, "version", None),
        "metrics": metrics,
        "protocol": _protocol(seeds, kinds),
        "skipped": skipped,
        "seconds": round(time.monotonic() - started, 1),
    }
