"""Every expected value of the reference scorers' test suites, reproduced (data in ../shared/datasets)."""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path

import pytest

from tabverify.coref import CorefResult, read_documents, score
from tests.conftest import SHARED, needs_dataset

TESTS = SHARED / "coref" / "scorer-tests"
pytestmark = [pytest.mark.data, needs_dataset(SHARED / "coref")]


@cache
def _score(key: Path, response: Path, fmt: str, **options: object) -> CorefResult:
    logging.disable(logging.WARNING)
    try:
        return score(read_documents(key, fmt), read_documents(response, fmt), **options)  # type: ignore[arg-type]
    finally:
        logging.disable(logging.NOTSET)


def _expectations(name: str) -> list[dict[str, object]]:
    path = TESTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def _check(result: CorefResult, expected: dict[str, object], metric: str, tolerance: float) -> None:
    if metric == "mention_overlap":
        got = result.mentions["overlap_ratio"]
    else:
        got = result.metrics[metric]
    values = (got.recall, got.precision, got.f1)
    wanted = (expected["recall"], expected["precision"], expected["f1"])
    assert values == pytest.approx(wanted, abs=tolerance), (expected, values)


REFERENCE = _expectations("reference-coreference-scorers/expected_values.json")


@pytest.mark.parametrize("expected", REFERENCE, ids=lambda e: f"{e['id']}-{e['metric']}")
def test_conll_reference_scorer(expected: dict[str, object]) -> None:
    base = TESTS / "coval" / "tests"  # the same TC files the reference suite names under test/DataFiles
    key, response = base / Path(str(expected["key"])).name, base / Path(str(expected["response"])).name
    metric = {"bcub": "b_cubed"}.get(str(expected["metric"]), str(expected["metric"]))
    _check(_score(key, response, "conll"), expected, metric, 1e-4)


COVAL = _expectations("coval/expected_values.json")


@pytest.mark.parametrize("expected", COVAL, ids=lambda e: f"{e['test']}-{e['metric']}")
def test_coval(expected: dict[str, object]) -> None:
    options = expected["options"]
    assert isinstance(options, dict) and not options["NP_only"] and not options["remove_nested"]
    base = TESTS / "coval" / "tests"
    result = _score(base / str(expected["key"]), base / str(expected["response"]), "conll",
                    keep_singletons=bool(options["keep_singletons"]))  # fmt: skip
    _check(result, expected, str(expected["metric"]), float(expected.get("abs_tol") or 1e-6))  # type: ignore[arg-type]


COREFUD = [e for e in _expectations("corefud-scorer/expected_values_corefud.json")
           if "[SKIPPED" not in str(e["test"])]  # fmt: skip
MATCH = {"exact": "exact", "partial-corefud": "partial", "head": "head"}


@pytest.mark.parametrize("expected", COREFUD, ids=lambda e: f"{e['test']}-{e['metric']}")
def test_corefud_scorer(expected: dict[str, object]) -> None:
    options = expected["options"]
    assert isinstance(options, dict)
    base = TESTS / "corefud-scorer"
    result = _score(
        base / str(expected["key"]), base / str(expected["response"]), "conllu",
        match=MATCH[str(options["match"])], keep_singletons=bool(options["keep_singletons"]),
        keep_zeros=bool(options["keep_zeros"]), zero_match=str(options["zero_match_method"]),
        blanc_variant="corefud",
    )  # fmt: skip
    metric = {"blancc+blancn": "blanc"}.get(str(expected["metric"]), str(expected["metric"]))
    _check(result, expected, metric, float(expected.get("abs_tol") or 1e-6))  # type: ignore[arg-type]


def test_suite_sizes() -> None:
    # the counts: 91 reference, 82 coval, 335 CorefUD of which the authors skip 3 tests
    assert len(REFERENCE) == 91 and len(COVAL) == 82
    everything = _expectations("corefud-scorer/expected_values_corefud.json")
    skipped = {str(e["test"]).split(" ")[0] for e in everything if "[SKIPPED" in str(e["test"])}
    assert len(everything) == 335 and len(skipped) == 3 and len(COREFUD) == 320


HEBREW = SHARED / "coref" / "hebrew"


