"""The command line, run as a user runs it: a real process, real files, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ELECTION_ROWS


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tabverify.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_check_exit_code_0_when_entailed(election_path: Path) -> None:
    result = run("check", str(election_path), "mary jones be first elected in 1986")
    assert result.returncode == 0, result.stderr
    assert "ENTAILED" in result.stdout
    assert "program:" in result.stdout


def test_check_exit_code_1_when_any_refuted_and_json(election_path: Path) -> None:
    result = run(
        "check",
        str(election_path),
        "mary jones be first elected in 1986",
        "mary jones be first elected in 1994",
        "--json",
    )
    assert result.returncode == 1, result.stderr
    verdicts = json.loads(result.stdout)["verdicts"]
    assert [v["label"] for v in verdicts] == ["ENTAILED", "REFUTED"]
    assert all(v["program"] for v in verdicts)


@pytest.mark.parametrize("content", [b"", b"\x00\x01binary", b"a#b\n1\n"])
def test_check_exit_code_2_on_bad_table(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.html.csv"
    path.write_bytes(content)
    result = run("check", str(path), "anything")
    assert result.returncode == 2
    assert "error" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_missing_file_and_missing_statement(tmp_path: Path, election_path: Path) -> None:
    assert run("check", str(tmp_path / "none.csv"), "x").returncode == 2
    assert run("check", str(election_path)).returncode == 2
    folder = run("check", str(tmp_path), "x")
    assert folder.returncode == 2 and "is a folder" in folder.stderr


def test_check_header_only_table_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("team,points\n", encoding="utf-8")
    result = run("check", str(path), "the hawks have 3 points")
    assert result.returncode == 2
    assert "no data rows" in result.stderr


def test_check_marks_evidence_cells_off_a_terminal(election_path: Path) -> None:
    result = run("check", str(election_path), "mary jones be first elected in 1986")
    assert "*mary jones*" in result.stdout
    assert "*cell* = evidence read by the program" in result.stdout


def test_program_run_prints_value_on_last_line(election_path: Path) -> None:
    result = run(
        "program", "run", str(election_path), "eq{count{filter_eq{all_rows; party; democratic}}; 3}=True"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "True"
    value = run("program", "run", str(election_path), "hop{argmax{all_rows; votes}; incumbent}")
    assert value.stdout.strip().splitlines()[-1] == "mary jones"


def test_program_run_bad_program_exits_2(election_path: Path) -> None:
    result = run("program", "run", str(election_path), "eq{count{all_rows}; 3")
    assert result.returncode == 2
    assert "missing '}'" in result.stderr


def test_help_has_examples() -> None:
    for command in ([], ["check"], ["crosscheck"], ["tables"], ["coref", "score"], ["program", "run"], ["bench", "tabfact"], ["bench", "arxiveri"],
                    ["train", "tabfact"]):  # fmt: skip
        result = run(*command, "--help")
        assert result.returncode == 0
        assert "Example" in result.stdout


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


def test_crosscheck_exit_1_with_discrepancy_and_html(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, target_html

    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "paper.html").write_text(target_html(), encoding="utf-8")
    page = tmp_path / "out" / "report.html"
    result = run("crosscheck", str(tmp_path / "paper.html"), "--source", str(tmp_path / "cited.tex"),
                 "--html", str(page))  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "1 discrepancy\n" in result.stdout and "66.9" in result.stdout and "digit" in result.stdout
    assert page.exists() and "66.9" in page.read_text(encoding="utf-8")


def test_crosscheck_exit_0_and_json(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, TARGET_ROWS, target_html

    rows = [r for r in TARGET_ROWS if not r[0].startswith("ConvNeXt")]
    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "paper.html").write_text(target_html(rows), encoding="utf-8")
    result = run("crosscheck", str(tmp_path / "paper.html"), "--table", "1", "--source",
                 str(tmp_path / "cited.tex"), "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["discrepancies"] == 0
    assert data["results"][0]["source_table"] == 1 and data["results"][0]["target_table"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "{dir}/cited.tex", "--table", "3"], "has 1 table(s)"),
        (["--source", "{dir}/missing.html"], "no such file"),
        (["--source", "{dir}/empty.html"], "empty"),
        ([], "Missing option '--source'"),
    ],
)
def test_crosscheck_bad_input_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, target_html

    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "paper.html").write_text(target_html(), encoding="utf-8")
    (tmp_path / "empty.html").write_text("", encoding="utf-8")
    result = run("crosscheck", str(tmp_path / "paper.html"), *[a.format(dir=tmp_path) for a in args])
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


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


def read_html_tables_first(page: str) -> str:
    start, end = page.index("<table>"), page.index("</table>") + len("</table>")
    return page[start:end]


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


def test_tables_lists_tables_with_captions(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX

    (tmp_path / "cited.tex").write_text(SOURCE_TEX, encoding="utf-8")
    result = run("tables", str(tmp_path / "cited.tex"))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("1. 3 x 3, 4 numbers  Ablation of the neck.")
    assert lines[1].startswith("2. 5 x 4, 12 numbers  Detection results on COCO val2017.")
    data = json.loads(run("tables", str(tmp_path / "cited.tex"), "--json").stdout)
    assert data[1]["rows"][2][1] == r"\textbf{43.7}" and data[1]["header_rows"] == 1
    assert run("tables", str(tmp_path / "nothing.tex")).returncode == 2


def test_coref_score_prints_metrics_and_json(tmp_path: Path) -> None:
    from tests.coref.test_coref import CONLL

    key = tmp_path / "key.conll"
    key.write_text(CONLL, encoding="utf-8")
    response = tmp_path / "response.conll"
    response.write_text(CONLL.replace("doc1 0 3 him (1)|(2)", "doc1 0 3 him -"), encoding="utf-8")
    result = run("coref", "score", str(key), str(response))
    assert result.returncode == 0, result.stderr
    assert "conll_f1" in result.stdout and "singletons=kept" in result.stdout
    page = tmp_path / "view.html"
    data = json.loads(run("coref", "score", str(key), str(response), "--json", "--html", str(page)).stdout)
    assert set(data["metrics"]) == {"muc", "b_cubed", "ceafm", "ceafe", "blanc", "lea", "conll_f1"}
    assert data["options"]["match"] == "exact" and 0.0 < data["metrics"]["conll_f1"] < 1.0
    assert all(0.0 <= v <= 1.0 for m in data["metrics"].values() if isinstance(m, dict) for v in m.values())
    assert 'dir="auto"' in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("key_text", "message"),
    [
        ("#begin document (d);\nd 0 0 a (1\n#end document\n", "unclosed"),
        ("#begin document (other);\nd 0 0 a (1)\n#end document\n", "share no document id"),
        ('{"doc_id": "(doc1); part 000", "text": "ab", "clusters": [[[0, 5]]]}', "outside the text"),
    ],
)
def test_coref_score_bad_input_exits_2(tmp_path: Path, key_text: str, message: str) -> None:
    from tests.coref.test_coref import CONLL

    key = tmp_path / ("key.json" if key_text.startswith("{") else "key.conll")
    key.write_text(key_text, encoding="utf-8")
    response = tmp_path / "response.conll"
    response.write_text(CONLL, encoding="utf-8")
    result = run("coref", "score", str(key), str(response))
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_coref_score_weights_and_empty_files(tmp_path: Path) -> None:
    from tabverify.coref import Document, Mention, write_json

    text = "ראיתי את ביתו"
    key = Document("d", text, ((Mention.of(12, 13, "subword", "embedded_pronoun"), Mention.of(0, 5)),))
    write_json([key], tmp_path / "k.jsonl")
    write_json([Document("d", text, ((Mention.of(9, 13), Mention.of(0, 5)),))], tmp_path / "r.jsonl")
    result = run("coref", "score", str(tmp_path / "k.jsonl"), str(tmp_path / "r.jsonl"), "--match", "overlap",
                 "--weight", "embedded_pronoun=3", "--json")  # fmt: skip
    data = json.loads(result.stdout)
    assert data["options"]["kind_weights"] == {"embedded_pronoun": 3.0}
    assert data["mentions"]["embedded_pronoun"]["recall"] == 1.0 and "weighted" in data["mentions"]
    (tmp_path / "empty.conll").write_text("", encoding="utf-8")
    empty = run("coref", "score", str(tmp_path / "empty.conll"), str(tmp_path / "empty.conll"))
    assert empty.returncode == 2 and "holds no documents" in empty.stderr
