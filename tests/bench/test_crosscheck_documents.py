"""scripts/bench_crosscheck_documents.py: a sample of Markdown/LaTeX documents, checked the way
`tabverify crosscheck` checks them, scored against blind labels and flag judgements."""

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "bench_crosscheck_documents.py"

SOURCE = """# Model zoo

| Model | Params | FLOPs | Top-1 |
|---|---|---|---|
| Net-T | 28M | 4.5G | 81.3 |
| Net-S | 50M | 8.7G | 83.04 |
| Net-B | 88M | 15.4G | 83.51 |
"""

TARGET = r"""
\begin{table}
\caption{Comparison on ImageNet-1K.}
\begin{tabular}{lccc}
Method & Params & FLOPs & Top-1 \\
Net-T & 28M & 4.5G & 81.3 \\
Net-S & 50M & 8.7G & 83.40 \\
Net-B & 88M & 15.4G & 83.51 \\
Ours-T & 27M & 4.4G & 82.64 \\
\end{tabular}
\end{table}
"""


def _script():
    if str(SCRIPT.parent) not in sys.path:  # it imports its sibling scripts, as run from scripts/
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("bench_crosscheck_documents", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sample(tmp_path: Path, source_text: str = SOURCE) -> dict[str, object]:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zoo.md").write_text(SOURCE, encoding="utf-8")
    (docs / "paper.tex").write_text(TARGET, encoding="utf-8")
    sample = {
        "documents": {
            "zoo": {"file": "docs/zoo.md", "sha256": hashlib.sha256(source_text.encode()).hexdigest()},
            "paper": {"file": "docs/paper.tex", "sha256": hashlib.sha256(TARGET.encode()).hexdigest()},
        },
        "pairs": [{"id": "p1", "target": "paper", "source": "zoo"}],
    }
    return sample


def test_a_transposed_copy_is_flagged_judged_and_the_match_scored(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    labels = {"p1/1": {"table": 1, "confidence": "high", "why": "Net rows reprinted"}}
    result = _script().run(tmp_path, sample, labels, {})
    assert result["pairs"] == 1 and result["matched"] == 1
    assert result["table_match_accuracy"] == 1.0
    assert [f["target_text"] for f in result["items"]] == ["83.40"]
    flag = result["items"][0]
    assert flag["source_text"] == "83.04" and flag["judgement"] is None
    assert result["not_judged"] == [flag["key"]] and result["precision_judged"] is None

    judged = _script().run(tmp_path, sample, labels, {flag["key"]: {"worth_a_look": True, "why": "swap"}})
    assert judged["judged"] == 1 and judged["precision_judged"] == 1.0 and judged["not_judged"] == []
    wrong = _script().run(tmp_path, sample, {"p1/1": {"table": None, "confidence": "low"}}, {})
    assert wrong["table_match_accuracy"] == 0.0 and wrong["disagreements"][0]["tool"] == 1


def test_a_file_that_differs_from_the_sample_is_skipped_and_named(tmp_path: Path) -> None:
    sample = _sample(tmp_path, source_text=SOURCE + "changed")
    result = _script().run(tmp_path, sample, {}, {})
    assert result["pairs_skipped"] == 1 and "pairs" not in result
    assert any(p.startswith("zoo: sha256") for p in result["problems"])


def _command(tmp_path: Path) -> list[str]:
    return [
        sys.executable,
        str(SCRIPT),
        "--sample",
        str(tmp_path / "sample.json"),
        "--documents",
        str(tmp_path),
    ]


def test_the_command_exits_2_with_one_line_on_a_broken_sample(tmp_path: Path) -> None:
    (tmp_path / "sample.json").write_text("{not json", encoding="utf-8")
    run = subprocess.run(_command(tmp_path), capture_output=True, text=True, check=False)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "cannot read the sample" in run.stderr


def test_the_command_exits_2_on_a_pair_without_an_id(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    sample["pairs"] = [{"target": "paper", "source": "zoo"}]
    (tmp_path / "sample.json").write_text(json.dumps(sample), encoding="utf-8")
    run = subprocess.run(_command(tmp_path), capture_output=True, text=True, check=False)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and '"pairs" must be' in run.stderr


def test_the_command_reads_labels_and_judgements_from_the_sample(tmp_path: Path) -> None:
    sample = _sample(tmp_path)
    sample["labels"] = {"p1/1": {"table": 1, "confidence": "high"}}
    sample["judgements"] = {"p1/1/2,3": {"worth_a_look": True, "why": "83.40 for 83.04"}}
    (tmp_path / "sample.json").write_text(json.dumps(sample), encoding="utf-8")
    run = subprocess.run(_command(tmp_path), capture_output=True, text=True, check=True)
    summary = json.loads(run.stdout)
    assert summary["table_match_accuracy"] == 1.0 and summary["precision_judged"] == 1.0
