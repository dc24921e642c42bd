"""The command line, run as a user runs it (a real process, real files, exit codes): `coref score`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import run


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
    # each counting view says how many mentions each side holds, so an empty view reads as empty
    counts = {view: (m.get("key"), m.get("response")) for view, m in data["mentions"].items()}
    assert counts == {"exact": (2, 2), "aligned": (2, 2), "subword": (1, 0), "embedded_pronoun": (1, 0),
                      "clitic": (0, 0), "weighted": (None, None), "overlap_ratio": (None, None)}  # fmt: skip
    (tmp_path / "empty.conll").write_text("", encoding="utf-8")
    empty = run("coref", "score", str(tmp_path / "empty.conll"), str(tmp_path / "empty.conll"))
    assert empty.returncode == 2 and "holds no documents" in empty.stderr


@pytest.mark.parametrize("weight", ["word=-5", "word=nan", "word=inf", "word=1e309", "=3", "word=x"])
def test_coref_score_refuses_weights_that_are_not_finite_non_negative(tmp_path: Path, weight: str) -> None:
    from tests.coref.test_coref import CONLL

    key = tmp_path / "key.conll"
    key.write_text(CONLL, encoding="utf-8")
    result = run("coref", "score", str(key), str(key), "--weight", weight, "--json")
    assert result.returncode == 2 and result.stdout == "" and "--weight" in result.stderr


def test_coref_score_json_lists_a_span_in_two_entities_as_a_warning(tmp_path: Path) -> None:
    lines = [
        "#begin document (d);",
        "d 0 0 A (1)|(2)",
        "d 0 1 B (1)",
        "d 0 2 C (3)",
        "d 0 3 D (3)",
        "d 0 4 E (4)",
    ]
    key = tmp_path / "key.conll"
    key.write_text("\n".join([*lines, "#end document", ""]), encoding="utf-8")
    response = tmp_path / "response.conll"
    response.write_text(key.read_text(encoding="utf-8").replace("D (3)", "D (5)"), encoding="utf-8")
    result = run("coref", "score", str(key), str(response), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["warnings"] and "warning:" in result.stderr
    # the Perl scorer v8.01 on this case: MUC recall 0/2, B3 recall 4/6 and precision 4.5/5
    assert data["metrics"]["muc"]["recall"] == 0.0
    assert abs(data["metrics"]["b_cubed"]["recall"] - 4 / 6) < 1e-9
    assert abs(data["metrics"]["b_cubed"]["precision"] - 4.5 / 5) < 1e-9


def test_coref_score_options_that_do_not_apply_are_refused(tmp_path: Path) -> None:
    from tests.coref.test_coref import CONLL

    key = tmp_path / "key.conll"
    key.write_text(CONLL, encoding="utf-8")
    threshold = run("coref", "score", str(key), str(key), "--threshold", "0.5")
    assert threshold.returncode == 2 and "--match overlap" in threshold.stderr
    raw = run("coref", "score", str(key), str(key), "--raw", str(tmp_path / "missing"))
    assert raw.returncode == 2 and "--raw" in raw.stderr
    conll = run("coref", "score", str(key), str(key), "--format", "conll", "--raw", str(tmp_path))
    assert conll.returncode == 2 and "KibutzR" in conll.stderr
