"""A malformed TabFact release is a DatasetError naming the file and the entry, never a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabverify.bench.tabfact import bootstrap_execution, load_examples, run_benchmark
from tabverify.errors import DatasetError, TabverifyError

TABLE = "1-1.html.csv"
GOOD_ENTRY = [["john smith be a democrat", "john smith be a whig"], [1, 0], "ohio elections"]


def _release(root: Path, val: object, *, table: bool = True) -> Path:
    (root / "data" / "all_csv").mkdir(parents=True)
    (root / "tokenized_data").mkdir()
    if table:
        (root / "data" / "all_csv" / TABLE).write_text(
            "incumbent#party\njohn smith#democratic\nmary jones#republican\n", encoding="utf-8"
        )
    (root / "tokenized_data" / "val_examples.json").write_text(json.dumps(val), encoding="utf-8")
    for channel in ("simple", "complex"):
        (root / "data" / f"{channel}_ids.json").write_text(json.dumps([TABLE]), encoding="utf-8")
    return root


def test_a_well_formed_release_loads(tmp_path: Path) -> None:
    examples = load_examples(_release(tmp_path, {TABLE: GOOD_ENTRY}), "val")
    assert [(e.statement, e.label, e.caption) for e in examples] == [
        ("john smith be a democrat", 1, "ohio elections"),
        ("john smith be a whig", 0, "ohio elections"),
    ]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ([["a", "b"], ["x", 5], "c"], "labels must be a list of 0"),
        ([["a", "b"], [1, 2], "c"], "labels must be a list of 0"),
        ([["a", "b"], [1.0, 0.0], "c"], "labels must be a list of 0"),
        ([["a", "b"], [True, False], "c"], "labels must be a list of 0"),
        ([["a", "b"], "10", "c"], "labels must be a list of 0"),
        ([["a", 7], [1, 0], "c"], "statements must be a list"),
        (["a b", [1, 0], "c"], "statements must be a list"),
        ([["a", "b"], [1], "c"], "2 statements but 1 labels"),
        ([["a", "b"], [1, 0], 3], "caption must be text"),
        ([["a", "b"], [1, 0]], r"must be \[statements, labels, caption\]"),
        ({"statements": []}, r"must be \[statements, labels, caption\]"),
        (None, r"must be \[statements, labels, caption\]"),
    ],
)
def test_a_malformed_entry_is_a_dataset_error_naming_file_and_entry(
    tmp_path: Path, entry: object, message: str
) -> None:
    root = _release(tmp_path, {TABLE: entry})
    with pytest.raises(DatasetError, match=message) as caught:
        load_examples(root, "val")
    assert "val_examples.json" in str(caught.value)
    assert TABLE in str(caught.value)


@pytest.mark.parametrize("table_id", ["../secret.csv", "a/b.csv", ""])
def test_a_table_id_that_is_no_file_name_is_refused(tmp_path: Path, table_id: str) -> None:
    with pytest.raises(DatasetError, match="not a table file name"):
        load_examples(_release(tmp_path, {table_id: GOOD_ENTRY}), "val")


def test_a_missing_table_file_is_a_dataset_error(tmp_path: Path) -> None:
    root = _release(tmp_path, {TABLE: GOOD_ENTRY}, table=False)
    with pytest.raises(DatasetError, match=f"{TABLE}.* is missing"):
        run_benchmark(root, "val")


def test_channel_files_must_list_table_ids(tmp_path: Path) -> None:
    root = _release(tmp_path, {TABLE: GOOD_ENTRY})
    (root / "data" / "simple_ids.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DatasetError, match="simple_ids.json"):
        run_benchmark(root, "val")


@pytest.mark.parametrize(("limit", "jobs"), [(0, 1), (-1, 1), (1, 0), (1, -3), (None, 0)])
def test_limit_and_jobs_below_one_are_refused(tmp_path: Path, limit: int | None, jobs: int) -> None:
    root = _release(tmp_path, {TABLE: GOOD_ENTRY})
    name = "limit" if limit is not None and limit < 1 else "jobs"
    with pytest.raises(TabverifyError, match=f"{name} must be a whole number of at least 1"):
        run_benchmark(root, "val", limit=limit, jobs=jobs)


def test_limit_keeps_the_first_statements(tmp_path: Path) -> None:
    report = run_benchmark(_release(tmp_path, {TABLE: GOOD_ENTRY}), "val", limit=1)
    assert report["n"] == 1
    assert [p["statement"] for p in report["predictions"]] == ["john smith be a democrat"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "annotations",
    [{TABLE: "eq{1; 1}"}, {TABLE: [["only three", None, "caption"]]}, {TABLE: [["s", 1, "c", 2, 5]]}, [], {}],
)
def test_malformed_human_programs_file_is_a_dataset_error(tmp_path: Path, annotations: object) -> None:
    root = _release(tmp_path, {TABLE: GOOD_ENTRY})
    (root / "bootstrap").mkdir()
    (root / "bootstrap" / "bootstrap.json").write_text(json.dumps(annotations), encoding="utf-8")
    with pytest.raises(DatasetError, match="bootstrap.json"):
        bootstrap_execution(root)


def test_a_forced_guess_is_recorded_as_not_enough_info_at_even_odds(tmp_path: Path) -> None:
    # the second statement names nothing of the table: the verifier answers NOT ENOUGH INFO and the
    # bench, whose protocol forces a binary answer, scores its guess - never at the verifier's 100%
    entry = [["john smith be a democrat", "the weather on mars be pleasant"], [1, 0], "ohio elections"]
    report = run_benchmark(_release(tmp_path, {TABLE: entry}), "val")
    linked, unlinked = report["predictions"]  # type: ignore[misc]
    assert unlinked["given"] == "NOT ENOUGH INFO" and unlinked["program"] == ""
    assert unlinked["confidence"] == 0.5 and unlinked["predicted"] in (0, 1)
    assert linked["given"] in ("ENTAILED", "REFUTED") and linked["program"]
    assert 0.5 <= linked["confidence"] <= 1.0


def test_search_recall_groups_human_programs_by_their_two_top_levels() -> None:
    from tabverify.bench.tabfact import _outline

    program = (
        "and{only{filter_eq{all_rows; competition; draw}}; "
        "eq{hop{filter_eq{all_rows; competition; draw}; date}; 11 june 1958}}"
    )
    assert _outline(program) == "and(only(filter_eq),eq(hop))"
    assert _outline("eq{count{all_rows}; 3}") == "eq(count())"
    assert _outline("only{all_rows}") == "only()"
