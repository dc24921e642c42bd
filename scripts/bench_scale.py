"""Scale benchmark: verify statements against a generated table of 10 million match results where it
lives (DuckDB, and the same rows in PostgreSQL), never loading it into Python.

python scripts/bench_scale.py [--rows 10000000] [--engine duckdb|postgres|both] [--work DIR]
    [--json results/scale.json]

Reports the value-index build time, the per-statement time (median, p95) over the statements, how
many the verifier got right (labels computed independently with plain SQL), and the peak memory of
this process (the verifier plus the embedded DuckDB; a PostgreSQL server's own memory is not in it).
The table is generated with SQL (a fixed hash of the row number: same rows every run); PostgreSQL
runs on a throwaway server (tests/postgres.py) with the SELECT-only role of docs/database.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEAMS = (
    "arsenal", "chelsea", "liverpool", "everton", "tottenham hotspur", "manchester united",
    "manchester city", "newcastle united", "aston villa", "west ham united", "leeds united",
    "leicester city", "wolverhampton", "southampton", "brighton", "crystal palace", "fulham",
    "brentford", "nottingham forest", "burnley",
)  # fmt: skip
COMPETITIONS = ("premier league", "fa cup", "league cup", "europa league", "champions league")


def generate_duckdb(path: Path, rows: int) -> None:
    """The match table: date, home and away team, venue, goals, attendance, competition, referee."""
    con = duckdb.connect(str(path))
    values = ", ".join(f"({i}, '{t}', '{t.split()[0]} stadium')" for i, t in enumerate(TEAMS))
    con.execute(f"CREATE TEMP TABLE teams AS SELECT * FROM (VALUES {values}) v(id, name, venue)")
    competitions = ", ".join(f"'{c}'" for c in COMPETITIONS)
    con.execute(
        f"""
        CREATE TABLE matches AS
        SELECT i AS match_id,
          DATE '1990-01-01' + CAST(i // 2740 AS INTEGER) AS date,
          h.name AS home_team, a.name AS away_team, h.venue AS venue,
          CAST(hash(i, 1) % 5 AS INTEGER) AS home_goals,
          CAST(hash(i, 2) % 4 AS INTEGER) AS away_goals,
          CAST(5000 + hash(i, 3) % 85000 AS INTEGER) AS attendance,
          ([{competitions}])[1 + CAST(hash(i, 4) % 5 AS INTEGER)] AS competition,
          'referee ' || CAST(hash(i, 5) % 200 AS VARCHAR) AS referee
        FROM range({rows}) r(i)
        JOIN teams h ON h.id = hash(i, 6) % 20
        JOIN teams a ON a.id = (hash(i, 6) % 20 + 1 + hash(i, 7) % 19) % 20
        ORDER BY i
        """
    )
    con.close()


def statements(path: Path) -> list[tuple[str, bool]]:
    """Statements of the TabFact kinds with their true labels, computed here with plain SQL."""
    con = duckdb.connect(str(path), read_only=True)

    def one(sql: str) -> object:
        return con.execute(sql).fetchone()[0]  # type: ignore[index]

    out: list[tuple[str, bool]] = []
    for k, team in enumerate(TEAMS[:6]):
        other = TEAMS[(k + 7) % len(TEAMS)]
        competition = COMPETITIONS[k % len(COMPETITIONS)]
        home = int(one(f"SELECT count(*) FROM matches WHERE home_team = '{team}'"))  # type: ignore[arg-type]
        home_other = int(one(f"SELECT count(*) FROM matches WHERE home_team = '{other}'"))  # type: ignore[arg-type]
        in_cup = int(one(f"SELECT count(*) FROM matches WHERE competition = '{competition}'"))  # type: ignore[arg-type]
        top = int(one(f"SELECT max(attendance) FROM matches WHERE home_team = '{team}'"))  # type: ignore[arg-type]
        low = int(one(f"SELECT min(attendance) FROM matches WHERE away_team = '{team}'"))  # type: ignore[arg-type]
        goals = int(one(f"SELECT sum(home_goals) FROM matches WHERE home_team = '{team}'"))  # type: ignore[arg-type]
        referee = str(
            one("SELECT referee FROM matches GROUP BY referee ORDER BY count(*) DESC, min(rowid) LIMIT 1")
        )
        first_home = str(one("SELECT home_team FROM matches ORDER BY rowid LIMIT 1"))
        best_home = str(one("SELECT home_team FROM matches ORDER BY attendance DESC, rowid LIMIT 1"))
        flip = k % 2 == 1  # every other statement is made false
        out += [
            (f"{team} played {home + (1000 if flip else 0)} home games", not flip),
            (f"there were {in_cup - (5 if flip else 0)} games in the {competition}", not flip),
            (f"the highest attendance at a {team} home game was {top - (7 if flip else 0)}", not flip),
            (f"the lowest attendance at a {team} away game was {low + (3 if flip else 0)}", not flip),
            (f"{team} scored {goals + (10 if flip else 0)} goals at home in total", not flip),
            (f"{team} had more home games than {other}", home > home_other),
            (f"the most frequent referee was {referee if not flip else 'referee 999'}", not flip),
            (f"the first game in the table was at home for {first_home if not flip else other}", not flip),
            (f"{best_home if not flip else other} had the game with the highest attendance", not flip),
        ]
    con.close()
    return out


def load_postgres(duckdb_path: Path, work: Path):  # -> (server, reader_url)
    """Start a throwaway PostgreSQL server and copy the match table into it (with a primary key,
    so rows have an order); returns the server and the SELECT-only reader's URL."""
    from tests.postgres import setup_database, start_server

    server = start_server(Path(tempfile.mkdtemp(prefix="postgres-", dir=work)))
    setup_database(server)
    csv = work / "matches.csv"
    con = duckdb.connect(str(duckdb_path), read_only=True)
    con.execute(f"COPY matches TO '{csv}' (HEADER FALSE)")
    con.close()
    os.chmod(csv, 0o644)
    server.admin(
        "CREATE TABLE matches (match_id bigint PRIMARY KEY, date date, home_team text, away_team text, "
        "venue text, home_goals integer, away_goals integer, attendance integer, competition text, referee text)"
    )
    server.admin(f"COPY matches FROM '{csv}' WITH (FORMAT csv)")
    server.admin("ANALYZE matches")
    server.admin("GRANT SELECT ON matches TO reader")
    csv.unlink()
    return server, server.reader_url


def measure(target: str, cache: Path, cases: list[tuple[str, bool]], search_ms: int) -> dict[str, object]:
    """Open the table (building its value index), verify every statement, report times."""
    from tabverify.database import connect
    from tabverify.program.database_table import open_table
    from tabverify.program.search import SearchLimits
    from tabverify.verify import TableVerifier

    verifier = (
        TableVerifier(limits=SearchLimits(max_milliseconds=search_ms)) if search_ms else TableVerifier()
    )
    started = time.perf_counter()
    db = connect(target)
    table = open_table(db, "matches", cache_dir=cache)
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    table.linking_index  # noqa: B018 - built once per table; timed apart from the statements
    link_index_s = time.perf_counter() - started
    times, right, cut, queries = [], 0, 0, 0
    for statement, label in cases:
        started = time.perf_counter()
        verdict = verifier.verify(statement, table)
        times.append(time.perf_counter() - started)
        right += verdict.entailed == label
        cut += bool(verdict.limits)
        queries += len(verdict.trace)
        print(
            f"  {times[-1]:6.2f} s  {verdict.label.value:9} {'ok ' if verdict.entailed == label else 'err'} {statement}",
            flush=True,
        )
    db.close()
    times.sort()
    return {
        "rows": table.n_rows,
        "search_ms": search_ms,
        "statements": len(cases),
        "value_index_s": round(index_s, 2),
        "linking_index_s": round(link_index_s, 2),
        "median_s": round(statistics.median(times), 3),
        "p95_s": round(times[min(len(times) - 1, int(0.95 * len(times)))], 3),
        "max_s": round(times[-1], 3),
        "accuracy": round(right / len(cases), 3),
        "search_cut_by_time": cut,
        "queries_per_statement": round(queries / len(cases), 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--engine", choices=("duckdb", "postgres", "both"), default="both")
    parser.add_argument(
        "--work", type=Path, help="folder for the generated database [default: a temporary one]"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--search-ms",
        type=int,
        default=0,
        help="time bound of one search (SearchLimits.max_milliseconds) [default: the verifier's, 1500 ms on "
        "a table this large]",
    )
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tabverify-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o755)  # the PostgreSQL server (user postgres) reads the copied rows from here
    path = work / f"matches-{args.rows}.duckdb"
    if not path.exists():
        started = time.perf_counter()
        generate_duckdb(path, args.rows)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - started:.1f} s: {path}")
    cases = statements(path)
    results: dict[str, object] = {}
    if args.engine in ("duckdb", "both"):
        print("duckdb:")
        results["duckdb"] = measure(str(path), work / "cache-duckdb", cases, args.search_ms)
        print(json.dumps(results["duckdb"], indent=2))
    if args.engine in ("postgres", "both"):
        from tests.postgres import stop_server

        started = time.perf_counter()
        server, url = load_postgres(path, work)
        print(f"postgres: loaded in {time.perf_counter() - started:.1f} s")
        try:
            results["postgres"] = measure(url, work / "cache-postgres", cases, args.search_ms)
        finally:
            stop_server(server)
        print(json.dumps(results["postgres"], indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
