"""KibutzR documents as morpheme sequences with gold clusters: what the resolver trains and is measured on.

A KibutzR file lists morphemes (form, sentence, position, ``_``, coreference). Their kinds follow the
KibutzR conventions (as :mod:`tabverify.coref.resolver.morph` names them): ``ה_`` is an article the
spelling drops, ``_הוא`` (``_היא``, ``_הם`` ...) a pronominal suffix, ``_של_`` and ``את_`` the
unwritten markers before one (kind ``suffix`` too), and the one-letter prefixes
(ו ב כ ל מ ש, כש, and ה as the article) are proclitics of the next morpheme. Clusters are lists of
inclusive morpheme ranges ``(first, last)``.

Singletons: training reads ``data/conllu/with_singleton`` (mention detection learns every mention);
the benchmark scores against ``data/conllu/no_singleton`` with singletons dropped on both sides, the
convention of the KibutzR counts (1,181 dev mentions) and of CoNLL-2012.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tabverify.coref.conll import read_conll
from tabverify.coref.source import CorefFormatError

PREFIXES = frozenset({"ו", "ב", "כ", "ל", "מ", "ש", "כש", "מש", "לכש", "וכש", "שב", "שה", "וה", "וב", "ול"})
"""Prefix morphemes written as their own KibutzR token (ה is the article, kind ``article``)."""

PUNCT = frozenset(".,;:!?\"'()[]-–—/…״׳%")

MorphRange = tuple[int, int]
"""Inclusive morpheme indices (first, last) of a mention."""


@dataclass(frozen=True, slots=True)
class Token:
    """One morpheme as the resolver sees it.

    Attributes:
        form: the morpheme (``_הוא`` for a suffix pronoun, ``ה_`` for an unwritten article).
        kind: ``prefix``, ``article``, ``stem``, ``suffix`` or ``punct`` (as :mod:`morph` names them).
        sentence: the sentence number within the document.
    """

    form: str
    kind: str
    sentence: int


@dataclass(frozen=True, slots=True)
class MorphDocument:
    """A document of morphemes with (possibly empty) gold clusters."""

    doc_id: str
    tokens: tuple[Token, ...]
    clusters: tuple[tuple[MorphRange, ...], ...] = ()

    @property
    def mentions(self) -> set[MorphRange]:
        """Every gold mention (singletons included)."""
        return {m for cluster in self.clusters for m in cluster}


def kibutzr_kind(form: str, following: str | None) -> str:
    """The kind of a KibutzR morpheme from its form and the next form (a prefix needs a word after it)."""
    if form.startswith("_") and len(form) > 1 and not form.endswith("_"):
        return "suffix"
    if form in ("ה_", "ה") and following is not None:
        return "article"
    if form.endswith("_") and len(form) > 1:  # _של_, את_: unwritten markers before a suffix pronoun
        return "suffix"
    if form in PREFIXES and following is not None and following not in PUNCT:
        return "prefix"
    if all(ch in PUNCT for ch in form):
        return "punct"
    return "stem"


def read_document(path: str | Path) -> MorphDocument:
    """One KibutzR file as a :class:`MorphDocument` (raises CorefFormatError when it is not one)."""
    path = Path(path)
    rows: list[tuple[str, int]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("\t")
        if line.startswith("#") or len(fields) < 5:
            continue
        try:
            rows.append((fields[0], int(fields[1])))
        except ValueError:
            raise CorefFormatError(f"{path.name}:{number}: the sentence column is not a number") from None
    documents = read_conll(path)
    if len(documents) != 1 or len(documents[0].words) != len(rows):
        raise CorefFormatError(f"{path.name}: not one KibutzR document")
    doc = documents[0]
    tokens = tuple(
        Token(form, kibutzr_kind(form, rows[i + 1][0] if i + 1 < len(rows) else None), sentence)
        for i, (form, sentence) in enumerate(rows)
    )
    index = {span: i for i, span in enumerate(doc.words)}
    clusters = []
    for entity in doc.entities:
        ranges = sorted({(index[m.units[0]], index[m.units[-1]]) for m in entity})
        if ranges:
            clusters.append(tuple(ranges))
    return MorphDocument(doc.doc_id, tokens, tuple(clusters))


def split_files(data: str | Path, split: str, singletons: bool = True) -> list[Path]:
    """The KibutzR files of a split (``train`` or ``dev``) under a release folder ``data``."""
    folder = Path(data) / "data" / "conllu" / ("with_singleton" if singletons else "no_singleton") / split
    if not folder.is_dir():
        raise CorefFormatError(f"{folder}: no such folder; --data names the KibutzR release folder")
    files = sorted(folder.glob("*.conllu"))
    if not files:
        raise CorefFormatError(f"{folder}: holds no .conllu files")
    return files


def read_split(data: str | Path, split: str) -> list[MorphDocument]:
    """The documents of a split with every mention (the ``with_singleton`` files)."""
    return [read_document(path) for path in split_files(data, split)]
