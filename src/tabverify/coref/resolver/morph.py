"""Hebrew raw text -> words -> morphemes with character offsets (KibutzR conventions).

A written Hebrew word is analysed as ``prefixes + [unwritten article] + stem + [suffix]``:

- prefixes: the clitics ו ב ה ש כש מ ל כ and their combinations (וכש = ו + כש, מה = מ + ה), as the
  training data splits them; a written ה is kind ``"article"``, the others ``"prefix"``;
- the unwritten article (בבית = ב + ה_ + בית) is ``Morph("ה_", p, p, "article")`` with an empty span
  at the position ``p`` right after the prefix that swallowed it;
- a pronominal suffix (ביתו = בית + _של_ + _הוא, אותם = את + _הם, לו = ל + _הוא) keeps the
  KibutzR form (``_הוא``) and takes the word's last letter (two for אנחנו, אתם, אתן: ביתנו, לכם),
  as :func:`tabverify.coref.kibutzr._morpheme_spans` does; the stem takes the letters before it, so
  its form is what is written (אות for את). The unwritten possessive ``_של_`` and accusative
  ``את_`` markers are kind ``"suffix"`` with an empty span where the suffix starts.
Verbs with subject agreement are never split. Every morpheme but the empty ones and the suffix
pronoun has ``form == text[start:end]``. Words without Hebrew letters (numbers, Latin) and words of
more than :data:`MAX_WORD` characters are single stems; each other visible character is a
``"punct"`` morpheme; spaces and characters that are not printable (RTL marks, controls) are skipped.

The analysis of each word is chosen among a few candidates by an averaged perceptron over
character, lexicon and next/previous word features (:func:`train_segmenter`), trained on the
KibutzR train morphemes (the written words rebuilt from them) and on those UD Hebrew-HTB sentences
that are KibutzR train sentences (their multi-word tokens give the real spelling of suffixed
words). The model (``models/coref_morph.npz``, numpy arrays only) is read on first use.
"""

from __future__ import annotations

import functools
import re
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tabverify.models import check_array, not_a_model, read_arrays

MODEL_FILE = "coref_morph.npz"
MAX_WORD = 64
"""Words longer than this many characters are not analysed (a single stem)."""

PREFIX_FORMS = frozenset({"ו", "ב", "ה", "ש", "כש", "מ", "ל", "כ"})
"""The prefix morphemes of KibutzR (a morpheme with one of these forms attaches to the next)."""
ARTICLE = "ה"
UNWRITTEN_ARTICLE = "ה_"
MARKERS = ("", "_של_", "את_")
"""What may stand between a stem and its pronominal suffix: nothing (לו), the possessive (ביתו),
the accusative of a verb's object (הצילם)."""
PRONOUN_TAILS = {
    "_הוא": "ו",
    "_היא": "ה",
    "_הם": "ם",
    "_הן": "ן",
    "_אני": "י",
    "_אנחנו": "נו",
    "_אתה": "ך",
    "_את": "ך",
    "_אתם": "כם",
    "_אתן": "כן",
}
"""How each pronominal suffix ends a word; its span is these letters."""
_FINAL = {"ך": "כ", "ם": "מ", "ן": "נ", "ף": "פ", "ץ": "צ"}
_TO_FINAL = {v: k for k, v in _FINAL.items()}
_QUOTES = "'\"״׳"


@dataclass(frozen=True)
class Morph:
    """One morpheme: its form, its character span ``[start, end)`` in the text and its kind
    (``"prefix"``, ``"article"``, ``"stem"``, ``"suffix"`` or ``"punct"``)."""

    form: str
    start: int
    end: int
    kind: str


class Analysis(NamedTuple):
    """How one written word splits: prefix morphemes, an unwritten article after them, and a
    pronominal suffix (``marker`` is ``""``, ``"_של_"`` or ``"את_"``; ``pronoun`` ``""`` for none)."""

    prefixes: tuple[str, ...] = ()
    article: bool = False
    marker: str = ""
    pronoun: str = ""

    @property
    def prefix_length(self) -> int:
        """How many letters the prefixes take."""
        return sum(len(p) for p in self.prefixes)

    @property
    def tail(self) -> int:
        """How many letters the suffix takes."""
        return len(PRONOUN_TAILS[self.pronoun]) if self.pronoun else 0

    def key(self) -> str:
        """A short name of the analysis (a feature value)."""
        return f"{'+'.join(self.prefixes)}|{int(self.article)}|{self.marker}{self.pronoun}"


def is_hebrew(ch: str) -> bool:
    """True for a Hebrew letter (א-ת, final forms included)."""
    return "\u05d0" <= ch <= "\u05ea"


