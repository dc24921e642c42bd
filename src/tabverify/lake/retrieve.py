"""Claims without a table: find the evidence tables in a lake, then verify against them.

Retrieval has two stages.

1. Candidates: the lake's keyword search (SQLite FTS5 BM25 over captions, headers and cell values,
   stemmed: TabFact-style statements are lemmatized - "there be no new entry" - while tables hold
   "entries", "games") with the statement's content words and their irregular forms ("won"), the best
   :data:`KEYWORD_POOL`; plus, when the lake's encoder has a text side, the :data:`DENSE_POOL`
   tables whose vectors are nearest the statement's embedding.
2. Rerank: every candidate is linked to the statement the way the table verifier links
   (:mod:`tabverify.text.linking`: stems, longest match wins): which words name whole cells,
   which name columns, which appear anywhere in the table or its caption, which numbers it holds,
   and how much of the statement sits in one row (a TabFact statement is mostly about one row or
   compares a few: its table holds the cells it names side by side, a look-alike table holds them
   scattered), and whether the statement's first words are the caption's (it usually opens with
   the table's subject). A softmax over the pool of a linear score of those link features, the
   keyword and dense scores, the best cosine with one of the candidate's column vectors, the share
   of the statement's words the candidate holds weighted by how rare each is in the pool, and each
   feature relative to the best candidate of the pool, scores every candidate (:data:`FEATURES`).
   A model may name a query adapter (:mod:`tabverify.lake.adapter`, the ``minilm`` one does): the
   statement's vector goes through it before the dense search and the cosines. The reranker's
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
from functools import lru_cache
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

MAX_PROFILE_ROWS = 1_000
"""Rows of one table whose words the row features look at (bounded work on huge tables)."""

PROFILE_CACHE = 4_096
"""Linked-table profiles kept in memory (a table is read from the lake once while it stays)."""

MAX_COSINE_COLUMNS = 256
"""Columns of one table that the ``column_cosine`` feature looks at (its first ones)."""

COLUMN_CACHE_VECTORS = 250_000
"""Column vectors kept in memory at most (float16: about 190 MB at 384 dimensions; every column of
all 16,573 TabFact tables is about 115,000)."""

MAX_QUERY_TERMS = 64

LEAD_WORDS = 3
"""The statement's first content words that the lead features look for (TabFact statements
usually open with the table's subject: "the 1982 new orleans saints ...")."""

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
    "row_words",  # most content words of the statement in one row, as a share of its content words
    "row_cells",  # most of the statement's distinct cell mentions in one row, as a share of them
    "row_cells_count",  # most of the statement's distinct cell mentions in one row
    "row_numbers",  # most of the statement's numbers in one row, as a share of them
    "cells_named",  # log(1 + distinct cells the statement names)
    "table_cells",  # log(1 + distinct cells of the table)
    "lead_caption",  # share of the statement's first content words in the caption
    "lead_table",  # share of the statement's first content words anywhere in the table or caption
    "header_words",  # share of the statement's content words among header words
    "table_rows",  # log(1 + rows)
    "column_cosine",  # the best cosine of the statement vector and one of the table's column vectors
    "word_rarity",  # share of the statement's content words in the table, weighted by rarity in the pool
)
RELATIVE = (
    "cell_coverage",
    "multiword_cells",
    "cell_rarity",
    "word_coverage",
    "caption_in_statement",
    "statement_in_caption",
    "number_coverage",
    "row_words",
    "row_cells",
    "row_cells_count",
    "row_numbers",
    "cells_named",
    "lead_caption",
    "lead_table",
    "header_words",
    "column_cosine",
    "word_rarity",
)
FEATURES = BASE_FEATURES + tuple(f"{name}_gap" for name in RELATIVE)
"""The reranker's inputs: the base features, then each of :data:`RELATIVE` minus the pool's best."""

_RELATIVE_INDEX = [BASE_FEATURES.index(name) for name in RELATIVE]
_DENSE_INDEX = [
    FEATURES.index(name) for name in ("dense_score", "dense_gap", "column_cosine", "column_cosine_gap")
]
"""The features that need the statement's vector (left out of the keyword-only model)."""
_COLUMN_INDEX = [FEATURES.index("column_cosine"), FEATURES.index("column_cosine_gap")]


