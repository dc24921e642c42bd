import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tabverify
from tabverify.errors import ModelError
from tabverify.program.ranker import WEIGHTS_FILE, Ranker
from tabverify.verify.decision import MODEL_FILE, VerdictModel

SHIPPED = Path(tabverify.__file__).parent / "models"


def test_shipped_models_load() -> None:
    assert np.count_nonzero(Ranker.load().weights) > 1000
    assert len(VerdictModel.load().vocabulary) > 1000


def test_verdict_model_learns_and_round_trips(tmp_path: Path) -> None:
    rows = [{"bias": 1.0, "row_all": 1.0}] * 40 + [{"bias": 1.0, "no_cell_link": 1.0}] * 40
    labels = [1] * 40 + [0] * 40
    model = VerdictModel(min_count=1, iterations=200).fit(rows, labels)
    assert model.probability({"bias": 1.0, "row_all": 1.0}) > 0.9
    assert model.probability({"bias": 1.0, "no_cell_link": 1.0}) < 0.1
    model.save(tmp_path / "m.npz")
    again = VerdictModel.load(tmp_path / "m.npz")
    assert again.probability({"bias": 1.0, "row_all": 1.0}) == pytest.approx(
        model.probability({"bias": 1.0, "row_all": 1.0}), abs=1e-3
    )


def test_missing_or_wrong_model_files_raise_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="tabverify train tabfact"):
        Ranker.load(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelError):
        VerdictModel.load(tmp_path / "junk.npz")
    VerdictModel(min_count=1, iterations=5).fit([{"a": 1.0}, {"a": 0.0}], [1, 0]).save(tmp_path / "v.npz")
    with pytest.raises(ModelError, match="is not a ranker model file"):
        Ranker.load(tmp_path / "v.npz")


def _shipped(name: str) -> dict[str, np.ndarray]:
    with np.load(SHIPPED / name) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize(("name", "load"), [(WEIGHTS_FILE, Ranker.load), (MODEL_FILE, VerdictModel.load)])
@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_a_truncated_model_file_is_a_model_error(tmp_path: Path, name: str, load, keep: float) -> None:
    data = (SHIPPED / name).read_bytes()
    path = tmp_path / name
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ModelError, match=str(path)):
        load(path)


def _ranker_corruptions() -> dict[str, tuple[dict[str, np.ndarray], str]]:
    good = _shipped(WEIGHTS_FILE)
    return {
        "values shorter than indices": ({**good, "values": good["values"][:-5]}, "indices but"),
        "2-d indices": ({**good, "indices": good["indices"].reshape(-1, 1)}, "shape"),
        "text values": ({**good, "values": good["values"].astype(str)}, "dtype"),
        "index out of range": ({**good, "indices": good["indices"] + (1 << 20)}, "outside"),
        "no n_features": ({k: v for k, v in good.items() if k != "n_features"}, "n_features"),
        "empty n_features": ({**good, "n_features": np.zeros(0, dtype=np.int64)}, "n_features"),
        "another feature size": ({**good, "n_features": np.array([1 << 10])}, "1024"),
        "nan value": (
            {**good, "values": np.where(np.arange(len(good["values"])) == 3, np.nan, good["values"])},
            "finite",
        ),
    }


def _linear_verdict_arrays(tmp_path: Path) -> dict[str, np.ndarray]:
    """A logistic-regression verdict file (the shipped model is boosted trees)."""
    rows = [{f"w{i}": 1.0, "bias": 1.0} for i in range(20)] * 2
    VerdictModel(min_count=1, iterations=5).fit(rows, [i % 2 for i in range(40)]).save(tmp_path / "lin.npz")
    with np.load(tmp_path / "lin.npz") as data:
        return {key: data[key] for key in data.files}


def _verdict_corruptions(good: dict[str, np.ndarray]) -> dict[str, tuple[dict[str, np.ndarray], str]]:
    words = json.loads(good["vocabulary"].tobytes())
    return {
        "weights shorter than vocabulary": ({**good, "weights": good["weights"][:-3]}, "names but"),
        "2-d weights": ({**good, "weights": good["weights"].reshape(1, -1)}, "shape"),
        "vocabulary not json": ({**good, "vocabulary": good["vocabulary"][:-10]}, "JSON"),
        "vocabulary not utf-8": ({**good, "vocabulary": np.full(10, 0xFF, dtype=np.uint8)}, "UTF-8"),
        "vocabulary a dict": ({**good, "vocabulary": np.frombuffer(b'{"a": 1}', dtype=np.uint8)}, "list"),
        "vocabulary of int32": ({**good, "vocabulary": good["vocabulary"].astype(np.int32)}, "dtype"),
        "a repeated name": (
            {
                **good,
                "vocabulary": np.frombuffer(json.dumps([words[0], *words[:-1]]).encode(), dtype=np.uint8),
            },
            "twice",
        ),
        "no weights": ({"vocabulary": good["vocabulary"]}, "weights"),
    }


