"""Table sources of a lake: folders of files (CSV/TSV/JSON/TabFact/Parquet) and databases."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import duckdb
import pytest

from tabverify import files
from tabverify.errors import LakeError, TableError
from tabverify.lake import sources
from tabverify.lake.sources import enumerate_source, fingerprint_content, load_captions
from tests.postgres import postgres_server  # noqa: F401  (pytest fixture)


def write_folder(root: Path) -> Path:
    """A folder of every kind of table file, a nested folder, and files that are not tables."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "teams.csv").write_text("team,city\nhawks,atlanta\nbulls,chicago\n", encoding="utf-8")
    (root / "scores.tsv").write_text("game\tpoints\n1\t101\n2\t97\n", encoding="utf-8")
    (root / "people.json").write_text(json.dumps([{"name": "ann", "age": 31}, {"name": "bob", "age": 42}]))
    (root / "nested").mkdir()
    (root / "nested" / "1-100-1.html.csv").write_text(
        "district#incumbent\nohio 1#john smith\n", encoding="utf-8"
    )
    connection = duckdb.connect()
    target = str(root / "nested" / "prices.parquet")
    connection.execute(
        f"COPY (SELECT * FROM (VALUES ('canon', 2499.5), ('nikon', 2996.0)) t(brand, price)) TO '{target}' (FORMAT parquet)"
    )
    connection.close()
    (root / "README.txt").write_text("not a table\n")
    (root / ".hidden.csv").write_text("a,b\n1,2\n")
    return root


def test_a_folder_lists_every_table_file_sorted_with_relative_ids(tmp_path: Path) -> None:
    listing = enumerate_source(write_folder(tmp_path / "src"))
    assert [t.id for t in listing.tables] == [
        "nested/1-100-1.html.csv",
        "nested/prices.parquet",
        "people.json",
        "scores.tsv",
        "teams.csv",
    ]
    assert listing.skipped == []
    loaded = {t.id: t.load() for t in listing.tables}
    assert loaded["teams.csv"].header == ("team", "city")
    assert [c.text for c in loaded["teams.csv"].column(1)] == ["atlanta", "chicago"]
    assert loaded["scores.tsv"].header == ("game", "points")
    assert loaded["people.json"].n_rows == 2
    assert loaded["nested/1-100-1.html.csv"].header == ("district", "incumbent")
    parquet = loaded["nested/prices.parquet"]
    assert parquet.header == ("brand", "price")
    assert [[c.text for c in row] for row in parquet.rows] == [["canon", "2499.5"], ["nikon", "2996.0"]]
    assert all(table.name == table_id for table_id, table in loaded.items())


def test_captions_apply_by_file_name_in_the_tabfact_shape(tmp_path: Path) -> None:
    root = write_folder(tmp_path / "src")
    captions_file = tmp_path / "table_to_page.json"
    captions_file.write_text(
        json.dumps(
            {"1-100-1.html.csv": ["ohio house elections", "https://example.org"], "teams.csv": "nba teams"}
        )
    )
    captions = load_captions(captions_file)
    listing = enumerate_source(root, captions)
    loaded = {t.id: t.load() for t in listing.tables}
    assert loaded["nested/1-100-1.html.csv"].caption == "ohio house elections"
    assert loaded["teams.csv"].caption == "nba teams"
    assert loaded["scores.tsv"].caption == ""
    # a caption is part of what a table is: changing it changes the fingerprint's content
    plain = {t.id: t.fingerprint for t in enumerate_source(root).tables}
    captioned = {t.id: t.fingerprint for t in listing.tables}
    assert fingerprint_content(plain["teams.csv"]) != fingerprint_content(captioned["teams.csv"])
    assert fingerprint_content(plain["scores.tsv"]) == fingerprint_content(captioned["scores.tsv"])


@pytest.mark.parametrize("content", ["[1, 2]", '{"a": 3}', "not json"])
def test_a_bad_captions_file_is_one_lake_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "captions.json"
    path.write_text(content)
    with pytest.raises(LakeError, match="captions|JSON|json"):
        load_captions(path)


def test_fingerprints_follow_content_not_only_the_clock(tmp_path: Path) -> None:
    root = write_folder(tmp_path / "src")
    before = {t.id: t.fingerprint for t in enumerate_source(root).tables}
    os.utime(root / "teams.csv", ns=(1_000_000_000, 1_000_000_000))  # touched: same content
    (root / "scores.tsv").write_text("game\tpoints\n1\t101\n2\t98\n", encoding="utf-8")  # changed
    after = {t.id: t.fingerprint for t in enumerate_source(root).tables}
    assert after["teams.csv"] != before["teams.csv"]
    assert fingerprint_content(after["teams.csv"]) == fingerprint_content(before["teams.csv"])
    assert fingerprint_content(after["scores.tsv"]) != fingerprint_content(before["scores.tsv"])
    assert after["people.json"] == before["people.json"]


def test_links_devices_empty_and_huge_files_are_skipped_with_a_reason(tmp_path: Path, monkeypatch) -> None:
    root = write_folder(tmp_path / "src")
    outside = tmp_path / "outside.csv"
    outside.write_text("a,b\n1,2\n")
    (root / "link.csv").symlink_to(outside)
    os.mkfifo(root / "pipe.csv")
    (root / "empty.csv").write_text("")
    (root / "huge.csv").write_text("a,b\n" + "1,2\n" * 100)
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 200)
    listing = enumerate_source(root)
    reasons = dict(listing.skipped)
    assert set(reasons) == {"link.csv", "pipe.csv", "empty.csv", "huge.csv"}
    assert "symbolic link" in reasons["link.csv"]
    assert "not a regular file" in reasons["pipe.csv"]
    assert "empty" in reasons["empty.csv"]
    assert "limit" in reasons["huge.csv"]
    assert "teams.csv" in {t.id for t in listing.tables}


