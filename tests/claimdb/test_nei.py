"""The offline NOT ENOUGH INFO detector (tabverify.claimdb.nei) on the real ClaimDB dev data and the
sample's real formula_1 schema: grouped folds that never mix databases, cross-validated predictions
from models that never saw the claim's database, the two shipped models on claims of our own, the
reasons and phrases it gives, model files that are broken, both encoders, determinism and hostile
claim text. The dev-set numbers are re-measured through the real command line."""

from __future__ import annotations

import json
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from tabverify.claimdb.claims import Claim, read_claims
from tabverify.claimdb.nei import (
    NeiCheck,
    NeiDetector,
    NeiModel,
    cross_validate,
    grouped_folds,
    train,
)
from tabverify.claimdb.sample import SamplePaths
from tabverify.claimdb.schema import SchemaSet, load_schemas
from tabverify.database import Schema
from tabverify.errors import ModelError
from tabverify.verify.verdict import Label, NeiSubtype
from tests.claimdb.conftest import CLAIMDB, CLAIMDB_SCHEMA, needs_claimdb_schema
from tests.cli.conftest import run

DEV = CLAIMDB / "claims-dev.jsonl"

pytestmark = pytest.mark.data


@pytest.fixture(scope="module")
def dev() -> tuple[list[Claim], SchemaSet]:
    needs_claimdb_schema()
    claims, problems = read_claims(DEV)
    assert problems == [] and len(claims) == 400
    return claims, load_schemas(CLAIMDB_SCHEMA)


@pytest.fixture(scope="module")
def formula_1(claimdb_sample: SamplePaths) -> Schema:
    """The sample's schema folder, read as a verifier without the database reads it."""
    return load_schemas(claimdb_sample.schema_dir).get("formula_1")


@pytest.fixture(scope="module")
def hashing() -> NeiDetector:
    return NeiDetector("hashing")


@pytest.fixture(scope="module")
def minilm() -> NeiDetector:
    return NeiDetector("minilm")


def assert_same(first: list[NeiCheck], second: list[NeiCheck], tolerance: float = 1e-9) -> None:
    """The same decisions, reasons and phrases; probabilities equal up to float rounding (BLAS may sum
    a batch in another order)."""
    assert [(c.nei, c.subtype, c.reason, c.phrases) for c in first] == [
        (c.nei, c.subtype, c.reason, c.phrases) for c in second
    ]
    assert [c.probability for c in first] == pytest.approx([c.probability for c in second], abs=tolerance)


# ---- grouped folds and cross-validation ----------------------------------------------------------


def test_grouped_folds_never_split_a_database(dev: tuple[list[Claim], SchemaSet]) -> None:
    claims, _ = dev
    groups = [c.db_name for c in claims]
    for k in (2, 3, 5, 11):
        folds = grouped_folds(groups, k)
        assert len(folds) == len(claims) and set(folds) == set(range(k))
        fold_of: dict[str, set[int]] = defaultdict(set)
        for group, fold in zip(groups, folds, strict=True):
            fold_of[group].add(fold)
        assert all(len(f) == 1 for f in fold_of.values()), fold_of  # one fold per database
        sizes = Counter(folds)
        # dealt largest first to the smallest fold: no fold exceeds another by more than a database
        assert max(sizes.values()) - min(sizes.values()) <= max(Counter(groups).values())
        assert grouped_folds(groups, k) == folds  # deterministic
    # eleven databases in eleven folds: one database each
    assert sorted(Counter(grouped_folds(groups, 11)).values()) == sorted(Counter(groups).values())


