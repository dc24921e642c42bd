"""The table program language compiled to SQL (DuckDB, SQLite, PostgreSQL through sqlglot), with
the meaning of the memory executor (:func:`tabverify.program.execute`). See docs/sql.md."""

from tabverify.program.sql.compiler import SQL_FUNCTIONS, Compiler, base_relation
from tabverify.program.sql.run import (
    SqlExecution,
    compile_program,
    compile_query,
    compile_value,
    compile_view,
    run_program,
)
from tabverify.program.sql.table import SqlTable, native_kind, native_table, prepare_table

__all__ = [
    "SQL_FUNCTIONS",
    "Compiler",
    "SqlExecution",
    "SqlTable",
    "base_relation",
    "compile_program",
    "compile_query",
    "compile_value",
    "compile_view",
    "native_kind",
    "native_table",
    "prepare_table",
    "run_program",
]