def test_unreadable_tables_fail_on_load_with_one_line(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / "binary.csv").write_bytes(b"a,b\n\x00\x01\x02,\xff\n")
    (root / "ragged.csv").write_text("a,b\n1,2,3\n")
    (root / "broken.parquet").write_bytes(b"this is not parquet")
    listing = enumerate_source(root)
    assert [t.id for t in listing.tables] == ["binary.csv", "broken.parquet", "ragged.csv"]
    for table in listing.tables:
        with pytest.raises(TableError) as caught:
            table.load()
        assert "\n" not in str(caught.value)


def test_a_missing_source_or_an_unknown_file_is_a_lake_error(tmp_path: Path) -> None:
    with pytest.raises(LakeError, match="no such file or folder"):
        enumerate_source(tmp_path / "missing")
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(LakeError, match="not a folder, a table file"):
        enumerate_source(other)


def test_a_single_table_file_is_a_source_of_one_table(tmp_path: Path) -> None:
    path = tmp_path / "one.csv"
    path.write_text("a,b\n1,2\n")
    listing = enumerate_source(path)
    assert [t.id for t in listing.tables] == ["one.csv"]
    assert listing.tables[0].load().n_rows == 1


def test_the_lake_folder_inside_the_source_is_left_out(tmp_path: Path) -> None:
    root = write_folder(tmp_path / "src")
    (root / "lake").mkdir()
    (root / "lake" / "inside.csv").write_text("a,b\n1,2\n")
    assert "lake/inside.csv" in {t.id for t in enumerate_source(root).tables}
    assert "lake/inside.csv" not in {t.id for t in enumerate_source(root, exclude=root / "lake").tables}


def make_duckdb(path: Path) -> Path:
    connection = duckdb.connect(str(path))
    connection.execute("CREATE TABLE teams (team VARCHAR, city VARCHAR, founded INTEGER)")
    connection.execute("INSERT INTO teams VALUES ('hawks', 'atlanta', 1946), ('bulls', 'chicago', 1966)")
    connection.execute("CREATE TABLE games AS SELECT range AS game, range * 2.5 AS points FROM range(50)")
    connection.execute("CREATE VIEW big_games AS SELECT * FROM games WHERE points > 100")
    connection.close()
    return path


def make_sqlite(path: Path) -> Path:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE people (name TEXT, age INTEGER, note TEXT)")
    connection.executemany("INSERT INTO people VALUES (?, ?, ?)", [("ann", 31, None), ("bob", 42, "x")])
    connection.commit()
    connection.close()
    return path


def test_a_duckdb_database_gives_its_tables_not_its_views(tmp_path: Path) -> None:
    listing = enumerate_source(make_duckdb(tmp_path / "sports.duckdb"))
    assert listing.kind == "database"
    assert [t.id for t in listing.tables] == ["games", "teams"]
    teams = next(t for t in listing.tables if t.id == "teams").load()
    assert teams.header == ("team", "city", "founded")
    assert [[c.text for c in row] for row in teams.rows] == [
        ["hawks", "atlanta", "1946"],
        ["bulls", "chicago", "1966"],
    ]
    assert teams.name == "teams"


def test_a_sqlite_database_gives_its_tables_with_empty_nulls(tmp_path: Path) -> None:
    listing = enumerate_source(make_sqlite(tmp_path / "people.sqlite"), {"people": "staff list"})
    assert [t.id for t in listing.tables] == ["people"]
    people = listing.tables[0].load()
    assert people.caption == "staff list"
    assert [[c.text for c in row] for row in people.rows] == [["ann", "31", ""], ["bob", "42", "x"]]


def test_database_rows_are_capped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sources, "MAX_DB_ROWS", 10)
    listing = enumerate_source(make_duckdb(tmp_path / "sports.duckdb"))
    games = next(t for t in listing.tables if t.id == "games").load()
    assert games.n_rows == 10


def test_a_database_fingerprint_changes_with_its_rows(tmp_path: Path) -> None:
    path = make_sqlite(tmp_path / "people.sqlite")
    before = enumerate_source(path).tables[0].fingerprint
    assert enumerate_source(path).tables[0].fingerprint == before
    connection = sqlite3.connect(path)
    connection.execute("UPDATE people SET age = 32 WHERE name = 'ann'")
    connection.commit()
    connection.close()
    assert fingerprint_content(enumerate_source(path).tables[0].fingerprint) != fingerprint_content(before)


def test_a_postgresql_url_gives_its_tables_and_never_stores_a_password(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from tabverify.lake.indexing import build_lake
    from tabverify.lake.store import Lake
    from tests.lake.test_store import TinyEncoder

    server = request.getfixturevalue("postgres_server")
    url = server.reader_url.replace("reader@", "reader:s3cret-pw@")
    listing = enumerate_source(url)
    assert "scores" in [t.id for t in listing.tables]
    scores = next(t for t in listing.tables if t.id == "scores").load()
    assert scores.header == ("id", "team", "points")
    assert sorted(c.text for c in scores.column(1)) == ["crows", "hawks", "owls"]
    build_lake(url, tmp_path / "lake", TinyEncoder())
    lake = Lake.open(tmp_path / "lake")
    assert "scores" in lake.ids()
    assert "s3cret-pw" not in lake.info("scores").source
    assert b"s3cret-pw" not in (tmp_path / "lake" / "meta.sqlite").read_bytes()
