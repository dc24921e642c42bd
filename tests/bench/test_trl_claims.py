"""TRL-Bench suite claim-retrieval on a tiny TabFact-layout folder (tables, captions, statements)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabverify.bench.trl import run_suite
from tabverify.bench.trl.claims import (
    evaluate_held_out,
    fit_model,
    held_out,
    metrics,
    run,
    tabfact_captions,
    train_sample,
)
from tabverify.errors import DatasetError
from tabverify.lake.encoders import get_table_encoder
from tabverify.lake.retrieve import _DENSE_INDEX, FEATURES, Retriever
from tabverify.lake.store import Lake

TABLES = {
    "1-1-1.html.csv": ("turkish cup", "round#clubs remaining#new entries this round\nfirst round#156#86\n"
                       "second round#113#65\nthird round#59#none\n"),
    "1-2-1.html.csv": ("1990 dayton football season", "week#opponent#attendance\n1#dayton rivers#4500\n"
                       "2#albany comets#3200\n3#salem miners#2900\n"),
    "1-3-1.html.csv": ("quentin tarantino filmography", "year#title#studio\n1994#pulp fiction#miramax\n"
                       "1997#jackie brown#miramax\n"),
    "1-4-1.html.csv": ("solar system", "planet#moons\nmercury#0\nvenus#0\nearth#1\nmars#2\n"),
    "1-5-1.html.csv": ("ohio house elections", "district#incumbent#party\nohio 1#tom luken#democratic\n"
                       "ohio 2#bill gradison#republican\n"),
    "1-6-1.html.csv": ("1991 salem football season", "week#opponent#attendance\n1#salem miners#2100\n"
                       "2#albany comets#2500\n"),
}  # fmt: skip
TRAIN = {
    "1-1-1.html.csv": [["the first round have 86 new entry", "156 club remain in the first round"], [1, 1],
                       "turkish cup"],
    "1-3-1.html.csv": [["pulp fiction be make by miramax in 1994"], [1], "quentin tarantino filmography"],
    "1-4-1.html.csv": [["mars have 2 moon", "venus have 1 moon"], [1, 0], "solar system"],
    "1-6-1.html.csv": [["the salem miner draw 2100 in week 1"], [1], "1991 salem football season"],
}  # fmt: skip
VAL = {
    "1-2-1.html.csv": [["the game against the dayton river have 4500 attendance",
                        "albany comet play in week 2 in front of 3200"], [1, 1], "1990 dayton football season"],
    "1-5-1.html.csv": [["tom luken be the democratic incumbent of ohio 1"], [1], "ohio house elections"],
}  # fmt: skip


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "tabfact"
    (root / "data" / "all_csv").mkdir(parents=True)
    (root / "tokenized_data").mkdir()
    for name, (_, content) in TABLES.items():
        (root / "data" / "all_csv" / name).write_text(content, encoding="utf-8")
    pages = {name: [caption, "https://example.org"] for name, (caption, _) in TABLES.items()}
    del pages["1-5-1.html.csv"]  # this caption only comes with the val statements
    (root / "data" / "table_to_page.json").write_text(json.dumps(pages), encoding="utf-8")
    (root / "tokenized_data" / "train_examples.json").write_text(json.dumps(TRAIN), encoding="utf-8")
    (root / "tokenized_data" / "val_examples.json").write_text(json.dumps(VAL), encoding="utf-8")
    return root


def test_captions_come_from_the_page_map_then_the_examples(data: Path) -> None:
    captions = tabfact_captions(data)
    assert captions["1-1-1.html.csv"] == "turkish cup"
    assert captions["1-5-1.html.csv"] == "ohio house elections"
    assert len(captions) == len(TABLES)


def test_the_suite_builds_the_lake_once_and_reports_recall_and_mrr(data: Path, tmp_path: Path) -> None:
    encoder = get_table_encoder("lexical")
    lake = tmp_path / "lake"
    result = run_suite("claim-retrieval", encoder, data, split="val", lake=lake)
    assert result["benchmark"] == "trl" and result["suite"] == "claim-retrieval"
    assert result["encoder"] == "lexical" and result["n"] == 3 and result["tables"] == len(TABLES)
    m = result["metrics"]
    assert set(m) == {"recall@1", "recall@5", "recall@10", "recall@50", "mrr"}
    assert m["recall@1"] == 1.0 and m["mrr"] == 1.0  # each statement names its table's cells
    built = (lake / "meta.sqlite").stat().st_mtime_ns
    again = run(encoder, data, split="val", lake=lake, limit=1)
    assert again["n"] == 1 and (lake / "meta.sqlite").stat().st_mtime_ns == built  # reused, not rebuilt


def test_the_reranker_is_fitted_on_train_statements_only(data: Path, tmp_path: Path) -> None:
    encoder = get_table_encoder("lexical")
    run(encoder, data, split="val", lake=tmp_path / "lake", limit=1)
    lake = Lake.open(tmp_path / "lake")
    model = fit_model(lake, data, statements=10)
    assert len(model.coef) == len(FEATURES) and model.listwise and model.intercept == 0.0
    assert any(model.coef)
    found = Retriever(lake, model=model).retrieve("tom luken be the democratic incumbent of ohio 1", k=10)
    assert found[0].id == "1-5-1.html.csv"
    assert sum(c.score for c in found) == pytest.approx(1.0)  # softmax shares of the whole pool
    keyword_only = fit_model(lake, data, statements=10, dense=False)
    assert not keyword_only.dense and all(keyword_only.coef[i] == 0.0 for i in _DENSE_INDEX)
    result = run(encoder, data, split="val", lake=lake, fit=True)
    assert result["reranker"]["fitted_in_run"] and result["metrics"]["recall@1"] == 1.0
    with pytest.raises(DatasetError, match="train"):
        run(encoder, data, split="train", lake=lake)


def test_metrics_count_misses_as_zero() -> None:
    assert metrics([1, 2, None, 20]) == {
        "recall@1": 0.25, "recall@5": 0.5, "recall@10": 0.5, "recall@50": 0.75, "mrr": round((1 + 0.5 + 0.05) / 4, 4)
    }  # fmt: skip


def test_the_fitting_sample_and_the_held_out_statements_share_no_table(data: Path, tmp_path: Path) -> None:
    assert held_out("1-4-1.html.csv") and held_out("1-6-1.html.csv")  # a stable hash of the name
    assert not held_out("1-1-1.html.csv") and not held_out("1-3-1.html.csv")
    fitting = train_sample(data, False, 10, 0)
    chosen_on = train_sample(data, True, 10, 1)
    assert {e.table_id for e in fitting} == {"1-1-1.html.csv", "1-3-1.html.csv"}
    assert {e.table_id for e in chosen_on} == {"1-4-1.html.csv", "1-6-1.html.csv"}
    assert len(train_sample(data, False, 2, 0)) == 2 and len(fitting) == 3  # all 3 when fewer than asked
    run(get_table_encoder("lexical"), data, split="val", lake=tmp_path / "lake", limit=1)
    scores = evaluate_held_out(Lake.open(tmp_path / "lake"), data)
    assert set(scores) == {"recall@1", "recall@5", "recall@10", "recall@50", "mrr"}
    assert scores["recall@1"] == 1.0  # "mars have 2 moon", "venus have 1 moon", "the salem miner ..."