def test_cross_validation_never_predicts_with_a_model_that_saw_the_database(
    dev: tuple[list[Claim], SchemaSet], monkeypatch: pytest.MonkeyPatch
) -> None:
    claims, schemas = dev
    chosen = {"formula_1", "superhero", "toxicology", "student_club"}
    subset = [c for c in claims if c.db_name in chosen]
    assert len({c.db_name for c in subset}) == 4 and any(c.label is Label.NOT_ENOUGH_INFO for c in subset)
    trained: dict[int, set[str]] = {}  # id(model) -> the databases it was trained on
    checked: list[tuple[int, list[str]]] = []  # (id(model), databases of the claims it checked)
    fit = NeiModel.fit.__func__  # type: ignore[attr-defined]
    check_many = NeiDetector.check_many

    def spy_fit(cls, examples, encoder, **kwargs):  # type: ignore[no-untyped-def]
        model = fit(cls, examples, encoder, **kwargs)
        trained[id(model)] = {e.group for e in examples}
        return model

    def spy_check(self: NeiDetector, items: Iterable[tuple[str, str, Schema]]) -> list[NeiCheck]:
        items = list(items)
        checked.append((id(self.model), [schema.target for _, _, schema in items]))
        return check_many(self, items)

    monkeypatch.setattr(NeiModel, "fit", classmethod(spy_fit))
    monkeypatch.setattr(NeiDetector, "check_many", spy_check)
    folds = grouped_folds([c.db_name for c in subset], 2)
    results = cross_validate(subset, schemas, encoder="hashing", folds=2)
    monkeypatch.undo()
    assert len(results) == len(subset) and len(checked) == 2
    for model_id, databases in checked:
        assert trained[model_id] and not trained[model_id] & set(databases)
        assert trained[model_id] | set(databases) == chosen
    # the same predictions from a model trained here on the other fold only
    for fold in (0, 1):
        held = [i for i, f in enumerate(folds) if f == fold]
        model = train([c for c, f in zip(subset, folds, strict=True) if f != fold], schemas, "hashing")
        again = NeiDetector("hashing", model=model).check_many(
            (subset[i].claim, subset[i].extra_info, schemas.get(subset[i].db_name)) for i in held
        )
        assert_same([results[i] for i in held], again)
    # a claim's prediction depends on its fold, not on its position: the model trained with its
    # database inside scores it differently from the cross-validated one for some claims
    inside = NeiDetector("hashing", model=train(subset, schemas, "hashing"))
    seen = inside.check_many((c.claim, c.extra_info, schemas.get(c.db_name)) for c in subset)
    assert sum(abs(a.probability - b.probability) > 1e-6 for a, b in zip(seen, results, strict=True)) > 10


def test_cross_validation_needs_labels(dev: tuple[list[Claim], SchemaSet]) -> None:
    claims, schemas = dev
    unlabelled = [Claim("x", "formula_1", "A claim.")]
    with pytest.raises(ValueError, match="labelled"):
        cross_validate(claims[:5] + unlabelled, schemas, encoder="hashing")
    only_supported = [c for c in claims if c.label is not Label.NOT_ENOUGH_INFO][:30]
    with pytest.raises(ModelError, match="both kinds"):
        train(only_supported, schemas, "hashing")


# ---- the shipped models on claims of our own ------------------------------------------------------

WHAT_IFS = [
    "If Michael Schumacher had not retired in 2012, he would have won the title that year.",
    "Had the 2011 season been two races longer, Jenson Button would have overtaken Sebastian Vettel.",
    "Suppose Ferrari had hired Lewis Hamilton in 2010; Ferrari would have won the constructors' title.",
]
JUDGEMENTS = [
    "Monaco is the most beautiful and glamorous circuit on the calendar.",
    "Kimi Raikkonen is widely regarded as the coolest and most likeable driver of his era.",
]
OUT_OF_SCHEMA = [
    "The catering at the 2012 Hungarian Grand Prix was supplied by a Budapest bakery.",
    "Mark Webber drank three litres of water during the 2012 Malaysian Grand Prix.",
    "Lewis Hamilton's helmet was painted yellow at the 2011 Turkish Grand Prix because of a sponsor deal.",
]
PLAIN = [
    "There were 19 races in the 2012 season.",
    "The number of races held in 2011 is 19.",
    "Lewis Hamilton scored 190 points in the 2012 season.",
    "Exactly 24 drivers took part in the 2013 season.",
]