@dataclass(frozen=True)
class RankModel:
    """Weights over :data:`FEATURES` (``dense``: whether the dense features are used; ``listwise``:
    fitted as a softmax over each statement's pool, so a candidate's probability is its softmax
    share of the pool; else a per-candidate logistic model, its probability the sigmoid;
    ``adapter``: the file name, in the package's models, of the query adapter
    (:class:`tabverify.lake.adapter.QueryAdapter`) its statement vectors went through when it was
    fitted, so they go through it at run time too)."""

    coef: tuple[float, ...]
    intercept: float
    dense: bool = True
    listwise: bool = False
    adapter: str | None = None

    def score(self, features: np.ndarray) -> np.ndarray:
        """The model's logit for each row of ``features`` ``(n, len(FEATURES))``."""
        weights = np.asarray(self.coef, dtype=np.float64)
        return features.astype(np.float64) @ weights + self.intercept


KEYWORD_MODEL_KEY = "keywords"
"""The model for lakes whose encoder has no weights of its own (dense features left out)."""

# Fitted on 3,000 TabFact train statements (seed 0) of the tables outside the held-out fifth
# (tabverify.bench.trl.claims.held_out) by tabverify.bench.trl.claims.fit_models; the command that
# reproduces each set is in that module's docstring. Never fitted on val or test. Held-out train
# statements (2,000 of the held-out tables, seed 1), Recall@1 / @10 with the 13 base features of
# before -> with the row, lead and header features: lexical 0.664 / 0.849 -> 0.681 / 0.861, minilm
# 0.675 / 0.862 -> 0.689 / 0.867, keyword-only 0.666 / 0.852 -> 0.679 / 0.859; minilm with the
# query adapter and the column_cosine and word_rarity features: 0.694 / 0.877 (lexical and
# keyword-only weigh those two 0: refitted with them they gained nothing at Recall@10).
# fmt: off
MODELS: dict[str, RankModel] = {
    # scripts/bench_check_lake.py fit --keyword-model --lake <lexical lake of data/all_csv>
    "lexical": RankModel(
        (
            5.62788, 0.47373, 3.35089, 3.35089, 0.2461, 3.07186, 0.12854, 4.04651,
            3.8927, 1.80132, -2.1032, 0.12522, 0.0, 1.82281, -0.01869, 0.6095,
            0.03259, -0.92056, -0.02649, 1.30187, -0.01208, -1.61693, 0.02986, 0.0,
            0.0, 0.2461, 3.07186, 0.12854, 3.8927, 1.80132, -2.1032, 0.12522,
            1.82281, -0.01869, 0.6095, 0.03259, -0.92056, 1.30187, -0.01208, -1.61693,
            0.0, 0.0,
        ),
        0.0,
        listwise=True,
    ),
    # scripts/bench_check_lake.py fit --lake results/lakes/tabfact-minilm --adapter claim_adapter_minilm.npz
    # (format 2; statement vectors through the query adapter, fitted first with fit-adapter)
    "minilm": RankModel(
        (
            2.03802, 0.74131, 8.92881, 8.92881, 0.11745, 3.16995, 0.06885, 4.15764,
            1.53936, 1.24201, -1.9002, 0.0052, -0.0, 1.90708, -0.26168, 0.70239,
            0.09469, -0.5748, -0.06542, 1.20591, -0.09149, -1.55563, -0.17375, 2.85316,
            3.12107, 0.11745, 3.16995, 0.06885, 1.53936, 1.24201, -1.9002, 0.0052,
            1.90708, -0.26168, 0.70239, 0.09469, -0.5748, 1.20591, -0.09149, -1.55563,
            2.85316, 3.12107,
        ),
        0.0,
        listwise=True,
        adapter="claim_adapter_minilm.npz",
    ),
    # the keyword-only model of the lexical run: for lakes whose encoder has no weights of its own
    KEYWORD_MODEL_KEY: RankModel(
        (
            5.7451, 0.53813, 0.0, 0.0, 0.15645, 3.18953, 0.12602, 4.57821,
            4.02164, 1.94534, -1.4897, 0.11948, 0.0, 2.15909, -0.01324, 0.57256,
            0.0416, -0.85745, -0.20699, 1.28653, -0.02555, -0.80583, 0.13184, 0.0,
            0.0, 0.15645, 3.18953, 0.12602, 4.02164, 1.94534, -1.4897, 0.11948,
            2.15909, -0.01324, 0.57256, 0.0416, -0.85745, 1.28653, -0.02555, -0.80583,
            0.0, 0.0,
        ),
        0.0,
        dense=False,
        listwise=True,
    ),
}
# fmt: on


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
    """What linking needs of one table: its distinct whole cells and headers by stem key, the
    stems found in cells, headers and caption, and for each of its first :data:`MAX_PROFILE_ROWS`
    rows the stems and the whole-cell keys it holds."""

    caption: str
    cells: dict[tuple[str, ...], str]
    headers: dict[tuple[str, ...], str]
    words: frozenset[str]
    caption_words: frozenset[str]
    header_words: frozenset[str] = frozenset()
    row_words: tuple[frozenset[str], ...] = ()
    row_cells: tuple[frozenset[tuple[str, ...]], ...] = ()


