"""The generated formula_1 sample: the real ClaimDB schema, consistent rows, and claims whose
reference SQL returns their recorded answers through the safe query layer."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tabverify.claimdb import load_schemas, read_claims
from tabverify.claimdb.sample import DB_ID, SamplePaths, build_sample, create_table_sql, main
from tabverify.database import Database, connect
from tabverify.errors import DatasetError
from tabverify.verify.verdict import Label, NeiSubtype
from tests.claimdb.conftest import CLAIMDB, CLAIMDB_SCHEMA, sample_records
from tests.conftest import needs_dataset

data = pytest.mark.data
needs_claimdb = needs_dataset(CLAIMDB)


def ask(db: Database, sql: str) -> list[list[object]]:
    result = db.query(sql, max_rows=10_000)
    assert result.ok, (sql, result.error)
    assert not result.truncated, sql
    return [list(row) for row in result.rows]


def q(name: str) -> str:
    return '"' + name + '"'


@pytest.fixture(scope="module")
def db(claimdb_sample: SamplePaths):
    with connect(claimdb_sample.db_path) as database:
        yield database


# ---- the schema --------------------------------------------------------------------------------


@data
@needs_claimdb
def test_every_table_column_and_key_of_the_real_schema(db: Database) -> None:
    real = load_schemas(CLAIMDB_SCHEMA).get(DB_ID)
    built = db.schema()
    assert sorted(built.table_names) == sorted(real.table_names)
    for table in real.tables:
        mine = built.table(table.name)
        assert mine.name == table.name
        assert [c.name for c in mine.columns] == [c.name for c in table.columns], table.name
        assert [c.type.lower() for c in mine.columns] == [c.type.lower() for c in table.columns], table.name
        assert mine.primary_key == table.primary_key, table.name
        assert set(mine.foreign_keys) == set(table.foreign_keys), table.name
        assert mine.row_count, f"{table.name} is empty"


@data
@needs_claimdb
def test_descriptions_and_schema_folder_reproduce_the_real_ones(
    claimdb_sample: SamplePaths, db: Database
) -> None:
    real = load_schemas(CLAIMDB_SCHEMA).get(DB_ID)
    assert load_schemas(claimdb_sample.schema_dir).get(DB_ID) == real
    assert list(load_schemas(claimdb_sample.schema_dir).schemas) == [DB_ID]
    built = db.schema()
    assert built.warnings == ()
    for table in real.tables:
        described = {c.name: (c.description, c.value_description) for c in built.table(table.name).columns}
        assert described == {c.name: (c.description, c.value_description) for c in table.columns}
    assert claimdb_sample.db_path == claimdb_sample.root / DB_ID / f"{DB_ID}.sqlite"
    assert claimdb_sample.db_id == DB_ID


@data
@needs_claimdb
def test_foreign_keys_hold(db: Database) -> None:
    real = load_schemas(CLAIMDB_SCHEMA).get(DB_ID)
    checked = 0
    for table in real.tables:
        for key in table.foreign_keys:
            (column,), (ref_column,) = key.columns, key.ref_columns
            orphans = ask(
                db,
                f"SELECT COUNT(*) FROM {q(table.name)} AS c WHERE c.{q(column)} IS NOT NULL AND NOT EXISTS "
                f"(SELECT 1 FROM {q(key.ref_table)} AS p WHERE p.{q(ref_column)} = c.{q(column)})",
            )
            assert orphans == [[0]], f"{table.name}.{column} -> {key.ref_table}.{ref_column}"
            checked += 1
    assert checked == 19
    # the driver and constructor of a result are the ones that qualified for that race
    unmatched = (
        "SELECT COUNT(*) FROM results AS r LEFT JOIN qualifying AS q ON q.raceId = r.raceId "
        "AND q.driverId = r.driverId AND q.constructorId = r.constructorId AND q.position = r.grid "
        "WHERE q.qualifyId IS NULL"
    )
    assert ask(db, unmatched) == [[0]]


@data
@needs_claimdb
def test_rows_add_up(db: Database) -> None:
    lap_races = "r.raceId IN (SELECT raceId FROM lapTimes)"
    same_car = "l.raceId = r.raceId AND l.driverId = r.driverId"
    broken = [
        # lap times: one row per completed lap, summing to the race time of cars on the lead lap
        f"SELECT COUNT(*) FROM results AS r WHERE {lap_races} "
        f"AND r.laps != (SELECT COUNT(*) FROM lapTimes AS l WHERE {same_car})",
        f"SELECT COUNT(*) FROM results AS r WHERE {lap_races} AND r.milliseconds IS NOT NULL "
        f"AND r.milliseconds != (SELECT SUM(milliseconds) FROM lapTimes AS l WHERE {same_car})",
        # the standings after a season's last race add up that season's results
        "SELECT COUNT(*) FROM driverStandings AS s JOIN races AS ra ON ra.raceId = s.raceId "
        "WHERE ra.round = (SELECT MAX(round) FROM races WHERE year = ra.year) AND s.points != "
        "(SELECT SUM(r.points) FROM results AS r JOIN races AS x ON x.raceId = r.raceId "
        "WHERE x.year = ra.year AND r.driverId = s.driverId)",
        "SELECT COUNT(*) FROM constructorResults AS c WHERE c.points != (SELECT SUM(r.points) "
        "FROM results AS r WHERE r.raceId = c.raceId AND r.constructorId = c.constructorId)",
        # every race has a finisher
        "SELECT COUNT(*) FROM races AS ra WHERE NOT EXISTS "
        "(SELECT 1 FROM results AS r WHERE r.raceId = ra.raceId AND r.statusId = 1)",
    ]
    for sql in broken:
        assert ask(db, sql) == [[0]], sql
    # 20 cars in each of the 24 races, one winner each
    per_race = "SELECT raceId, COUNT(*) AS n FROM results GROUP BY raceId"
    assert ask(db, f"SELECT COUNT(*), MIN(n), MAX(n) FROM ({per_race})") == [[24, 20, 20]]
    assert ask(db, "SELECT COUNT(*) FROM results WHERE position = 1") == [[24]]
    names = {tuple(r) for r in ask(db, "SELECT forename, surname FROM drivers")}
    assert {("Sebastian", "Vettel"), ("Lewis", "Hamilton")} <= names
    assert ask(db, "SELECT COUNT(*) FROM drivers")[0][0] >= 24


# ---- the claims --------------------------------------------------------------------------------


@data
@needs_claimdb
def test_labels_and_fields(claimdb_sample_records: list[dict[str, object]]) -> None:
    records = claimdb_sample_records
    assert Counter(r["label"] for r in records) == {"ENTAILED": 12, "CONTRADICTED": 12, "NOT ENOUGH INFO": 12}
    assert Counter(r.get("category") for r in records if r["label"] == "NOT ENOUGH INFO") == {
        "OUT-OF-SCHEMA": 4, "COUNTERFACTUAL": 4, "SUBJECTIVE": 4}  # fmt: skip
    assert [r["claim_id"] for r in records] == list(range(1, 37))
    for record in records:
        assert record["db_name"] == DB_ID
        assert isinstance(record["claim"], str) and record["claim"]
        assert isinstance(record["extra_info"], str) and record["extra_info"]
        if record["label"] == "NOT ENOUGH INFO":
            assert record["sql"] == "" and record["answer"] == []
        else:
            assert "category" not in record
            assert record["sql"] and record["answer"], record
    assert len({r["claim"] for r in records}) == 36


@data
@needs_claimdb
def test_reference_sql_returns_the_recorded_answer(db: Database, claimdb_sample_records: list[dict]) -> None:
    settled = 0
    for record in claimdb_sample_records:
        if record["sql"]:
            assert ask(db, record["sql"]) == record["answer"], record["claim_id"]
            settled += 1
    assert settled == 24


@data
@needs_claimdb
def test_claims_need_composition(claimdb_sample_records: list[dict]) -> None:
    sqls = [r["sql"].upper() for r in claimdb_sample_records if r["sql"]]
    assert any(" OVER " in s for s in sqls)  # a window function
    assert sum("ORDER BY" in s and "LIMIT 1" in s for s in sqls) >= 8  # superlatives
    for function in ("SUM(", "AVG(", "COUNT(", "COUNT(DISTINCT"):
        assert any(function in s for s in sqls), function
    assert sum(s.count(" JOIN ") >= 2 for s in sqls) >= 12  # joins of 3+ tables
    claims = " ".join(r["claim"] for r in claimdb_sample_records if r["sql"])
    assert "%" in claims and "about" in claims


NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def numbers_in(text: str) -> set[str]:
    return {m.group().replace(",", "") for m in NUMBER.finditer(text)}


def spellings(value: float) -> set[str]:
    """How a claim may write ``value``: whole, or rounded to one or two decimals."""
    return {f"{value:.0f}", f"{value:.1f}", f"{value:.2f}"}


@data
@needs_claimdb
def test_claim_text_is_written_from_the_answer(claimdb_sample_records: list[dict]) -> None:
    for record in claimdb_sample_records:
        if not record["sql"]:
            continue
        claim, values = record["claim"], [v for row in record["answer"] for v in row]
        texts = [v for v in values if isinstance(v, str)]
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        stated = numbers_in(claim)
        texts_stated = all(t in claim for t in texts)
        numbers_stated = [bool(spellings(n) & stated) for n in numbers]
        if record["label"] == "ENTAILED":
            assert texts_stated, record
            assert not numbers or any(numbers_stated), record
        else:  # CONTRADICTED: an entity swapped, or every number changed
            assert not texts_stated or not any(numbers_stated), record


@data
@needs_claimdb
def test_user_story_claim(claimdb_sample_records: list[dict]) -> None:
    first = claimdb_sample_records[0]
    assert first["label"] == "ENTAILED"
    forename, surname, total = first["answer"][0]
    assert first["claim"].startswith(f"{forename} {surname} is the driver with the most points")
    assert first["claim"].endswith(f"totaling {total:,.0f}.")


@data
@needs_claimdb
def test_read_claims_reads_the_file(claimdb_sample: SamplePaths, claimdb_sample_records: list[dict]) -> None:
    claims, problems = read_claims(claimdb_sample.claims_path)
    assert problems == []
    assert len(claims) == 36
    by_label = Counter(c.label for c in claims)
    assert by_label == {Label.ENTAILED: 12, Label.REFUTED: 12, Label.NOT_ENOUGH_INFO: 12}
    assert Counter(c.category for c in claims if c.category) == {
        NeiSubtype.OUT_OF_SCHEMA: 4, NeiSubtype.COUNTERFACTUAL: 4, NeiSubtype.SUBJECTIVE: 4}  # fmt: skip
    for claim, record in zip(claims, claimdb_sample_records, strict=True):
        assert claim.claim_id == str(record["claim_id"])
        assert claim.claim == record["claim"] and claim.db_name == DB_ID
        assert (claim.category is None) == (claim.label is not Label.NOT_ENOUGH_INFO)


# ---- determinism, seeds, errors ------------------------------------------------------------------


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@data
@needs_claimdb
def test_same_seed_same_bytes(claimdb_sample: SamplePaths, tmp_path: Path) -> None:
    again = build_sample(tmp_path / "again", schema_dir=CLAIMDB_SCHEMA, seed=7)
    assert again.claims_path.read_bytes() == claimdb_sample.claims_path.read_bytes()
    assert dump(again.db_path) == dump(claimdb_sample.db_path)
    for path in sorted(claimdb_sample.root.rglob("*.csv")) + [claimdb_sample.schema_dir / "dev_tables.json"]:
        assert (again.root / path.relative_to(claimdb_sample.root)).read_bytes() == path.read_bytes()
    # building over an existing sample replaces it
    rebuilt = build_sample(tmp_path / "again", schema_dir=CLAIMDB_SCHEMA, seed=7)
    assert rebuilt.claims_path.read_bytes() == claimdb_sample.claims_path.read_bytes()
    assert not list((tmp_path / "again").rglob("*.tmp"))


@data
@needs_claimdb
@pytest.mark.parametrize("seed", [1, 2023])
def test_other_seeds_build_with_answers_that_hold(
    seed: int, tmp_path: Path, claimdb_sample: SamplePaths
) -> None:
    paths = build_sample(tmp_path, schema_dir=CLAIMDB_SCHEMA, seed=seed)
    assert paths.claims_path.read_bytes() != claimdb_sample.claims_path.read_bytes()
    records = sample_records(paths.claims_path)
    assert Counter(r["label"] for r in records) == {"ENTAILED": 12, "CONTRADICTED": 12, "NOT ENOUGH INFO": 12}
    with connect(paths.db_path) as db:
        for record in records:
            if record["sql"]:
                assert ask(db, record["sql"]) == record["answer"], record["claim_id"]


def test_no_schema_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no schema folder: give schema_dir"):
        build_sample(tmp_path)
    with pytest.raises(DatasetError, match="no such schema folder"):
        build_sample(tmp_path, schema_dir=tmp_path / "missing")
    assert not (tmp_path / DB_ID).exists()


def test_a_schema_without_formula_1_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "dev_tables.json").write_text("[]", encoding="utf-8")
    with pytest.raises(DatasetError, match="unknown db_id 'formula_1'"):
        build_sample(tmp_path / "out", schema_dir=tmp_path)


def test_command_line_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "out"), "--schema", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_create_table_sql_keeps_keys() -> None:
    from tabverify.database import ForeignKey, TableSchema
    from tabverify.database.schema import ColumnSchema

    table = TableSchema(
        "lapTimes",
        (
            ColumnSchema("raceId", "integer"),
            ColumnSchema("driverId", "integer"),
            ColumnSchema("lap", "integer"),
        ),
        primary_key=("raceId", "driverId", "lap"),
        foreign_keys=(ForeignKey(("raceId",), "races", ("raceId",)),),
    )
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE TABLE races ("raceId" INTEGER PRIMARY KEY)')
    conn.execute(create_table_sql(table))
    assert [row[5] for row in conn.execute('PRAGMA table_info("lapTimes")')] == [1, 2, 3]
    assert [(row[2], row[3], row[4]) for row in conn.execute('PRAGMA foreign_key_list("lapTimes")')] == [
        ("races", "raceId", "raceId")
    ]
    conn.close()


@data
@needs_claimdb
def test_module_entry_point(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tabverify.claimdb.sample", str(tmp_path), "--schema", str(CLAIMDB_SCHEMA)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / DB_ID / f"{DB_ID}.sqlite").is_file() and (tmp_path / "claims.jsonl").is_file()
    assert (tmp_path / "schema" / "dev_tables.json").is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "tabverify.claimdb.sample", str(tmp_path / "x")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2  # argparse: --schema is required
