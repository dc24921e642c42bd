"""Claims without a table: find the evidence tables in a lake, then verify against them.

Retrieval has two stages.

1. Candidates: the lake's keyword search (SQLite FTS5 BM25 over captions, headers and cell values,
   stemmed: TabFact-style statements are lemmatized - "there be no new entry" - while tables hold
   "entries", "games") with the statement's content words and their irregular forms ("won"), the best
   :data:`KEYWORD_POOL`; plus, when the lake's encoder has a text side, the :data:`DENSE_POOL`
   tables whose vectors are nearest the statement's embedding.
2. Rerank: every candidate is linked to the statement the way the table verifier links
   (:mod:`tabverify.text.linking`: stems, longest match wins): which words name whole cells,
   which name columns, which appear anywhere in the table or its caption, which numbers it holds.
   A logistic model over those link features, the keyword and dense scores, and each feature
   relative to the best candidate of the pool, scores every candidate (:data:`FEATURES`). Its
   weights were fitted on TabFact *train* statements by :func:`tabverify.bench.trl.claims.fit_model`
   (the command is in that module's docstring), one set per lake encoder; encoders without their
   own weights use the keyword-only model (dense features left out).

:func:`check_with_lake` then verifies the statement against the best candidates with the table
verifier and keeps the verdict of the best-supported one: candidates are tried in retrieval order
and the first whose verdict has an evidence program (the statement's values linked to the table)
wins; when none has one, the top candidate's verdict stands. The verdict names the table it used
(``evidence_table``) and the other candidates (``runners_up``).
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from threading import Lock
from typing import Any

import numpy as np

from tabverify.errors import LakeError, ModelError, TabverifyError
from tabverify.table.model import Table
from tabverify.text.linking import STOP_WORDS
from tabverify.text.normalize import IRREGULAR, tokenize
from tabverify.verify.verdict import Label, TraceStep, Verdict

__all__ = [
    "DENSE_POOL",
    "FEATURES",
    "KEYWORD_POOL",
    "Candidate",
    "RankModel",
    "Retriever",
    "check_with_lake",
    "keyword_terms",
    "retrieve",
]

NO_TABLE = (
    "no table of the lake matches the statement (no word of it is in any caption, header or cell); "
    "check the lake, or give the table with `tabverify check TABLE`"
)
"""Why a statement no table matches is NOT ENOUGH INFO (its verdict's trace note)."""

KEYWORD_POOL = 200
"""Tables the keyword search hands to the reranker (200, not 100: the statement's own table is in
the pool for 0.94 rather than 0.92 of 2,000 held-out TabFact train statements)."""

DENSE_POOL = 50
"""Tables the dense search hands to the reranker (when the lake's encoder has a text side)."""

MAX_STATEMENT_CHARS = 2_000
"""Longer statements are cut (linking grows with the number of words)."""

MAX_WORDS = 80
"""Words of a statement that are linked."""

MAX_NGRAM = 10
"""Longest cell or header mention, in words (as in the table verifier's linker)."""

MAX_PROFILE_CELLS = 20_000
"""Distinct cells of one table that linking looks at (bounded work on huge tables)."""

PROFILE_CACHE = 4_096
"""Linked-table profiles kept in memory (a table is read from the lake once while it stays)."""

MAX_QUERY_TERMS = 64

_WORD = re.compile(r"\w+", re.UNICODE)
_INFLECTED: dict[str, list[str]] = {}
for _form, _lemma in IRREGULAR.items():
    _INFLECTED.setdefault(_lemma, []).append(_form)

BASE_FEATURES = (
    "keyword_score",  # BM25 score / the pool's best (0 when keyword search did not find it)
    "keyword_rank",  # 1 / keyword rank (0 when not found)
    "dense_score",  # cosine of the statement and table vectors
    "dense_gap",  # dense_score minus the pool's best
    "cell_coverage",  # share of content words inside whole-cell mentions
    "multiword_cells",  # share of content words inside whole-cell mentions of 2+ words
    "cell_rarity",  # sum over mentioned cells of log(pool size / pool tables holding that cell)
    "header_coverage",  # share of content words naming a column
    "word_coverage",  # share of content words found anywhere in the table or its caption
    "caption_in_statement",  # share of the caption's content words the statement uses
    "statement_in_caption",  # share of the statement's content words in the caption
    "number_coverage",  # share of the statement's numbers found in cells
    "no_numbers",  # 1 when the statement has no number
)
RELATIVE = (
    "cell_coverage",
    "multiword_cells",
    "cell_rarity",
    "word_coverage",
    "caption_in_statement",
    "statement_in_caption",
    "number_coverage",
)
FEATURES = BASE_FEATURES + tuple(f"{name}_gap" for name in RELATIVE)
"""The reranker's inputs: the base features, then each of :data:`RELATIVE` minus the pool's best."""

_RELATIVE_INDEX = [BASE_FEATURES.index(name) for name in RELATIVE]
_DENSE_INDEX = [FEATURES.index("dense_score"), FEATURES.index("dense_gap")]


@dataclass(frozen=True)
class RankModel:
    """Weights over :data:`FEATURES` (``dense``: whether the dense features are used; ``listwise``:
    fitted as a softmax over each statement's pool, so a candidate's probability is its softmax
    share of the pool; else a per-candidate logistic model, its probability the sigmoid)."""

    coef: tuple[float, ...]
    intercept: float
    dense: bool = True
    listwise: bool = False

    def score(self, features: np.ndarray) -> np.ndarray:
        """The model's logit for each row of ``features`` ``(n, len(FEATURES))``."""
        weights = np.asarray(self.coef, dtype=np.float64)
        return features.astype(np.float64) @ weights + self.intercept


KEYWORD_MODEL_KEY = "keywords"
"""The model for lakes whose encoder has no weights of its own (dense features left out)."""

# Fitted on 3,000 TabFact train statements (seed 0) by tabverify.bench.trl.claims.fit_models; the
# command that reproduces each set is in that module's docstring. Never fitted on val or test.
MODELS: dict[str, RankModel] = {
    # scripts/bench_check_lake.py fit --keyword-model --lake <lexical lake of data/all_csv> (108 s)
    "lexical": RankModel(
        (
            6.3007,
            0.49751,
            3.3166,
            3.3166,
            0.12084,
            4.02472,
            0.11266,
            1.74754,
            2.99573,
            2.15418,
            -0.37691,
            0.45421,
            0.0,
            0.12084,
            4.02472,
            0.11266,
            2.99573,
            2.15418,
            -0.37691,
            0.45421,
        ),
        0.0,
        listwise=True,
    ),
    # per-candidate logistic weights fitted on a format-1 minilm lake (unstemmed keyword index, keyword pool
    # 100) with scripts/bench_check_lake.py fit at commit 5f075ae (165 s); not refitted since: a minilm lake
    # of the current format is needed
    "minilm": RankModel(
        (
            1.43348,
            3.33389,
            0.55692,
            4.33401,
            -1.90423,
            0.88339,
            0.3207,
            0.10894,
            0.87754,
            1.7772,
            0.60701,
            -0.70857,
            -1.00691,
            1.89811,
            3.26688,
            0.00069,
            6.14656,
            -0.48212,
            -0.9694,
            1.56326,
        ),
        -5.01977,
    ),
    # the keyword-only model of the same run: for lakes whose encoder has no weights of its own
    KEYWORD_MODEL_KEY: RankModel(
        (
            6.59438,
            0.56567,
            0.0,
            0.0,
            -0.01824,
            4.10451,
            0.11579,
            2.86551,
            3.30192,
            2.3158,
            -0.23932,
            0.44243,
            0.0,
            -0.01824,
            4.10451,
            0.11579,
            3.30192,
            2.3158,
            -0.23932,
            0.44243,
        ),
        0.0,
        dense=False,
        listwise=True,
    ),
}


@dataclass(frozen=True)
class Candidate:
    """A table retrieved for a statement.

    Attributes:
        id: the table's id in the lake.
        score: the reranker's probability that this is the statement's table (among the pool).
        caption: the table's caption.
        cells: the cell texts the statement names (whole-cell mentions), in statement order.
        columns: the headers the statement names.
        reasons: why it was retrieved, for people (``keyword rank 2``, ``dense 0.61``, ...).
        keyword_rank: its rank in the keyword search (None: keyword search did not find it).
        dense_score: the cosine of its vector and the statement's (None: no dense search).
    """

    id: str
    score: float
    caption: str = ""
    cells: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    keyword_rank: int | None = None
    dense_score: float | None = None

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "id": self.id,
            "score": round(self.score, 4),
            "caption": self.caption,
            "cells": list(self.cells),
            "columns": list(self.columns),
            "reasons": list(self.reasons),
            "keyword_rank": self.keyword_rank,
            "dense_score": None if self.dense_score is None else round(self.dense_score, 4),
        }


