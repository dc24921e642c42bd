"""The built-in table encoders and get_table_encoder."""

from __future__ import annotations

import numpy as np
import pytest

from tabverify.errors import ModelError
from tabverify.lake.encoders import (
    MAX_TEXT_CHARS,
    TABLE_ENCODERS,
    LexicalTableEncoder,
    TableEmbedding,
    get_table_encoder,
    table_text,
)
from tabverify.table.model import Table
from tabverify.text.encoders import UnknownEncoderError

ELECTION = Table.from_rows(
    ["district", "incumbent", "party", "first elected"],
    [
        ["ohio 1", "john smith", "democratic", "1990"],
        ["ohio 2", "mary jones", "republican", "1986"],
        ["ohio 3", "alan brown", "democratic", "1994"],
    ],
    caption="ohio house elections",
)
PRODUCTS = Table.from_rows(
    ["title", "manufacturer", "price"],
    [
        ["canon eos 5d mark iv body", "canon", "2499.00"],
        ["nikon d850 dslr", "nikon", "2996.95"],
        ["sony a7 iii kit", "sony", "1998"],
    ],
    caption="cameras",
)
EMPTY_COLUMN = Table.from_rows(["name", "notes"], [["a", ""], ["b", ""]])
HEADER_ONLY = Table.from_rows(["alpha", "beta"], [])
NO_COLUMNS = Table((), (), caption="nothing")


def check_embedding(embedding: TableEmbedding, table: Table, dim: int, rows: bool) -> None:
    assert embedding.table.shape == (dim,)
    assert embedding.table.dtype == np.float32
    assert embedding.columns.shape == (table.n_columns, dim)
    for vector in [embedding.table, *embedding.columns, *(embedding.rows if rows else [])]:
        norm = float(np.linalg.norm(vector))
        assert norm == pytest.approx(1.0, abs=1e-5) or norm == 0.0
    if rows:
        assert embedding.rows is not None and embedding.rows.shape == (table.n_rows, dim)
    else:
        assert embedding.rows is None


def test_names_are_read_loosely_and_unknown_names_list_the_known_ones() -> None:
    assert isinstance(get_table_encoder("Lexical"), LexicalTableEncoder)
    assert isinstance(get_table_encoder(" LEXICAL "), LexicalTableEncoder)
    with pytest.raises(UnknownEncoderError, match="unknown table encoder 'bert'.*lexical") as info:
        get_table_encoder("bert")
    assert isinstance(info.value, ModelError) and isinstance(info.value, ValueError)
    assert all(name in str(info.value) for name in TABLE_ENCODERS)
    with pytest.raises(TypeError, match="table encoder"):
        get_table_encoder(object())  # type: ignore[arg-type]


def test_a_third_party_encoder_is_returned_as_is() -> None:
    class Mine:
        name, dim, version = "mine", 4, "1"

        def encode(self, tables, rows=False):
            return []

        def encode_text(self, texts):
            return np.zeros((len(texts), 4), np.float32)

    mine = Mine()
    assert get_table_encoder(mine) is mine  # type: ignore[arg-type]


def test_lexical_shapes_norms_and_edge_tables() -> None:
    encoder = get_table_encoder("lexical")
    assert (encoder.name, encoder.dim, encoder.version) == ("lexical", 1024, "1")
    tables = [ELECTION, PRODUCTS, EMPTY_COLUMN, HEADER_ONLY, NO_COLUMNS]
    embeddings = encoder.encode(tables, rows=True)
    assert len(embeddings) == len(tables)
    for embedding, table in zip(embeddings, tables, strict=True):
        check_embedding(embedding, table, encoder.dim, rows=True)
    assert embeddings[3].rows is not None and embeddings[3].rows.shape == (0, 1024)
    assert float(np.linalg.norm(embeddings[3].table)) == pytest.approx(1.0, abs=1e-5)
    assert embeddings[4].columns.shape == (0, 1024)
    for embedding, table in zip(encoder.encode(tables), tables, strict=True):
        check_embedding(embedding, table, encoder.dim, rows=False)
    assert encoder.encode([]) == []
    assert encoder.encode_text([]).shape == (0, 1024)


def test_lexical_is_deterministic_whatever_the_batch() -> None:
    encoder = LexicalTableEncoder()
    alone = encoder.encode([PRODUCTS], rows=True)[0]
    batched = LexicalTableEncoder().encode([ELECTION, PRODUCTS, HEADER_ONLY], rows=True)[1]
    np.testing.assert_array_equal(alone.table, batched.table)
    np.testing.assert_array_equal(alone.columns, batched.columns)
    assert alone.rows is not None and batched.rows is not None
    np.testing.assert_array_equal(alone.rows, batched.rows)


def test_lexical_queries_land_near_their_table_and_exact_tokens_count() -> None:
    encoder = LexicalTableEncoder()
    election, products = encoder.encode([ELECTION, PRODUCTS], rows=True)
    queries = encoder.encode_text(["which incumbent was first elected in ohio", "nikon d850 price"])
    assert queries.shape == (2, 1024)
    assert queries[0] @ election.table > queries[0] @ products.table
    assert queries[1] @ products.table > queries[1] @ election.table
    assert products.rows is not None
    assert int(np.argmax(products.rows @ queries[1])) == 1  # the row with the model number


def test_huge_cells_are_cut() -> None:
    huge = Table.from_rows(["text"], [["word " * 100_000]], caption="x" * 100_000)
    assert len(table_text(huge)) <= MAX_TEXT_CHARS
    embedding = LexicalTableEncoder().encode([huge], rows=True)[0]
    check_embedding(embedding, huge, 1024, rows=True)
