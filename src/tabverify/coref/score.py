"""Scoring: pair documents, align mentions, run every metric, micro-average over documents."""

from __future__ import annotations

import logging
import math
import unicodedata
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from tabverify.coref.align import MATCH_MODES, align_mentions, align_zeros_by_dependencies
from tabverify.coref.document import KINDS, SUBKINDS, Document, Mention, shared_words
from tabverify.coref.duplicates import conll_response, scored_entities
from tabverify.coref.hard_cases import HardCases, hard_cases
from tabverify.coref.metrics import METRICS, Counts, Score, blanc, blanc_score, mention_overlap
from tabverify.coref.source import CorefFormatError, listed, shown
from tabverify.errors import TabverifyError

log = logging.getLogger(__name__)

METRIC_NAMES = ("muc", "b_cubed", "ceafm", "ceafe", "blanc", "lea")


@dataclass(frozen=True)
class DocumentAlignment:
    """What was scored for one document pair: the entities after the format's convention for
    mentions listed twice and the singleton and zero options (a mention may still be listed in two
    entities: it belongs to the last, see :func:`tabverify.coref.duplicates.last_listing`), and the
    alignment (response mention -> key mention). The HTML view draws from it."""

    key: Document
    response: Document
    key_entities: tuple[tuple[Mention, ...], ...]
    response_entities: tuple[tuple[Mention, ...], ...]
    alignment: Mapping[Mention, Mention]


@dataclass(frozen=True)
class CorefResult:
    """Scores of a response against a key.

    Attributes:
        metrics: recall/precision/F1 per metric (``muc, b_cubed, ceafm, ceafe, blanc, lea``).
        conll_f1: mean F1 of MUC, B3 and CEAF-e.
        mentions: mention detection views: ``exact`` (identical spans), ``aligned`` (under the
            chosen matching), ``subword`` and one per sub-kind (key sub-word mentions found), and
            ``weighted`` when kind weights were given; ``overlap_ratio`` is the CorefUD scorer's
            mention overlap ratio (MOR: shared words, or characters, of best-overlapping mentions).
        options: the options used (matching, threshold, singletons, BLANC variant, weights).
        documents: number of scored document pairs.
        warnings: what was dropped or assumed (duplicate mentions, missing documents).
        alignments: per document pair, the entities scored and the mention alignment.
        mention_counts: for the views that count mentions (``exact``, ``aligned``, ``subword`` and
            the sub-kinds), how many key and response mentions the view holds; a view with none on
            either side (KibutzR has no bare prefix-letter mention, so ``clitic`` is empty there)
            scores 0 because there was nothing to find, not because it was missed.
    """

    metrics: dict[str, Score]
    conll_f1: float
    mentions: dict[str, Score]
    options: dict[str, object]
    documents: int
    warnings: tuple[str, ...] = field(default=())
    alignments: tuple[DocumentAlignment, ...] = field(default=(), repr=False, compare=False)
    mention_counts: dict[str, tuple[int, int]] = field(default_factory=dict)

    @cached_property
    def hard_cases(self) -> HardCases:
        """The hard cases of the key (long-distance pronoun links, ה- mentions, zeros) and what the
        response did with them (:func:`tabverify.coref.hard_cases.hard_cases`)."""
        return hard_cases(self.alignments, self.options)

    def mention_view(self, name: str) -> dict[str, float]:
        """One mention view as ``{"recall", "precision", "f1"}``, with ``"key"`` and ``"response"``
        (how many mentions of that kind each side holds) for the views that count mentions."""
        view: dict[str, float] = dict(self.mentions[name].to_dict())
        if name in self.mention_counts:
            view["key"], view["response"] = self.mention_counts[name]
        return view

    def to_dict(self) -> dict[str, object]:
        """``{"metrics": {...,"conll_f1"}, "mentions": {...}, "options": {...}, "documents", "warnings",
        "hard_cases": {...}}`` (the hard cases' counts, :meth:`HardCases.to_dict`; each mention view
        as :meth:`mention_view`).

        Every number in it is finite, so it is valid JSON (``json.dumps(..., allow_nan=False)``).

        Raises:
            TabverifyError: a number is NaN or infinite (a bug: the inputs are checked for that).
        """
        metrics: dict[str, object] = {name: score.to_dict() for name, score in self.metrics.items()}
        metrics["conll_f1"] = self.conll_f1
        result: dict[str, object] = {
            "metrics": metrics,
            "mentions": {name: self.mention_view(name) for name in self.mentions},
            "options": self.options,
            "documents": self.documents,
            "warnings": list(self.warnings),
            "hard_cases": self.hard_cases.to_dict(),
        }
        _check_finite(result, "result")
        return result


