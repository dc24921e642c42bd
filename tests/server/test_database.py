"""The database page and API over real files: a DuckDB file holding the league example table, an
SQLite file with BIRD column descriptions next to it, and a lake indexed from a few CSVs."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient

from tabverify.server import ServerSettings
from tests.server.conftest import EXAMPLES, ROOT, app_client

MARKUP = "<img src=x onerror=alert(1)>"
LAKE_TABLES = {
    "teams.csv": "team,city,arena\nhawks,atlanta,state farm arena\nbulls,chicago,united center\n",
    "planets.csv": "planet,moons\nmercury,0\nvenus,0\nearth,1\nmars,2\n",
    "league.csv": (EXAMPLES / "league.csv").read_text(encoding="utf-8"),
}


def make_league_duckdb(path: Path, markup: bool = True) -> Path:
    """A DuckDB file with the league example table and (``markup``) a table whose names and cells
    are markup."""
    with duckdb.connect(str(path)) as connection:
        connection.execute(
            "CREATE TABLE league AS SELECT * FROM read_csv_auto(?)", [str(EXAMPLES / "league.csv")]
        )
        if not markup:
            return path
        connection.execute(f'CREATE TABLE "{MARKUP}" ("<b>col</b>" VARCHAR, n INTEGER)')
        connection.execute(f'INSERT INTO "{MARKUP}" VALUES (?, 1)', ["<script>alert('cell')</script>"])
    return path


def make_described_sqlite(folder: Path) -> Path:
    """An SQLite file with a BIRD ``database_description/`` folder next to it (ClaimDB-style)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "shop.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, segment TEXT)")
    connection.execute(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customers(id), total REAL)"
    )
    connection.executemany("INSERT INTO customers VALUES (?, ?, ?)", [(1, "ada", "SME"), (2, "bob", "LAM")])
    connection.executemany("INSERT INTO orders VALUES (?, ?, ?)", [(1, 1, 10.5), (2, 2, 99.0), (3, 1, 3.0)])
    connection.commit()
    connection.close()
    descriptions = folder / "database_description"
    descriptions.mkdir()
    with (descriptions / "customers.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["original_column_name", "column_name", "column_description", "data_format", "value_description"]
        )
        writer.writerow(
            [
                "segment",
                "client segment",
                "the customer's market segment",
                "text",
                "SME: small firm; LAM: large",
            ]
        )
    return path


