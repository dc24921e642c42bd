"""The linkage suite on a tiny DeepMatcher-layout dataset written here, with a small test encoder;
layout errors; and (marked data) the real datasets' layout."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tabverify.bench.trl import linkage, probes
from tabverify.bench.trl.linkage import cosine_threshold, find_datasets, load_dataset, pair_features, run
from tabverify.errors import DatasetError, ModelError
from tabverify.lake.encoders import TableEmbedding, normalize_rows, row_text
from tabverify.table.model import Table
from tests.conftest import SHARED, needs_dataset

SHARED_EM = SHARED / "entity-matching"


@pytest.fixture(autouse=True)
def quick_mlp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer MLP updates on these tiny sets (the protocol's constants are tested in test_trl_probes)."""
    monkeypatch.setattr(probes, "MIN_STEPS", 30)
    monkeypatch.setattr(probes, "MAX_EPOCHS", 60)


class TrigramEncoder:
    """Rows as hashed character trigrams of their text (64 buckets); records what it was given."""

    name, dim, version = "trigram-test", 64, "1"

    def __init__(self) -> None:
        self.calls: list[tuple[list[tuple[str, ...]], bool]] = []

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            padded = f"  {text.lower()}  "
            for k in range(len(padded) - 2):
                out[i, zlib.crc32(padded[k : k + 3].encode()) % self.dim] += 1.0
        return normalize_rows(out)

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]:
        self.calls.append(([t.header for t in tables], rows))
        return [
            TableEmbedding(
                table=np.zeros(self.dim, dtype=np.float32),
                columns=np.zeros((t.n_columns, self.dim), dtype=np.float32),
                rows=self._embed([row_text(t, i) for i in range(t.n_rows)]) if rows else None,
            )
            for t in tables
        ]

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)


NAMES = [
    "golden dragon", "blue lagoon", "red rooster", "silver spoon", "green garden", "old mill",
    "harbor view", "sunset grill", "maple tree", "river bend", "stone oven", "lucky star",
    "iron horse", "copper kettle", "olive branch", "white swan", "black cat", "purple plum",
    "north star", "quiet corner", "rustic table", "city lights", "little italy", "ocean breeze",
]  # fmt: skip
CITIES = ["boston", "denver", "austin", "seattle", "miami", "chicago"]