@pytest.mark.parametrize("case", sorted(_ranker_corruptions()))
def test_a_ranker_file_with_wrong_arrays_is_a_model_error(tmp_path: Path, case: str) -> None:
    arrays, reason = _ranker_corruptions()[case]
    path = tmp_path / WEIGHTS_FILE
    np.savez_compressed(path, **arrays)
    with pytest.raises(ModelError, match="is not a ranker model file") as caught:
        Ranker.load(path)
    assert str(path) in str(caught.value)
    assert reason in str(caught.value)


_VERDICT_CASES = sorted(
    _verdict_corruptions({"vocabulary": np.frombuffer(b'["a"]', dtype=np.uint8), "weights": np.zeros(1)})
)


@pytest.mark.parametrize("case", _VERDICT_CASES)
def test_a_verdict_file_with_wrong_arrays_is_a_model_error(tmp_path: Path, case: str) -> None:
    arrays, reason = _verdict_corruptions(_linear_verdict_arrays(tmp_path))[case]
    path = tmp_path / MODEL_FILE
    np.savez_compressed(path, **arrays)
    with pytest.raises(ModelError, match="is not a verdict model file") as caught:
        VerdictModel.load(path)
    assert str(path) in str(caught.value)
    assert reason in str(caught.value)


def _boosted_arrays(tmp_path: Path) -> dict[str, np.ndarray]:
    """A small boosted verdict file (training needs scikit-learn)."""
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    rows = [{"bias": 1.0, "row_cov": float(rng.random())} for _ in range(200)]
    model = VerdictModel(boosted=True).fit(rows, [int(r["row_cov"] > 0.5) for r in rows])
    model.save(tmp_path / "boosted.npz")
    with np.load(tmp_path / "boosted.npz") as data:
        return {key: data[key] for key in data.files}


def _tree_corruptions(good: dict[str, np.ndarray]) -> dict[str, tuple[dict[str, np.ndarray], str]]:
    inner = int(np.flatnonzero(good["tree_leaf"] == 0)[0])

    def at(name: str, value: float) -> np.ndarray:
        array = good[name].copy()
        array[inner] = value
        return array

    return {
        "a child pointing backwards": ({**good, "tree_left": at("tree_left", inner)}, "backwards"),
        "a child past the end": ({**good, "tree_right": at("tree_right", len(good["tree_leaf"]))}, "outside"),
        "a feature past the vocabulary": ({**good, "tree_feature": at("tree_feature", 10**6)}, "vocabulary"),
        "a nan threshold": ({**good, "tree_threshold": at("tree_threshold", np.nan)}, "finite"),
        "values shorter than nodes": ({**good, "tree_value": good["tree_value"][:-1]}, "lengths"),
        "no baseline": ({k: v for k, v in good.items() if k != "tree_baseline"}, "tree_baseline"),
        "a root past the end": ({**good, "tree_roots": good["tree_roots"] + 10**7}, "tree_roots"),
    }


_TREE_CASES = [
    "a child pointing backwards",
    "a child past the end",
    "a feature past the vocabulary",
    "a nan threshold",
    "values shorter than nodes",
    "no baseline",
    "a root past the end",
]


@pytest.mark.parametrize("case", _TREE_CASES)
def test_a_boosted_verdict_file_with_wrong_trees_is_a_model_error(tmp_path: Path, case: str) -> None:
    good = _boosted_arrays(tmp_path)
    assert VerdictModel.load(tmp_path / "boosted.npz").trees is not None
    arrays, reason = _tree_corruptions(good)[case]
    path = tmp_path / MODEL_FILE
    np.savez_compressed(path, **arrays)
    with pytest.raises(ModelError, match="is not a verdict model file") as caught:
        VerdictModel.load(path)
    assert reason in str(caught.value)


