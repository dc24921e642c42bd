"""Training reads the train split and nothing else: a tiny TabFact release is built here, its val
and test files are garbage, and any attempt to open them fails the test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from tabverify.bench.tabfact import train_models
from tabverify.errors import TabverifyError
from tabverify.program.ranker import WEIGHTS_FILE, Ranker
from tabverify.table import load_table
from tabverify.verify import Label, TableVerifier
from tabverify.verify.decision import MODEL_FILE, VerdictModel

PARTIES = ["democratic", "republican", "whig", "green"]
FIRST = ["john", "mary", "alan", "lisa", "tom", "ann", "bob", "cy"]
LAST = ["smith", "jones", "brown", "white", "green", "black", "stone", "hill"]

# every path opened while this is set is checked against it (an audit hook cannot be removed,
# so it stays installed and only watches while a test sets it)
_FORBIDDEN: list[Path] = []
_OPENED: list[str] = []


def _audit(event: str, args: tuple) -> None:
    if event != "open" or not _FORBIDDEN or not isinstance(args[0], (str, Path)):
        return
    path = Path(args[0]).resolve()
    if any(path == forbidden or forbidden in path.parents for forbidden in _FORBIDDEN):
        _OPENED.append(str(path))
        raise PermissionError(f"training opened {path}, which belongs to val or test")


sys.addaudithook(_audit)


def _table(seed: int) -> list[list[str]]:
    rows = [["district", "incumbent", "party", "first elected", "votes"]]
    for i in range(6):
        k = seed + i
        rows.append(
            [
                f"ohio {i + 1}",
                f"{FIRST[k % 8]} {LAST[(3 * k + 1) % 8]}",
                PARTIES[(k * 5 + seed) % 3],
                str(1980 + (7 * k) % 23),
                f"{40 + (11 * k) % 30},{100 + (37 * k) % 900}",
            ]
        )
    return rows


def _statements(rows: list[list[str]]) -> tuple[list[str], list[int]]:
    """True and false statements of the kinds the search has programs for."""
    data = rows[1:]
    statements, labels = [], []
    for i, row in enumerate(data):
        other = data[(i + 1) % len(data)]
        statements += [f"{row[1]} be first elected in {row[3]}", f"{row[1]} be first elected in {other[3]}"]
        labels += [1, 0 if other[3] != row[3] else 1]
        statements += [f"{row[1]} be from the {row[2]} party", f"{row[1]} be from the {other[2]} party"]
        labels += [1, 0 if other[2] != row[2] else 1]
    for party in PARTIES[:3]:
        n = sum(row[2] == party for row in data)
        statements += [f"there be {n} {party} incumbent", f"there be {n + 1} {party} incumbent"]
        labels += [1, 0]
    top = max(data, key=lambda row: int(row[4].replace(",", "")))
    low = min(data, key=lambda row: int(row[4].replace(",", "")))
    statements += [
        f"{top[1]} receive the highest number of vote",
        f"{low[1]} receive the highest number of vote",
    ]
    labels += [1, 0]
    return statements, labels


HUMAN_STATEMENT = "the democratic party have the most incumbent"
HUMAN_PROGRAM = "eq{most_freq{all_rows; party}; democratic}=True"


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """A TabFact release with 8 train tables; val and test hold garbage and their own tables."""
    root = tmp_path / "tabfact"
    (root / "data" / "all_csv").mkdir(parents=True)
    (root / "tokenized_data").mkdir()
    train: dict[str, list] = {}
    for t in range(8):
        table_id = f"1-{t}-1.html.csv"
        rows = _table(t)
        (root / "data" / "all_csv" / table_id).write_text("\n".join("#".join(r) for r in rows) + "\n")
        statements, labels = _statements(rows)
        train[table_id] = [statements, labels, f"election {t}"]
    (root / "tokenized_data" / "train_examples.json").write_text(json.dumps(train))
    # human-written programs (the release's bootstrap file) on every train table, and one on a
    # val table, which training must leave unread
    bootstrap = {
        table_id: [[HUMAN_STATEMENT, None, caption, None, HUMAN_PROGRAM]]
        for table_id, (_, _, caption) in train.items()
    }
    bootstrap["2-val-1.html.csv"] = [[HUMAN_STATEMENT, None, "val", None, HUMAN_PROGRAM]]
    (root / "bootstrap").mkdir()
    (root / "bootstrap" / "bootstrap.json").write_text(json.dumps(bootstrap))
    (root / "data" / "train_id.json").write_text(json.dumps(sorted(train)))
    garbage = b"\x00\xff not json {{{"
    for name in ("val", "test"):
        (root / "tokenized_data" / f"{name}_examples.json").write_bytes(garbage)
        (root / "data" / f"{name}_id.json").write_bytes(garbage)
        (root / "data" / "all_csv" / f"2-{name}-1.html.csv").write_bytes(garbage)
    for name in ("simple_test", "complex_test", "small_test"):
        (root / "data" / f"{name}_id.json").write_bytes(garbage)
    return root


def _held_out(root: Path) -> list[Path]:
    paths = [root / "tokenized_data" / f"{name}_examples.json" for name in ("val", "test")]
    paths += [
        root / "data" / f"{name}_id.json"
        for name in ("val", "test", "simple_test", "complex_test", "small_test")
    ]
    paths += [root / "data" / "all_csv" / f"2-{name}-1.html.csv" for name in ("val", "test")]
    return [p.resolve() for p in paths]


def test_training_reads_only_the_train_split_and_produces_loadable_models(
    release: Path, tmp_path: Path
) -> None:
    stages: set[str] = set()
    _FORBIDDEN[:] = _held_out(release)
    _OPENED.clear()
    try:
        # the guard works: reading a held-out file fails
        with pytest.raises(PermissionError):
            (release / "tokenized_data" / "val_examples.json").read_bytes()
        _OPENED.clear()
        ranker, model = train_models(
            release, ranker_tables=4, jobs=1, progress=lambda stage, done, total: stages.add(stage)
        )
    finally:
        _FORBIDDEN.clear()
    assert _OPENED == []
    assert {"ranker: search", "verdict: features", "verdict: fit"} <= stages
    assert np.count_nonzero(ranker.weights) > 0  # the ranker learned from the weak positives
    assert isinstance(model, VerdictModel) and model.vocabulary
    out = tmp_path / "models"
    out.mkdir()
    ranker.save(out / WEIGHTS_FILE)
    model.save(out / MODEL_FILE)
    loaded_ranker, loaded_model = Ranker.load(out / WEIGHTS_FILE), VerdictModel.load(out / MODEL_FILE)
    assert loaded_model.vocabulary == model.vocabulary
    kept = np.where(np.abs(ranker.weights) > 1e-4, ranker.weights, 0.0)  # what save() writes, as float16
    assert np.count_nonzero(loaded_ranker.weights) == np.count_nonzero(kept) > 0
    assert np.allclose(loaded_ranker.weights, kept, rtol=1e-2, atol=1e-3)
    verifier = TableVerifier(ranker=out / WEIGHTS_FILE, model=out / MODEL_FILE)
    table = load_table(release / "data" / "all_csv" / "1-0-1.html.csv")
    verdict = verifier.verify(f"{table.rows[0][1].text} be first elected in {table.rows[0][3].text}", table)
    assert verdict.label in (Label.ENTAILED, Label.REFUTED) and verdict.program


def test_training_splits_tables_between_ranker_and_verdict_model(release: Path) -> None:
    # the verdict model is fitted on tables the ranker did not see: with every table given to the
    # ranker no statement is left for it, which is refused before anything is trained, in both modes
    _, model = train_models(release, ranker_tables=4, jobs=1, cross_fit=False)
    assert model.vocabulary
    for cross_fit in (False, True):
        with pytest.raises(TabverifyError, match="both sides: 8 for the ranker, 0 after them"):
            train_models(release, ranker_tables=8, jobs=1, cross_fit=cross_fit)


def test_cross_fitting_featurizes_every_table_with_a_ranker_that_did_not_train_on_its_weak_labels(
    release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tabverify.bench import tabfact
    from tabverify.verify.decision import VerdictModel

    events: list[tuple[str, str, int]] = []  # (what, table, ranker id) in the order they happen
    groups, rows, fit = tabfact._ranker_groups, tabfact._verdict_rows, Ranker.fit
    verdict_fit, fitted_rows = VerdictModel.fit, []

    def record_verdict_fit(self, features, labels, *args, **kwargs):
        fitted_rows.append(len(features))
        return verdict_fit(self, features, labels, *args, **kwargs)

    def record_groups(args):
        events.append(("train", args[1], 0))
        return groups(args)

    def record_rows(args):
        events.append(("featurize", args[1], id(tabfact._TRAIN["verifier"].ranker)))
        return rows(args)

    def record_fit(self, *args, **kwargs):
        events.append(("fit", "", id(self)))
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(tabfact, "_ranker_groups", record_groups)
    monkeypatch.setattr(tabfact, "_verdict_rows", record_rows)
    monkeypatch.setattr(Ranker, "fit", record_fit)
    monkeypatch.setattr(VerdictModel, "fit", record_verdict_fit)
    ranker, model = train_models(release, jobs=1, cross_fit=True)
    trained_on: dict[int, set[str]] = {}
    pending: set[str] = set()
    for what, table, ranker_id in events:
        if what == "train":
            pending.add(table)
        elif what == "fit":
            trained_on[ranker_id], pending = pending, set()
    featurized = [(table, ranker_id) for what, table, ranker_id in events if what == "featurize"]
    assert len(trained_on) == 2 and sorted(len(t) for t in trained_on.values()) == [4, 4]  # half each
    assert sorted(table for table, _ in featurized) == sorted(set().union(*trained_on.values()))
    assert all(table not in trained_on[ranker_id] for table, ranker_id in featurized)
    shuffled, by_table, _ = tabfact._shuffled_train_tables(release, 0)
    assert trained_on[id(ranker)] == set(shuffled[:4]) and model.vocabulary  # the shipped one: fold A
    assert fitted_rows == [sum(len(by_table[t]) for t in shuffled)]  # both folds' statements, once each


def test_the_ranker_learns_the_human_programs_reading(release: Path) -> None:
    # "the democratic party have the most incumbent" has several programs that execute to True
    # (the party of the latest or the earliest elected incumbent is also democratic); the human
    # program reads it as most_freq, and the ranker trained on it ranks that reading first
    from tabverify.bench.tabfact import human_programs

    train = [f"1-{t}-1.html.csv" for t in range(8)]
    assert sorted(human_programs(release, train)) == train  # the val table's program is not read
    table = load_table(release / "data" / "all_csv" / "1-0-1.html.csv")

    def top(human_weight: int) -> tuple[str, float]:
        ranker, _ = train_models(release, ranker_tables=4, jobs=1, human_weight=human_weight)
        ranking = TableVerifier(ranker=ranker).rank(table, HUMAN_STATEMENT)
        readings = [str(c.program) for c in ranking.candidates]
        assert sum(c.value for c in ranking.candidates) >= 2  # more than one True reading to choose from
        share = sum(p for r, p in zip(readings, ranking.probabilities, strict=True) if "most_freq" in r)
        return readings[0], share

    with pytest.raises(TabverifyError, match="human_weight"):
        train_models(release, ranker_tables=4, jobs=1, human_weight=-1)
    weak_top, weak_share = top(0)
    human_top, human_share = top(20)
    assert human_top == "eq{most_freq{all_rows; party}; democratic}"
    assert human_share > weak_share + 0.2


def test_verdict_holdout_scores_each_l2_on_held_out_train_tables_only(release: Path) -> None:
    from tabverify.bench.tabfact import verdict_holdout

    _FORBIDDEN[:] = _held_out(release)
    _OPENED.clear()
    try:
        report = verdict_holdout(release, [1e-4, 1e-2], ranker_tables=2, holdout=0.5, jobs=1)
    finally:
        _FORBIDDEN.clear()
    assert _OPENED == []
    # 6 verdict tables (8 less the 2 of the ranker), 3 of them held out; every table has the same
    # number of statements, so the fit and the hold-out are the same size
    statements = len(_statements(_table(0))[0])
    assert report["fit_statements"] == report["holdout_statements"] == 3 * statements
    assert set(report["accuracy"]) == {"0.0001", "0.01", "boosted"}
    assert all(0.0 <= a <= 1.0 for a in report["accuracy"].values())
    with pytest.raises(TabverifyError):
        verdict_holdout(release, [], jobs=1)
    for bad in ({"ranker_tables": -1}, {"tables": 0}, {"ranker_tables": 8}, {"ranker_tables": 7}):
        with pytest.raises(TabverifyError):  # nothing (or a single table) left to hold out and fit on
            verdict_holdout(release, [1e-4], holdout=0.5, jobs=1, **bad)
