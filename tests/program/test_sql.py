"""The SQL compiler gives the memory executor's values (DuckDB and SQLite, prepared and native
tables), compiles every function, and never formats a literal into SQL."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
import sqlglot

from tabverify.database import connect
from tabverify.errors import ProgramExecutionError
from tabverify.program import FUNCTIONS, execute
from tabverify.program.sql import (
    SQL_FUNCTIONS,
    SqlTable,
    compile_program,
    compile_value,
    compile_view,
    native_table,
    prepare_table,
    run_program,
)
from tabverify.program.sql.agreement import same_value
from tabverify.program.sql.table import summary_labels
from tabverify.program.tree import parse_program
from tabverify.table import Table
from tabverify.table.model import _SUMMARY_LABELS

HEADER = ["player", "select", 'it\'s "pts"', "date", "score", "pct", "note"]
ROWS = [
    ["john smith", "usa", "12", "june 11 , 1958", "7 - 5", "45.5%", "won 3 games"],
    ["mary o'neil", "canada", "8.25", "march 3 , 1960", "6 - 4", "50%", ""],
    ["alan brown", "usa", "1,234", "1962-01-05", "7 - 5", "12.25%", "a_b%c"],
    ["lisa white", "u.s.a.", "-", "june 1958", "2 - 0", "n/a", "it's done"],
    ["tom green", "mexico", "8.3", "july 4 , 1970", "6 - 4", "3.0%", "1e400"],
    ["total", "", "1262.55", "", "", "", ""],
]

PROGRAMS = [
    "eq{count{filter_eq{all_rows; select; usa}}; 2}",
    "filter_eq{all_rows; select; usa}",
    "filter_not_eq{all_rows; select; usa}",
    "filter_str_eq{all_rows; player; smith}",
    "filter_str_not_eq{all_rows; player; smith}",
    'filter_greater{all_rows; it\'s "pts"; 8.25}',
    'filter_less{all_rows; it\'s "pts"; 9}',
    'filter_greater_eq{all_rows; it\'s "pts"; 8.3}',
    "filter_less_eq{all_rows; date; 1960}",
    "filter_greater{all_rows; date; march 1 , 1960}",
    "filter_eq{all_rows; score; 7 - 5}",
    "filter_eq{all_rows; score; 7}",
    "filter_all{all_rows; player}",
    "all_eq{filter_eq{all_rows; select; usa}; select; usa}",
    "all_not_eq{all_rows; select; peru}",
    "all_str_eq{all_rows; player; o}",
    "all_str_not_eq{all_rows; player; zzz}",
    'all_greater{all_rows; it\'s "pts"; 1}',
    'all_less{all_rows; it\'s "pts"; 2000}',
    'all_greater_eq{all_rows; it\'s "pts"; 8.25}',
    "all_less_eq{all_rows; date; 1970}",
    'argmax{all_rows; it\'s "pts"}',
    'argmin{all_rows; it\'s "pts"}',
    'nth_argmax{all_rows; it\'s "pts"; 2}',
    'nth_argmin{all_rows; it\'s "pts"; 9}',
    "argmax{all_rows; date}",
    "argmax{all_rows; score}",
    "argmax{all_rows; note}",
    "argmax{all_rows; player}",
    "first{all_rows}",
    "second{filter_eq{all_rows; select; usa}}",
    "third{all_rows}",
    "fourth{all_rows}",
    "fifth{all_rows}",
    "last{filter_eq{all_rows; select; usa}}",
    "count{all_rows}",
    "uniq{all_rows; select}",
    "uniq{all_rows; score}",
    'sum{all_rows; it\'s "pts"}',
    'avg{all_rows; it\'s "pts"}',
    "avg{all_rows; pct}",
    "sum{all_rows; date}",
    "max{all_rows; date}",
    "eq{max{all_rows; date}; july 4 , 1970}",  # the max of dates stays a date (memory: DateNumber)
    "eq{nth_max{all_rows; date; 2}; january 5 , 1962}",
    "eq{max{all_rows; score}; 7}",  # a score's max is a plain number
    'min{all_rows; it\'s "pts"}',
    'nth_max{all_rows; it\'s "pts"; 2}',
    'nth_min{all_rows; it\'s "pts"; 3}',
    "diff{hop{filter_eq{all_rows; player; tom green}; date}; hop{filter_eq{all_rows; player; john smith}; date}}",
    'diff{hop{filter_eq{all_rows; player; john smith}; it\'s "pts"}; 2}',
    "diff{hop{filter_eq{all_rows; player; lisa white}; date}; 2}",
    'add{hop{filter_eq{all_rows; player; john smith}; it\'s "pts"}; 0.5}',
    "add{hop{filter_eq{all_rows; player; john smith}; date}; 1}",
    "hop{filter_eq{all_rows; player; mary o'neil}; note}",
    'num_hop{argmax{all_rows; it\'s "pts"}; player}',
    'str_hop{argmin{all_rows; it\'s "pts"}; date}',
    "hop{filter_eq{all_rows; player; nobody}; note}",
    "most_freq{all_rows; select}",
    "most_freq{all_rows; score}",
    "eq{most_freq{all_rows; score}; 7 - 5}",
    'eq{avg{all_rows; it\'s "pts"}; 314.45}',
    'eq{avg{all_rows; it\'s "pts"}; 314.5}',
    'eq{avg{all_rows; it\'s "pts"}; 314}',
    'round_eq{sum{all_rows; it\'s "pts"}; 1262.55}',
    "eq{hop{filter_eq{all_rows; player; mary o'neil}; it's \"pts\"}; 8.2}",
    "eq{hop{filter_eq{all_rows; player; mary o'neil}; it's \"pts\"}; 8.3}",
    "eq{hop{filter_eq{all_rows; player; john smith}; date}; 1958}",
    "eq{hop{filter_eq{all_rows; player; john smith}; note}; 3}",
    "eq{count{all_rows}; count{filter_eq{all_rows; select; usa}}}",
    "eq{hop{filter_eq{all_rows; player; john smith}; score}; hop{filter_eq{all_rows; player; alan brown}; score}}",
    "not_eq{hop{first{all_rows}; select}; hop{third{all_rows}; select}}",
    "str_eq{hop{first{all_rows}; player}; smith}",
    "not_str_eq{hop{first{all_rows}; player}; brown}",
    'greater{hop{first{all_rows}; it\'s "pts"}; hop{second{all_rows}; it\'s "pts"}}',
    "less{hop{first{all_rows}; date}; hop{second{all_rows}; date}}",
    "greater{hop{first{all_rows}; player}; 3}",
    "greater{hop{fourth{all_rows}; date}; 1958}",
    "and{only{filter_eq{all_rows; player; tom green}}; several{filter_eq{all_rows; select; usa}}}",
    "not{zero{filter_eq{all_rows; select; usa}}}",
    "none{filter_eq{all_rows; select; peru}}",
    'half{filter_greater{all_rows; it\'s "pts"; 8.28}}',
    "one_third{filter_eq{all_rows; select; usa}}",
    "before{filter_eq{all_rows; player; john smith}; filter_eq{all_rows; player; tom green}}",
    "after{filter_eq{all_rows; player; john smith}; filter_eq{all_rows; player; tom green}}",
    "after{filter_eq{all_rows; player; nobody}; all_rows}",
    "within{all_rows; select; canada}",
    "within{filter_eq{all_rows; select; usa}; player; tom green}",
    "samerow{all_rows; player; alan brown; select; usa}",
    "samerow{all_rows; player; alan brown; select; canada}",
    "filter_eq{all_rows; select; hop{filter_eq{all_rows; player; john smith}; select}}",
    'filter_eq{all_rows; it\'s "pts"; count{filter_eq{all_rows; select; usa}}}',
    "filter_eq{all_rows; note; a_b%c}",
    "filter_eq{all_rows; note; 100%}",
    "filter_eq{all_rows; player; ' or 1=1 --}",
    "filter_eq{all_rows; note; it's done}",
    "filter_str_eq{all_rows; note; %}",
    "filter_eq{all_rows; player; jon smith}",
    "eq{count{filter_eq{all_rows; select; usa}}; 2.4}",
    'nth_max{all_rows; it\'s "pts"; 2.5}',
    "max{all_rows; note}",
    "sum{all_rows; player}",
    "eq{hop{filter_eq{all_rows; player; unknown}; select}; usa}",
    "filter_eq{all_rows; nosuchcolumn; 1}",
]


@pytest.fixture(scope="module")
def table() -> Table:
    return Table.from_rows(HEADER, ROWS)


@pytest.fixture(scope="module", params=["duckdb", "sqlite"])
def prepared(request: pytest.FixtureRequest, table: Table, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("sql") / f"table.{request.param}"
    sql_table = prepare_table(table, path, request.param)
    db = connect(path)
    yield db, sql_table
    db.close()


def _run_both(program: str, table: Table, db, sql_table: SqlTable) -> tuple[object, object]:
    try:
        memory: object = execute(program, table).value
    except ProgramExecutionError as exc:
        memory = exc
    try:
        sql: object = run_program(program, db, sql_table).value
    except ProgramExecutionError as exc:
        sql = exc
    return memory, sql


def _agree(memory: object, sql: object) -> bool:
    if isinstance(memory, Exception) or isinstance(sql, Exception):
        return isinstance(memory, Exception) and isinstance(sql, Exception)
    return same_value(memory, sql)


def test_every_function_has_a_sql_compiler() -> None:
    assert set(SQL_FUNCTIONS) == set(FUNCTIONS)


def test_every_function_is_exercised() -> None:
    used = {f for p in PROGRAMS[:-1] for f in parse_program(p).functions}
    assert used == set(FUNCTIONS)


def test_summary_labels_are_the_tables() -> None:
    assert set(summary_labels()) == _SUMMARY_LABELS


@pytest.mark.parametrize("program", PROGRAMS)
def test_sql_gives_the_memory_value(program: str, table: Table, prepared) -> None:
    db, sql_table = prepared
    memory, sql = _run_both(program, table, db, sql_table)
    assert _agree(memory, sql), (memory, sql)


def test_values_decode_to_the_memory_types(table: Table, prepared) -> None:
    db, sql_table = prepared
    assert run_program("count{all_rows}", db, sql_table).value == 5.0
    assert run_program("filter_eq{all_rows; select; usa}", db, sql_table).value == (0, 2)
    hop = run_program("hop{first{all_rows}; date}", db, sql_table)
    assert hop.value.text == "june 11 , 1958" and hop.value.quantity.kind == "date"
    assert hop.json == "june 11 , 1958"
    assert run_program("most_freq{all_rows; select}", db, sql_table).value == "usa"
    assert run_program("filter_eq{all_rows; select; peru}", db, sql_table).value == ()
    with pytest.raises(ProgramExecutionError, match="empty view"):
        run_program("hop{filter_eq{all_rows; select; peru}; player}", db, sql_table)


def test_literals_are_never_formatted_into_sql(table: Table, prepared) -> None:
    db, sql_table = prepared
    program = "filter_eq{all_rows; player; x' OR '1'='1}"
    unknown = replace(sql_table, distinct=(None,) * len(HEADER))  # compiled in SQL, not folded
    sql = compile_program(program, unknown)
    assert "'x or 1 1'" in sql  # the normalised literal, quoted as one
    quoted = compile_program("filter_eq{all_rows; note; it's done}", unknown)
    assert "'it s done'" in quoted
    assert run_program("filter_eq{all_rows; note; it's done}", db, unknown).value == (3,)
    assert run_program(program, db, unknown).value == ()
    assert run_program("filter_eq{all_rows; note; a_b%c}", db, unknown).value == (2,)
    assert run_program("filter_str_eq{all_rows; note; %}", db, unknown).value == ()
    assert run_program("filter_eq{all_rows; note; a_b%c}", db, sql_table).value == (2,)


def test_reopen_a_prepared_file(prepared) -> None:
    db, sql_table = prepared
    again = SqlTable.from_prepared(db)
    assert again.header == sql_table.header and again.distinct == sql_table.distinct


def test_prepare_refuses_an_existing_file(table: Table, tmp_path: Path) -> None:
    path = tmp_path / "x.duckdb"
    path.write_bytes(b"")
    with pytest.raises(FileExistsError):
        prepare_table(table, path)


@pytest.mark.parametrize("program", PROGRAMS[:-1])
def test_postgres_sql_parses_back(program: str, table: Table) -> None:
    sql_table = SqlTable("t", "postgres", table.header, table.column_types, distinct=(None,) * len(HEADER))
    try:
        sql = compile_program(program, sql_table)
    except ProgramExecutionError:
        return
    sqlglot.parse_one(sql, read="postgres")


def test_compile_view_and_value(table: Table, prepared) -> None:
    db, sql_table = prepared
    view = compile_view(parse_program("filter_eq{all_rows; select; usa}"), sql_table)
    assert db.query(view.sql(dialect=db.dialect)).rows == ((0,), (2,))
    value = compile_value(parse_program("count{filter_eq{all_rows; select; usa}}"), sql_table)
    assert db.query(f"SELECT {value.sql(dialect=db.dialect)}").rows[0][0] == 2


# ---- native tables -----------------------------------------------------------------------------

NATIVE_ROWS = [
    (1, "ohio 1", "john smith", 1990, 52.5, "1990-11-06"),
    (2, "ohio 2", "mary jones", 1986, 61.25, "1986-11-04"),
    (3, "ohio 3", "alan brown", 1994, 48.0, "1994-11-08"),
    (4, "ohio 4", "lisa white", 1990, 57.75, "1990-11-06"),
]
NATIVE_PROGRAMS = [
    "eq{count{filter_eq{all_rows; elected; 1990}}; 2}",
    "filter_eq{all_rows; district; ohio 2}",
    "eq{hop{argmax{all_rows; share}; incumbent}; mary jones}",
    "eq{max{all_rows; share}; 61.25}",
    "eq{avg{all_rows; share}; 54.9}",
    "eq{sum{all_rows; elected}; 7960}",
    "filter_greater{all_rows; polled; 1990-01-01}",
    "eq{hop{argmin{all_rows; polled}; district}; ohio 2}",
    "diff{hop{first{all_rows}; polled}; hop{second{all_rows}; polled}}",
    "filter_less{all_rows; elected; 1990}",
    "eq{hop{last{all_rows}; incumbent}; lisa white}",
    "most_freq{all_rows; elected}",
    "filter_str_eq{all_rows; incumbent; smith}",
    "eq{hop{filter_eq{all_rows; district; ohio 3}; share}; 48}",
]


def _native(engine: str, path: Path) -> None:
    ddl = (
        'CREATE TABLE "votes" (id INTEGER PRIMARY KEY, district TEXT, incumbent TEXT, elected INTEGER, '
        "share DOUBLE, polled DATE)"
    )
    con = duckdb.connect(str(path)) if engine == "duckdb" else sqlite3.connect(str(path))
    con.execute(ddl)
    for row in reversed(NATIVE_ROWS):  # inserted out of key order: the key orders the rows
        con.execute("INSERT INTO votes VALUES (?, ?, ?, ?, ?, ?)", row)
    if engine == "sqlite":
        con.commit()
    con.close()


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_native_table_gives_the_memory_value(engine: str, tmp_path: Path) -> None:
    path = tmp_path / f"native.{engine}"
    _native(engine, path)
    db = connect(path)
    distinct = {1: [r[1] for r in NATIVE_ROWS], 2: [r[2] for r in NATIVE_ROWS]}
    sql_table = native_table(db, "votes", distinct)
    assert sql_table.order_by == ("id",)
    header = ["id", "district", "incumbent", "elected", "share", "polled"]
    memory_table = Table.from_rows(header, [[str(v) for v in r] for r in NATIVE_ROWS])
    keys = [r[0] for r in NATIVE_ROWS]  # a native view holds row keys (here the integer key id)
    for program in NATIVE_PROGRAMS:
        memory, sql = _run_both(program, memory_table, db, sql_table)
        if isinstance(memory, tuple):
            memory = tuple(keys[r] for r in memory)
        assert _agree(memory, sql), (program, memory, sql)
    db.close()


def test_unordered_tables_refuse_ordinal_functions(table: Table) -> None:
    sql_table = SqlTable(
        "t", "postgres", ("a",), ("text",), kind="native", columns=("a",), sql_types=("text",), order_by=()
    )
    with pytest.raises(ProgramExecutionError, match="primary key"):
        compile_program("hop{all_rows; a}", sql_table)
    sqlglot.parse_one(compile_program("count{filter_eq{all_rows; a; x}}", sql_table), read="postgres")


DECADE_HEADER = ["club", "founded", "date"]
DECADE_ROWS = [
    ["linden", "1945", "may 3 , 1947"],
    ["berlin", "1926", "june 1 , 1952"],
    ["essen", "1950s", "1941"],
    ["mainz", "1940", "n/a"],
    ["kiel", "1949.5", "july 4 , 1949"],
]
DECADE_PROGRAMS = [
    "count{filter_eq{all_rows; founded; 1940s}}",
    "count{filter_eq{all_rows; founded; 1950s}}",
    "count{filter_eq{all_rows; founded; 1900s}}",  # a year ending in 00 may be a century: no decade
    "count{filter_eq{all_rows; date; 1940's}}",
    "count{filter_not_eq{all_rows; founded; 1940s}}",
    "eq{hop{filter_eq{all_rows; club; linden}; founded}; 1940s}",
]


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_the_sql_fallback_reads_decades_as_memory_does(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MAX_PAIRS 0: every comparison goes through the SQL expression, never the Python pair table
    # (the path a large database column takes)
    from tabverify.program.sql import compiler

    monkeypatch.setattr(compiler, "MAX_PAIRS", 0)
    table = Table.from_rows(DECADE_HEADER, DECADE_ROWS)
    results = _agreeing_results(table, DECADE_PROGRAMS, tmp_path / f"decades.{engine}", engine)
    # 1945 and 1940 (1949.5 is no year); the dates of 1941, 1947 and 1949
    assert results[DECADE_PROGRAMS[0]][0] == 2.0 and results[DECADE_PROGRAMS[3]][0] == 3.0


def _agreeing_results(table: Table, programs: list[str], path: Path, engine: str) -> dict[str, tuple]:
    """Each program's (memory, SQL) results on ``table`` stored at ``path``, checked to agree."""
    sql_table = prepare_table(table, path, engine)
    db = connect(path)
    try:
        results = {p: _run_both(p, table, db, sql_table) for p in programs}
    finally:
        db.close()
    for program, (memory, sql) in results.items():
        assert _agree(memory, sql), (program, memory, sql)
    return results