def make_lake(root: Path) -> Path:
    """A lake of three small CSV tables, indexed with ``tabverify lake index`` (lexical encoder)."""
    source = root / "tables"
    source.mkdir(parents=True)
    for name, content in LAKE_TABLES.items():
        (source / name).write_text(content, encoding="utf-8")
    captions = root / "captions.json"
    captions.write_text(json.dumps({"planets.csv": "moons of the planets"}), encoding="utf-8")
    lake = root / "demo.lake"
    command = [sys.executable, "-m", "tabverify.cli", "lake", "index", str(source), "--encoder", "lexical",
               "--out", str(lake), "--captions", str(captions)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    return lake


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("database")
    return {
        "league": make_league_duckdb(root / "league.duckdb"),
        "shop": make_described_sqlite(root / "shop"),
        "lake": make_lake(root),
    }


@pytest.fixture(scope="module")
def client(files: dict[str, Path]) -> Iterator[TestClient]:
    settings = ServerSettings(
        databases={"league": str(files["league"]), "shop": str(files["shop"])},
        lakes={"demo": str(files["lake"])},
        workers=1,
        max_statements=5,
    )
    with app_client(settings) as test_client:
        yield test_client


def cli_json(*args: str) -> dict:
    """What the CLI prints with ``--json`` (the API must give the same record)."""
    result = subprocess.run([sys.executable, "-m", "tabverify.cli", *args], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)  # fmt: skip
    return json.loads(result.stdout)


def untimed(record: object) -> object:
    """``record`` without its ``elapsed_s`` timings (two runs never take the same time)."""
    if isinstance(record, dict):
        return {k: untimed(v) for k, v in record.items() if k != "elapsed_s"}
    if isinstance(record, list):
        return [untimed(v) for v in record]
    return record


def error_of(response) -> str:  # type: ignore[no-untyped-def]
    body = response.json()
    assert set(body) == {"error"} and body["error"]["status"] == response.status_code
    assert "\n" not in body["error"]["message"]
    return body["error"]["message"]


def test_lists_the_configured_databases_and_lakes_by_name_only(
    client: TestClient, files: dict[str, Path]
) -> None:
    response = client.get("/api/databases")
    assert response.status_code == 200
    assert response.json() == {
        "databases": [
            {"name": "league", "kind": "duckdb", "error": None},
            {"name": "shop", "kind": "sqlite", "error": None},
        ]
    }
    assert client.get("/api/lakes").json() == {"lakes": [{"name": "demo"}]}
    page = client.get("/database")
    assert page.status_code == 200
    assert 'href="/database/db/league"' in page.text and 'href="/database/lake/demo"' in page.text
    assert str(files["league"]) not in page.text and "tabverify serve --db" not in page.text


def test_schema_is_the_cli_record_with_the_name_for_the_path(
    client: TestClient, files: dict[str, Path]
) -> None:
    response = client.get("/api/databases/shop/schema")
    assert response.status_code == 200
    expected = cli_json("sql", str(files["shop"]), "--schema", "--json")
    assert expected["target"] == str(files["shop"])
    assert response.json() == {**expected, "target": "shop"}
    customers = next(t for t in expected["tables"] if t["name"] == "customers")
    segment = next(c for c in customers["columns"] if c["name"] == "segment")
    assert segment["description"] == "the customer's market segment"
    page = client.get("/database/db/shop")
    assert page.status_code == 200
    assert "the customer&#39;s market segment" in page.text and "SME: small firm; LAM: large" in page.text
    assert "foreign key (customer) &rarr; customers (id)" in page.text.replace("→", "&rarr;")
    # a database without descriptions shows none (no description column is invented)
    league = client.get("/database/db/league")
    assert "<th>description</th>" not in league.text and "<code>attendance</code>" in league.text


def test_query_is_the_cli_record(client: TestClient, files: dict[str, Path]) -> None:
    sql = "SELECT opponent, attendance FROM league WHERE attendance > 20000 ORDER BY week"
    response = client.post("/api/databases/league/query", json={"sql": sql, "max_rows": 2})
    assert response.status_code == 200
    got = response.json()
    expected = cli_json("sql", str(files["league"]), sql, "--max-rows", "2", "--json")
    assert got["rows"] == expected["rows"] == [["dayton rivers", 22410], ["dayton rivers", 25105]]
    assert untimed(got) == untimed(expected)
    assert got["truncated"] is True and got["notice"]
    page = client.post("/database/db/league/query", data={"sql": sql, "max_rows": "5"})
    assert page.status_code == 200
    assert "<td>dayton rivers</td>" in page.text and "<td>25105</td>" in page.text


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("DROP TABLE league", "refused"),
        ("COPY league TO '/tmp/stolen.csv'", "refused"),
        ("SELECT 1; SELECT 2", "one statement"),
        ("SELEC nonsense FROM", "syntax"),
    ],
)
def test_unsafe_or_invalid_queries_are_refused_with_one_line(
    client: TestClient, sql: str, reason: str
) -> None:
    response = client.post("/api/databases/league/query", json={"sql": sql})
    assert response.status_code == 422
    assert reason in error_of(response).lower()
    page = client.post("/database/db/league/query", data={"sql": sql})
    assert page.status_code == 422
    assert 'id="error"' in page.text and sql.replace("'", "&#39;") in page.text  # the input is kept
    assert client.post("/api/databases/league/query", json={"sql": "SELECT count(*) FROM league"}).json()[
        "rows"
    ] == [[6]]