def _stems(text: str) -> tuple[str, ...]:
    return tuple(t.stem for t in tokenize(text[:MAX_STATEMENT_CHARS]) if t.text[0].isalnum())


def profile_table(table: Table) -> _Profile:
    """The linking profile of ``table`` (at most :data:`MAX_PROFILE_CELLS` distinct cells)."""
    return _profile(table.caption, table.header, ([cell.text for cell in row] for row in table.rows))


def _profile(caption: str, header: Sequence[str], rows: Iterable[Sequence[str]]) -> _Profile:
    cells: dict[tuple[str, ...], str] = {}
    words: set[str] = set()
    keys: dict[str, tuple[str, ...]] = {}
    row_words: list[frozenset[str]] = []
    row_cells: list[frozenset[tuple[str, ...]]] = []
    for row in rows:
        stems: set[str] = set()
        held: set[tuple[str, ...]] = set()
        for value in row:
            text = str(value).strip()
            if not text:
                continue
            key = keys.get(text)
            if key is None:
                if len(keys) >= MAX_PROFILE_CELLS:
                    continue
                key = keys[text] = _stems(text)
                if key:
                    words.update(key)
                    if len(key) <= MAX_NGRAM:
                        cells.setdefault(key, text)
            stems.update(key)
            if key and len(key) <= MAX_NGRAM:
                held.add(key)
        if len(row_words) < MAX_PROFILE_ROWS:
            row_words.append(frozenset(stems))
            row_cells.append(frozenset(held))
        elif len(keys) >= MAX_PROFILE_CELLS:
            break
    headers: dict[tuple[str, ...], str] = {}
    for name in header:
        key = _stems(str(name))
        if key:
            words.update(key)
            headers.setdefault(key, str(name))
    caption_words = frozenset(_stems(caption)) - STOP_WORDS
    header_words = frozenset(w for key in headers for w in key) - STOP_WORDS
    return _Profile(
        caption,
        cells,
        headers,
        frozenset(words),
        caption_words,
        header_words,
        tuple(row_words),
        tuple(row_cells),
    )


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


