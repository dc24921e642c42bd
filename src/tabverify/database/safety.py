"""The parser layer of query safety (sqlglot): one statement, a query at the root, no write, setting,
file-reading or extension node anywhere in the tree. The engines enforce read-only on their own;
this layer only gives clear refusals first (see docs/database.md)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType


class _QuietFallback(logging.Filter):
    """sqlglot logs a warning when it falls back to a raw Command; we refuse those anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "contains unsupported syntax" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_QuietFallback())

_REFUSED_NODES: dict[str, str] = {
    "Insert": "INSERT writes data",
    "Update": "UPDATE writes data",
    "Delete": "DELETE writes data",
    "Merge": "MERGE writes data",
    "Create": "CREATE changes the schema",
    "Drop": "DROP changes the schema",
    "Alter": "ALTER changes the schema",
    "TruncateTable": "TRUNCATE deletes data",
    "Command": "only queries are allowed",
    "Pragma": "PRAGMA can change settings",
    "Attach": "ATTACH opens another database",
    "Detach": "DETACH changes the attached databases",
    "Copy": "COPY reads or writes files",
    "Set": "SET changes settings",
    "Use": "USE changes the session",
    "Transaction": "transaction control is done by tabverify",
    "Commit": "transaction control is done by tabverify",
    "Rollback": "transaction control is done by tabverify",
    "Install": "installing extensions is not allowed",
    "Load": "loading extensions is not allowed",
    "LoadData": "loading files is not allowed",
    "Export": "EXPORT writes files",
    "Into": "SELECT ... INTO creates a table",
    "Lock": "row locks (FOR UPDATE / FOR SHARE) are not allowed",
    "Grant": "GRANT changes permissions",
    "Revoke": "REVOKE changes permissions",
    "Analyze": "ANALYZE writes statistics",
    "Cache": "CACHE changes the session",
    "Uncache": "UNCACHE changes the session",
    "Refresh": "REFRESH changes data",
    "Kill": "KILL stops other sessions",
}
REFUSED_NODE_TYPES: tuple[tuple[type, str], ...] = tuple(
    (getattr(exp, name), why) for name, why in _REFUSED_NODES.items() if hasattr(exp, name)
)

REFUSED_FUNCTIONS = frozenset(
    """read_csv read_csv_auto read_parquet read_json read_json_auto read_json_objects read_ndjson
    read_ndjson_auto read_ndjson_objects read_text read_blob read_xlsx glob parquet_scan parquet_metadata
    parquet_schema parquet_file_metadata parquet_kv_metadata parquet_bloom_probe sqlite_scan sqlite_attach
    postgres_scan postgres_scan_pushdown postgres_attach postgres_query postgres_execute mysql_scan
    mysql_query iceberg_scan iceberg_metadata iceberg_snapshots delta_scan st_read sniff_csv
    pg_read_file pg_read_binary_file pg_stat_file pg_file_write pg_file_rename pg_file_unlink
    lo_import lo_export load_extension writefile readfile fts3_tokenizer edit set_config
    pg_terminate_backend pg_cancel_backend pg_reload_conf pg_rotate_logfile pg_promote
    pg_switch_wal pg_create_restore_point nextval setval query query_table duckdb_secrets which_secret
    checkpoint force_checkpoint duckdb_databases duckdb_settings duckdb_extensions duckdb_temporary_files
    current_setting getenv pragma_database_list""".split()
)
"""Functions refused by name: they read or write files, open other databases, change or show settings
(which name the server's folders), execute SQL text, or act on other sessions. (``pg_sleep`` is
allowed: the timeout stops it.)"""

REFUSED_PREFIXES = ("read_", "pg_read_", "pg_ls_", "lo_", "dblink", "pg_advisory", "pg_try_advisory", "http_")
REFUSED_SUFFIXES = ("_scan",)

_FILE_LIKE = re.compile(
    r"[/\\]|^[a-z][a-z0-9+.-]*://|\.(csv|tsv|txt|parquet|json|jsonl|ndjson|gz|zst|xlsx|db|duckdb|sqlite3?)$",
    re.I,
)


@dataclass(frozen=True)
class Checked:
    """The parser layer's verdict on one query text.

    ``refusal``: why it is refused (None if not). ``parsed``: whether sqlglot could parse it (an
    unparsable text is left to the engine, whose read-only settings hold on their own).
    ``statement``: the text to run (the original minus trailing semicolons and comments).
    ``is_query``: a SELECT-like statement that can be wrapped as a subquery (to count its rows).
    """

    statement: str
    refusal: str | None = None
    parsed: bool = False
    is_query: bool = False
    error: str | None = None


