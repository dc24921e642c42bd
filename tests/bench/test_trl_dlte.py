"""TRL-Bench dlte/union/join suites: the metrics by hand, and the suites end to end on a tiny
make-dlte folder (real lakes built in tmp_path)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tabverify.bench.trl.dlte import (
    average_precision,
    choose_thresholds,
    harmonic,
    macro_f1,
    map_at_k,
    region_recall,
    run,
    starmie_score,
)
from tabverify.errors import DatasetError
from tabverify.lake.dlte import make_dlte
from tabverify.lake.encoders import get_table_encoder
from tests.lake.test_dlte import write_folder


def test_map_at_k_is_starmies_mean_of_precisions() -> None:
    ranked, gold = [["a", "x", "b"]], [{"a", "b"}]
    assert map_at_k(ranked, gold, 3) == pytest.approx((1 + 1 / 2 + 2 / 3) / 3)
    assert map_at_k(ranked, gold, 2) == pytest.approx(0.75)
    assert map_at_k([["x"]], [{"a"}], 2) == 0.0
    # two queries, averaged: P@2 counts over 2 even when 1 table is returned (1, 1/2) and (0, 1/2)
    assert map_at_k([["a"], ["x", "b"]], [{"a"}, {"b"}], 2) == pytest.approx(
        ((1 + 0.5) / 2 + (0 + 0.5) / 2) / 2
    )


def test_average_precision() -> None:
    assert average_precision(["x", "a", "y", "b"], {"a", "b"}) == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert average_precision(["a"], {"a"}) == 1.0
    assert average_precision([], {"a"}) == 0.0  # no results: 0
    assert average_precision(["a", "b"], {"a", "c"}) == pytest.approx(0.5)  # c never returned


def test_harmonic_and_region_recall() -> None:
    assert harmonic(0.5, 1.0) == pytest.approx(2 / 3)
    assert harmonic(0.0, 1.0) == 0.0
    # normalised strings, multisets, empty gold cells left out: a, b, b -> found a (once)
    assert region_recall([["A", "b"], ["b", ""]], [["a "], ["c"]]) == pytest.approx(1 / 3)
    assert region_recall([["b", "b"]], [["b"]]) == pytest.approx(0.5)  # a multiset: one b of two
    assert region_recall([[""]], [["a"]]) is None


def test_macro_f1() -> None:
    gold = ["union", "join", "none", "none"]
    pred = ["union", "none", "none", "join"]
    # union 1.0, join 0 (tp 0, fp 1, fn 1), none 2/(2+1+1) = 0.5
    assert macro_f1(gold, pred) == pytest.approx(0.5)
    assert macro_f1(["none"], ["none"]) == 1.0


def test_starmie_score() -> None:
    q = np.eye(2, dtype=np.float32)
    assert starmie_score(q, np.array([[1, 0], [0.6, 0.8]], dtype=np.float32)) == pytest.approx(1.8)
    assert starmie_score(q, np.array([[0.6, 0.8]], dtype=np.float32)) == pytest.approx(0.8)
    assert starmie_score(q, np.array([[0.7071, 0.7071]], dtype=np.float32)) == pytest.approx(0.7071, abs=1e-4)
    q3 = np.eye(3, dtype=np.float32)[:2]
    assert starmie_score(q3, np.array([[0.65, 0.65, 0.3937]], dtype=np.float32)) == 0.0  # 0.65 < 0.7
    assert starmie_score(q, np.array([[0.6, 0.8]], dtype=np.float32), threshold=0.9) == 0.0


def test_starmie_threshold_boundary() -> None:
    q = np.array([[1.0, 0.0]], dtype=np.float32)
    c = np.array([[0.75, np.sqrt(1 - 0.75**2)]], dtype=np.float32)
    assert starmie_score(q, c) == pytest.approx(0.75, abs=1e-5)


def test_choose_thresholds_separates_clear_cases() -> None:
    features = [
        {"sims": [0.9, 0.9, 0.8], "n": 3, "containment": 0.0},  # union
        {"sims": [0.95], "n": 3, "containment": 0.0},  # join
        {"sims": [0.2], "n": 3, "containment": 0.0},  # none
        {"sims": [0.3, 0.1], "n": 3, "containment": 0.9},  # join by containment
    ]
    thresholds, f1 = choose_thresholds(features, ["union", "join", "none", "join"])
    assert f1 == 1.0
    assert thresholds.key_sim > 0.2


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trl_dlte")
    write_folder(root / "tables", n_tables=14, rows=12, seed=11)
    make_dlte(root / "tables", root / "dlte", seed=2, tiers=(0, 1), max_mothers=6)
    return root / "dlte"


def test_dlte_suite_end_to_end(data: Path) -> None:
    encoder = get_table_encoder("lexical")
    ticks: list[tuple[int, int]] = []
    result = run(
        encoder, data, suite="dlte", split="test", tiers=(0, 1), progress=lambda d, t: ticks.append((d, t))
    )
    assert (result["benchmark"], result["suite"], result["encoder"], result["split"]) == (
        "trl",
        "dlte",
        "lexical",
        "test",
    )
    m = result["metrics"]
    assert m["n"] == 6  # 3 test mothers x 2 tiers
    for key in (
        "recall@10_any",
        "recall@10_union",
        "recall@10_join",
        "mrr",
        "operation_macro_f1",
        "union_recall",
        "join_recall",
        "uj_h",
        "uj_h_tiers_0_1",
    ):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["recall@10_any"] >= m["recall@10_union"]
    assert set(result["per_tier"]) == {"tier0", "tier1"}
    assert result["chosen_on"] == "dev" and "recall_tuned_pipeline" in result and "recall_tuned_pipeline" in m
    assert ticks[-1][0] == ticks[-1][1] == 12  # 6 dev queries (thresholds) + 6 test
    # the lakes are cached in the data folder and reused
    assert (data / "lakes" / "lexical" / "targets-tier1" / "lake.json").is_file()
    json.dumps(result)


def test_union_and_join_suites(data: Path) -> None:
    encoder = get_table_encoder("lexical")
    union = run(encoder, data, suite="union", split="dev", tiers=(0,))
    # the seed is in its own ground truth and scores highest against itself
    assert union["metrics"]["map@1"] == 1.0
    assert 0.5 <= union["metrics"]["recall@10"] <= 1.0
    join = run(encoder, data, suite="join", split="dev", tiers=(0,))
    for key in ("map", "precision@10", "recall@10", "f1@10", "recall@50"):
        assert 0.0 <= join["metrics"][key] <= 1.0
    assert join["metrics"]["recall@50"] >= join["metrics"]["recall@10"]


def test_bad_options(data: Path, tmp_path: Path) -> None:
    encoder = get_table_encoder("lexical")
    with pytest.raises(DatasetError, match="splits are dev and test"):
        run(encoder, data, split="val")
    with pytest.raises(DatasetError, match="holds tiers"):
        run(encoder, data, tiers=(3,))
    with pytest.raises(DatasetError, match="make-dlte"):
        run(encoder, tmp_path)
    with pytest.raises(DatasetError, match="unknown suite"):
        run(encoder, data, suite="retrieval")