@dataclass(frozen=True)
class _Profile:
    """What linking needs of one table: its distinct whole cells and headers by stem key, and the
    stems found in cells, headers and caption."""

    caption: str
    cells: dict[tuple[str, ...], str]
    headers: dict[tuple[str, ...], str]
    words: frozenset[str]
    caption_words: frozenset[str]


def _stems(text: str) -> tuple[str, ...]:
    return tuple(t.stem for t in tokenize(text[:MAX_STATEMENT_CHARS]) if t.text[0].isalnum())


def profile_table(table: Table) -> _Profile:
    """The linking profile of ``table`` (at most :data:`MAX_PROFILE_CELLS` distinct cells)."""
    return _profile(table.caption, table.header, ([cell.text for cell in row] for row in table.rows))


def _profile(caption: str, header: Sequence[str], rows: Iterable[Sequence[str]]) -> _Profile:
    cells: dict[tuple[str, ...], str] = {}
    words: set[str] = set()
    seen: set[str] = set()
    for row in rows:
        for value in row:
            text = str(value).strip()
            if not text or text in seen:
                continue
            seen.add(text)
            key = _stems(text)
            if key:
                words.update(key)
                if len(key) <= MAX_NGRAM:
                    cells.setdefault(key, text)
            if len(seen) >= MAX_PROFILE_CELLS:
                break
        if len(seen) >= MAX_PROFILE_CELLS:
            break
    headers: dict[tuple[str, ...], str] = {}
    for name in header:
        key = _stems(str(name))
        if key:
            words.update(key)
            headers.setdefault(key, str(name))
    caption_words = frozenset(_stems(caption)) - STOP_WORDS
    return _Profile(caption, cells, headers, frozenset(words), caption_words)