def _check_finite(value: object, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise TabverifyError(f"{where} is {value}; a score result holds finite numbers only")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for item in value:
            _check_finite(item, where)


def check_kind_weights(kind_weights: Mapping[str, float] | None) -> dict[str, float] | None:
    """The weights as floats, checked: known kinds only (``word``, ``subword``, ``phrase``,
    ``embedded_pronoun``, ``clitic``), each a finite number >= 0.

    Raises:
        TabverifyError: an unknown kind, or a weight that is negative, NaN, infinite or not a number.
    """
    if not kind_weights:
        return None
    checked = {}
    for kind, weight in kind_weights.items():
        if kind not in KINDS + SUBKINDS:
            raise TabverifyError(
                f"kind weight for unknown kind {kind!r}; weight one of {', '.join(KINDS + SUBKINDS)}"
            )
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise TabverifyError(
                f"kind weight {kind}={weight!r} must be a finite number >= 0 (a mention counts that many times)"
            )
        checked[kind] = float(weight)
    return checked


def normalised_weights(kind_weights: Mapping[str, float]) -> tuple[dict[str, float], float]:
    """The kind weights and the weight of everything else (1, also for unaligned response mentions),
    all divided by the largest of them, so each is at most 1 and sums of them cannot overflow (two
    weights of ``1e308`` would sum to infinity). The weighted view is a ratio of such sums, so
    dividing every weight by one number leaves it as it was.

    >>> normalised_weights({"subword": 4.0, "word": 0.5})
    ({'subword': 1.0, 'word': 0.125}, 0.25)
    """
    scale = max(1.0, *kind_weights.values())
    return {kind: weight / scale for kind, weight in kind_weights.items()}, 1.0 / scale


def _score(counts: Counts) -> Score:
    return Score(counts.recall, counts.precision, counts.f1)


def pair_documents(
    key_docs: Sequence[Document], response_docs: Sequence[Document]
) -> tuple[list[tuple[Document, Document]], list[str]]:
    """Key and response documents paired by id; a key document without a response is scored
    against an empty one (with a warning), a response document without a key is ignored (warning).

    A pair must be over the same text, since mentions are positions in it. Character documents
    (JSON, KibutzR aligned onto raw texts), or a pair where either side is one, must have identical
    texts. Token documents (CoNLL-2012, CoNLL-U) are paired word by word - by position (CoNLL-2012)
    or by sentence and ``ID`` (CoNLL-U; empty nodes aside) - as the reference scorers do, which read
    only the coreference column; a word whose form differs between the two is a warning.

    Raises:
        TabverifyError: no document id is shared (the files do not belong together), or an id repeats.
        CorefFormatError: a pair whose texts differ (character documents), or CoNLL-2012 documents
            with different numbers of tokens.
    """
    warnings = []
    for docs, side in ((key_docs, "key"), (response_docs, "response")):
        repeated = sorted(i for i, n in Counter(d.doc_id for d in docs).items() if n > 1)
        if repeated:
            raise TabverifyError(f"the {side} repeats document id(s) {listed(repeated)}; ids must be unique")
    responses = {d.doc_id: d for d in response_docs}
    keys = {d.doc_id for d in key_docs}
    if key_docs and response_docs and not keys & responses.keys():
        raise TabverifyError(
            f"key and response share no document id (key: {listed(sorted(keys), 3)}; "
            f"response: {listed(sorted(responses), 3)}); documents are paired by id"
        )
    pairs = []
    for doc in key_docs:
        if doc.doc_id not in responses:
            warnings.append(f"document {shown(doc.doc_id)} is missing from the response; scored as empty")
            pairs.append((doc, Document(doc.doc_id, doc.text, ())))
        else:
            response = responses[doc.doc_id]
            if doc.words and response.words:
                with_ids = getattr(doc, "word_ids", ()) and getattr(response, "word_ids", ())
                if not with_ids and len(doc.words) != len(response.words):
                    raise CorefFormatError(
                        f"document {shown(doc.doc_id)}: the key has {len(doc.words)} tokens and the response "
                        f"{len(response.words)}; token files must hold the same tokens"
                    )
                warnings += _token_differences(doc, response)
                doc, response = shared_words(doc, response)
            elif doc.text != response.text:
                raise CorefFormatError(_text_difference(doc, response))
            pairs.append((doc, response))
    for doc_id in sorted(responses.keys() - keys):
        warnings.append(f"response document {shown(doc_id)} has no key document; ignored")
    return pairs, warnings


def _text_difference(key: Document, response: Document) -> str:
    """The message for a pair of documents whose texts differ: where they first differ, or that they
    differ only in Unicode normalisation (composed "é" vs "e" + combining accent, NFC vs NFD), where
    the characters shown would look the same."""
    if unicodedata.normalize("NFC", key.text) == unicodedata.normalize("NFC", response.text):
        return (
            f"document {shown(key.doc_id)}: the texts differ only in Unicode normalisation (NFC vs NFD: "
            f"the key's is {_normal_form(key.text)}, the response's {_normal_form(response.text)}; "
            f"lengths {len(key.text)} and {len(response.text)}); normalise both files the same way "
            "(e.g. both to NFC), then give the mentions' offsets over that text"
        )
    at = next(
        (i for i, (a, b) in enumerate(zip(key.text, response.text, strict=False)) if a != b),
        min(len(key.text), len(response.text)),
    )
    mixed = (
        " (one side is read from tokens, the other from characters)" if key.words or response.words else ""
    )
    return (
        f"document {shown(key.doc_id)}: the key's and the response's texts differ{mixed}, first at "
        f"character {at} ({shown(key.text[at : at + 12], 20)} vs {shown(response.text[at : at + 12], 20)}; "
        f"lengths {len(key.text)} and {len(response.text)}); mentions are character offsets, which mean "
        "something only over the same text: give both files the same text"
    )


def _normal_form(text: str) -> str:
    """Which Unicode normal form ``text`` is in: ``NFC``, ``NFD`` or ``mixed``."""
    if unicodedata.is_normalized("NFC", text):
        return "NFC"
    return "NFD" if unicodedata.is_normalized("NFD", text) else "mixed"


def _token_differences(key: Document, response: Document) -> list[str]:
    """A warning when words paired by position (CoNLL-2012) or by id (CoNLL-U, empty nodes aside)
    have different forms; the reference scorers read only the coreference column, so this scores."""
    key_ids: tuple[str, ...] = getattr(key, "word_ids", ()) or tuple(
        str(i + 1) for i in range(len(key.words))
    )
    response_ids: tuple[str, ...] = getattr(response, "word_ids", ()) or tuple(
        str(i + 1) for i in range(len(response.words))
    )
    key_forms = {i: s.of(key.text) for i, s in zip(key_ids, key.words, strict=True) if "." not in i}
    differing = [
        (i, key_forms[i], span.of(response.text))
        for i, span in zip(response_ids, response.words, strict=True)
        if i in key_forms and key_forms[i] != span.of(response.text)
    ]
    if not differing:
        return []
    word, key_form, response_form = differing[0]
    sentence, _, number = word.rpartition(":")
    where = f"word {number} of the file's sentence {int(sentence) + 1}" if sentence else f"token {word}"
    return [
        f"document {shown(key.doc_id)}: {len(differing)} word(s) differ between key and response (first: "
        f"{where}, {shown(key_form, 20)} vs {shown(response_form, 20)}); mentions are matched by word "
        "position as the reference scorers do, so check that both files hold the same text"
    ]


def _options_applied(
    entities: list[list[Mention]], keep_singletons: bool, keep_zeros: bool
) -> list[list[Mention]]:
    """The entities after the singleton and zero options, in the CorefUD scorer's order: singletons
    go first, then zeros, so an entity of a zero and one other mention stays as a singleton.
    An entity left empty is dropped (the reference scorer would divide by its size, 0)."""
    if not keep_singletons:
        entities = [e for e in entities if len(e) > 1]
    if not keep_zeros:
        entities = [[m for m in e if not m.zero] for e in entities]
    return [e for e in entities if e]


def score(
    key_docs: Sequence[Document],
    response_docs: Sequence[Document],
    match: str = "exact",
    threshold: float = 0.8,
    keep_singletons: bool = True,
    keep_zeros: bool = True,
    zero_match: str = "linear",
    blanc_variant: str = "conll",
    kind_weights: Mapping[str, float] | None = None,
) -> CorefResult:
    """Score response documents against key documents.

    Args:
        match: ``exact``, ``partial``, ``head`` or ``overlap`` (see :mod:`tabverify.coref.align`).
        threshold: for ``overlap``: the share of the shorter mention the overlap must cover.
        keep_singletons: False removes one-mention entities from key and response before alignment.
        keep_zeros: False removes zero mentions (headed by an empty node, CoNLL-U) from both sides.
        zero_match: ``linear`` (zeros match like other mentions, by position) or ``dependent``
            (zeros are first paired by their enhanced dependencies within a sentence).
        blanc_variant: ``conll`` (reference scorer) or ``corefud`` (see :func:`blanc_score`).
        kind_weights: optional weights of key mentions by kind (``{"subword": 2.0}``) for the
            ``weighted`` mention-detection view; the headline metrics never use them. Kinds are
            ``word``, ``subword``, ``phrase``, ``embedded_pronoun`` and ``clitic``; each weight a
            finite number >= 0 (any size: only their ratios matter, see :func:`normalised_weights`).

    A mention listed more than once is scored by the convention of the key document's format
    (:data:`tabverify.coref.document.CONVENTIONS`: CoNLL-2012 as the Perl reference scorer, CoNLL-U as
    the CorefUD scorer, JSON keeping the first entity), and each is a line of ``warnings``, as is a
    bound that cut an alignment's search (never on real annotation; see :mod:`tabverify.coref.align`).

    Raises:
        TabverifyError: an unknown option, a threshold outside (0, 1], a bad kind weight, documents
            that do not pair up (:func:`pair_documents`), or - only for degenerate input - more
            mentions listed in several entities than the CoNLL BLANC can count, or CEAF entities too
            entangled to align within the work budget.
    """
    if match not in MATCH_MODES:
        raise TabverifyError(f"unknown matching {match!r}; use one of {', '.join(MATCH_MODES)}")
    if zero_match not in ("linear", "dependent"):
        raise TabverifyError(f"unknown zero matching {zero_match!r}; use linear or dependent")
    if blanc_variant not in ("conll", "corefud"):
        raise TabverifyError(f"unknown BLANC variant {blanc_variant!r}; use conll or corefud")
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise TabverifyError(f"threshold {threshold!r} must be a number in (0, 1]")
    kind_weights = check_kind_weights(kind_weights)
    pairs, warnings = pair_documents(key_docs, response_docs)
    totals = {name: Counts() for name in METRICS}
    blanc_c, blanc_n = Counts(), Counts()
    scored: list[DocumentAlignment] = []
    views = {"exact": Counts(), "aligned": Counts(), "subword": Counts(), "embedded_pronoun": Counts(),
             "clitic": Counts(), "weighted": Counts(), "overlap_ratio": Counts()}  # fmt: skip
    for key_doc, response_doc in pairs:
        convention = key_doc.convention  # the key's format decides, for both sides
        key_entities, notes = scored_entities(key_doc, "key", convention)
        response_entities, response_notes = scored_entities(response_doc, "response", convention)
        warnings += notes + response_notes
        key_entities = _options_applied(key_entities, keep_singletons, keep_zeros)
        response_entities = _options_applied(response_entities, keep_singletons, keep_zeros)
        key_mentions = list(dict.fromkeys(m for e in key_entities for m in e))
        response_mentions = list(dict.fromkeys(m for e in response_entities for m in e))
        bounds: list[str] = []
        preset = (
            align_zeros_by_dependencies(key_mentions, response_mentions, bounds)
            if zero_match == "dependent" and keep_zeros
            else None
        )
        alignment = align_mentions(key_mentions, response_mentions, match, threshold, preset, bounds)
        scored.append(DocumentAlignment(key_doc, response_doc, tuple(map(tuple, key_entities)),
                                        tuple(map(tuple, response_entities)), alignment))  # fmt: skip
        key_clusters: list[list[Hashable]] = [list(e) for e in key_entities]
        response_clusters: list[list[Hashable]] = [
            [alignment.get(m, ("response", m)) for m in e] for e in response_entities
        ]
        if convention == "conll":
            response_clusters = conll_response(response_clusters, set(key_mentions))
        for name, metric in METRICS.items():
            totals[name] = totals[name] + metric(key_clusters, response_clusters, convention)
        c, n = blanc(key_clusters, response_clusters, convention)
        blanc_c, blanc_n = blanc_c + c, blanc_n + n
        _mention_views(views, key_mentions, response_mentions, alignment, kind_weights)
        views["overlap_ratio"] = views["overlap_ratio"] + mention_overlap(
            key_mentions, response_mentions, words=bool(key_doc.words), notes=bounds
        )
        warnings += [f"document {key_doc.doc_id!r}: {note}" for note in bounds]
    metrics = {name: _score(totals[name]) for name in ("muc", "b_cubed", "ceafm", "ceafe")}
    metrics["blanc"] = blanc_score(blanc_c, blanc_n, blanc_variant)
    metrics["lea"] = _score(totals["lea"])
    conll = (metrics["muc"].f1 + metrics["b_cubed"].f1 + metrics["ceafe"].f1) / 3
    mention_scores = {name: _score(c) for name, c in views.items() if name != "weighted" or kind_weights}
    options: dict[str, object] = {
        "match": match,
        "threshold": threshold if match == "overlap" else None,
        "singletons": "kept" if keep_singletons else "removed before alignment",
        "zeros": ("kept, matched " + zero_match) if keep_zeros else "removed",
        "blanc": blanc_variant,
        "kind_weights": dict(kind_weights) if kind_weights else None,
    }
    for message in warnings:
        log.warning("%s", message)
    counts = {
        name: (int(views[name].recall_den), int(views[name].precision_den))
        for name in ("exact", "aligned", "subword", "embedded_pronoun", "clitic")
    }
    return CorefResult(
        metrics, conll, mention_scores, options, len(pairs), tuple(warnings), tuple(scored), counts
    )


def _mention_views(
    views: dict[str, Counts],
    key: Sequence[Mention],
    response: Sequence[Mention],
    alignment: Mapping[Mention, Mention],
    kind_weights: Mapping[str, float] | None,
) -> None:
    key_set, response_set = set(key), set(response)
    exact = len(key_set & response_set)
    views["exact"] = views["exact"] + Counts(exact, len(key_set), exact, len(response_set))
    views["aligned"] = views["aligned"] + Counts(
        len(alignment), len(key_set), len(alignment), len(response_set)
    )
    found = set(alignment.values())
    for view, wanted in (("subword", None), ("embedded_pronoun", "embedded_pronoun"), ("clitic", "clitic")):
        gold = [m for m in key_set if m.kind == "subword" and (wanted is None or m.subkind == wanted)]
        system = [m for m in response_set if m.kind == "subword" and (wanted is None or m.subkind == wanted)]
        hits_gold = sum(1 for m in gold if m in found)
        hits_system = sum(
            1 for m in system if m in alignment and (wanted is None or alignment[m].subkind == wanted)
        )
        views[view] = views[view] + Counts(hits_gold, len(gold), hits_system, len(system))
    if kind_weights:
        weights, other = normalised_weights(kind_weights)
        weight = {m: weights.get(m.subkind or m.kind, weights.get(m.kind, other)) for m in key_set}
        hit = sum(weight[m] for m in found)
        system_weight = sum(weight[alignment[m]] if m in alignment else other for m in response_set)
        views["weighted"] = views["weighted"] + Counts(hit, sum(weight.values()), hit, system_weight)
