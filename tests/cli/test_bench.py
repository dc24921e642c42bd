"""The command line, run as a user runs it (a real process, real files, exit codes): `bench` and `train`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import run
from tests.conftest import ELECTION_ROWS


def _release(tmp_path: Path) -> Path:
    """A tiny folder in the TabFact release layout."""
    root = tmp_path / "tabfact"
    (root / "data" / "all_csv").mkdir(parents=True)
    (root / "tokenized_data").mkdir()
    (root / "data" / "all_csv" / "1-1-1.html.csv").write_text("\n".join("#".join(r) for r in ELECTION_ROWS))
    statements = [
        "mary jones be first elected in 1986",
        "there be 3 democratic incumbent",
        "tom green be a democratic",
    ]
    examples = {"1-1-1.html.csv": [statements, [1, 1, 0], "ohio elections"]}
    (root / "tokenized_data" / "val_examples.json").write_text(json.dumps(examples))
    for name in ("simple_ids", "complex_ids"):
        (root / "data" / f"{name}.json").write_text(
            json.dumps(["1-1-1.html.csv"] if name == "simple_ids" else [])
        )
    return root


def test_bench_tabfact_writes_result_file(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = run("bench", "tabfact", "--data", str(_release(tmp_path)), "--split", "val", "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["benchmark"] == "tabfact" and data["split"] == "val" and data["n"] == 3
    assert 0.0 <= data["metrics"]["accuracy"] <= 1.0
    assert data["metrics"]["n_simple"] == 3
    assert "tabfact val: 3/3" in result.stderr  # progress, one line per 10% when not on a terminal
    assert {"table", "statement", "label", "predicted", "program"} <= set(data["predictions"][0])


def test_bench_tabfact_bad_data_dir(tmp_path: Path) -> None:
    result = run("bench", "tabfact", "--data", str(tmp_path), "--split", "val")
    assert result.returncode == 2
    assert "release layout" in result.stderr


def read_html_tables_first(page: str) -> str:
    start, end = page.index("<table>"), page.index("</table>") + len("</table>")
    return page[start:end]


def _arxiveri_release(tmp_path: Path) -> Path:
    """A tiny folder in the arXiVeri release layout: one pair with a match, one without."""
    from tests.crosscheck.conftest import target_html

    root = tmp_path / "arxiveri"
    target = read_html_tables_first(target_html())
    source_table = (
        "<table><tr><th>Method</th><th>AP</th><th>AP50</th></tr><tr><td>ResNet-50</td><td>38.2</td>"
        "<td>58.1</td></tr><tr><td>Swin-T</td><td>43.7</td><td>66.6</td></tr></table>"
    )
    other = "<table><tr><th>Data</th><th>Images</th></tr><tr><td>A</td><td>1200</td></tr></table>"
    for sub in ("ground_truth/table_match/t1", "ground_truth/cell_match/t1", "source_papers"):
        (root / sub).mkdir(parents=True)
    papers = {"s1": [other, source_table], "s2": [other]}
    for sid, tables in papers.items():
        entries = [{"table": t, "caption": f"Table {i + 1}"} for i, t in enumerate(tables)]
        (root / "source_papers" / f"{sid}.json").write_text(json.dumps({"list_table_and_caption": entries}))
    truth = {
        "target_table": target,
        "target_caption": "Table 3",
        "source_table": source_table.replace("th>", "td>"),
    }
    (root / "ground_truth/table_match/t1/s1.json").write_text(json.dumps(truth))
    (root / "ground_truth/table_match/t1/s2.json").write_text(json.dumps({**truth, "source_table": ""}))
    cells = []
    for (tr, tc), (sr, sc), v in [
        ((2, 1), (1, 1), "38.2"),
        ((2, 2), (1, 2), "58.1"),
        ((3, 1), (2, 1), "43.7"),
    ]:
        cells += [{"rowIndex": tr, "colIndex": tc, "value": v}, {"rowIndex": sr, "colIndex": sc, "value": v}]
    (root / "ground_truth/cell_match/t1/s1.json").write_text(json.dumps(cells))
    (root / "ground_truth/cell_match/t1/s2.json").write_text("[]")
    return root


def test_bench_arxiveri_writes_result_file(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    result = run("bench", "arxiveri", "--data", str(_arxiveri_release(tmp_path)), "--out", str(out))
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["benchmark"] == "arxiveri" and data["n_pairs"] == 2
    metrics = data["metrics"]
    assert metrics["table_match_accuracy"] == 1.0
    assert metrics["table_match_accuracy_verbatim"] == 0.5  # the th->td rewrite defeats the verbatim one
    assert metrics["cell_recall"] == 1.0 and 0.5 <= metrics["cell_precision"] <= 1.0
    assert {"target", "source", "predicted_table", "gold_table"} <= set(data["pairs"][0])
    assert "arxiveri: 2/2" in result.stderr


def test_bench_arxiveri_bad_data_dir(tmp_path: Path) -> None:
    result = run("bench", "arxiveri", "--data", str(tmp_path))
    assert result.returncode == 2 and "release layout" in result.stderr


def test_train_checks_its_output_and_table_counts_before_training(tmp_path: Path) -> None:
    data = _release(tmp_path)
    zero = run("train", "tabfact", "--data", str(data), "--out", str(tmp_path / "m"), "--ranker-tables", "0")
    assert zero.returncode == 2 and "--ranker-tables" in zero.stderr
    negative = run(
        "train", "tabfact", "--data", str(data), "--out", str(tmp_path / "m"), "--human-weight", "-1"
    )
    assert negative.returncode == 2 and "--human-weight -1" in negative.stderr
    unwritable = run("train", "tabfact", "--data", str(data), "--out", "/proc/tabverify-models")
    assert unwritable.returncode == 2 and "--out" in unwritable.stderr
    inside = run("train", "tabfact", "--data", str(data), "--out", str(data / "models"))
    assert inside.returncode == 2 and "inside an input" in inside.stderr