def _stored_texts(lake: Any, table_id: str) -> tuple[str, list[str], list[list[str]]] | None:
    """Caption, header and cell texts of a lake table from :meth:`Lake.rows` (no cell parsing:
    :meth:`Lake.load` parses every cell's quantity, 10x the cost of linking); None when the lake
    has no ``rows`` (then :meth:`Lake.load` is used)."""
    rows = getattr(lake, "rows", None)
    if rows is None:
        return None
    caption, header, cells = rows(table_id)
    return str(caption), [str(h) for h in header], cells


@dataclass
class _Statement:
    """A statement's words as linking sees them."""

    text: str
    stems: list[str]
    content: list[bool]
    numbers: list[str]
    ngrams: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)

    @classmethod
    def of(cls, statement: str) -> _Statement:
        words = [t for t in tokenize(statement[:MAX_STATEMENT_CHARS]) if t.text[0].isalnum()][:MAX_WORDS]
        stems = [t.stem for t in words]
        content = [s not in STOP_WORDS for s in stems]
        numbers = [t.stem for t in words if t.text[0].isdigit()]
        grams = [
            (i, n, tuple(stems[i : i + n]))
            for n in range(min(MAX_NGRAM, len(stems)), 0, -1)
            for i in range(len(stems) - n + 1)
            if n > 1 or content[i]
        ]
        return cls(statement, stems, content, numbers, grams)

    def mentions(
        self, keys: dict[tuple[str, ...], str]
    ) -> tuple[list[tuple[int, int, tuple[str, ...]]], list[bool]]:
        """Longest-match-wins mentions of ``keys`` (whole cells or headers) and the words they take."""
        taken = [False] * len(self.stems)
        found = []
        for i, n, key in self.ngrams:
            if key in keys and not any(taken[i : i + n]):
                found.append((i, n, key))
                for k in range(i, i + n):
                    taken[k] = True
        return found, taken