def _word_char(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch) == "Mn"


def _tokens(text: str) -> Iterator[tuple[int, int, bool]]:
    """``(start, end, is_word)``: runs of letters and digits (with quotes between letters, as in
    יו"ר, and commas or points between digits, as in 2,000) and single other visible characters."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace() or not ch.isprintable():
            i += 1
            continue
        if not _word_char(ch):
            yield i, i + 1, False
            i += 1
            continue
        j = i + 1
        while j < n:
            if _word_char(text[j]):
                j += 1
            elif (
                j + 1 < n
                and _word_char(text[j + 1])
                and (
                    (text[j] in _QUOTES and is_hebrew(text[j - 1]))
                    or (text[j] in ",." and text[j - 1].isdigit() and text[j + 1].isdigit())
                )
            ):
                j += 2
            else:
                break
        if (
            j < n
            and text[j] in "'׳"
            and is_hebrew(text[j - 1])
            and (j + 1 == n or not _word_char(text[j + 1]))
        ):
            j += 1  # a geresh ending a word (ג', צ')
        yield i, j, True
        i = j


# ---------------------------------------------------------------- candidates and features


def _bucket(count: int) -> int:
    return 0 if count == 0 else 1 if count == 1 else 2 if count < 5 else 3 if count < 20 else 4


def candidates(word: str, prefixes: dict[str, tuple[str, ...]], hosts: frozenset[str]) -> list[Analysis]:
    """The analyses considered for ``word``: each known prefix string that leaves a stem of two or
    more letters (one when a suffix follows), with and without an unwritten article after a prefix
    in ``hosts``, times no suffix or each pronoun whose letters end the word, with each marker."""
    out = []
    suffixes: list[tuple[str, str]] = [("", "")]
    if is_hebrew(word[-1]):
        suffixes += [(m, p) for p, tail in PRONOUN_TAILS.items() if word.endswith(tail) for m in MARKERS]
    for k in range(min(len(word) - 1, 5)):
        split = prefixes.get(word[:k]) if k else ()
        if split is None or (k and not is_hebrew(word[k])):
            continue
        articles = (False, True) if split and split[-1] in hosts and word[k] != ARTICLE else (False,)
        for marker, pronoun in suffixes:
            stem = len(word) - k - (len(PRONOUN_TAILS[pronoun]) if pronoun else 0)
            if stem < (1 if pronoun else 2):
                continue
            out.extend(Analysis(split, a, marker, pronoun) for a in articles)
    return out or [Analysis()]


def _stem(word: str, a: Analysis) -> str:
    return word[a.prefix_length : len(word) - a.tail]


def word_features(word: str, a: Analysis, lexicon: dict[str, int], stems: dict[str, int]) -> list[str]:
    """The features of analysis ``a`` of ``word`` that do not look at the neighbours."""
    stem = _stem(word, a)
    prefix = "".join(a.prefixes)
    suffix = a.marker + a.pronoun
    key = a.key()
    shape = f"{len(a.prefixes)}{int(a.article)}{a.marker}{a.pronoun}"
    written = stem[:-1] + _TO_FINAL.get(stem[-1], stem[-1]) if a.pronoun else stem
    feats = [
        f"a={key}",
        f"w={word}|{key}",
        f"s={stem}|{suffix}",
        f"ps={prefix}|{stem}",
        f"pl={prefix}|{min(len(stem), 7)}|{bool(suffix)}",
        f"sb={stem[:2]}|{prefix}",
        f"sb1={stem[:1]}|{prefix}|{int(a.article)}",
        f"se={stem[-2:]}|{suffix}",
        f"se1={stem[-1:]}|{suffix}|{bool(prefix)}",
        f"ls={_bucket(lexicon.get(written, 0))}|{shape}",
        f"lt={_bucket(stems.get(written, 0))}|{shape}",
        f"lw={_bucket(lexicon.get(word, 0))}|{shape}",
        f"len={min(len(word), 9)}|{shape}",
    ]
    if a.pronoun:
        feats.append(f"sx={stem}|{prefix}|{suffix}")
        feats.append(f"sl={len(stem)}|{suffix}")
    if a.article or (a.prefixes and word[a.prefix_length] != ARTICLE):
        feats.append(f"ar={int(a.article)}|{a.prefixes[-1]}|{stem}")
        feats.append(f"ar2={int(a.article)}|{stem[-2:]}")
        definite = _bucket(lexicon.get(ARTICLE + stem, 0))
        feats.append(f"arh={int(a.article)}|{definite}|{_bucket(lexicon.get(stem, 0))}")
    return feats


def context_features(word: str, a: Analysis, previous: str, following: str) -> list[str]:
    """The features of a prefixed analysis ``a`` of ``word`` that look at the previous and the
    following word: mostly for the unwritten article, which the next word's article often shows
    (בבית הגדול); a train hold-out preferred them on every prefixed analysis (94.3% of words
    right against 94.2% with them on article hosts only)."""
    if not a.prefixes:
        return []
    art = int(a.article)
    stem = _stem(word, a)
    return [
        f"cn={art}|{a.prefixes[-1]}|{following[:1]}",
        f"cn2={art}|{following[:2]}",
        f"cnw={art}|{following}",
        f"cp={art}|{previous}",
        f"cns={art}|{following[:1]}|{stem}",
        f"cne={art}|{following[:1]}|{stem[-1:]}",
    ]


# ---------------------------------------------------------------- the model


class Segmenter:
    """A trained segmenter: feature weights, the lexicons and the prefix table."""

    def __init__(
        self,
        weights: dict[str, float],
        lexicon: dict[str, int],
        stems: dict[str, int],
        prefixes: dict[str, tuple[str, ...]],
        hosts: frozenset[str],
    ) -> None:
        self.weights = weights
        self.lexicon = lexicon
        self.stems = stems
        self.prefixes = prefixes
        self.hosts = hosts
        self._intrinsic = functools.lru_cache(maxsize=50_000)(self._scored)

    def _scored(self, word: str) -> tuple[tuple[Analysis, float], ...]:
        w = self.weights
        return tuple(
            (a, sum(w.get(f, 0.0) for f in word_features(word, a, self.lexicon, self.stems)))
            for a in candidates(word, self.prefixes, self.hosts)
        )

    def analyse(self, word: str, previous: str = "", following: str = "") -> Analysis:
        """The best analysis of ``word`` between its neighbours (the first best on ties)."""
        if len(word) > MAX_WORD or not any(is_hebrew(c) for c in word) or not is_hebrew(word[0]):
            return Analysis()
        w = self.weights
        best, best_score = Analysis(), float("-inf")
        for a, score in self._intrinsic(word):
            score += sum(w.get(f, 0.0) for f in context_features(word, a, previous, following))
            if score > best_score:
                best, best_score = a, score
        return best

    def segment(self, text: str) -> list[Morph]:
        """The morphemes of ``text`` in order (see the module's documentation)."""
        tokens = list(_tokens(text))
        words = [text[s:e] if w else "" for s, e, w in tokens]
        out: list[Morph] = []
        for i, (start, end, is_word) in enumerate(tokens):
            if not is_word:
                out.append(Morph(text[start:end], start, end, "punct"))
                continue
            word = words[i]
            previous = words[i - 1] if i else ""
            following = words[i + 1] if i + 1 < len(words) else ""
            out.extend(self._word(text, start, end, word, previous, following))
        return out

    def _word(self, text: str, start: int, end: int, word: str, previous: str, following: str) -> list[Morph]:
        split = self.prefixes.get(word)
        if split and end + 1 < len(text) and text[end] == "-" and _word_char(text[end + 1]):
            return _prefix_morphs(split, start)  # ב-1988, ה-30
        quote = next((i for i, c in enumerate(word) if c in _QUOTES), -1)
        if quote > 0 and word[:quote] in self.prefixes and len(word) - quote > 2:  # ב"הארץ
            head = _prefix_morphs(self.prefixes[word[:quote]], start)
            rest = start + quote + 1
            return (
                head
                + [Morph(word[quote], start + quote, rest, "punct")]
                + self._word(text, rest, end, word[quote + 1 :], previous, following)
            )
        first = next((i for i, c in enumerate(word) if not is_hebrew(c)), len(word))
        if 0 < first < len(word) and word[first] not in _QUOTES:  # ב1988, לIBM
            split = self.prefixes.get(word[:first])
            if split:
                return _prefix_morphs(split, start) + [Morph(word[first:], start + first, end, "stem")]
            return [Morph(word, start, end, "stem")]
        return realise(word, start, self.analyse(word, previous, following))


def _prefix_morphs(split: Iterable[str], start: int) -> list[Morph]:
    out = []
    for form in split:
        out.append(Morph(form, start, start + len(form), "article" if form == ARTICLE else "prefix"))
        start += len(form)
    return out


def realise(word: str, start: int, a: Analysis) -> list[Morph]:
    """The morphemes of ``word`` (written at ``start``) under analysis ``a``."""
    out = _prefix_morphs(a.prefixes, start)
    at = start + a.prefix_length
    if a.article:
        out.append(Morph(UNWRITTEN_ARTICLE, at, at, "article"))
    end = start + len(word)
    stem_end = end - a.tail
    out.append(Morph(word[at - start : stem_end - start], at, stem_end, "stem"))
    if a.marker:
        out.append(Morph(a.marker, stem_end, stem_end, "suffix"))
    if a.pronoun:
        out.append(Morph(a.pronoun, stem_end, end, "suffix"))
    return out


def _model_error(path: str | Path | None, reason: str) -> Exception:
    return not_a_model(
        MODEL_FILE, path, "Hebrew segmenter", reason, "train one with `tabverify train coref --data DIR`"
    )


def _lines(blob: np.ndarray) -> list[str]:
    text = blob.tobytes().decode("utf-8")
    return text.split("\n") if text else []


def load_segmenter(path: str | Path | None = None) -> Segmenter:
    """The segmenter in ``path`` (default: the package's ``models/coref_morph.npz``).

    Raises:
        ModelError: the file is missing, unreadable or not a segmenter model.
    """
    data = read_arrays(MODEL_FILE, path)

    def fail(reason: str) -> Exception:
        return _model_error(path, reason)

    try:
        keys = _lines(check_array(data, "keys", "u", 1, fail))  # type: ignore[arg-type]
        weights = check_array(data, "weights", "f", 1, fail)  # type: ignore[arg-type]
        words = _lines(check_array(data, "lexicon", "u", 1, fail))  # type: ignore[arg-type]
        counts = check_array(data, "lexicon_counts", "i", 1, fail)  # type: ignore[arg-type]
        stem_words = _lines(check_array(data, "stems", "u", 1, fail))  # type: ignore[arg-type]
        stem_counts = check_array(data, "stem_counts", "i", 1, fail)  # type: ignore[arg-type]
        table = _lines(check_array(data, "prefixes", "u", 1, fail))  # type: ignore[arg-type]
        hosts = _lines(check_array(data, "hosts", "u", 1, fail))  # type: ignore[arg-type]
    except UnicodeDecodeError as exc:
        raise fail("its strings are not UTF-8") from exc
    if len(keys) != len(weights) or len(words) != len(counts) or len(stem_words) != len(stem_counts):
        raise fail("its arrays disagree in length")
    prefixes = {}
    for line in table:
        surface, _, split = line.partition("\t")
        prefixes[surface] = tuple(split.split("+"))
    return Segmenter(
        dict(zip(keys, weights.astype(float).tolist(), strict=True)),
        dict(zip(words, counts.tolist(), strict=True)),
        dict(zip(stem_words, stem_counts.tolist(), strict=True)),
        prefixes,
        frozenset(hosts),
    )


@functools.lru_cache(maxsize=1)
def _default() -> Segmenter:
    return load_segmenter()


def segment(text: str) -> list[Morph]:
    """Raw text -> morphemes with character offsets, by the shipped model (loaded on first use)."""
    return _default().segment(text)


# ---------------------------------------------------------------- training data


def _blob(lines: Iterable[str]) -> np.ndarray:
    return np.frombuffer("\n".join(lines).encode("utf-8"), dtype=np.uint8)


def kibutzr_sentences(path: str | Path) -> list[list[str]]:
    """The morpheme forms of each sentence of a KibutzR file (first column; blank lines end
    sentences)."""
    sentences: list[list[str]] = [[]]
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            continue
        if not line.strip():
            if sentences[-1]:
                sentences.append([])
            continue
        sentences[-1].append(line.split("\t")[0])
    return [s for s in sentences if s]


def _attached_after(form: str) -> bool:
    """A suffix or a marker, attached to the morpheme before it (``_הוא``, ``_של_``, ``את_``)."""
    return len(form) > 1 and (form.startswith("_") or form.endswith("_")) and form != UNWRITTEN_ARTICLE


def group_words(forms: list[str]) -> list[list[int]]:
    """Morpheme indices grouped into written words: a prefix form or ``ה_`` joins the next morpheme,
    a suffix or a marker joins the previous one."""
    groups: list[list[int]] = []
    joining = False
    for i, form in enumerate(forms):
        if groups and (joining or _attached_after(form)):
            groups[-1].append(i)
        else:
            groups.append([i])
        joining = form in PREFIX_FORMS or form == UNWRITTEN_ARTICLE
        if joining and any(
            not (forms[j] in PREFIX_FORMS or forms[j] == UNWRITTEN_ARTICLE) for j in groups[-1]
        ):
            joining = False  # only a run of prefixes joins the next morpheme
    return groups


def analysis_of(forms: list[str]) -> tuple[str, Analysis] | None:
    """The written word and its analysis for the morpheme forms of one word, or None when they are
    not a Hebrew word this model analyses (a lone prefix, punctuation, an unknown marker)."""
    forms = [
        f[:-1] if f.endswith("_") and len(f) > 1 and f not in (UNWRITTEN_ARTICLE, "_של_", "את_") else f
        for f in forms
    ]
    marker = pronoun = ""
    if forms and forms[-1] in PRONOUN_TAILS:
        pronoun = forms.pop()
        if forms and forms[-1] in MARKERS[1:]:
            marker = forms.pop()
    if not forms or any(_attached_after(f) for f in forms):
        return None
    stem = forms.pop()
    article = bool(forms) and forms[-1] == UNWRITTEN_ARTICLE
    if article:
        forms.pop()
    if any(f not in PREFIX_FORMS for f in forms) or not stem or not is_hebrew(stem[0]):
        return None
    if not all(is_hebrew(c) or c in _QUOTES for c in stem) or stem in PREFIX_FORMS and not pronoun:
        return None
    if pronoun:
        stem = _spelled_stem(stem, marker, pronoun)
    word = "".join(forms) + stem + (PRONOUN_TAILS[pronoun] if pronoun else "")
    return word, Analysis(tuple(forms), article, marker, pronoun)


def _spelled_stem(stem: str, marker: str, pronoun: str) -> str:
    """How a stem is written before a suffix, by the common rules (final letters; a possessed noun's
    ה -> ת and ים -> י; את -> אות, מן -> ממנ, על -> עלי; ה before הם and הן of a preposition: להם);
    used only to rebuild the spelling of KibutzR train words, which keep the stem's own form."""
    plural = pronoun in ("_הם", "_הן")
    stem = stem[:-1] + _FINAL.get(stem[-1], stem[-1])
    if marker == "_של_":
        if stem.endswith("ה"):
            return stem[:-1] + "ת"
        if stem.endswith("ימ"):
            return stem[:-1] + ("ה" if plural else "")
        return stem
    if marker:
        return stem
    if stem == "את":
        return "אות"
    if stem == "מנ":
        return "מה" if plural else "ממנ"
    if stem in ("על", "אל"):
        stem += "י"
    return stem + "ה" if plural else stem


def ud_words(path: str | Path, keep: Callable[[str, list[str]], bool]) -> list[list[tuple[str, list[str]]]]:
    """Sentences of a UD CoNLL-U file as ``(written word, morpheme forms)``, for the sentences that
    ``keep(text, forms)`` accepts (``text`` is the ``# text`` line; ``forms`` its syntactic words)."""
    out = []
    text = ""
    words: list[tuple[str, list[str]]] = []
    pending: tuple[int, str, list[str]] | None = None
    for line in Path(path).read_text(encoding="utf-8").splitlines() + [""]:
        if line.startswith("# text = "):
            text = line[len("# text = ") :]
        if not line.strip():
            if words and keep(text, [f for _, fs in words for f in fs]):
                out.append(words)
            words, pending = [], None
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if "-" in cols[0]:
            pending = (int(cols[0].split("-")[1]), cols[1], [])
            continue
        if "." in cols[0]:
            continue
        if pending is not None:
            pending[2].append(cols[1])
            if int(cols[0]) == pending[0]:
                words.append((pending[1], pending[2]))
                pending = None
            continue
        words.append((cols[1], [cols[1]]))
    return out


def _squash(text: str) -> str:
    return re.sub(r"[\s_]", "", text)


# ---------------------------------------------------------------- training


FOLDS = 5
"""Training words see lexicon counts from the other folds only (documents dealt round-robin), so
that the lexicon features of a word behave in training as they do on unseen text."""

Sentence = list[tuple[str, Analysis | None]]


class _Instance(NamedTuple):
    word: str
    gold: Analysis
    previous: str
    following: str
    fold: int


def _instances(sentences: Iterable[tuple[int, Sentence]]) -> Iterator[_Instance]:
    for fold, sentence in sentences:
        for i, (word, analysis) in enumerate(sentence):
            if analysis is None:
                continue
            previous = sentence[i - 1][0] if i else ""
            following = sentence[i + 1][0] if i + 1 < len(sentence) else ""
            yield _Instance(word, analysis, previous, following, fold)


def _kibutzr_training(paths: list[Path]) -> list[tuple[int, Sentence]]:
    out = []
    for index, path in enumerate(paths):
        for forms in kibutzr_sentences(path):
            sentence: Sentence = []
            for group in group_words(forms):
                parts = [forms[i] for i in group]
                found = analysis_of(parts)
                sentence.append(found if found else ("".join(p.strip("_") for p in parts), None))
            out.append((index % FOLDS, sentence))
    return out


def _dev_texts(kibutzr: Path) -> str:
    raw = kibutzr / "data/llm_input/raw_documents/dev"
    return "\n".join(_squash(p.read_text(encoding="utf-8")) for p in sorted(raw.glob("*.txt")))


def _ud_training(ud: Path, kibutzr_train: set[str], dev: str, report: dict) -> list[tuple[int, Sentence]]:
    """UD Hebrew-HTB sentences that are KibutzR train sentences (compared without spaces and
    underscores), none of them in a KibutzR dev text; the others are counted in ``report``."""
    out = []
    for path in sorted(ud.glob("UD_Hebrew-HTB/*.conllu")):
        seen = Counter()

        def keep(text: str, forms: list[str], seen: Counter = seen) -> bool:
            in_dev = len(_squash(text)) > 0 and _squash(text) in dev
            in_train = _squash("".join(forms)) in kibutzr_train
            seen["sentences"] += 1
            seen["in_kibutzr_dev"] += in_dev
            seen["in_kibutzr_train"] += in_train
            return in_train and not in_dev

        for index, words in enumerate(ud_words(path, keep)):
            sentence: Sentence = []
            for written, forms in words:
                found = analysis_of(forms) if len(forms) > 1 else None
                if found is not None and found[0] != written:
                    found = (written, found[1]) if _fits(written, found[1]) else None
                sentence.append(found if found else (written, None))
            out.append((index % FOLDS, sentence))
        report[path.name] = dict(seen)
    return out


def _fits(word: str, a: Analysis) -> bool:
    return (
        word.startswith("".join(a.prefixes))
        and (not a.pronoun or word.endswith(PRONOUN_TAILS[a.pronoun]))
        and len(word) - a.prefix_length - a.tail >= 1
    )


def fit(sentences: list[tuple[int, Sentence]], seed: int = 0, epochs: int = 6) -> Segmenter:
    """A segmenter trained on ``(fold, sentence)`` pairs, each sentence a list of
    ``(written word, gold analysis or None)``; see :data:`FOLDS` for the lexicon counts."""
    instances = list(_instances(sentences))

    def counts(fold: int | None) -> tuple[Counter, Counter]:
        kept = [s for f, s in sentences if f != fold]
        words = Counter(word for sentence in kept for word, _ in sentence)
        stems = Counter(_stem(w, a) for sentence in kept for w, a in sentence if a is not None)
        return words, stems

    lexicon, stems = counts(None)
    table: dict[str, Counter] = defaultdict(Counter)
    hosts = set()
    for i in instances:
        if i.gold.prefixes:
            table["".join(i.gold.prefixes)][i.gold.prefixes] += 1
        if i.gold.article:
            hosts.add(i.gold.prefixes[-1])
    prefixes = {surface: splits.most_common(1)[0][0] for surface, splits in sorted(table.items())}
    model = Segmenter({}, dict(lexicon), dict(stems), prefixes, frozenset(hosts))
    views = [tuple(dict(c) for c in counts(fold)) for fold in range(FOLDS)]
    model.weights = _perceptron(model, instances, views, seed, epochs)  # type: ignore[arg-type]
    model._intrinsic.cache_clear()
    return model


def save_segmenter(model: Segmenter, path: str | Path) -> None:
    """Write ``model`` as a numpy-only ``.npz`` file (weights rounded to float32, zeros dropped)."""
    kept = sorted((k, v) for k, v in model.weights.items() if abs(v) >= 1e-4)
    lexicon = sorted(model.lexicon.items())
    stems = sorted(model.stems.items())
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        np.savez_compressed(
            handle,
            keys=_blob(k for k, _ in kept),
            weights=np.array([v for _, v in kept], dtype=np.float32),
            lexicon=_blob(w for w, _ in lexicon),
            lexicon_counts=np.array([c for _, c in lexicon], dtype=np.int32),
            stems=_blob(s for s, _ in stems),
            stem_counts=np.array([c for _, c in stems], dtype=np.int32),
            prefixes=_blob(f"{s}\t{'+'.join(split)}" for s, split in model.prefixes.items()),
            hosts=_blob(sorted(model.hosts)),
        )


def train_segmenter(
    data_dir: str | Path,
    out_path: str | Path,
    seed: int = 0,
    ud_dir: str | Path | None = None,
    epochs: int = 6,
) -> dict:
    """Train the segmenter on KibutzR train (``data_dir`` is the KibutzR folder holding ``data/``)
    and the UD Hebrew-HTB sentences that are KibutzR train sentences (``ud_dir``, default
    ``data_dir/../ud`` when it exists), write it to ``out_path`` and return its KibutzR dev scores
    (:func:`evaluate`) with the counts of the training data and the UD overlap check."""
    kibutzr = Path(data_dir)
    began = time.perf_counter()
    paths = sorted((kibutzr / "data/conllu/with_singleton/train").glob("*.conllu"))
    sentences = _kibutzr_training(paths)
    report: dict = {"kibutzr_train_sentences": len(sentences)}
    ud = Path(ud_dir) if ud_dir is not None else kibutzr.parent / "ud"
    if ud.is_dir():
        train_text = {_squash("".join(forms)) for path in paths for forms in kibutzr_sentences(path)}
        ud_sentences = _ud_training(ud, train_text, _dev_texts(kibutzr), report)
        report["ud_sentences_used"] = len(ud_sentences)
        sentences += ud_sentences
    model = fit(sentences, seed, epochs)
    save_segmenter(model, out_path)
    report["train_words"] = sum(1 for _ in _instances(sentences))
    report["train_seconds"] = round(time.perf_counter() - began, 1)
    report["dev"] = evaluate(kibutzr, load_segmenter(out_path).segment)
    return report


def _perceptron(
    model: Segmenter,
    instances: list[_Instance],
    views: list[tuple[dict[str, int], dict[str, int]]],
    seed: int,
    epochs: int,
) -> dict[str, float]:
    """Averaged structured perceptron over each word's candidate analyses; an instance's lexicon
    features use the counts of ``views[instance.fold]``."""
    weights: dict[str, float] = defaultdict(float)
    totals: dict[str, float] = defaultdict(float)
    stamps: dict[str, int] = defaultdict(int)
    rng = np.random.default_rng(seed)
    step = 0
    prepared = []
    for inst in instances:
        options = candidates(inst.word, model.prefixes, model.hosts)
        if inst.gold in options and len(options) > 1:
            prepared.append((inst, options))

    def update(feats: list[str], delta: float) -> None:
        for f in feats:
            totals[f] += (step - stamps[f]) * weights[f]
            stamps[f] = step
            weights[f] += delta

    def features(inst: _Instance, a: Analysis) -> list[str]:
        lexicon, stems = views[inst.fold]
        return word_features(inst.word, a, lexicon, stems) + context_features(
            inst.word, a, inst.previous, inst.following
        )

    for _ in range(epochs):
        for index in rng.permutation(len(prepared)):
            inst, options = prepared[index]
            step += 1
            best, best_score = options[0], float("-inf")
            for a in options:
                score = sum(weights.get(f, 0.0) for f in features(inst, a))
                if score > best_score:
                    best, best_score = a, score
            if best != inst.gold:
                update(features(inst, inst.gold), 1.0)
                update(features(inst, best), -1.0)
    return {f: (totals[f] + (step - stamps[f]) * w) / max(step, 1) for f, w in weights.items()}


# ---------------------------------------------------------------- evaluation


def _items(morphs: list[Morph], text: str) -> set[tuple]:
    """Segmentation decisions as comparable items: ("p", i) a prefix boundary at character i
    between two letters, ("a", i) an unwritten article, ("s", i, suffix) a suffix starting at i."""
    items: set[tuple] = set()
    written = [m for m in morphs if m.end > m.start and m.kind != "punct" and m.kind != "suffix"]
    for left, right in zip(written, written[1:], strict=False):
        at = left.end
        if at == right.start and 0 < at < len(text) and text[at - 1].isalpha() and text[at].isalpha():
            items.add(("p", at))
    marker = ""
    for m in morphs:
        if m.form == UNWRITTEN_ARTICLE:
            items.add(("a", m.start))
        elif m.kind == "suffix" and m.start == m.end:
            marker = m.form
        elif m.kind == "suffix":
            items.add(("s", m.start, marker + m.form))
            marker = ""
    return items


def gold_morphs(forms: list[str], raw: str) -> tuple[list[Morph], list[tuple[int, int]]] | None:
    """KibutzR morphemes placed on the raw text by :func:`tabverify.coref.kibutzr._morpheme_spans`
    (the reference alignment) as :class:`Morph` objects, and the character span of each written
    Hebrew word; None when they cannot be aligned."""
    from tabverify.coref.kibutzr import _morpheme_spans

    spans = _morpheme_spans(forms, raw)
    if spans is None:
        return None
    morphs: list[Morph] = []
    words = []
    for group in group_words(forms):
        placed = [spans[i] for i in group if spans[i] is not None]
        if placed and any(is_hebrew(c) for c in raw[placed[0].start : placed[-1].end]):
            words.append((placed[0].start, placed[-1].end))
        at = placed[0].start if placed else 0
        stem = max(
            (i for i in group if not _attached_after(forms[i]) and forms[i] != UNWRITTEN_ARTICLE), default=-1
        )
        for i in group:
            form, span = forms[i], spans[i]
            if span is not None:
                at = span.end
            if form == UNWRITTEN_ARTICLE:
                morphs.append(Morph(form, at, at, "article"))
            elif _attached_after(form) and form in PRONOUN_TAILS and span is not None:
                morphs.append(Morph(form, span.start, span.end, "suffix"))
            elif _attached_after(form):
                start = spans[group[-1]].start if spans[group[-1]] is not None else at  # type: ignore[union-attr]
                morphs.append(Morph(form, start, start, "suffix"))
            elif span is not None:
                kind = "punct" if not any(c.isalnum() for c in form) else "stem"
                if form in PREFIX_FORMS and i != stem:
                    kind = "article" if form == ARTICLE else "prefix"
                morphs.append(Morph(form, span.start, span.end, kind))
    return morphs, words


def _prf(gold: set, predicted: set) -> dict[str, float]:
    hit = len(gold & predicted)
    p = hit / len(predicted) if predicted else 0.0
    r = hit / len(gold) if gold else 0.0
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r) if p + r else 0.0, 4),
        "gold": len(gold),
    }


