"""The lake on disk: build_lake (batched, resumable, incremental, locked) and Lake (metadata,
stored copies, vectors, sketches, FAISS, keyword search)."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tabverify.errors import LakeError
from tabverify.lake import store
from tabverify.lake.encoders import TableEmbedding, column_text, normalize_rows, table_text
from tabverify.lake.indexing import build_lake
from tabverify.lake.sketch import sketch_table
from tabverify.lake.store import COLUMNS_INDEX, INDEX_STATE, LOCK_FILE, META_FILE, TABLES_INDEX, Lake
from tabverify.table.model import Table
from tabverify.table.readers import load_table


class TinyEncoder:
    """A deterministic bag-of-words encoder (crc32 buckets) that counts the tables it encodes and
    can be told to fail after some batches (an interrupted run)."""

    name = "tiny"
    dim = 32
    version = "1"

    def __init__(self, fail_after: int | None = None) -> None:
        self.fail_after = fail_after
        self.batches = 0
        self.encoded: list[str] = []

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().replace(",", " ").replace(":", " ").replace(".", " ").split():
                out[i, zlib.crc32(word.encode()) % self.dim] += 1.0
        return normalize_rows(out)

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]:
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise KeyboardInterrupt  # as a Ctrl-C in the middle of encoding
        self.batches += 1
        self.encoded.extend(t.name for t in tables)
        result = []
        for table in tables:
            columns = self._embed([column_text(table, j) for j in range(table.n_columns)]).reshape(
                -1, self.dim
            )
            result.append(TableEmbedding(self._embed([table_text(table)])[0], columns))
        return result

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)


class OtherEncoder(TinyEncoder):
    name = "other"


class NewerTiny(TinyEncoder):
    version = "2"


class NoEncoding(TinyEncoder):
    """Fails the test if anything is encoded."""

    def encode(self, tables: Sequence[Table], rows: bool = False) -> list[TableEmbedding]:
        raise AssertionError("the lake re-encoded tables")


TABLES = {
    "teams.csv": "team,city,arena\nhawks,atlanta,state farm arena\nbulls,chicago,united center\n"
    "celtics,boston,td garden\n",
    "cities.csv": "city,state,population\natlanta,georgia,498715\nchicago,illinois,2746388\n"
    "boston,massachusetts,675647\ndenver,colorado,715522\n",
    "cameras.tsv": "title\tmanufacturer\tprice\ncanon eos 5d\tcanon\t2499\nnikon d850\tnikon\t2996\n",
    "sub/planets.csv": "planet,moons\nmercury,0\nvenus,0\nearth,1\nmars,2\n",
}


def write_tables(root: Path, tables: dict[str, str] = TABLES) -> Path:
    for name, content in tables.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return root


def many_tables(root: Path, n: int) -> Path:
    for i in range(n):
        (root / f"t{i:03d}.csv").parent.mkdir(parents=True, exist_ok=True)
        (root / f"t{i:03d}.csv").write_text(f"id,word{i}\n{i},value{i}\n{i + 1},other{i}\n")
    return root


def stored_ids(lake: Path) -> list[str]:
    connection = sqlite3.connect(lake / META_FILE)
    try:
        return [r[0] for r in connection.execute("SELECT id FROM tables")]
    finally:
        connection.close()


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    source = write_tables(tmp_path / "src")
    lake = tmp_path / "lake"
    summary = build_lake(source, lake, TinyEncoder(), captions={"teams.csv": "nba teams"})
    assert (summary.added, summary.updated, summary.unchanged, summary.removed, summary.skipped) == (
        4,
        0,
        0,
        0,
        [],
    )
    return source, lake


def test_a_lake_holds_metadata_copies_vectors_and_sketches(built: tuple[Path, Path]) -> None:
    source, path = built
    lake = Lake.open(path, TinyEncoder())
    assert len(lake) == 4
    assert lake.ids() == ["cameras.tsv", "cities.csv", "sub/planets.csv", "teams.csv"]
    info = lake.info("teams.csv")
    assert (info.id, info.name, info.caption, info.header) == (
        "teams.csv",
        "teams.csv",
        "nba teams",
        ("team", "city", "arena"),
    )
    assert (info.n_rows, info.n_columns, info.capped) == (3, 3, False)
    assert info.source == str(source / "teams.csv")
    copy = lake.load("sub/planets.csv")
    original = load_table(source / "sub" / "planets.csv")
    assert copy.header == original.header and copy.rows == original.rows
    vectors = lake.table_vectors(["teams.csv", "cities.csv"])
    assert vectors.shape == (2, 32)
    expected = TinyEncoder().encode([lake.load("teams.csv")])[0]
    np.testing.assert_allclose(vectors[0], expected.table, rtol=1e-6)
    np.testing.assert_allclose(lake.column_vectors("teams.csv"), expected.columns, rtol=1e-6)
    sketches = lake.sketches("cities.csv")
    assert [s.size for s in sketches] == [s.size for s in sketch_table(original_cities(source))]
    with pytest.raises(LakeError, match="no table"):
        lake.info("missing.csv")
    meta = json.loads((path / "lake.json").read_text())
    assert (meta["format"], meta["encoder"], meta["encoder_version"], meta["dim"]) == (
        store.FORMAT_VERSION,
        "tiny",
        "1",
        32,
    )


def original_cities(source: Path) -> Table:
    return load_table(source / "cities.csv")


def test_search_finds_the_right_tables(built: tuple[Path, Path]) -> None:
    source, path = built
    lake = Lake.open(path, TinyEncoder())
    vector = lake.table_vectors(["cameras.tsv"])[0]
    hits = lake.search_vector(vector, k=2)
    assert hits[0].id == "cameras.tsv" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 2 and hits[0].score >= hits[1].score
    assert "cameras.tsv" not in [h.id for h in lake.search_vector(vector, k=4, exclude={"cameras.tsv"})]
    allowed = lake.search_vector(vector, k=10, allow={"teams.csv", "cities.csv", "not-in-lake"})
    assert sorted(h.id for h in allowed) == ["cities.csv", "teams.csv"]
    assert lake.search_table(load_table(source / "sub" / "planets.csv"), k=1)[0].id == "sub/planets.csv"
    assert lake.search_text("planet moons", k=1)[0].id == "sub/planets.csv"
    column = lake.column_vectors("cities.csv")[0]
    column_hits = lake.search_columns(column, k=3)
    assert (column_hits[0].id, column_hits[0].column) == ("cities.csv", 0)
    assert all(h.id != "cities.csv" for h in lake.search_columns(column, k=3, exclude_tables={"cities.csv"}))
    assert lake.search_vector(vector, k=0) == []


def test_keyword_search_ranks_by_bm25_and_takes_any_text(built: tuple[Path, Path]) -> None:
    lake = Lake.open(built[1])
    assert lake.search_keywords("td garden", k=3)[0].id == "teams.csv"
    assert lake.search_keywords("massachusetts", k=3)[0].id == "cities.csv"
    assert lake.search_keywords("nba", k=3)[0].id == "teams.csv"  # the caption
    # FTS5 syntax and markup are words, never a query error
    assert lake.search_keywords('AND OR NOT "NEAR( * <b>canon</b> ^', k=3)[0].id == "cameras.tsv"
    assert lake.search_keywords("the arena of the hawks", k=3)[0].id == "teams.csv"  # stopwords left out
    assert lake.search_keywords("", k=3) == []
    assert lake.search_keywords("zzzz qqqq", k=3) == []


def test_join_index_finds_a_joinable_column(built: tuple[Path, Path]) -> None:
    lake = Lake.open(built[1])
    teams_city = lake.sketches("teams.csv")[1]
    hits = dict(lake.join_index().query(teams_city, 0.5))
    assert hits[("cities.csv", 0)] == pytest.approx(teams_city.containment_in(lake.sketches("cities.csv")[0]))
    assert hits[("cities.csv", 0)] >= 0.5
    assert lake.join_index() is lake.join_index()  # read once per opened lake


def test_a_corrupt_stored_sketch_is_one_line(tmp_path: Path, built: tuple[Path, Path]) -> None:
    connection = sqlite3.connect(built[1] / META_FILE)
    connection.execute("UPDATE columns SET sketch = x'00' WHERE rowid = (SELECT min(rowid) FROM columns)")
    connection.commit()
    connection.close()
    with pytest.raises(LakeError, match="sketch is corrupt; rebuild the lake"):
        Lake.open(built[1]).join_index()


def test_the_lake_encoder_is_loaded_by_name_on_first_use(tmp_path: Path) -> None:
    source = write_tables(tmp_path / "src")
    build_lake(source, tmp_path / "lake", "lexical")
    lake = Lake.open(tmp_path / "lake")
    assert lake.search_text("planet moons mars", k=1)[0].id == "sub/planets.csv"
    assert lake.encoder.name == "lexical"


def test_an_interrupted_run_resumes_without_duplicates_or_redone_work(tmp_path: Path) -> None:
    source = many_tables(tmp_path / "src", 25)
    lake = tmp_path / "lake"
    with pytest.raises(KeyboardInterrupt):
        build_lake(source, lake, TinyEncoder(fail_after=2), batch=4)
    assert len(stored_ids(lake)) == 8  # two committed batches of four
    first = set(stored_ids(lake))
    again = TinyEncoder()
    summary = build_lake(source, lake, again, batch=4)
    assert (summary.added, summary.unchanged, summary.tables) == (17, 8, 25)
    assert len(again.encoded) == 17 and not first & set(again.encoded)
    ids = stored_ids(lake)
    assert len(ids) == len(set(ids)) == 25
    opened = Lake.open(lake, TinyEncoder())
    assert len(opened) == 25
    hits = opened.search_vector(opened.table_vectors(["t003.csv"])[0], k=25)
    assert len({h.id for h in hits}) == 25


def test_a_rerun_encodes_only_new_and_changed_tables_and_drops_removed_ones(built: tuple[Path, Path]) -> None:
    source, path = built
    (source / "new.csv").write_text("animal,legs\ncat,4\nbird,2\n")
    (source / "cameras.tsv").write_text("title\tmanufacturer\tprice\nsony a7\tsony\t1998\n")
    (source / "sub" / "planets.csv").unlink()
    encoder = TinyEncoder()
    summary = build_lake(source, path, encoder, captions={"teams.csv": "nba teams"})
    assert (summary.added, summary.updated, summary.unchanged, summary.removed) == (1, 1, 2, 1)
    assert sorted(encoder.encoded) == ["cameras.tsv", "new.csv"]
    lake = Lake.open(path, TinyEncoder())
    assert lake.ids() == ["cameras.tsv", "cities.csv", "new.csv", "teams.csv"]
    assert [c.text for c in lake.load("cameras.tsv").column(0)] == ["sony a7"]
    assert "sub/planets.csv" not in [h.id for h in lake.search_text("planet moons", k=10)]
    assert stored_ids(path).count("cameras.tsv") == 1
    # nothing changed: nothing encoded
    idle = TinyEncoder()
    summary = build_lake(source, path, idle, captions={"teams.csv": "nba teams"})
    assert (summary.added, summary.updated, summary.unchanged, summary.removed) == (0, 0, 4, 0)
    assert idle.encoded == []


def test_a_caption_change_re_encodes_the_table(built: tuple[Path, Path]) -> None:
    source, path = built
    encoder = TinyEncoder()
    summary = build_lake(source, path, encoder, captions={"teams.csv": "basketball teams"})
    assert (summary.updated, encoder.encoded) == (1, ["teams.csv"])
    assert Lake.open(path).info("teams.csv").caption == "basketball teams"


def test_unreadable_tables_are_skipped_and_reported(tmp_path: Path) -> None:
    source = write_tables(tmp_path / "src")
    (source / "binary.csv").write_bytes(b"a,b\n\x00\x01,\x02\n")
    (source / "ragged.csv").write_text("a,b\n1,2,3\n")
    (source / "broken.parquet").write_bytes(b"PAR1 but not really parquet")
    summary = build_lake(source, tmp_path / "lake", TinyEncoder())
    assert summary.added == 4
    reasons = dict(summary.skipped)
    assert set(reasons) == {"binary.csv", "ragged.csv", "broken.parquet"}
    assert "binary" in reasons["binary.csv"] and "ragged" in reasons["ragged.csv"]
    assert all("\n" not in r and len(r) <= 300 for r in reasons.values())
    assert Lake.open(tmp_path / "lake").ids() == ["cameras.tsv", "cities.csv", "sub/planets.csv", "teams.csv"]


def test_a_table_that_turns_unreadable_leaves_the_lake(built: tuple[Path, Path]) -> None:
    source, path = built
    (source / "cities.csv").write_text("city,state\natlanta,georgia,usa\n")
    summary = build_lake(source, path, TinyEncoder(), captions={"teams.csv": "nba teams"})
    assert [s[0] for s in summary.skipped] == ["cities.csv"]
    assert summary.removed == 1 and "1 removed, 1 skipped" in summary.line()
    assert "cities.csv" not in Lake.open(path).ids()


def test_a_file_name_that_is_not_utf8_is_skipped_and_the_rest_indexed(tmp_path: Path) -> None:
    source = write_tables(tmp_path / "src")
    (source / os.fsdecode(b"\xff\xfebad.csv")).write_text("a,b\n1,2\n")
    summary = build_lake(source, tmp_path / "lake", TinyEncoder())
    assert summary.added == 4
    assert dict(summary.skipped) == {
        "\\xff\\xfebad.csv": "the file name is not valid UTF-8; rename the file to index it"
    }
    assert build_lake(source, tmp_path / "lake", TinyEncoder()).unchanged == 4  # a rerun is not stuck on it


def test_another_encoder_or_version_is_refused_with_how_to_rebuild(built: tuple[Path, Path]) -> None:
    source, path = built
    for encoder in (OtherEncoder(), NewerTiny()):
        with pytest.raises(
            LakeError, match=r"built with encoder tiny version 1.*rebuild with: tabverify lake index"
        ):
            Lake.open(path, encoder)
        with pytest.raises(LakeError, match=r"rebuild with: tabverify lake index SOURCE --encoder"):
            build_lake(source, path, encoder)
    with pytest.raises(LakeError, match=r"built with encoder tiny version 1, not lexical"):
        Lake.open(path, "lexical")
    meta = json.loads((path / "lake.json").read_text())
    (path / "lake.json").write_text(json.dumps({**meta, "format": 99}))
    with pytest.raises(LakeError, match="format version 99"):
        Lake.open(path)


def test_missing_or_stale_faiss_files_are_rebuilt_without_encoding(built: tuple[Path, Path]) -> None:
    _, path = built
    before = Lake.open(path, TinyEncoder()).search_text("planet moons", k=4)
    for name in (TABLES_INDEX, COLUMNS_INDEX, INDEX_STATE):
        (path / name).unlink()
    lake = Lake.open(path, NoEncoding())
    assert lake.search_vector(TinyEncoder().encode_text(["planet moons"])[0], k=4) == before
    assert (path / TABLES_INDEX).is_file() and (path / COLUMNS_INDEX).is_file()
    # a stale index (an interrupted run committed more since): rebuilt from SQLite
    (path / INDEX_STATE).write_text(json.dumps({"generation": "old", "tables": 4, "columns": 12}))
    lake = Lake.open(path, NoEncoding())
    assert json.loads((path / INDEX_STATE).read_text())["generation"] != "old"
    assert len(lake.search_vector(lake.table_vectors(["teams.csv"])[0], k=10)) == 4
    # garbage index files: rebuilt too
    (path / TABLES_INDEX).write_bytes(b"garbage")
    assert len(Lake.open(path, NoEncoding())) == 4
    (path / COLUMNS_INDEX).write_bytes(b"garbage")
    lake = Lake.open(path, NoEncoding())
    hits = lake.search_columns(lake.column_vectors("cities.csv")[0], k=2)
    assert (hits[0].id, hits[0].column) == ("cities.csv", 0)
    assert (path / COLUMNS_INDEX).stat().st_size > 100


def test_not_a_lake_or_a_corrupt_one_is_one_line(tmp_path: Path, built: tuple[Path, Path]) -> None:
    with pytest.raises(LakeError, match="no such lake"):
        Lake.open(tmp_path / "missing")
    (tmp_path / "folder").mkdir()
    with pytest.raises(LakeError, match="not a lake"):
        Lake.open(tmp_path / "folder")
    _, path = built
    (path / META_FILE).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LakeError, match="corrupt lake") as caught:
        Lake.open(path)
    assert "\n" not in str(caught.value)
    (path / "lake.json").write_text("{not json")
    with pytest.raises(LakeError, match="corrupt lake"):
        Lake.open(path)


def test_out_must_be_a_lake_or_a_new_folder(tmp_path: Path) -> None:
    source = write_tables(tmp_path / "src")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(LakeError, match="not a lake and is not empty"):
        build_lake(source, tmp_path / "busy", TinyEncoder())
    with pytest.raises(LakeError, match="does not exist"):
        build_lake(source, tmp_path / "no" / "lake", TinyEncoder())


def test_temporary_files_of_a_killed_run_are_cleaned_up(built: tuple[Path, Path]) -> None:
    source, path = built
    leftover = path / f".{TABLES_INDEX}.abc123"
    leftover.write_bytes(b"half an index")
    (path / "notes.txt").write_text("the user's own file")
    build_lake(source, path, TinyEncoder(), captions={"teams.csv": "nba teams"})
    assert not leftover.exists() and (path / "notes.txt").exists()


def test_two_runs_on_one_lake_are_refused(built: tuple[Path, Path]) -> None:
    source, path = built
    with open(path / LOCK_FILE, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        with pytest.raises(LakeError, match="another `tabverify lake index` run"):
            build_lake(source, path, TinyEncoder())
    assert build_lake(source, path, TinyEncoder(), captions={"teams.csv": "nba teams"}).unchanged == 4


def test_worker_processes_give_the_same_lake(tmp_path: Path) -> None:
    source = many_tables(tmp_path / "src", 40)
    (source / "ragged.csv").write_text("a,b\n1,2,3\n")
    serial = build_lake(source, tmp_path / "one", TinyEncoder(), jobs=1)
    parallel = build_lake(source, tmp_path / "two", TinyEncoder(), jobs=2, batch=8)
    assert (serial.added, serial.skipped) == (parallel.added, parallel.skipped) == (40, serial.skipped)
    one, two = Lake.open(tmp_path / "one"), Lake.open(tmp_path / "two")
    assert one.ids() == two.ids()
    np.testing.assert_array_equal(one.table_vectors(one.ids()), two.table_vectors(two.ids()))


def test_stored_copies_are_capped_and_say_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(store, "MAX_STORED_ROWS", 5)
    source = tmp_path / "src"
    source.mkdir()
    (source / "long.csv").write_text("n,square\n" + "".join(f"{i},{i * i}\n" for i in range(12)))
    build_lake(source, tmp_path / "lake", TinyEncoder())
    lake = Lake.open(tmp_path / "lake")
    info = lake.info("long.csv")
    assert (info.n_rows, info.capped, lake.load("long.csv").n_rows) == (12, True, 5)


def test_a_database_source_becomes_a_lake(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "shop.sqlite")
    connection.execute("CREATE TABLE customers (name TEXT, city TEXT)")
    connection.executemany("INSERT INTO customers VALUES (?, ?)", [("ann", "boston"), ("bob", "denver")])
    connection.execute("CREATE TABLE orders (customer TEXT, total REAL)")
    connection.executemany("INSERT INTO orders VALUES (?, ?)", [("ann", 10.5), ("bob", 3.0)])
    connection.commit()
    connection.close()
    summary = build_lake(tmp_path / "shop.sqlite", tmp_path / "lake", TinyEncoder())
    assert (summary.added, summary.skipped) == (2, [])
    lake = Lake.open(tmp_path / "lake")
    assert lake.ids() == ["customers", "orders"]
    assert [c.text for c in lake.load("orders").column(1)] == ["10.5", "3"]
    assert lake.search_keywords("denver", k=1)[0].id == "customers"
    # unchanged database: nothing re-encoded
    assert build_lake(tmp_path / "shop.sqlite", tmp_path / "lake", TinyEncoder()).unchanged == 2