def test_our_claims_are_not_in_the_dev_file() -> None:
    text = DEV.read_text(encoding="utf-8") if DEV.is_file() else ""
    for claim in WHAT_IFS + JUDGEMENTS + OUT_OF_SCHEMA + PLAIN:
        assert claim not in text


@pytest.mark.parametrize("encoder", ["hashing", "minilm"])
def test_shipped_models_find_each_kind(
    encoder: str, formula_1: Schema, request: pytest.FixtureRequest
) -> None:
    detector: NeiDetector = request.getfixturevalue(encoder)
    assert detector.encoder.name == encoder and detector.model.encoder == encoder
    cases = [(c, NeiSubtype.COUNTERFACTUAL) for c in WHAT_IFS] + [
        (c, NeiSubtype.SUBJECTIVE) for c in JUDGEMENTS
    ]
    cases += [(c, NeiSubtype.OUT_OF_SCHEMA) for c in OUT_OF_SCHEMA] + [(c, None) for c in PLAIN]
    checks = detector.check_many((claim, "", formula_1) for claim, _ in cases)
    for (claim, subtype), check in zip(cases, checks, strict=True):
        assert check.nei is (subtype is not None), (claim, check)
        assert check.subtype is subtype, (claim, check)
        assert 0.0 <= check.probability <= 1.0
        assert (check.probability >= detector.model.threshold) is check.nei
    assert all(c.probability > 0.8 for c in checks[: len(WHAT_IFS)])
    assert all(c.probability < 0.1 for c in checks[-len(PLAIN) :])
    # a number the schema cannot hold is a harmless detail; the hint in extra_info does not change that
    hinted = detector.check(PLAIN[0], "season refers to year; races refers to the races table", formula_1)
    assert not hinted.nei


@pytest.mark.parametrize("encoder", ["hashing", "minilm"])
def test_reasons_name_the_clause_and_the_uncovered_words(
    encoder: str, formula_1: Schema, request: pytest.FixtureRequest
) -> None:
    detector: NeiDetector = request.getfixturevalue(encoder)
    what_if = detector.check(WHAT_IFS[0], "", formula_1)
    assert what_if.phrases == ("If Michael Schumacher had not retired in 2012",)
    assert what_if.reason == (
        "a what-if: 'If Michael Schumacher had not retired in 2012' describes something the data did not record"
    )
    catering = detector.check(OUT_OF_SCHEMA[0], "", formula_1)
    assert "catering" in catering.phrases and "bakery" in catering.phrases
    assert catering.reason.startswith("no counterpart in the schema for ") and "'catering'" in catering.reason
    assert all(p.lower() in OUT_OF_SCHEMA[0].lower() for p in catering.phrases)
    judged = detector.check(JUDGEMENTS[1], "", formula_1)
    assert judged.reason.startswith("a value judgement (")
    assert any(f"'{w}'" in judged.reason for w in ("widely", "regarded", "coolest", "likeable")), (
        judged.reason
    )
    assert "widely" in judged.phrases
    plain = detector.check(PLAIN[0], "", formula_1)
    assert (
        plain.reason == "every concept of the claim has a counterpart in the schema" and plain.phrases == ()
    )
    assert detector.check(PLAIN[1], "", formula_1).reason.startswith("the schema can likely settle it")
    as_dict = catering.to_dict()
    assert as_dict["subtype"] == "out-of-schema" and as_dict["phrases"] == list(catering.phrases)
    assert json.loads(json.dumps(as_dict)) == as_dict


def test_minilm_and_hashing_encoders(hashing: NeiDetector, minilm: NeiDetector) -> None:
    texts = ["fastest lap time", "the quickest lap", "a jammed wheel nut", ""]
    for detector, dim in ((hashing, 512), (minilm, 384)):
        encoder = detector.encoder
        assert encoder.dim == dim
        vectors = np.asarray(encoder.encode(texts))
        assert vectors.shape == (4, dim) and np.isfinite(vectors).all()
        norms = np.linalg.norm(vectors[:3], axis=1)
        assert np.allclose(norms, 1.0, atol=1e-5)
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]  # related texts are closer
        assert np.asarray(encoder.encode([])).shape[0] == 0
    # MiniLM knows meaning beyond spelling: synonyms with no shared letters are close
    m = np.asarray(minilm.encoder.encode(["car", "automobile", "banana"]))
    assert m[0] @ m[1] > m[0] @ m[2] + 0.2