@pytest.mark.skipif(not HEBREW.is_dir(), reason="../shared/datasets/coref/hebrew is not present")
def test_kibutzr_dev_aligns_to_raw_text_and_scores_consistently() -> None:
    logging.disable(logging.WARNING)
    try:
        conllu, raw = (
            HEBREW / "kibutzr" / "data" / "conllu",
            HEBREW / "kibutzr" / "data" / "llm_input" / "raw_documents",
        )
        gold = read_documents(conllu / "with_singleton" / "dev", raw_dir=raw / "dev")
        without = read_documents(conllu / "no_singleton" / "dev", raw_dir=raw / "dev")
    finally:
        logging.disable(logging.NOTSET)
    assert len(gold) == 26
    assert sum(1 for d in gold if not d.words) >= 25  # on the raw text (one document does not align)
    assert sum(1 for d in gold for m in d.mentions if m.subkind == "embedded_pronoun") > 300
    same = score(gold, gold, match="overlap")
    assert same.conll_f1 == 1.0 and same.mentions["subword"].f1 == 1.0
    # the singleton-free copy has every coreference link: MUC ignores singletons, so it is perfect
    assert score(gold, without, match="overlap").metrics["muc"].f1 == 1.0


@pytest.mark.skipif(not HEBREW.is_dir(), reason="../shared/datasets/coref/hebrew is not present")
def test_iahlt_val_reads_and_scores_itself_perfectly() -> None:
    logging.disable(logging.WARNING)
    try:
        docs = read_documents(HEBREW / "iahlt" / "train_val_test" / "coref-5-heb_val.jsonl")
    finally:
        logging.disable(logging.NOTSET)
    assert len(docs) == 36 and sum(len(d.mentions) for d in docs) == 9043  # 9,139 minus 96 duplicates
    assert score(docs, docs, match="overlap").conll_f1 == 1.0


ZA = TESTS / "corefud-scorer" / "tests" / "tests-corefud" / "zeros" / "TC-ZA.key"


@pytest.mark.parametrize("match", ["exact", "partial", "head"])
def test_drop_zeros_forgives_a_response_without_the_keys_zero(tmp_path: Path, match: str) -> None:
    # The reference expectations could not catch keep_zeros=False doing nothing: all their
    # exclude-zeros cases score 1.0 either way. TC-ZA's key has one zero, the empty node 5.1 of its
    # second sentence, a mention of e2 = {3-4, 5.1, 7-9}; the response is the key without it.
    key_text = ZA.read_text(encoding="utf-8")
    zero_lines = [line for line in key_text.splitlines() if line.startswith("5.1\t")]
    assert len(zero_lines) == 1
    response = tmp_path / "TC-ZA-no-zero.response"
    response.write_text(key_text.replace(zero_lines[0] + "\n", ""), encoding="utf-8")
    logging.disable(logging.WARNING)
    try:
        key_docs, response_docs = read_documents(ZA), read_documents(response)
    finally:
        logging.disable(logging.NOTSET)
    dropped = score(key_docs, response_docs, match=match, keep_zeros=False, blanc_variant="corefud")
    for name, metric in dropped.metrics.items():
        assert (metric.recall, metric.precision, metric.f1) == (1.0, 1.0, 1.0), name
    kept = score(key_docs, response_docs, match=match, blanc_variant="corefud")
    # with the zero, e2's links 3-4 / 5.1 / 7-9 are 2 and the response has 1: MUC recall loses one
    # of the key's links (e1 = {4-7, 1} has 1 more): (1 + 1) / 3
    assert kept.metrics["muc"].recall == pytest.approx(2 / 3) and kept.metrics["muc"].precision == 1.0


@pytest.mark.skipif(not HEBREW.is_dir(), reason="../shared/datasets/coref/hebrew is not present")
def test_bench_predictions_score_as_the_bench_does(tmp_path: Path) -> None:
    """`bench coref --predictions` writes the resolver's documents; scoring them with `coref score`
    under the benchmark's protocol gives the benchmark's CoNLL-F1 (so --html views of them are of
    the same system output)."""
    from tabverify.bench.coref import run_benchmark
    from tabverify.coref import read_documents

    data = HEBREW / "kibutzr"
    written = tmp_path / "system.jsonl"
    logging.disable(logging.WARNING)
    try:
        result = run_benchmark(data, "dev", "raw", predictions=written)
        key = read_documents(
            data / "data" / "conllu" / "no_singleton" / "dev",
            raw_dir=data / "data" / "llm_input" / "raw_documents" / "dev",
        )
    finally:
        logging.disable(logging.NOTSET)
    system = read_documents(written)
    assert len(system) == len(key) == 26
    again = score(key, system, match="overlap", keep_singletons=False)
    assert round(again.conll_f1 * 100, 2) == result["metrics"]["conll_f1"]  # type: ignore[index]