def keyword_terms(statement: str) -> str:
    """The statement's content words and their irregular inflected forms (``win`` -> ``won``), for
    the lake's keyword search (at most :data:`MAX_QUERY_TERMS` terms). Regular inflections need no
    expansion: the lake's keyword index is stemmed (``entry`` finds ``entries``)."""
    words = [
        w for w in dict.fromkeys(m.casefold() for m in _WORD.findall(statement[:MAX_STATEMENT_CHARS]))
        if w not in STOP_WORDS
    ]  # fmt: skip
    terms: dict[str, None] = {}
    for word in words:
        terms[word] = None
        if word.isalpha():
            terms.update(dict.fromkeys(_INFLECTED.get(word, ())))
    return " ".join(list(terms)[:MAX_QUERY_TERMS])


@dataclass
class _Pool:
    """The candidates of one statement, their features and their links."""

    ids: list[str]
    features: np.ndarray
    cells: list[tuple[str, ...]]
    columns: list[tuple[str, ...]]
    keyword_ranks: list[int]
    dense: list[float]


class Retriever:
    """Claim -> table retrieval over one lake (reusable: it caches table profiles).

    Args:
        lake: an open :class:`~tabverify.lake.store.Lake`.
        model: the reranker's weights; default: the lake encoder's fitted set, or the keyword-only one.
        keyword_pool: tables taken from keyword search.
        dense_pool: tables taken from dense search (0: none; also none when the encoder has no text side).
        cache: table profiles kept in memory (a benchmark over a whole lake keeps them all).
    """

    def __init__(
        self,
        lake: Any,
        model: RankModel | None = None,
        keyword_pool: int = KEYWORD_POOL,
        dense_pool: int = DENSE_POOL,
        cache: int = PROFILE_CACHE,
    ) -> None:
        self.lake = lake
        self.cache = cache
        name = _encoder_name(lake)
        self.model = model or MODELS.get(name) or MODELS.get(KEYWORD_MODEL_KEY)
        self.keyword_pool = keyword_pool
        self.dense_pool = dense_pool if (self.model is None or self.model.dense) else 0
        self._profiles: OrderedDict[str, _Profile] = OrderedDict()
        self._lock = Lock()

    def profile(self, table_id: str) -> _Profile:
        """The linking profile of a lake table (cached)."""
        with self._lock:
            cached = self._profiles.get(table_id)
            if cached is not None:
                self._profiles.move_to_end(table_id)
                return cached
        texts = _stored_texts(self.lake, table_id)
        built = _profile(*texts) if texts is not None else profile_table(self.lake.load(table_id))
        with self._lock:
            self._profiles[table_id] = built
            while len(self._profiles) > self.cache:
                self._profiles.popitem(last=False)
        return built

    def embed(self, statements: Sequence[str]) -> np.ndarray | None:
        """The statements' vectors in the lake's space, or None without a text side or dense pool."""
        if not self.dense_pool or not statements:
            return None
        try:
            return np.asarray(self.lake.encoder.encode_text(list(statements)), dtype=np.float32)
        except ModelError:
            self.dense_pool = 0
            return None

    def pool(self, statement: str, vector: np.ndarray | None = None) -> _Pool:
        """The candidates of ``statement`` with their features (``vector``: its embedding, when
        computed in a batch beforehand)."""
        text = statement[:MAX_STATEMENT_CHARS]
        hits = self.lake.search_keywords(keyword_terms(text), self.keyword_pool) if self.keyword_pool else []
        keyword = {hit.id: (rank, hit.score) for rank, hit in enumerate(hits, start=1)}
        ids = list(keyword)
        dense: dict[str, float] = {}
        if self.dense_pool:
            if vector is None:
                embedded = self.embed([text])
                vector = None if embedded is None else embedded[0]
            if vector is not None:
                for hit in self.lake.search_vector(vector, self.dense_pool):
                    dense[hit.id] = float(hit.score)
                    if hit.id not in keyword:
                        ids.append(hit.id)
                missing = [i for i in ids if i not in dense]
                if missing:
                    scores = self.lake.table_vectors(missing) @ np.asarray(vector, dtype=np.float32)
                    dense.update(zip(missing, (float(s) for s in scores), strict=True))
        st = _Statement.of(text)
        profiles = [self.profile(i) for i in ids]
        best_keyword = max((s for _, s in keyword.values()), default=0.0)
        best_dense = max(dense.values(), default=0.0)
        n_content = max(1, sum(st.content))
        mentions = [st.mentions(p.cells) for p in profiles]
        holders: dict[tuple[str, ...], int] = {}
        for found, _ in mentions:
            for key in {key for _, _, key in found}:
                holders[key] = holders.get(key, 0) + 1
        content_stems = {s for s, c in zip(st.stems, st.content, strict=True) if c}
        rows, cells, columns = [], [], []
        for table_id, profile, (found, taken) in zip(ids, profiles, mentions, strict=True):
            header_found, header_taken = st.mentions(profile.headers)
            rank, score = keyword.get(table_id, (0, 0.0))
            covered = sum(1 for t, c in zip(taken, st.content, strict=True) if t and c)
            caption_hits = len(profile.caption_words & content_stems)
            rows.append(
                [
                    score / best_keyword if best_keyword > 0 else 0.0,
                    1.0 / rank if rank else 0.0,
                    dense.get(table_id, 0.0),
                    dense.get(table_id, 0.0) - best_dense if dense else 0.0,
                    covered / n_content,
                    sum(n for _, n, _ in found if n > 1) / n_content,
                    sum(math.log(len(ids) / holders[key]) for _, _, key in found),
                    sum(1 for t, c in zip(header_taken, st.content, strict=True) if t and c) / n_content,
                    sum(
                        1
                        for s, c in zip(st.stems, st.content, strict=True)
                        if c and (s in profile.words or s in profile.caption_words)
                    )
                    / n_content,
                    caption_hits / len(profile.caption_words) if profile.caption_words else 0.0,
                    caption_hits / n_content,
                    sum(1 for s in st.numbers if s in profile.words) / len(st.numbers) if st.numbers else 0.0,
                    0.0 if st.numbers else 1.0,
                ]
            )
            cells.append(tuple(dict.fromkeys(profile.cells[key] for _, _, key in sorted(found))))
            columns.append(tuple(dict.fromkeys(profile.headers[key] for _, _, key in sorted(header_found))))
        base = np.asarray(rows, dtype=np.float64).reshape(len(ids), len(BASE_FEATURES))
        relative = base[:, _RELATIVE_INDEX] - (base[:, _RELATIVE_INDEX].max(axis=0) if len(ids) else 0.0)
        features = np.hstack([base, relative])
        return _Pool(
            ids,
            features,
            cells,
            columns,
            [keyword.get(i, (0, 0.0))[0] for i in ids],
            [dense.get(i, math.nan) for i in ids],
        )

    def retrieve(self, statement: str, k: int = 10, vector: np.ndarray | None = None) -> list[Candidate]:
        """The ``k`` tables most likely to hold the evidence for ``statement``, best first.

        Raises:
            LakeError: the lake cannot be searched; ValueError: an empty statement.
        """
        if not statement or not statement.strip():
            raise ValueError("the statement is empty")
        pool = self.pool(statement, vector)
        if not pool.ids or k <= 0:
            return []
        if self.model is None:
            scores = pool.features[:, 0] + pool.features[:, 1]
        else:
            features = pool.features.copy()
            if not self.model.dense:
                features[:, _DENSE_INDEX] = 0.0
            scores = self.model.score(features)
        order = np.argsort(-scores, kind="stable")[:k]
        if self.model is None:
            probabilities = scores
        elif self.model.listwise:
            shares = np.exp(scores - scores.max())
            probabilities = shares / shares.sum()
        else:
            probabilities = 1.0 / (1.0 + np.exp(-np.clip(scores, -500.0, 500.0)))
        out = []
        for j in order:
            reasons = []
            if pool.keyword_ranks[j]:
                reasons.append(f"keyword rank {pool.keyword_ranks[j]}")
            if not math.isnan(pool.dense[j]):
                reasons.append(f"dense {pool.dense[j]:.2f}")
            if pool.cells[j]:
                reasons.append(f"{len(pool.cells[j])} cell(s) named")
            out.append(
                Candidate(
                    pool.ids[j],
                    float(probabilities[j]),
                    self.profile(pool.ids[j]).caption,
                    pool.cells[j],
                    pool.columns[j],
                    tuple(reasons),
                    pool.keyword_ranks[j] or None,
                    None if math.isnan(pool.dense[j]) else pool.dense[j],
                )
            )
        return out