def test_bad_requests(client: TestClient) -> None:
    assert client.get("/api/databases/nowhere/schema").status_code == 404
    assert "no database named 'nowhere'" in error_of(client.get("/api/databases/nowhere/schema"))
    assert client.post("/api/lakes/nowhere/search", json={"query": "x"}).status_code == 404
    assert client.get("/database/db/..%2F..%2Fetc%2Fpasswd").status_code == 404
    assert client.get("/database/lake/nowhere").status_code == 404
    response = client.post(
        "/api/databases/league/query", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and "malformed JSON" in error_of(response)
    assert client.post("/api/databases/league/query", data={"sql": "SELECT 1"}).status_code == 415
    for body in ({}, {"sql": ""}, {"sql": "SELECT 1", "max_rows": 0}, {"sql": "SELECT 1", "path": "/etc"},
                 {"sql": "x" * 100_001}):  # fmt: skip
        assert client.post("/api/databases/league/query", json=body).status_code == 422, body
    lone_surrogate = b'{"claims": ["the hawks \\ud800 won"]}'
    response = client.post(
        "/api/databases/league/check", content=lone_surrogate, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422 and "unicode" in error_of(response).lower()
    too_many = client.post(
        "/api/databases/league/check", json={"claims": ["a claim"] * 6, "encoder": "hashing"}
    )
    assert too_many.status_code == 422 and "at most 5" in error_of(too_many)
    assert client.post("/api/databases/league/check", json={"claims": []}).status_code == 422
    assert client.post("/database/db/league/check", data={"claims": "  \n "}).status_code == 400


def test_claims_against_the_whole_database_as_check_db(client: TestClient, files: dict[str, Path]) -> None:
    claims = [
        "in the league, the attendance in week 1 was 18250",
        "the league attendance in week 1 was 99999",
    ]
    response = client.post("/api/databases/league/check", json={"claims": claims, "encoder": "hashing"})
    assert response.status_code == 200
    got = response.json()
    expected = cli_json("check", "--db", str(files["league"]), *claims, "--verifier", "offline", "--encoder",
                        "hashing", "--json")  # fmt: skip
    for verdict in expected["verdicts"]:
        verdict["source"] = verdict["source"].replace(str(files["league"]), "league")
    assert untimed(got) == untimed({**expected, "database": "league"})
    assert got["verdicts"][0]["source"] == "league : league"
    assert [v["label"] for v in got["verdicts"]] == ["ENTAILED", "REFUTED"]
    assert got["verdicts"][0]["sql"] and got["verifier"] == "offline"
    page = client.post("/database/db/league/check", data={"claims": "\n".join(claims), "encoder": "hashing"})
    assert page.status_code == 200
    assert page.text.count('class="label ENTAILED"') == 1 and page.text.count('class="label REFUTED"') == 1
    assert "eq{hop{filter_eq{all_rows; week; 1}; attendance}; 18250}" in page.text
    # a claim over several tables is left undecided offline, with the reason
    shop = client.post(
        "/database/db/shop/check", data={"claims": "ada placed the largest order", "encoder": "hashing"}
    )
    assert shop.status_code == 200
    assert (
        'class="label NOT-ENOUGH-INFO">UNDECIDED' in shop.text
        and "over several tables needs a model" in shop.text
    )


def test_lake_search_and_check_as_the_cli(client: TestClient, files: dict[str, Path]) -> None:
    response = client.post("/api/lakes/demo/search", json={"query": "planet moons mars", "k": 2})
    assert response.status_code == 200
    expected = cli_json(
        "lake", "search", str(files["lake"]), "--query", "planet moons mars", "--k", "2", "--json"
    )
    assert response.json() == {**expected, "lake": "demo"}
    assert response.json()["hits"][0]["id"] == "planets.csv"
    keywords = client.post("/api/lakes/demo/search", json={"query": "atlanta arena", "keywords": True})
    expected = cli_json(
        "lake", "search", str(files["lake"]), "--query", "atlanta arena", "--keywords", "--json"
    )
    assert keywords.json() == {**expected, "lake": "demo"} and expected["mode"] == "keywords"
    assert [hit["id"] for hit in expected["hits"]] == ["teams.csv"]
    statements = ["mars has 2 moons", "the hawks play in chicago"]
    checked = client.post("/api/lakes/demo/check", json={"statements": statements})
    assert checked.status_code == 200
    got = checked.json()
    expected = cli_json("check", "--lake", str(files["lake"]), *statements, "--json")
    captions = [verdict.pop("evidence_caption") for verdict in got["verdicts"]]
    assert untimed(got["verdicts"]) == untimed(expected["verdicts"])
    assert captions == ["moons of the planets", ""]
    assert got["lake"] == "demo"
    assert got["verdicts"][0]["evidence_table"] == "planets.csv" and got["verdicts"][0]["label"] == "ENTAILED"
    assert got["verdicts"][1]["evidence_table"] == "teams.csv" and got["verdicts"][1]["label"] == "REFUTED"
    page = client.post("/database/lake/demo/check", data={"statements": "\n".join(statements)})
    assert page.status_code == 200
    assert (
        '<code class="evidence-table">planets.csv</code> (moons of the planets)' in page.text
        and "runners-up" in page.text
    )
    search_page = client.post("/database/lake/demo/search", data={"query": MARKUP, "k": "3"})
    assert search_page.status_code == 200 and MARKUP not in search_page.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in search_page.text


def test_markup_in_names_and_cells_is_escaped(client: TestClient) -> None:
    page = client.get("/database/db/league")
    assert MARKUP not in page.text and "<b>col</b>" not in page.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page.text and "&lt;b&gt;col&lt;/b&gt;" in page.text
    sql = f'SELECT * FROM "{MARKUP}"'
    result = client.post("/database/db/league/query", data={"sql": sql})
    assert result.status_code == 200
    assert (
        "<script>alert" not in result.text
        and "&lt;script&gt;alert(&#39;cell&#39;)&lt;/script&gt;" in result.text
    )


def test_no_databases_configured_says_how_to_start() -> None:
    with app_client(ServerSettings(workers=1)) as bare:
        page = bare.get("/database")
        assert page.status_code == 200 and 'id="none-configured"' in page.text
        assert "--db" in page.text and "--lake" in page.text
        assert bare.get("/api/databases").json() == {"databases": []}
        assert bare.get("/api/databases/league/schema").status_code == 404


def test_a_runaway_query_is_stopped_and_the_server_keeps_serving(files: dict[str, Path]) -> None:
    settings = ServerSettings(databases={"league": str(files["league"])}, workers=1, time_limit_s=3)
    with app_client(settings) as slow:
        assert slow.post("/api/databases/league/query", json={"sql": "SELECT 1"}).status_code == 200  # warm
        runaway = "SELECT count(*) FROM range(100000000) a, range(100000000) b"
        response = slow.post("/api/databases/league/query", json={"sql": runaway})
        assert response.status_code == 504
        assert "timeout" in error_of(response)
        page = slow.post("/database/db/league/query", data={"sql": runaway})
        assert page.status_code == 504 and 'id="error"' in page.text
        again = slow.post("/api/databases/league/query", json={"sql": "SELECT count(*) FROM league"})
        assert again.status_code == 200 and again.json()["rows"] == [[6]]


def test_serve_refuses_a_lake_it_cannot_serve_before_listening(
    files: dict[str, Path], tmp_path: Path
) -> None:
    """Each case would start and then fail on the first request; serve says so at once (exit 2)."""
    import shutil

    def serve(lake: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tabverify.cli", "serve", "--port", "0", "--lake", str(lake)],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)  # fmt: skip

    empty = tmp_path / "empty"
    empty.mkdir()
    renamed = tmp_path / "renamed.lake"
    shutil.copytree(files["lake"], renamed)
    meta = json.loads((renamed / "lake.json").read_text())
    expected = {
        empty: "not a lake",
        renamed: "unknown table encoder 'nosuch'",
    }
    (renamed / "lake.json").write_text(json.dumps({**meta, "encoder": "nosuch"}))
    for lake, message in expected.items():
        result = serve(lake)
        assert result.returncode == 2, result.stderr
        assert message in result.stderr and str(lake) in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    (renamed / "lake.json").write_text(json.dumps({**meta, "encoder": "my_package.encoders:Mine"}))
    result = serve(renamed)
    assert result.returncode == 2 and "third-party encoder 'my_package.encoders:Mine'" in result.stderr