def test_determinism(hashing: NeiDetector, minilm: NeiDetector, formula_1: Schema) -> None:
    claims = WHAT_IFS + JUDGEMENTS + OUT_OF_SCHEMA + PLAIN
    for detector, name in ((hashing, "hashing"), (minilm, "minilm")):
        batch = detector.check_many((c, "", formula_1) for c in claims)
        again = detector.check_many((c, "", formula_1) for c in claims)
        assert batch == again
        assert_same(batch, NeiDetector(name).check_many((c, "", formula_1) for c in claims))
        one = [detector.check(c, "", formula_1) for c in claims]
        assert [(c.nei, c.subtype) for c in one] == [(c.nei, c.subtype) for c in batch]
        assert [c.probability for c in one] == pytest.approx([c.probability for c in batch], abs=1e-4)
    # hashing gives the same checks whatever the batch
    assert_same(
        [hashing.check(c, "", formula_1) for c in claims],
        hashing.check_many((c, "", formula_1) for c in claims),
    )


def test_hostile_claim_text(hashing: NeiDetector, minilm: NeiDetector, formula_1: Schema) -> None:
    empty = Schema(target="empty", dialect="sqlite", tables=())
    long_claim = "If it had rained, " + "the drivers would have driven slowly and carefully, " * 5000
    cases = [
        (long_claim, formula_1),
        ("", formula_1),
        ("   \n\t ", formula_1),
        ("[bold red]Lewis Hamilton[/] won <b>19</b> races & {{count}} `rm -rf /`", formula_1),
        (
            "\x1b[31mKimi Räikkönen\x1b[0m won the 2012 Abu Dhabi Grand Prix in 1:45:58.667 — 日本語 🏎️",
            formula_1,
        ),
        ("\x00 a NUL, a zero\u200bwidth space and a right-to-left \u202e mark", formula_1),
        (WHAT_IFS[0], empty),
        (PLAIN[0], empty),
    ]
    for detector in (hashing, minilm):
        checks = detector.check_many((claim, "extra " * 3000, schema) for claim, schema in cases)
        assert len(checks) == len(cases)
        for check in checks:
            assert isinstance(check, NeiCheck) and 0.0 <= check.probability <= 1.0
            json.dumps(check.to_dict())
        assert checks[0].nei and checks[0].subtype is NeiSubtype.COUNTERFACTUAL
        assert len(checks[0].reason) < 400  # the long claim's clause is bounded
        assert not checks[1].nei and not checks[2].nei  # nothing claimed, nothing missing
        assert checks[6].nei and checks[6].subtype is NeiSubtype.COUNTERFACTUAL  # grammar needs no schema
        # against an empty schema every concept is uncovered
        assert checks[7].probability > detector.check(PLAIN[0], "", formula_1).probability
    assert hashing.check_many([]) == []


# ---- model files ----------------------------------------------------------------------------------


def _shipped(encoder: str) -> dict[str, np.ndarray]:
    with resources.files("tabverify").joinpath("models", f"nei_{encoder}.npz").open("rb") as handle:
        with np.load(handle) as data:
            return {key: np.asarray(data[key]) for key in data.files}


def _saved(tmp_path: Path, name: str, arrays: dict[str, np.ndarray]) -> Path:
    path = tmp_path / f"{name}.npz"
    np.savez(path, **arrays)
    return path


