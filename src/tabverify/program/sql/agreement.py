"""Does a program give the same value in SQL as in memory? The differential check behind
``scripts/bench_sql_agreement.py`` and the data test: TabFact's human programs run on each table
in memory and on the table prepared in DuckDB or SQLite."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tabverify.errors import DatasetError, TabverifyError
from tabverify.program.execute import execute
from tabverify.program.sql.run import run_program
from tabverify.program.sql.table import SqlTable, prepare_table
from tabverify.program.values import text_of
from tabverify.table import Cell, Table


@dataclass(frozen=True)
class Disagreement:
    """One program whose SQL value differs from its memory value."""

    table: str
    program: str
    memory: str
    sql: str


@dataclass
class Agreement:
    """How many programs agree on one engine, and the ones that do not."""

    engine: str
    n: int = 0
    agree: int = 0
    both_errors: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else 0.0


def same_value(memory: object, sql: object) -> bool:
    """Equal values as the two executors return them (cells by text, numbers to 1e-9 relative:
    the order SQL adds a column in is not Python's)."""
    if isinstance(memory, bool) or isinstance(sql, bool):
        return memory is sql
    if isinstance(memory, float) and isinstance(sql, float):
        return math.isclose(memory, sql, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(memory, Cell) and isinstance(sql, Cell):
        return memory.text == sql.text
    return type(memory) is type(sql) and memory == sql


def _shown(value: object) -> str:
    if isinstance(value, Exception):
        return f"error: {str(value).splitlines()[0][:160]}"
    if isinstance(value, tuple):
        return f"rows {list(value)}"
    return repr(value) if isinstance(value, (bool, float)) else repr(text_of(value))


def human_programs(data_dir: str | Path) -> list[tuple[str, str]]:
    """(table id, program) of every human program of the release (bootstrap/bootstrap.json)."""
    path = Path(data_dir) / "bootstrap" / "bootstrap.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read the human programs ({exc})") from exc
    return [(table_id, entry[4]) for table_id, entries in data.items() for entry in entries]


def compare(
    items: Iterable[tuple[str, str]], tables: dict[str, Table], engine: str, folder: Path | None = None
) -> Agreement:
    """Run each (table id, program) in memory and on the table prepared in ``engine``."""
    from tabverify.database import connect

    result = Agreement(engine)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        prepared: dict[str, tuple[object, SqlTable]] = {}
        try:
            for table_id, program in items:
                table = tables[table_id]
                if table_id not in prepared:
                    path = Path(scratch) / f"{len(prepared)}.{engine}"
                    sql_table = prepare_table(table, path, engine)
                    prepared[table_id] = (connect(path), sql_table)
                db, sql_table = prepared[table_id]
                memory: object
                try:
                    memory = execute(program, table).value
                except TabverifyError as exc:
                    memory = exc
                sql: object
                try:
                    sql = run_program(program, db, sql_table).value  # type: ignore[arg-type]
                except TabverifyError as exc:
                    sql = exc
                result.n += 1
                if isinstance(memory, Exception) and isinstance(sql, Exception):
                    result.agree += 1
                    result.both_errors += 1
                elif (
                    not isinstance(memory, Exception)
                    and not isinstance(sql, Exception)
                    and same_value(memory, sql)
                ):
                    result.agree += 1
                else:
                    result.disagreements.append(Disagreement(table_id, program, _shown(memory), _shown(sql)))
        finally:
            for db, _ in prepared.values():
                db.close()  # type: ignore[attr-defined]
    return result
