"""KibutzR files: morpheme-level CoNLL-2012 (form, sentence, position, ``_``, coreference).

With the raw texts, morphemes are found in the written words and mentions become character spans,
so sub-word mentions (the suffix ו of ביתו) sit inside their words; without them, a document is
scored over its morphemes. Either way the annotation is CoNLL-2012, so the ``conll`` convention of
:data:`tabverify.coref.document.CONVENTIONS` applies to mentions listed twice.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tabverify.coref.conll import read_conll
from tabverify.coref.document import Document, Mention, classify_span, text_order
from tabverify.coref.source import read_source
from tabverify.text.spans import Span

log = logging.getLogger(__name__)


# how many letters a pronominal suffix takes in writing (ביתו: ו = _הוא; ביתכם: כם = _אתם)
_SUFFIX_LETTERS = {"_אנחנו": 2, "_אתם": 2, "_אתן": 2}


def _word_end(raw: str, start: int) -> int:
    end = start
    while end < len(raw) and (raw[end].isalnum() or raw[end] in "'\"״׳"):
        end += 1
    return end


def _morpheme_spans(forms: list[str], raw: str) -> list[Span | None] | None:
    """Character spans of KibutzR morphemes in the raw text, or None when they cannot be aligned.

    Written morphemes are found in order. ``ה_`` (an article the spelling drops) and ``_של_`` take
    no characters (None). A stem followed by a pronominal suffix (``_הוא``) is written as one piece
    whose spelling may change (את + _הם = אותם, מן + _היא = ממנה): the two share what is left of the
    word, the suffix taking its last letter (two for אנחנו, אתם, אתן).
    """
    spans: list[Span | None] = [None] * len(forms)
    position = 0
    i = 0
    while i < len(forms):
        form = forms[i]
        if form.endswith("_") and len(form) > 1:
            i += 1
            continue
        start = position
        while start < len(raw) and raw[start].isspace():
            start += 1
        if form.startswith("_") and len(form) > 1:  # a suffix with no stem before it in this word
            end = _word_end(raw, start if start == position else position)
            spans[i] = Span(position, end) if end > position else None
            position = end
            i += 1
            continue
        following = i + 1
        while following < len(forms) and forms[following].endswith("_") and len(forms[following]) > 1:
            following += 1
        suffix = forms[following] if following < len(forms) else ""
        if suffix.startswith("_") and len(suffix) > 1 and not suffix.endswith("_"):
            end = _word_end(raw, start)
            letters = _SUFFIX_LETTERS.get(suffix, 1)
            if end - letters > start and raw[start].isalpha():
                spans[i], spans[following] = Span(start, end - letters), Span(end - letters, end)
                position = end
                i = following + 1
                continue
        found = raw.find(form, position, position + len(form) + 40)
        if found == -1:
            return None
        spans[i] = Span(found, found + len(form))
        position = found + len(form)
        i += 1
    return spans


def read_kibutzr(path: str | Path, raw_dir: str | Path | None = None) -> list[Document]:
    """KibutzR files (morpheme-level CoNLL: form, sentence, position, _, coreference).

    With ``raw_dir`` holding ``<n>.txt`` for ``htb:<n>.conllu``, mentions are moved onto the raw
    text as character spans (sub-word mentions then sit inside their words); otherwise the document
    is token-based over the morphemes.
    """
    path = Path(path)
    documents = read_conll(path)
    raw_path = Path(raw_dir) / f"{path.stem.split(':')[-1]}.txt" if raw_dir is not None else None
    if raw_path is None or not raw_path.is_file() or len(documents) != 1:
        if raw_dir is not None:
            log.warning("%s: no raw text %s; scoring over morphemes", path.name, raw_path)
        return documents
    doc = documents[0]
    raw = read_source(raw_path, "raw text")
    spans = _morpheme_spans([w.of(doc.text) for w in doc.words], raw)
    if spans is None:
        log.warning(
            "%s: the morphemes do not align with %s; scoring over morphemes", path.name, raw_path.name
        )
        return documents
    index = {w: i for i, w in enumerate(doc.words)}
    entities = []
    for entity in doc.entities:
        moved = []
        for mention in entity:
            covered = [spans[index[u]] for u in mention.units if spans[index[u]] is not None]
            if not covered:  # only unwritten morphemes: anchor on the character before them
                at = spans[index[mention.units[0]] - 1] if index[mention.units[0]] else None
                covered = [Span(at.end - 1, at.end)] if at is not None and at.end else []
            if not covered:
                continue
            span = Span(covered[0].start, covered[-1].end)  # type: ignore[union-attr]
            kind, subkind = classify_span(raw, span)
            moved.append(Mention((span,), None, kind, subkind))
        entities.append(
            tuple(sorted(dict.fromkeys(moved), key=text_order))
        )  # morphemes of one entity may share characters
    kept = [(name, e) for name, e in zip(doc.entity_ids, entities, strict=True) if e]
    return [
        Document(doc.doc_id, raw, tuple(e for _, e in kept), (), "conll", tuple(name for name, _ in kept))
    ]