def function_names(node: exp.Expression) -> set[str]:
    """The lower-case names a function node may be called by."""
    names: set[str] = set()
    if isinstance(node, exp.Anonymous):
        names.add(str(node.this).lower())
    else:
        try:
            names.add(node.sql_name().lower())
        except Exception:  # pragma: no cover - sqlglot internals vary
            pass
        for name in getattr(type(node), "_sql_names", ()) or ():
            names.add(str(name).lower())
    return names


def refused_function(name: str) -> bool:
    """Whether a function of this name is refused (see :data:`REFUSED_FUNCTIONS`)."""
    return name in REFUSED_FUNCTIONS or name.startswith(REFUSED_PREFIXES) or name.endswith(REFUSED_SUFFIXES)


def _statement_text(sql: str, dialect: str) -> str:
    """The text without trailing semicolons, whitespace and comments (so it can be wrapped)."""
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except (TokenError, ParseError, Exception):
        return sql.strip().rstrip(";").strip()
    while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
        tokens.pop()
    if not tokens:
        return ""
    return sql[: tokens[-1].end + 1]


def _first_word(sql: str, dialect: str) -> str:
    try:
        tokens = sqlglot.tokenize(sql, read=dialect)
    except Exception:
        return ""
    return tokens[0].text.upper()[:40] if tokens else ""


def check(sql: str | exp.Expression, dialect: str) -> Checked:
    """Check one query in the engine's sqlglot dialect (``duckdb``, ``sqlite``, ``postgres``): a
    text, or a sqlglot tree built in code (checked as it stands, without printing and re-parsing
    it; the text sent to the engine is then printed from the checked tree)."""
    if isinstance(sql, exp.Expression):
        return _check_tree(sql, sql.sql(dialect=dialect), dialect)
    if not isinstance(sql, str):
        raise TypeError(f"sql must be a string or a sqlglot expression, got {type(sql).__name__}")
    if not sql.strip():
        return Checked(sql, refusal="refused: the query is empty; write one SELECT statement")
    if "\x00" in sql:
        return Checked(sql, refusal="refused: the query contains a NUL character")
    try:
        trees = [
            t for t in sqlglot.parse(sql, read=dialect) if t is not None and not isinstance(t, exp.Semicolon)
        ]
    except (ParseError, TokenError) as exc:
        message = " ".join(str(exc).split())
        message = re.sub(r"\x1b\[[0-9;]*m", "", message)
        return Checked(_statement_text(sql, dialect), parsed=False, error=message[:300])
    except RecursionError:
        return Checked(sql, refusal="refused: the query is nested too deeply to check")
    if len(trees) != 1:
        return Checked(
            sql, refusal=f"refused: one statement per query (found {len(trees)}); send them one at a time"
        )
    return _check_tree(trees[0], _statement_text(sql, dialect), dialect)


def _check_tree(tree: exp.Expression, statement: str, dialect: str) -> Checked:
    """Check a parsed statement: a query at the root, nothing refused anywhere inside."""
    root_ok = isinstance(tree, exp.Query | exp.Values) or (
        isinstance(tree, exp.Subquery) and isinstance(tree.unnest(), exp.Query)
    )
    if not root_ok:
        first = _first_word(statement, dialect) or tree.key.upper()
        return Checked(
            statement,
            refusal=f"refused: only read-only queries (SELECT, WITH ... SELECT, VALUES) are allowed, not {first}",
            parsed=True,
        )
    reason = _refused_inside(tree)
    if reason is not None:
        return Checked(statement, refusal=f"refused: {reason}", parsed=True)
    return Checked(statement, parsed=True, is_query=True)


def _refused_inside(tree: exp.Expression) -> str | None:
    """Why any node of the tree (CTEs and subqueries included) is refused, or None."""
    for node in tree.walk():
        for node_type, why in REFUSED_NODE_TYPES:
            if isinstance(node, node_type):
                return f"{why} ({node.key.upper()} inside the query); only read-only queries are allowed"
        if isinstance(node, exp.Func):
            for name in function_names(node):
                if refused_function(name):
                    return (
                        f"the function {name}() reads files, changes settings or reaches outside the "
                        "database; query the tables instead"
                    )
        if isinstance(node, exp.Table):
            source = node.this
            if isinstance(source, exp.Literal) and source.is_string:
                return (
                    f"a string as a table ('{source.this}') reads a file; query the database's tables instead"
                )
            if isinstance(source, exp.Identifier) and _FILE_LIKE.search(source.this or ""):
                return f"'{source.this}' looks like a file or URL, not a table; query the database's tables"
    return None