def write_dataset(folder: Path, *, train: bool = True) -> None:
    """24 entities on each side (B's names slightly altered), matching pairs on the diagonal and
    non-matching pairs off it, split over train / valid / test."""
    (folder / "tables").mkdir(parents=True)
    a_lines = ["id,name,city"] + [f"{i},{n},{CITIES[i % 6]}" for i, n in enumerate(NAMES)]
    b_lines = ["id,name,city"] + [
        f"{100 + i},the {n} restaurant,{CITIES[i % 6]}" for i, n in enumerate(NAMES)
    ]
    (folder / "tables" / "tableA.csv").write_text("\n".join(a_lines) + "\n", encoding="utf-8")
    (folder / "tables" / "tableB.csv").write_text("\n".join(b_lines) + "\n", encoding="utf-8")
    rng = np.random.default_rng(0)
    pairs = [(i, 100 + i, 1) for i in range(24)]
    for i in range(24):
        for j in rng.choice([k for k in range(24) if k != i], size=3, replace=False):
            pairs.append((i, 100 + int(j), 0))
    order = rng.permutation(len(pairs))
    pairs = [pairs[k] for k in order]
    chunks = {"train": pairs[:56], "valid": pairs[56:76], "test": pairs[76:]}
    for split, rows in chunks.items():
        if split == "train" and not train:
            continue
        lines = ["ltable_id,rtable_id,label"] + [f"{a},{b},{y}" for a, b, y in rows]
        (folder / f"{split}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def em(tmp_path: Path) -> Path:
    root = tmp_path / "entity-matching"
    write_dataset(root / "deepmatcher" / "Structured__Diners")
    write_dataset(root / "deepmatcher" / "Dirty__Diners", train=False)
    (root / "deepmatcher" / "Textual__Company" / "tables").mkdir(parents=True)  # the empty one
    return root


def test_cosine_threshold_maximises_f1_with_a_midpoint() -> None:
    threshold, f1 = cosine_threshold(np.array([0.9, 0.8, 0.7, 0.2, 0.1]), np.array([1, 1, 0, 0, 1]))
    assert f1 == pytest.approx(0.8)  # top two positive: 2*2/(2+3)
    assert threshold == pytest.approx(0.75)
    threshold, f1 = cosine_threshold(np.array([0.5, 0.5, 0.1]), np.array([1, 0, 0]))
    assert 0.1 < threshold <= 0.5 and f1 == pytest.approx(2 / 3)


def test_pair_features() -> None:
    a = np.array([[1.0, 0.0]])
    b = np.array([[0.5, 0.5]])
    assert pair_features(a, b, "concat").tolist() == [[1.0, 0.0, 0.5, 0.5]]
    assert pair_features(a, b, "interaction").tolist() == [[0.5, 0.0, 0.5, 0.5]]
    with pytest.raises(ValueError):
        pair_features(a, b, "sum")


def test_run_on_a_tiny_dataset(em: Path) -> None:
    encoder = TrigramEncoder()
    done: list[tuple[int, int]] = []
    result = run(encoder, em, seeds=(72, 62), progress=lambda d, n: done.append((d, n)))
    assert result["benchmark"] == "trl" and result["suite"] == "linkage"
    assert result["encoder"] == "trigram-test"
    assert result["skipped"] == ["Textual__Company"]
    assert done[0] == (0, 2) and done[-1] == (2, 2)
    # one call per dataset with both tables, rows asked for, the id column dropped
    assert encoder.calls == [([("name", "city"), ("name", "city")], True)] * 2
    metrics = result["metrics"]
    assert set(metrics["datasets"]) == {"Dirty__Diners", "Structured__Diners"}
    assert metrics["n_datasets"] == 2
    assert metrics["pair_features"] == "concat"
    assert metrics["interaction"]["pair_features"] == "interaction"
    assert "outside the TRL protocol" in metrics["interaction"]["note"]
    structured = metrics["datasets"]["Structured__Diners"]
    assert structured["pairs"] == {"train": 56, "valid": 20, "test": 20}
    # matching rows share most trigrams: the training-free baseline separates them
    assert structured["cosine"]["f1"] >= 0.9
    assert structured["interaction"]["linear"]["mean"] >= 0.8
    for kind in ("concat", "interaction"):
        assert len(structured[kind]["mlp"]["per_seed"]) == 2
    no_train = metrics["datasets"]["Dirty__Diners"]
    assert no_train["pairs"]["train"] == 0
    assert no_train["probe_train"].startswith("stratified 90% of valid")
    assert no_train["concat"]["validation"].startswith("stratified 10%")
    means = [d["concat"]["linear"]["mean"] for d in metrics["datasets"].values()]
    assert metrics["f1_linear"] == pytest.approx(np.mean(means))
    assert metrics["f1_probe_mean"] == pytest.approx((metrics["f1_linear"] + metrics["f1_mlp"]) / 2)
    assert metrics["f1_cosine"] == pytest.approx(
        np.mean([d["cosine"]["f1"] for d in metrics["datasets"].values()])
    )
    assert result["protocol"]["seeds"] == [72, 62]
    json.dumps(result)  # the result is plain JSON


def test_run_accepts_the_deepmatcher_folder_and_dataset_names(em: Path) -> None:
    result = run(
        TrigramEncoder(),
        em / "deepmatcher",
        datasets=["Structured/Diners"],
        seeds=(72,),
        pair_features=("concat",),
    )
    assert list(result["metrics"]["datasets"]) == ["Structured__Diners"]
    assert "interaction" not in result["metrics"]
    with pytest.raises(DatasetError, match="ambiguous"):
        run(TrigramEncoder(), em, datasets="Diners", seeds=(72,))
    with pytest.raises(DatasetError, match="not a dataset here"):
        run(TrigramEncoder(), em, datasets="Beer", seeds=(72,))


def test_an_encoder_without_rows_is_refused(em: Path) -> None:
    class NoRows(TrigramEncoder):
        def encode(self, tables, rows=False):
            return super().encode(tables, rows=False)

    with pytest.raises(ModelError, match="no row side"):
        run(NoRows(), em, datasets="Structured__Diners", seeds=(72,))


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "test.csv").unlink(), "test.csv is missing"),
        (lambda d: (d / "valid.csv").unlink(), "valid.csv is missing"),
        (lambda d: (d / "tables" / "tableB.csv").unlink(), "tableB.csv is missing"),
        (
            lambda d: (d / "train.csv").write_text("ltable_id,rtable_id,y\n0,100,1\n"),
            "train.csv: no label column",
        ),
        (lambda d: (d / "valid.csv").write_text("ltable_id,rtable_id,label\n999,100,1\n"), "ltable_id '999'"),
        (lambda d: (d / "valid.csv").write_text("ltable_id,rtable_id,label\n0,100,2\n"), "label '2'"),
        (lambda d: (d / "valid.csv").write_text("ltable_id,rtable_id,label\n0,100\n"), "line 2 has 2 fields"),
        (lambda d: (d / "test.csv").write_text("ltable_id,rtable_id,label\n"), "test.csv: no pairs"),
        (lambda d: (d / "tables" / "tableA.csv").write_text("key,name\n0,x\n"), "tableA.csv: no id column"),
        (lambda d: (d / "tables" / "tableA.csv").write_text("id,name\n0,x\n0,y\n"), "id '0' appears twice"),
        (
            lambda d: (d / "tables" / "tableA.csv").write_bytes(b"id,name\n0,\xff\n"),
            "tableA.csv: not valid UTF-8",
        ),
    ],
)
def test_malformed_datasets_are_one_line_errors_naming_the_file(em: Path, damage, message: str) -> None:
    folder = em / "deepmatcher" / "Structured__Diners"
    damage(folder)
    with pytest.raises(DatasetError, match=message) as info:
        load_dataset(folder)
    assert str(folder) in str(info.value) and "\n" not in str(info.value)