INFLECTION_HEADER = ["member", "result", "team"]
INFLECTION_ROWS = [
    ["henson moore", "retired to run for senate", "americas 1"],
    ["bob livingston", "re - elected", "americas 2"],
    ["lindy boggs", "retire", "europe 1"],
    ["billy tauzin", "cats", "america"],
]
INFLECTION_PROGRAMS = [
    "count{filter_eq{all_rows; result; retire}}",  # the exact cell is preferred
    "count{filter_eq{all_rows; team; americas}}",
    "count{filter_eq{all_rows; result; senat}}",  # "senate" is no ending of "senat"
    "count{filter_eq{all_rows; result; cat}}",  # 3 letters: never inflected
    "count{filter_not_eq{all_rows; team; europe}}",
    "eq{hop{filter_eq{all_rows; member; henson moore}; result}; retire}",
    "eq{hop{filter_eq{all_rows; member; henson moore}; result}; retired to run}",
    "eq{hop{filter_eq{all_rows; member; henson moore}; team}; america}",
    "eq{most_freq{all_rows; team}; america}",  # a text, not a cell: no inflection
]


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
@pytest.mark.parametrize("max_pairs", [0, 50_000])
def test_the_sql_executor_reads_inflected_words_as_memory_does(
    engine: str, max_pairs: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MAX_PAIRS 0: the SQL expression decides (a large database column); else the pair table
    from tabverify.program.sql import compiler

    monkeypatch.setattr(compiler, "MAX_PAIRS", max_pairs)
    table = Table.from_rows(INFLECTION_HEADER, INFLECTION_ROWS)
    results = _agreeing_results(table, INFLECTION_PROGRAMS, tmp_path / f"inflection.{engine}", engine)
    assert [results[p][0] for p in INFLECTION_PROGRAMS[:5]] == [1.0, 2.0, 0.0, 0.0, 3.0]
    assert [results[p][0] for p in INFLECTION_PROGRAMS[5:]] == [True, True, True, False]