def test_boosted_verdict_model_reads_like_scikit_learn_and_round_trips(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(0)
    rows, labels = [], []
    for _ in range(600):
        a, b = rng.random(), float(rng.random() < 0.5)
        rows.append({"bias": 1.0, "row_cov": a, "top_true": b})
        labels.append(int((a > 0.6) == bool(b)))  # an interaction no linear model can fit
    model = VerdictModel(boosted=True).fit(rows, labels)
    assert model.trees is not None
    correct = sum((model.probability(r) >= 0.5) == bool(y) for r, y in zip(rows, labels, strict=True))
    assert correct / len(rows) > 0.95
    linear = VerdictModel(min_count=1).fit(rows, labels)
    assert sum((linear.probability(r) >= 0.5) == bool(y) for r, y in zip(rows, labels, strict=True)) < correct
    model.save(tmp_path / "b.npz")
    again = VerdictModel.load(tmp_path / "b.npz")
    assert all(again.probability(r) == model.probability(r) for r in rows[:50])


def test_check_with_corrupt_models_exits_2_naming_the_file(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("name,score\nann,3\nbob,4\n", encoding="utf-8")
    truncated, reshaped = tmp_path / "truncated", tmp_path / "reshaped"
    for folder in (truncated, reshaped):
        folder.mkdir()
        (folder / MODEL_FILE).write_bytes((SHIPPED / MODEL_FILE).read_bytes())
    (truncated / WEIGHTS_FILE).write_bytes((SHIPPED / WEIGHTS_FILE).read_bytes()[:5000])
    good = _shipped(WEIGHTS_FILE)
    np.savez_compressed(reshaped / WEIGHTS_FILE, **{**good, "values": good["values"][:100]})
    for folder in (truncated, reshaped):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tabverify.cli",
                "check",
                "--models",
                str(folder),
                str(table),
                "ann scored 3",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert WEIGHTS_FILE in done.stderr
        assert "Traceback" not in done.stderr


def test_a_zip_bomb_model_file_is_refused_before_decompressing(tmp_path: Path) -> None:
    from tabverify.models import MAX_MODEL_BYTES, read_arrays

    bomb = tmp_path / "bomb.npz"
    # np.zeros maps untouched zero pages, so building this costs little memory; it compresses to ~100 KB.
    np.savez_compressed(bomb, weights=np.zeros(MAX_MODEL_BYTES + 1, np.uint8))
    assert bomb.stat().st_size < 1_000_000
    with pytest.raises(ModelError, match=r"bomb\.npz.*'weights\.npy' declares \d+ bytes uncompressed"):
        read_arrays("x.npz", bomb)
    with pytest.raises(ModelError, match=r"bomb\.npz"):
        Ranker.load(bomb)


def test_model_files_whose_members_together_exceed_the_cap_are_refused(tmp_path: Path) -> None:
    from tabverify.models import MAX_MODEL_BYTES, read_arrays

    half = np.zeros(MAX_MODEL_BYTES // 2 + 1, np.uint8)
    many = tmp_path / "many.npz"
    np.savez_compressed(many, a=half, b=half)
    with pytest.raises(ModelError, match=r"many\.npz.*members declare \d+ bytes together"):
        read_arrays("x.npz", many)
    small = tmp_path / "small.npz"
    np.savez_compressed(small, a=np.zeros(1000, np.uint8), b=np.ones(10, np.int64))
    assert set(read_arrays("x.npz", small)) == {"a", "b"}


def test_the_verdict_features_read_the_statements_words(election) -> None:
    from tabverify.program.search import search
    from tabverify.text.linking import link
    from tabverify.verify.decision import statement_features

    linking = link("john smith was not first elected in 1990, the year mary jones won", election)
    words = {k for k in statement_features(election, linking, search(election, linking).candidates[:3], np.ones(3) / 3)
             if k.startswith("word:")}  # fmt: skip
    assert {"word:not", "word:john"} <= words  # a negation and a name, as the tokens stem them
    assert words == {f"word:{t.stem}" for t in linking.tokens if t.text[0].isalpha()}  # no "1990", no ","
    # the shipped model was trained with them, and keeps the ones seen often enough
    assert any(k.startswith("word:") for k in VerdictModel.load().vocabulary)


def test_feature_rows_hold_what_the_dicts_say() -> None:
    from tabverify.verify.decision import FeatureRows

    dicts = [{"a": 1.0, "b": 0.0, "c": 2.5}, {}, {"c": 0.0, "a": -1.0, "d": float("nan")}]
    rows = FeatureRows(dicts[:1])
    rows.extend(dicts[1:])
    assert len(rows) == 3
    # zero values do not count (as `if value` in a dict), NaN does; a feature only ever 0 is absent
    assert rows.nonzero_counts() == {"a": 2, "c": 1, "d": 1}
    columns = list(rows.columns({"c": 0, "a": 1}))
    assert [r for r, _, _ in columns] == [0, 1, 2]
    assert columns[0][1].tolist() == [1, 0] and columns[0][2].tolist() == [1.0, 2.5]  # the dict's order
    assert columns[1][1].tolist() == [] and columns[2][1].tolist() == [0, 1]
    assert columns[2][2].tolist() == [0.0, -1.0]
    assert FeatureRows().nonzero_counts() == {}


def test_the_verdict_models_matrices_are_the_dicts_values() -> None:
    from collections import Counter

    from tabverify.verify.decision import FeatureRows

    rng = np.random.default_rng(1)
    dicts = [
        {f"f{j}": float(rng.integers(0, 3)) for j in rng.choice(40, size=8, replace=False)}
        for _ in range(300)
    ]
    labels = [int(d.get("f1", 0) + d.get("f2", 0) > 1) for d in dicts]
    model = VerdictModel(min_count=40).fit(dicts, labels)
    counts = Counter(k for d in dicts for k, v in d.items() if v)
    assert sorted(model.vocabulary) == sorted(k for k, n in counts.items() if n >= 40) != sorted(counts)
    expected = np.zeros((len(dicts), len(model.vocabulary)))
    for i, d in enumerate(dicts):
        for k, v in d.items():
            if k in model.vocabulary:
                expected[i, model.vocabulary[k]] = v
    rows = FeatureRows(dicts)
    assert np.array_equal(model._dense(rows), expected)
    indices, values, offsets = model._sparse(rows)
    assert np.array_equal(np.diff(offsets), np.count_nonzero(expected, axis=1))
    rebuilt = np.zeros_like(expected)
    rebuilt[np.repeat(np.arange(len(dicts)), np.diff(offsets)), indices] = values
    assert np.array_equal(rebuilt, expected)