def _one_line_model_error(path: Path, encoder: str = "hashing") -> str:
    with pytest.raises(ModelError) as caught:
        NeiDetector(encoder, model_path=path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_broken_model_files_are_one_line_model_errors(tmp_path: Path) -> None:
    arrays = _shipped("hashing")
    (tmp_path / "random.npz").write_bytes(bytes(range(256)) * 40)
    assert "cannot load" in _one_line_model_error(tmp_path / "random.npz")
    good = _saved(tmp_path, "good", arrays)
    (tmp_path / "cut.npz").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    _one_line_model_error(tmp_path / "cut.npz")
    (tmp_path / "empty.npz").write_bytes(b"")
    _one_line_model_error(tmp_path / "empty.npz")
    assert "no such file" in _one_line_model_error(tmp_path / "missing.npz").lower()
    # a zip whose member declares 200 MB: refused before anything is decompressed
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("word_w.npy", "w", force_zip64=True) as member:
            chunk = b"\0" * (1 << 20)
            for _ in range(200):
                member.write(chunk)
    assert (tmp_path / "bomb.npz").stat().st_size < 2_000_000
    assert "more than" in _one_line_model_error(tmp_path / "bomb.npz")
    # pickled objects are never loaded
    pickled = dict(arrays, word_w=np.array([object()], dtype=object))
    assert "Object arrays" in _one_line_model_error(_saved(tmp_path, "pickled", pickled))
    # arrays of the wrong shape, dtype or encoder, or missing
    wrong = {
        "short_word_w": dict(arrays, word_w=arrays["word_w"][:-1]),
        "flat_subtype_w": dict(arrays, subtype_w=arrays["subtype_w"].ravel()),
        "text_weights": dict(arrays, claim_w=np.array(["a"] * arrays["claim_w"].size)),
        "minilm_arrays": _shipped("minilm"),
        "no_tone_w": {k: v for k, v in arrays.items() if k != "tone_w"},
    }
    for name, changed in wrong.items():
        message = _one_line_model_error(_saved(tmp_path, name, changed))
        assert "is not a NOT ENOUGH INFO model file" in message, name
    assert "trained with the minilm encoder, not hashing" in _one_line_model_error(
        _saved(tmp_path, "minilm_as_hashing", _shipped("minilm"))
    )
    # the file as saved loads, and predicts as the shipped model does
    assert NeiDetector("hashing", model_path=good).model.threshold == NeiModel.load("hashing").threshold


@pytest.mark.parametrize("change", ["mean", "subtype_b", "threshold", "nan"])
def test_model_files_with_other_inconsistent_arrays_are_refused(
    tmp_path: Path, change: str, formula_1: Schema
) -> None:
    arrays = _shipped("hashing")
    changed = {
        "mean": dict(arrays, mean=np.zeros(5), std=np.ones(5), claim_w=np.zeros(arrays["claim_w"].size - 8)),
        "subtype_b": dict(arrays, subtype_b=np.zeros(7)),
        "threshold": dict(arrays, threshold=np.zeros(0)),
        "nan": dict(arrays, claim_w=np.full(arrays["claim_w"].shape, np.nan)),
    }[change]
    path = _saved(tmp_path, change, changed)
    with pytest.raises(ModelError):
        NeiDetector("hashing", model_path=path).check(WHAT_IFS[0], "", formula_1)


# ---- the numbers, re-measured ---------------------------------------------------------------------


def test_dev_numbers_hashing_cross_validated() -> None:
    """The documented grouped 5-fold numbers of the hashing model (NEI F1 ~0.87, subtype ~0.81), through
    the real command line (about a minute on two cores)."""
    needs_claimdb_schema()
    result = run(
        "bench", "claimdb", "--claims", str(DEV), "--schema", str(CLAIMDB_SCHEMA), "--schema-only", "--cv", "5",
        "--encoder", "hashing", timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["encoder"] == "hashing" and document["n"] == 400
    assert document["protocol"].startswith("grouped 5-fold cross-validation by database")
    metrics = document["metrics"]
    assert metrics["n_scored"] == 400 and metrics["subtype_n"] > 100
    assert metrics["nei_f1"] >= 0.85, metrics
    assert metrics["subtype_accuracy"] >= 0.78, metrics
    assert all(v["n"] > 30 and v["nei_recall"] >= 0.6 for v in metrics["per_subtype"].values()), metrics
