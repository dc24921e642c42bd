"""The judgements of the human programs that do not execute to True (scripts/bench_bootstrap.py):
every one is an annotation error or an executor gap with a reason, and the tally counts them."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "scripts" / "bench_bootstrap.py"


def _script():
    spec = importlib.util.spec_from_file_location("bench_bootstrap", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_shipped_judgements_each_give_a_kind_and_a_reason() -> None:
    bench = _script()
    judgements = bench.read_judgements(bench.JUDGEMENTS)
    assert len(judgements) >= 100
    for judgement in judgements.values():
        kind, _, reason = judgement.partition(": ")
        assert kind in ("annotation", "executor") and len(reason) > 10


def test_the_tally_counts_each_kind_and_the_unjudged(tmp_path: Path) -> None:
    bench = _script()
    path = tmp_path / "judgements.json"
    path.write_text(
        json.dumps(
            [
                {"table": "a.csv", "statement": "s1", "judgement": "annotation: wrong column"},
                {"table": "a.csv", "statement": "s2", "judgement": "executor: a date format"},
            ]
        ),
        encoding="utf-8",
    )
    judgements = bench.read_judgements(path)
    failures = {
        "different number": [{"table": "a.csv", "statement": "s1"}, {"table": "b.csv", "statement": "s1"}],
        "other": [{"table": "a.csv", "statement": "s2"}],
    }
    assert bench.judgement_tally(failures, judgements) == {"annotation": 1, "executor": 1, "unjudged": 1}


def test_a_judgement_of_another_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "judgements.json"
    path.write_text(json.dumps([{"table": "a.csv", "statement": "s", "judgement": "maybe: who knows"}]))
    with pytest.raises(SystemExit, match="annotation:"):
        _script().read_judgements(path)