def rule_segment(text: str) -> list[Morph]:
    """The rule-only baseline: strip the longest run of prefix letters (ו ה ב כ ל מ ש, ה only last,
    כש as one) that leaves three letters or more; no unwritten article, no suffix."""
    out = []
    pattern = re.compile(r"^(ו?(?:כש|ש|[במלכ])?(?:ה)?)")
    for start, end, is_word in _tokens(text):
        word = text[start:end]
        if not is_word:
            out.append(Morph(word, start, end, "punct"))
            continue
        match = pattern.match(word)
        k = len(match.group(1)) if match and is_hebrew(word[0]) else 0
        while k and len(word) - k < 3:
            k -= 1
        split = re.findall(r"כש|.", word[:k])
        out.extend(_prefix_morphs(split, start))
        out.append(Morph(word[k:], start + k, end, "stem"))
    return out


def no_split(text: str) -> list[Morph]:
    """The no-split baseline: every word one stem."""
    return [Morph(text[s:e], s, e, "stem" if w else "punct") for s, e, w in _tokens(text)]


def evaluate(kibutzr: str | Path, segmenter: Callable[[str], list[Morph]], split: str = "dev") -> dict:
    """Word-level segmentation accuracy and prefix / unwritten-article / suffix P/R/F1 of
    ``segmenter`` on the KibutzR ``split`` raw texts against the reference alignment of the gold
    morphemes (:func:`gold_morphs`); documents that do not align are counted and skipped."""
    root = Path(kibutzr) / "data"
    gold_items: set[tuple] = set()
    predicted_items: set[tuple] = set()
    words = correct = skipped = 0
    seconds = 0.0
    for path in sorted((root / f"conllu/with_singleton/{split}").glob("*.conllu")):
        raw_path = root / f"llm_input/raw_documents/{split}" / f"{path.stem.split(':')[-1]}.txt"
        forms = [f for s in kibutzr_sentences(path) for f in s]
        raw = raw_path.read_text(encoding="utf-8") if raw_path.is_file() else ""
        gold = gold_morphs(forms, raw) if raw else None
        if gold is None:
            skipped += 1
            continue
        began = time.perf_counter()
        predicted = segmenter(raw)
        seconds += time.perf_counter() - began
        g, p = _items(gold[0], raw), _items(predicted, raw)
        doc = path.stem
        gold_items |= {(doc, *i) for i in g}
        predicted_items |= {(doc, *i) for i in p}
        for start, end in gold[1]:
            words += 1
            correct += {i for i in g if start < i[1] < end} == {i for i in p if start < i[1] < end}

    def part(kind: str, label: bool = True) -> tuple[set, set]:
        def pick(items: set) -> set:
            return {i if label else i[:3] for i in items if i[1] == kind}

        return pick(gold_items), pick(predicted_items)

    return {
        "documents": len(list((root / f"conllu/with_singleton/{split}").glob("*.conllu"))) - skipped,
        "skipped": skipped,
        "words": words,
        "word_accuracy": round(correct / words, 4) if words else 0.0,
        "prefix": _prf(*part("p")),
        "article": _prf(*part("a")),
        "suffix_boundary": _prf(*part("s", label=False)),
        "suffix_labelled": _prf(*part("s")),
        "seconds": round(seconds, 3),
    }