def test_a_missing_file_is_reported_before_any_encoding(em: Path) -> None:
    (em / "deepmatcher" / "Structured__Diners" / "test.csv").unlink()
    encoder = TrigramEncoder()
    with pytest.raises(DatasetError, match="Structured__Diners/test.csv is missing"):
        run(encoder, em, seeds=(72,))
    assert encoder.calls == []  # Dirty__Diners comes first and was not encoded


def test_missing_data_folders(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such folder"):
        find_datasets(tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="no deepmatcher/ folder"):
        find_datasets(tmp_path)
    (tmp_path / "deepmatcher" / "Textual__Company" / "tables").mkdir(parents=True)
    with pytest.raises(DatasetError, match="no dataset folders with data"):
        run(TrigramEncoder(), tmp_path)


def test_unknown_pair_features_and_no_seeds(em: Path) -> None:
    with pytest.raises(DatasetError, match="unknown pair features"):
        run(TrigramEncoder(), em, pair_features=("sum",))
    with pytest.raises(DatasetError, match="no seeds"):
        run(TrigramEncoder(), em, seeds=())


@pytest.mark.data
@needs_dataset(SHARED_EM)
def test_the_deepmatcher_datasets_here() -> None:
    folders, skipped = find_datasets(SHARED_EM)
    assert len(folders) == 12
    summary = json.loads((SHARED_EM / "deepmatcher" / "SUMMARY.json").read_text(encoding="utf-8"))
    beer = load_dataset(SHARED_EM / "deepmatcher" / "Structured__Beer")
    expected = summary["Structured/Beer"]
    assert beer.table_a.n_rows == expected["tableA_rows"] and beer.table_b.n_rows == expected["tableB_rows"]
    assert list(beer.table_a.header) == expected["columns"]
    for split in ("train", "valid", "test"):
        assert len(beer.splits[split]) == expected["splits"][split]["pairs"]
        assert int(beer.splits[split].labels.sum()) == expected["splits"][split]["pos"]
    scholar = load_dataset(SHARED_EM / "deepmatcher" / "Structured__DBLP-GoogleScholar")
    assert scholar.splits["train"] is None and len(scholar.splits["valid"]) == 5742
    assert linkage.SPLIT_NAMES == ("train", "valid", "test")