def pool_features(
    st: _Statement,
    profiles: Sequence[_Profile],
    ids: Sequence[str],
    keyword: dict[str, tuple[int, float]],
    dense: dict[str, float],
    column_cosine: dict[str, float] | None = None,
) -> tuple[np.ndarray, list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The :data:`FEATURES` matrix of one statement's candidate pool, and for each candidate the
    cells and headers the statement names (``dense``, ``column_cosine``: each candidate's cosine
    with the statement vector, and the best over its columns; empty without a dense search)."""
    if not ids:
        return np.zeros((0, len(FEATURES))), [], []
    best_keyword = max((s for _, s in keyword.values()), default=0.0)
    best_dense = max(dense.values(), default=0.0)
    n_content = max(1, sum(st.content))
    mentions = [st.mentions(p.cells) for p in profiles]
    holders: dict[tuple[str, ...], int] = {}
    for found, _ in mentions:
        for key in {key for _, _, key in found}:
            holders[key] = holders.get(key, 0) + 1
    content_stems = {s for s, c in zip(st.stems, st.content, strict=True) if c}
    content_list = [s for s, c in zip(st.stems, st.content, strict=True) if c]
    lead = content_list[:LEAD_WORDS]
    numbers = set(st.numbers)
    column_cosine = column_cosine or {}
    # word rarity: a content word found in few of the pool's tables tells them apart, one found in
    # all (the page's subject, repeated on every sibling table) does not
    anywheres = [p.words | p.caption_words for p in profiles]
    rarity = {
        w: math.log(len(ids) / max(1, sum(1 for words in anywheres if w in words))) for w in content_stems
    }
    total_rarity = sum(rarity[w] for w in content_list)
    rows, cells, columns = [], [], []
    for table_id, profile, anywhere, (found, taken) in zip(ids, profiles, anywheres, mentions, strict=True):
        header_found, header_taken = st.mentions(profile.headers)
        rank, score = keyword.get(table_id, (0, 0.0))
        covered = sum(1 for t, c in zip(taken, st.content, strict=True) if t and c)
        caption_hits = len(profile.caption_words & content_stems)
        found_keys = {key for _, _, key in found}
        best_row_words = max((len(content_stems & r) for r in profile.row_words), default=0)
        best_row_cells = max((len(found_keys & r) for r in profile.row_cells), default=0) if found_keys else 0
        best_row_numbers = max((len(numbers & r) for r in profile.row_words), default=0) if numbers else 0
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
                best_row_words / n_content,
                best_row_cells / len(found_keys) if found_keys else 0.0,
                float(best_row_cells),
                best_row_numbers / len(numbers) if numbers else 0.0,
                math.log1p(len(found_keys)),
                math.log1p(len(profile.cells)),
                sum(1 for s in lead if s in profile.caption_words) / max(1, len(lead)),
                sum(1 for s in lead if s in anywhere) / max(1, len(lead)),
                len(content_stems & profile.header_words) / n_content,
                math.log1p(len(profile.row_words)),
                column_cosine.get(table_id, 0.0),
                sum(rarity[w] for w in content_list if w in anywhere) / total_rarity
                if total_rarity > 0
                else 0.0,
            ]
        )
        cells.append(tuple(dict.fromkeys(profile.cells[key] for _, _, key in sorted(found))))
        columns.append(tuple(dict.fromkeys(profile.headers[key] for _, _, key in sorted(header_found))))
    base = np.asarray(rows, dtype=np.float64).reshape(len(ids), len(BASE_FEATURES))
    relative = base[:, _RELATIVE_INDEX] - (base[:, _RELATIVE_INDEX].max(axis=0) if len(ids) else 0.0)
    return np.hstack([base, relative]), cells, columns


class Retriever:
    """Claim -> table retrieval over one lake (reusable: it caches table profiles).

    Args:
        lake: an open :class:`~tabverify.lake.store.Lake`.
        model: the reranker's weights; default: the lake encoder's fitted set, or the keyword-only one.
        keyword_pool: tables taken from keyword search.
        dense_pool: tables taken from dense search (0: none; also none when the encoder has no text side).
        cache: table profiles kept in memory (a benchmark over a whole lake keeps them all).
        column_cosine: compute the ``column_cosine`` feature (it reads every candidate's column
            vectors); default: when the model weighs it.

    Raises:
        ModelError: the model names a query adapter that cannot be read or is for another encoder
            (the shipped one is package data: reinstall).
    """

    def __init__(
        self,
        lake: Any,
        model: RankModel | None = None,
        keyword_pool: int = KEYWORD_POOL,
        dense_pool: int = DENSE_POOL,
        cache: int = PROFILE_CACHE,
        column_cosine: bool | None = None,
    ) -> None:
        self.lake = lake
        self.cache = cache
        name = _encoder_name(lake)
        self.model = model or MODELS.get(name) or MODELS.get(KEYWORD_MODEL_KEY)
        self.keyword_pool = keyword_pool
        self.dense_pool = dense_pool if (self.model is None or self.model.dense) else 0
        self.adapter = _adapter(self.model, lake) if self.dense_pool else None
        self.column_cosine = (
            column_cosine
            if column_cosine is not None
            else self.model is not None and any(self.model.coef[i] for i in _COLUMN_INDEX)
        )
        self._profiles: OrderedDict[str, _Profile] = OrderedDict()
        self._columns: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cached_vectors = 0
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
            vectors = np.asarray(self.lake.encoder.encode_text(list(statements)), dtype=np.float32)
        except ModelError:
            self.dense_pool = 0
            return None
        return vectors if self.adapter is None else self.adapter.apply(vectors)

    def column_vectors(self, table_id: str) -> np.ndarray:
        """The column vectors of a lake table (cached; an empty matrix when the lake has none)."""
        with self._lock:
            cached = self._columns.get(table_id)
            if cached is not None:
                self._columns.move_to_end(table_id)
                return cached
        reader = getattr(self.lake, "column_vectors", None)
        built = np.zeros((0, 0), dtype=np.float16)
        if reader is not None:  # float16: half the memory, cosines right to about 1e-3
            built = np.asarray(reader(table_id)[:MAX_COSINE_COLUMNS], dtype=np.float16)
        with self._lock:
            other = self._columns.get(table_id)
            if other is not None:  # another thread read it meanwhile
                return other
            self._columns[table_id] = built
            self._cached_vectors += built.shape[0]
            while self._columns and (
                len(self._columns) > self.cache or self._cached_vectors > COLUMN_CACHE_VECTORS
            ):
                self._cached_vectors -= self._columns.popitem(last=False)[1].shape[0]
        return built

    def candidates(
        self, statement: str, vector: np.ndarray | None = None
    ) -> tuple[list[str], dict[str, tuple[int, float]], dict[str, float], dict[str, float]]:
        """The candidate ids of ``statement`` (keyword hits first, then dense ones), each keyword
        hit's (rank, score), and each candidate's dense cosine and best cosine with one of its
        column vectors (both empty without a dense search)."""
        text = statement[:MAX_STATEMENT_CHARS]
        hits = self.lake.search_keywords(keyword_terms(text), self.keyword_pool) if self.keyword_pool else []
        keyword = {hit.id: (rank, hit.score) for rank, hit in enumerate(hits, start=1)}
        ids = list(keyword)
        dense: dict[str, float] = {}
        column_cosine: dict[str, float] = {}
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
                query = np.asarray(vector, dtype=np.float32)
                for table_id in ids if self.column_cosine else ():
                    columns = self.column_vectors(table_id)
                    if columns.shape[0] and columns.shape[1] == query.shape[0]:
                        column_cosine[table_id] = float((columns.astype(np.float32) @ query).max())
        return ids, keyword, dense, column_cosine

    def pool(self, statement: str, vector: np.ndarray | None = None) -> _Pool:
        """The candidates of ``statement`` with their features (``vector``: its embedding, when
        computed in a batch beforehand)."""
        ids, keyword, dense, column_cosine = self.candidates(statement, vector)
        return self.featurize(statement, ids, keyword, dense, column_cosine)

    def featurize(
        self,
        statement: str,
        ids: list[str],
        keyword: dict[str, tuple[int, float]],
        dense: dict[str, float],
        column_cosine: dict[str, float] | None = None,
    ) -> _Pool:
        """The :data:`FEATURES` of the candidates ``ids`` of ``statement`` (see :meth:`candidates`)."""
        st = _Statement.of(statement[:MAX_STATEMENT_CHARS])
        features, cells, columns = pool_features(
            st, [self.profile(i) for i in ids], ids, keyword, dense, column_cosine
        )
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


@lru_cache(maxsize=4)
def _load_adapter(filename: str) -> Any:
    """The package's query adapter ``filename``, read once per process."""
    from tabverify.lake.adapter import QueryAdapter

    return QueryAdapter.load(filename)


def _adapter(model: RankModel | None, lake: Any) -> Any:
    """The query adapter ``model`` was fitted with, checked against the lake's vectors (None when
    it names none).

    Raises:
        ModelError: the adapter file cannot be read, or maps vectors of another encoder or size.
    """
    if model is None or model.adapter is None:
        return None
    adapter = _load_adapter(model.adapter)
    name = _encoder_name(lake)
    dim = getattr(lake, "dim", adapter.dim)
    if adapter.encoder != name or adapter.dim != dim:
        raise ModelError(
            f"the query adapter {model.adapter} is for {adapter.encoder} vectors of {adapter.dim} "
            f"dimensions, the lake's are {name} of {dim}; refit the reranker for this encoder"
        )
    return adapter


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
    :class:`~tabverify.verify.TableVerifier`; the default one when None); the first verdict that
    does not abstain (ENTAILED or REFUTED, with an evidence program: the statement's values linked
    to that table) is kept. When every candidate abstains (NOT ENOUGH INFO: no program, or nothing
    of the statement linked), the top table's NOT ENOUGH INFO verdict stands, with its notes saying
    what could not be linked. The verdict's ``evidence_table`` names the table used and
    ``runners_up`` the other candidates, best first.

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
    check_length = getattr(verifier, "check_length", None)
    if check_length is not None:  # refuse an over-long claim before spending the retrieval on it
        check_length(statement)
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
        decided = verdict.label is not Label.NOT_ENOUGH_INFO
        if chosen is None or (decided and chosen[0].label is Label.NOT_ENOUGH_INFO):
            chosen = (verdict, candidate.id)
        if decided:
            break
    if chosen is None:
        assert error is not None
        raise error
    verdict, used = chosen
    runners = tuple(c.id for c in found if c.id != used)
    return replace(verdict, evidence_table=used, runners_up=runners)


def lake_check_record(source: str, verdicts: Sequence[Verdict]) -> dict[str, object]:
    """The JSON record of statements checked against a lake (:func:`check_with_lake`), as
    ``tabverify check --lake --json`` prints it; ``source`` names the lake (a path, or the web
    server's configured name). Each verdict names its ``evidence_table`` and ``runners_up``."""
    return {"lake": source, "verdicts": [v.to_dict() for v in verdicts]}
