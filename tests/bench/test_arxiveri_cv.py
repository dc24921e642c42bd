"""arXiVeri cross-validation by target paper, and the table-matching evidence it fits a model on."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from pathlib import Path

import pytest

from tabverify.bench.arxiveri import cross_validate, folds_by_paper, load_pairs
from tabverify.crosscheck.cells import align
from tabverify.crosscheck.tables import (
    DEFAULT_MODEL,
    Evidence,
    choose,
    evidence,
    fit_model,
    rank_tables,
    significant_digits,
)
from tabverify.errors import DatasetError
from tabverify.table import Grid
from tests.cli.test_bench import run

METHODS = ["ResNet", "Swin", "ConvNeXt", "DeiT", "ViT", "PVT", "Twins", "CoAtNet"]


def _table(rows: list[list[str]]) -> str:
    head = "".join(f"<th>{c}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows[1:])
    return f"<table><tr>{head}</tr>{body}</table>"


def _release(root: Path, papers: int = 10) -> Path:
    """A release of ``papers`` target papers, each citing two sources: one whose second table the
    target copies a varying number of rows from (1 to 4), one that shares no row (no match), some
    of whose tables share a value or two with the target by chance."""
    for sub in ("ground_truth/table_match", "ground_truth/cell_match", "source_papers"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for p in range(papers):
        copied = 1 + p % 4
        values = [[f"{40 + p + i}.{j + 1}{i}" for j in range(3)] for i in range(len(METHODS))]
        source_rows = [["Method", "AP", "AP50", "AP75"]] + [
            [m, *v] for m, v in zip(METHODS, values, strict=True)
        ]
        target_rows = [["Model", "AP", "AP50", "AP75"]]
        target_rows += [[METHODS[i], *values[i]] for i in range(copied)]
        target_rows += [[f"Ours-{k}", f"{60 + k}.{p}5", f"{70 + k}.{p}1", "100"] for k in range(3)]
        target = _table(target_rows)
        ablation = _table([["Setting", "Acc"], ["a", f"{20 + p}.3"], ["b", "100"]])
        unrelated = _table([["Data", "Images"], ["A", f"{30 + p}.{p}7"], ["B", values[0][0]]])
        tid, match, other = f"t{p:02d}", f"m{p:02d}", f"o{p:02d}"
        papers_tables = {match: [ablation, _table(source_rows)], other: [unrelated, ablation]}
        for sid, tables in papers_tables.items():
            entries = [{"table": t, "caption": f"Table {i + 1}: results"} for i, t in enumerate(tables)]
            (root / "source_papers" / f"{sid}.json").write_text(
                json.dumps({"list_table_and_caption": entries})
            )
        for sub in ("table_match", "cell_match"):
            (root / "ground_truth" / sub / tid).mkdir(exist_ok=True)
        truth = {"target_table": target.replace("th>", "td>"), "target_caption": "Table 2: results on COCO"}
        gold = _table(source_rows).replace("th>", "td>")
        (root / f"ground_truth/table_match/{tid}/{match}.json").write_text(
            json.dumps({**truth, "source_table": gold})
        )
        (root / f"ground_truth/table_match/{tid}/{other}.json").write_text(
            json.dumps({**truth, "source_table": ""})
        )
        cells = []
        for i in range(copied):
            for j in range(3):
                cells += [{"rowIndex": 1 + i, "colIndex": 1 + j}, {"rowIndex": 1 + i, "colIndex": 1 + j}]
        (root / f"ground_truth/cell_match/{tid}/{match}.json").write_text(json.dumps(cells))
        (root / f"ground_truth/cell_match/{tid}/{other}.json").write_text("[]")
    return root


def test_folds_are_disjoint_by_paper_balanced_and_independent_of_order() -> None:
    ids = ["p3", "p1", "p2", "p1", "p5", "p4", "p3", "p6", "p2", "p7"]
    folds = folds_by_paper(ids, 3)
    by_paper: dict[str, set[int]] = {}
    for paper, fold in zip(ids, folds, strict=True):
        by_paper.setdefault(paper, set()).add(fold)
    assert all(len(f) == 1 for f in by_paper.values())  # a paper's pairs never straddle two folds
    sizes = [sum(1 for f in by_paper.values() if k in f) for k in range(3)]
    assert sorted(sizes) == [2, 2, 3]  # 7 papers dealt round-robin
    shuffled = list(reversed(ids))
    again = dict(zip(shuffled, folds_by_paper(shuffled, 3), strict=True))
    assert again == dict(zip(ids, folds, strict=True))  # the same paper lands in the same fold
    with pytest.raises(ValueError):
        folds_by_paper(ids, 1)
    with pytest.raises(DatasetError, match="at least 9 target papers"):
        folds_by_paper(ids, 9)


def test_significant_digits() -> None:
    digits = {"40.6": 3, "100": 1, "0.50": 1, "12.05": 4, "0.701": 3, "25600": 3}
    assert {text: significant_digits(Decimal(text)) for text in digits} == digits


def test_evidence_separates_labelled_specific_and_shared_numbers() -> None:
    target = Grid.from_rows([["Model", "AP", "FPS"], ["Swin", "43.7", "12"], ["Mine", "50.1", "30"]])
    source = Grid.from_rows([["Method", "AP", "FPS"], ["Swin", "43.7", "12"], ["ResNet", "38.2", "30"]])
    candidate = rank_tables(target, [source])[0]
    found = evidence(target, candidate)
    # 43.7 and 12 sit under the same row label (Swin); 30 only shares the column header
    assert found.share == pytest.approx(3 / 4)  # three labelled pairs of the target's four numbers
    assert found.specific == 1.0  # only 43.7 has three significant digits
    assert 0 < found.text <= 1


def test_a_transposed_copy_compares_labels_along_the_same_axis() -> None:
    target = Grid.from_rows([["Model", "AP", "AR"], ["Swin", "43.7", "51.2"], ["DeiT", "40.1", "49.9"]])
    source = Grid.from_rows([["Metric", "Swin", "DeiT"], ["AP", "43.7", "40.1"], ["AR", "51.2", "49.9"]])
    alignment = align(target, source)
    assert alignment.transposed and len(alignment.pairs) == 4
    assert all(p.row_labelled and p.labelled for p in alignment.pairs)


def test_fit_model_is_deterministic_and_orders_evidence() -> None:
    strong = [Evidence(0.5 + 0.05 * i, 8.0 + i, 0.3) for i in range(6)]
    weak = [Evidence(0.01 * i, 0.0, 0.1) for i in range(6)]
    labels = [True] * 6 + [False] * 6
    model = fit_model(strong + weak, labels, unlabelled_factor=0.5)
    assert model == fit_model(strong + weak, labels, unlabelled_factor=0.5)
    assert model.unlabelled_factor == 0.5
    assert all(model.accepts(e) for e in strong) and not any(model.accepts(e) for e in weak)
    with pytest.raises(ValueError):
        fit_model([], [])


def test_choose_answers_no_match_without_agreeing_cells() -> None:
    words = Grid.from_rows([["name", "city"], ["ann", "oslo"]])
    numbers = Grid.from_rows([["name", "score"], ["ann", "41.5"]])
    assert choose(words, rank_tables(words, [numbers]), DEFAULT_MODEL) is None
    assert choose(words, [], DEFAULT_MODEL) is None


def test_cross_validation_reports_folds_and_pooled_numbers(tmp_path: Path) -> None:
    pairs = load_pairs(_release(tmp_path / "release"))
    result = cross_validate(pairs, 5)
    folds = result["folds"]
    assert isinstance(folds, list) and len(folds) == 5
    held_out = [t for fold in folds for t in fold["targets"]]
    assert sorted(held_out) == sorted({p.target_id for p in pairs})  # each paper held out exactly once
    pooled = result["pooled"]
    assert isinstance(pooled, dict)
    assert pooled["table_match_correct"] == sum(f["table_match_correct"] for f in folds)
    assert pooled["table_match_accuracy"] == pooled["table_match_correct"] / len(pairs)
    assert pooled["table_match_accuracy"] >= 0.9  # copies of 1-4 rows found, no-match sources refused
    assert pooled["cell_recall"] == 1.0
    assert all(f["constants"]["unlabelled_factor"] in (0.0, 0.25, 0.5, 1.0) for f in folds)


def test_constants_of_a_fold_do_not_see_its_gold(tmp_path: Path) -> None:
    pairs = load_pairs(_release(tmp_path / "release"))
    held = set(cross_validate(pairs, 5)["folds"][0]["targets"])
    # corrupt the held-out fold's gold: every match becomes "no match" and the reverse
    corrupted = [
        dataclasses.replace(p, gold_index=None, gold_html="")
        if p.target_id in held and p.gold_index is not None
        else dataclasses.replace(p, gold_index=0, gold_html="x")
        if p.target_id in held
        else p
        for p in pairs
    ]
    before, after = cross_validate(pairs, 5)["folds"], cross_validate(corrupted, 5)["folds"]
    assert before[0]["constants"] == after[0]["constants"]  # chosen without the held-out gold
    assert after[0]["table_match_correct"] < before[0]["table_match_correct"]  # ...which is still scored
    assert any(b["constants"] != a["constants"] for b, a in zip(before[1:], after[1:], strict=True))


def test_bench_cli_cv_block_and_bad_fold_count(tmp_path: Path) -> None:
    root = _release(tmp_path / "release")
    out = tmp_path / "result.json"
    result = run("bench", "arxiveri", "--data", str(root), "--cv", "5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["cv"]["k"] == 5 and len(data["cv"]["folds"]) == 5
    assert set(data["cv"]["pooled"]) >= {"table_match_accuracy", "cell_precision", "cell_recall", "cell_f1"}
    assert "cv" in json.loads(result.stdout)
    bad = run("bench", "arxiveri", "--data", str(root), "--cv", "1")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "Traceback" not in bad.stderr


def test_a_seeded_deal_moves_papers_but_keeps_them_whole_and_is_reproducible() -> None:
    ids = [f"p{i}" for i in range(12) for _ in range(2)]
    plain, seeded = folds_by_paper(ids, 4), folds_by_paper(ids, 4, seed=3)
    assert seeded == folds_by_paper(ids, 4, seed=3) and seeded != plain
    assert all(seeded[i] == seeded[i + 1] for i in range(0, len(ids), 2))  # both pairs of a paper
    assert sorted(seeded.count(k) for k in range(4)) == [6, 6, 6, 6]


def test_repeated_cross_validation_reports_each_deal(tmp_path: Path) -> None:
    pairs = load_pairs(_release(tmp_path / "release"))
    repeated = cross_validate(pairs, 5, repeats=3)["repeated"]
    assert isinstance(repeated, dict) and len(repeated["table_match_accuracy"]) == 3
    assert repeated["min"] <= repeated["median"] <= repeated["max"]
    assert "repeated" not in cross_validate(pairs, 5)
    root = tmp_path / "release"
    result = run("bench", "arxiveri", "--data", str(root), "--cv-repeats", "2")
    assert result.returncode == 2 and "--cv" in result.stderr and "Traceback" not in result.stderr
    result = run("bench", "arxiveri", "--data", str(root), "--cv", "5", "--cv-repeats", "2")
    assert result.returncode == 0 and json.loads(result.stdout)["cv"]["repeated"]["seeds"] == "1-2"