def _encoder_name(lake: Any) -> str:
    meta = getattr(lake, "meta", None)
    if isinstance(meta, dict):
        encoder = meta.get("encoder")
        if isinstance(encoder, dict) and isinstance(encoder.get("name"), str):
            return encoder["name"]
        if isinstance(encoder, str):
            return encoder
    try:
        return str(lake.encoder.name)
    except (AttributeError, TabverifyError):
        return ""


def retrieve(lake: Any, statement: str, k: int = 10) -> list[Candidate]:
    """The ``k`` lake tables most likely to hold the evidence for ``statement``, best first (a
    one-off :class:`Retriever`; keep a Retriever to reuse its cache over many statements)."""
    return Retriever(lake).retrieve(statement, k)


def check_with_lake(
    lake: Any,
    statement: str,
    verifier: Any = None,
    candidates: int = 3,
    retriever: Retriever | None = None,
) -> Verdict:
    """Verify ``statement`` against the lake's best tables for it.

    The ``candidates`` best retrieved tables are verified in retrieval order with ``verifier`` (a
    :class:`~tabverify.verify.TableVerifier`; the default one when None); the first verdict with an
    evidence program (the statement's values linked to that table) is kept, else the top table's.
    The verdict's ``evidence_table`` names the table used and ``runners_up`` the other candidates,
    best first.

    Raises:
        LakeError: the statement is empty.
        TabverifyError: the statement is too long for the verifier.

    When no table of the lake matches the statement (no word of it is in any caption, header or
    cell), the verdict is NOT ENOUGH INFO with no evidence table, and its trace says why.
    """
    if verifier is None:
        from tabverify.verify import TableVerifier

        verifier = TableVerifier()
    if not statement or not statement.strip():
        raise LakeError("the statement is empty; give the claim to check")
    found = (retriever or Retriever(lake)).retrieve(statement, k=max(1, candidates))
    if all(c.keyword_rank is None for c in found):  # only dense neighbours: nothing of it is in the lake
        return Verdict(
            statement=statement,
            label=Label.NOT_ENOUGH_INFO,
            program="",
            result=None,
            confidence=1.0,
            source="lake: no table found",
            trace=(TraceStep("note", NO_TABLE),),
        )
    chosen: tuple[Verdict, str] | None = None
    error: TabverifyError | None = None
    for candidate in found:
        try:
            verdict = verifier.verify(statement, lake.load(candidate.id))
        except TabverifyError as exc:  # e.g. a table without data rows: the next candidate is tried
            error = error or exc
            continue
        if chosen is None or (verdict.program and not chosen[0].program):
            chosen = (verdict, candidate.id)
        if verdict.program:
            break
    if chosen is None:
        assert error is not None
        raise error
    verdict, used = chosen
    runners = tuple(c.id for c in found if c.id != used)
    return replace(verdict, evidence_table=used, runners_up=runners)
