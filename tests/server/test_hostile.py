"""Hostile and careless input against the web app: malformed and deeply nested JSON, huge fields,
wrong content types, binary and non-UTF-8 uploads, spans that would expand a table past its limits,
path traversal in every name, SQL that reaches for files or the server's layout, markup injection,
odd methods, lone surrogates, runaway work, abandoned and stalled clients, and temporary files.

Most tests use the HTTP test client; the ones about time, processes and temporary files run a real
``tabverify serve`` (one worker, a 3 s time limit, its own TMPDIR) and talk to it over sockets.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tabverify.server import ServerSettings
from tests.server.conftest import EXAMPLES, LiveServer, app_client

SCRIPT = "<script>alert(1)</script>"
ATTRIBUTE = '"><img src=x onerror=alert(2)>'
TABLE = "<img src=x onerror=alert(3)>"
TIME_LIMIT_S = 3.0


# ---- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A DuckDB and a SQLite copy of the league table; the DuckDB one also holds a table and a
    column whose names are markup."""
    import duckdb

    folder = tmp_path_factory.mktemp("hostile-db")
    league = EXAMPLES / "league.csv"
    duck = folder / "league.duckdb"
    with duckdb.connect(str(duck)) as con:
        con.execute(f"create table league as select * from read_csv_auto('{league}')")
        con.execute(f'create table "{TABLE}" ("{SCRIPT}" varchar)')
        con.execute(f"""insert into "{TABLE}" values ('{SCRIPT}')""")
    lite = folder / "league.sqlite"
    rows = [line.split(",") for line in league.read_text().splitlines()]
    with sqlite3.connect(lite) as con:
        con.execute(f"create table league ({', '.join(rows[0])})")
        con.executemany("insert into league values (?, ?, ?, ?, ?)", rows[1:])
    return {"league": str(duck), "lite": str(lite)}


@pytest.fixture(scope="module")
def hostile(databases: dict[str, str]) -> Iterator[TestClient]:
    settings = ServerSettings(
        databases=databases, workers=1, time_limit_s=20, max_upload_bytes=2 * 1024 * 1024
    )
    with app_client(settings) as client:
        yield client


class Served:
    """``tabverify serve`` in a subprocess with its own TMPDIR (to watch temporary files)."""

    def __init__(self, args: list[str], tmpdir: Path) -> None:
        self.tmpdir = tmpdir
        self.server = LiveServer(args, env={"TMPDIR": str(tmpdir)})
        self.process = self.server.process
        self.host, port = self.server.url.removeprefix("http://").rsplit(":", 1)
        self.port = int(port)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    def post_json(self, path: str, body: Any, timeout: float = 60) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            self.url(path), data=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def post_multipart(self, path: str, files: dict[str, tuple[str, bytes]]) -> tuple[int, bytes]:
        boundary = "hostileboundary"
        body = (
            b"".join(
                f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
                f"Content-Type: application/octet-stream\r\n\r\n".encode()
                + data
                + b"\r\n"
                for field, (name, data) in files.items()
            )
            + f"--{boundary}--\r\n".encode()
        )
        request = urllib.request.Request(
            self.url(path), data=body, headers={"content-type": f"multipart/form-data; boundary={boundary}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def raw(self, data: bytes) -> socket.socket:
        """A connection that has sent ``data`` (and is left open)."""
        sock = socket.create_connection((self.host, self.port))
        sock.sendall(data)
        return sock

    def children(self) -> dict[int, bytes]:
        """The server's child processes (the workers and the resource tracker): PID -> command line."""
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == self.process.pid:
                found[int(entry.name)] = cmdline
        return found

    def workers(self) -> list[int]:
        """The PIDs of the worker processes."""
        return [pid for pid, cmdline in self.children().items() if b"resource_tracker" not in cmdline]

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        children = list(self.children())
        self.process.terminate()
        try:
            self.process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.process.kill()  # a server with a backlog of runaway requests ignores SIGTERM for minutes
            self.process.wait(timeout=10)
        for pid in children:  # a killed server leaves its workers running, orphaned
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def served(databases: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmpdir = tmp_path_factory.mktemp("hostile-tmp")
    server = Served(
        ["--workers", "1", "--time-limit", str(TIME_LIMIT_S), "--max-upload-mb", "2",
         "--db", f"league={databases['league']}", "--db", f"lite={databases['lite']}"],
        tmpdir,
    )  # fmt: skip
    try:
        yield server
    finally:
        server.stop()


def one_line_json_error(response: Any, *statuses: int) -> str:
    """The message of a JSON error answer with one of ``statuses``: one line, no traceback."""
    assert response.status_code in statuses, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()["error"]["message"]
    assert message and "\n" not in message and "Traceback" not in message and len(message) < 500
    return message


def error_on_page(response: Any, *statuses: int) -> str:
    assert response.status_code in statuses, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("text/html")
    found = re.search(r'id="error">([^<]*)<', response.text)
    assert found, response.text[:500]
    assert "Traceback" not in response.text
    return found.group(1)


def check_body(**table: Any) -> dict[str, Any]:
    return {**table, "statements": ["the hawks won 3 games"]}


# ---- malformed requests (regression guards) -----------------------------------------------------


def test_malformed_and_deeply_nested_json_is_400(hostile: TestClient) -> None:
    headers = {"content-type": "application/json"}
    for body in (b'{"csv": ', b"[" * 100_000 + b"]" * 100_000, b'{"csv": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                 b'{"csv": "a,b\\n1,2", "statements": ["x"]', b"\xff\xff\xff", b"{'csv': 1}"):  # fmt: skip
        one_line_json_error(hostile.post("/api/check", content=body, headers=headers), 400)
    assert hostile.get("/api/health").status_code == 200


def test_an_empty_json_body_is_malformed_json_400(hostile: TestClient) -> None:
    # an empty body is not JSON at all: the "malformed JSON" (400), not a missing field (422)
    answer = hostile.post("/api/check", content=b"", headers={"content-type": "application/json"})
    one_line_json_error(answer, 400)


def test_a_wrong_content_type_is_415(hostile: TestClient) -> None:
    body = json.dumps(check_body(csv="team,wins\nhawks,3")).encode()
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        answer = hostile.post("/api/check", content=body, headers={"content-type": kind})
        one_line_json_error(answer, 415)


def test_json_sent_to_a_multipart_endpoint_is_415(hostile: TestClient) -> None:
    # /api/crosscheck and /api/coref/score take multipart files: JSON is the wrong content type
    for path in ("/api/crosscheck", "/api/coref/score"):
        answer = hostile.post(path, content=b'{"target": "x"}', headers={"content-type": "application/json"})
        one_line_json_error(answer, 415)


def test_huge_fields_and_expanding_tables_are_refused(hostile: TestClient) -> None:
    csv = "team,wins\nhawks,3\nowls,1"
    cases = [
        (check_body(csv=csv) | {"statements": ["x"] * 10_000}, 422),
        (check_body(csv=csv) | {"statements": ["x" * 1_001]}, 422),
        (check_body(csv=",".join(f"c{i}" for i in range(200_000)) + "\n" + "1," * 199_999 + "1"), 400, 413),
        (check_body(csv="a" * 1_500_000), 400, 413),
        (check_body(text="<table><tr><th>a</th><th>b</th></tr><tr><td colspan=1000000 rowspan=1000000>x"
                    "</td></tr><tr><td>1</td><td>2</td></tr></table>", format="html"), 400, 413),
        (check_body(text="<table><tr><th>a</th><th>b</th></tr>" + "<tr><td rowspan=65534>x</td><td>1</td></tr>"
                    * 2000 + "</table>", format="html"), 400, 413),
        (check_body(text="\\begin{tabular}{ll}\\multicolumn{1000000}{c}{x} & y\\\\ \\end{tabular}",
                    format="latex"), 400, 413),
        (check_body(table={"header": ["a"] * 5000, "rows": [["1"]]}), 422),
        (check_body(csv=csv, number=10**12), 422),
    ]  # fmt: skip
    for body, *statuses in cases:
        started = time.monotonic()
        one_line_json_error(hostile.post("/api/check", json=body), *statuses)
        assert time.monotonic() - started < 8
    deep = "count{" * 560 + "all_rows" + "}" * 560
    for program in (deep, "{" * 3990, "and{" * 790 + "true", "x" * 5000):
        answer = hostile.post("/api/program/run", json={"csv": csv, "program": program})
        one_line_json_error(answer, 422)
    assert hostile.get("/api/health").status_code == 200


def test_forms_with_too_many_or_too_large_fields_are_400(hostile: TestClient) -> None:
    boundary = "b"

    def multipart(parts: list[tuple[str, str | None, bytes]]) -> bytes:
        out = b""
        for name, filename, data in parts:
            disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
            out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
        return out + f"--{boundary}--\r\n".encode()

    kind = {"content-type": f"multipart/form-data; boundary={boundary}"}
    fields = multipart([(f"f{i}", None, b"x") for i in range(10_000)])
    files = multipart([("source", f"{i}.csv", b"x") for i in range(10_000)])
    big = multipart([("text", None, b"a,b\n" + b"1,2\n" * 300_000), ("statements", None, b"x")])
    for path in ("/verify", "/crosscheck", "/coref/score"):
        for body in (fields, files, big):
            error_on_page(hostile.post(path, content=body, headers=kind), 400, 413, 422)
    for path in ("/api/crosscheck", "/api/coref/score"):
        for body in (fields, files):
            one_line_json_error(hostile.post(path, content=body, headers=kind), 400, 413, 422)
    error_on_page(hostile.post("/coref/resolve", data={"text": "a" * 1_500_000}), 400, 413)


def test_odd_methods_are_405_with_an_allow_header(hostile: TestClient) -> None:
    for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND"):
        answer = hostile.request(method, "/api/check")
        one_line_json_error(answer, 405)
        # RFC 9110 15.5.6: a 405 answer MUST carry Allow (the custom error handler drops it)
        assert "POST" in answer.headers.get("allow", ""), answer.headers
        page = hostile.request(method, "/verify")
        assert page.status_code == 405 and "GET" in page.headers.get("allow", "")


def test_head_of_a_page_is_answered_like_get(hostile: TestClient) -> None:
    # HEAD must be supported wherever GET is (RFC 9110 9.3.2); link checkers and monitors use it
    for path in ("/", "/verify", "/crosscheck", "/coref", "/database", "/api/health"):
        answer = hostile.head(path)
        assert answer.status_code == 200, (path, answer.status_code)
        assert answer.content == b""


# ---- uploads -------------------------------------------------------------------------------------


def test_empty_binary_and_non_utf8_uploads_are_400(hostile: TestClient) -> None:
    cited = (EXAMPLES / "cited.tex").read_bytes()
    paper = (EXAMPLES / "paper.html").read_bytes()
    for name, data in (("empty.html", b""), ("blank.html", b"  \n"), ("bin.html", os.urandom(3000)),
                       ("latin1.html", "<table><tr><td>caf\u00e9</td></tr></table>".encode("latin-1"))):  # fmt: skip
        answer = hostile.post(
            "/api/crosscheck", files={"target": (name, data), "source": ("cited.tex", cited)}
        )
        assert name in one_line_json_error(answer, 400)
        page = hostile.post("/crosscheck", files={"target": (name, data), "source": ("cited.tex", cited)})
        assert name in error_on_page(page, 400)
    gold = (EXAMPLES / "coref_gold.jsonl").read_bytes()
    answer = hostile.post("/api/coref/score", files={"key": ("k.jsonl", b""), "response": ("r.jsonl", gold)})
    one_line_json_error(answer, 400)
    answer = hostile.post(
        "/api/crosscheck", files={"target": ("p.html", paper), "source": ("c.tex", b"\x00" * 10)}
    )
    one_line_json_error(answer, 400)


def test_a_utf16_upload_is_named_as_such_not_binary(hostile: TestClient) -> None:
    # a UTF-16 file (Windows' "Unicode" text) is text in the wrong encoding; calling it a binary file
    # with NUL bytes sends the user looking for the wrong problem
    cited = (EXAMPLES / "cited.tex").read_bytes()
    utf16 = (EXAMPLES / "paper.html").read_text(encoding="utf-8").encode("utf-16")
    answer = hostile.post(
        "/api/crosscheck", files={"target": ("paper.html", utf16), "source": ("c.tex", cited)}
    )
    message = one_line_json_error(answer, 400)
    assert "UTF-16" in message or "UTF-8" in message, message


def test_uploaded_names_are_labels_never_paths(hostile: TestClient) -> None:
    gold = (EXAMPLES / "coref_gold.jsonl").read_bytes()
    system = (EXAMPLES / "coref_system.jsonl").read_bytes()
    for key_name, response_name in (("../../../../tmp/evil.jsonl", "/etc/passwd"), ("..", "."),
                                    ("/dev/stdin", "/proc/self/environ"), ("a\\..\\..\\b.jsonl", "%2e%2e%2fx.jsonl")):  # fmt: skip
        answer = hostile.post(
            "/api/coref/score", files={"key": (key_name, gold), "response": (response_name, system)}
        )
        assert answer.status_code == 200, answer.text[:300]
        assert answer.json()["metrics"]["muc"]["f1"] > 0
    assert not Path("/tmp/evil.jsonl").exists()


# ---- names that might reach the file system ------------------------------------------------------


def test_database_and_table_names_never_reach_the_file_system(
    hostile: TestClient, databases: dict[str, str]
) -> None:
    for name in ("../league", "..", databases["league"], "league\x00", "/etc/passwd", "%2e%2e"):
        body = {"database": name, "table_name": "league", "statements": ["x"]}
        one_line_json_error(hostile.post("/api/check", json=body), 400, 404, 422)
    for table in (
        "../../etc/passwd",
        "/etc/passwd",
        "read_csv('/etc/passwd')",
        'league"; drop table league; --',
    ):
        body = {"database": "league", "table_name": table, "program": "count{all_rows}"}
        one_line_json_error(hostile.post("/api/program/run", json=body), 400, 404, 422)
    for path in ("/api/databases/..%2f..%2fetc%2fpasswd/schema", "/api/databases/%2e%2e/schema",
                 "/api/databases/%00/schema", "/api/lakes/..%2f/search"):  # fmt: skip
        assert hostile.get(path).status_code in (404, 405)
    for path in ("/static/..%2f..%2fapp.py", "/static/%2e%2e/app.py", "/static/..%5capp.py",
                 "/static/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc/passwd", "/database/db/..%2F..%2Fetc%2Fpasswd"):  # fmt: skip
        answer = hostile.get(path)
        assert answer.status_code == 404 and "root:" not in answer.text and "create_app" not in answer.text
    count = hostile.post(
        "/api/program/run", json={"database": "league", "table_name": "league", "program": "count{all_rows}"}
    )
    assert count.status_code == 200 and count.json()["value"] == 6  # the drop did nothing


def test_sql_that_reads_or_writes_files_is_refused(hostile: TestClient, tmp_path: Path) -> None:
    target = tmp_path / "written"
    queries = {
        "league": [f"COPY league TO '{target}.csv'", f"ATTACH '{target}.db' AS x", "PRAGMA database_list",
                   "LOAD httpfs", "INSTALL httpfs", "SET enable_external_access = true",
                   "select * from read_csv('/etc/passwd')", "select * from '/etc/passwd'",
                   "select * from read_text('/etc/passwd')", "select * from glob('/etc/*')",
                   "select * from query('select * from read_csv(''/etc/passwd'')')",
                   "select * from READ_CSV_AUTO('/etc/passwd')", "select 1; drop table league",
                   f"EXPORT DATABASE '{target}'", "CREATE TABLE t AS SELECT 1"],
        "lite": [f"ATTACH '{target}.db' AS x", "select load_extension('/tmp/x')", "select readfile('/etc/passwd')",
                 f"select writefile('{target}', 'x')", "PRAGMA writable_schema = 1", "VACUUM INTO '/tmp/x.db'",
                 "select * from pragma_database_list"],
    }  # fmt: skip
    for name, sqls in queries.items():
        for sql in sqls:
            answer = hostile.post(f"/api/databases/{name}/query", json={"sql": sql})
            message = one_line_json_error(answer, 400, 422)
            assert "root:" not in message, sql
    assert not list(tmp_path.iterdir())


def test_database_errors_do_not_show_the_server_path(hostile: TestClient, databases: dict[str, str]) -> None:
    # the docs: "the server's file layout is never shown" - database routes replace the path by the
    # name, but the verify routes (a database table) do not
    for name, target in databases.items():
        answer = hostile.post(
            "/api/check", json={"database": name, "table_name": "nope", "statements": ["x"]}
        )
        message = one_line_json_error(answer, 400)
        assert target not in message and str(Path(target).parent) not in message, message
        page = hostile.post("/verify", data={"database": name, "table_name": "nope", "statements": "x"})
        assert target not in error_on_page(page, 400)
        checked = hostile.post(
            "/api/check", json={"database": name, "table_name": "league", "statements": ["x"]}
        )
        assert checked.status_code == 200 and target not in checked.text, checked.text[:400]


def test_sql_cannot_read_the_server_layout(hostile: TestClient, databases: dict[str, str]) -> None:
    # DuckDB's catalog functions name the database file, its folder and the home directory
    folder = str(Path(databases["league"]).parent)
    for sql in ("select path from duckdb_databases()", "select * from duckdb_settings()",
                "select current_setting('temp_directory')", "select * from duckdb_extensions()"):  # fmt: skip
        answer = hostile.post("/api/databases/league/query", json={"sql": sql, "max_rows": 1000})
        assert folder not in answer.text and "/root" not in answer.text, (sql, answer.text[:300])


# ---- markup injection -----------------------------------------------------------------------------


def assert_inert(html: str) -> None:
    """No user-supplied markup survives as markup."""
    assert (
        "<script>alert" not in html
        and "<img src=x" not in html
        and "onerror=alert(2)>" not in html
        and "onerror=alert(3)>" not in html
    )


def test_markup_in_every_field_is_escaped_and_csp_is_sent(hostile: TestClient) -> None:
    csv = f'team,"{ATTRIBUTE.replace(chr(34), chr(34) * 2)}"\n"{SCRIPT}",3\n"</textarea>{SCRIPT}",1\n'
    statements = f"{SCRIPT} won 3\n{ATTRIBUTE} has 3\n</textarea><b>x</b>"
    page = hostile.post(
        "/verify", data={"statements": statements}, files={"file": (f"{ATTRIBUTE}.csv", csv.encode())}
    )
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert_inert(page.text)
    rerun = hostile.post("/verify", data={"text": csv, "statements": statements, "rerun": "0",
                                          "program": f"hop{{all_rows; {ATTRIBUTE}}}"})  # fmt: skip
    assert rerun.status_code in (200, 422)
    assert_inert(rerun.text)
    for table in (TABLE, "nope" + SCRIPT):
        assert_inert(
            hostile.post(
                "/verify", data={"database": "league", "table_name": table, "statements": SCRIPT}
            ).text
        )
    assert_inert(hostile.get("/database/db/league").text)
    query = hostile.post("/database/db/league/query", data={"sql": f'select * from "{TABLE}"'})
    assert query.status_code == 200 and "&lt;script&gt;alert(1)" in query.text
    assert_inert(query.text)
    assert_inert(
        hostile.post("/database/db/league/query", data={"sql": f"select '{SCRIPT}' as \"{TABLE}\""}).text
    )
    paper, cited = (EXAMPLES / "paper.html").read_bytes(), (EXAMPLES / "cited.tex").read_bytes()
    crosscheck = hostile.post(
        "/crosscheck", files={"target": (f"{SCRIPT}.html", paper), "source": (f"{ATTRIBUTE}.tex", cited)}
    )
    assert crosscheck.status_code == 200
    assert_inert(crosscheck.text)
    record = {
        "doc_id": SCRIPT + ATTRIBUTE,
        "text": f"דוד קנה בית. {SCRIPT} ביתו",
        "clusters": [[[0, 3], [13, 20]]],
    }
    line = (json.dumps(record) + "\n").encode()
    scored = hostile.post(
        "/coref/score", files={"key": (f"{ATTRIBUTE}.jsonl", line), "response": ("r.jsonl", line)}
    )
    assert scored.status_code == 200
    assert_inert(scored.text)
    resolved = hostile.post("/coref/resolve", data={"text": f"דוד קנה בית. {SCRIPT}", "doc_id": ATTRIBUTE})
    assert resolved.status_code == 200
    assert_inert(resolved.text)
    for path in (
        "/nope" + "%3Cscript%3Ealert(1)%3C/script%3E",
        "/database/db/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    ):
        assert_inert(hostile.get(path).text)


def test_a_413_refusal_carries_the_security_headers(hostile: TestClient) -> None:
    # the body limit answers before the security-header middleware runs: its error page has no CSP
    for path in ("/verify", "/api/check"):
        answer = hostile.post(path, content=b"x" * (3 * 1024 * 1024), headers={"content-type": "text/plain"})
        assert answer.status_code == 413
        assert "script-src 'self'" in answer.headers.get("content-security-policy", ""), answer.headers
        assert answer.headers.get("x-content-type-options") == "nosniff"


# ---- values the server cannot encode ----------------------------------------------------------------


def test_an_unpaired_surrogate_is_bad_input_not_a_500(hostile: TestClient) -> None:
    # "\ud800" is valid JSON syntax but no Unicode text: writing it out (a temporary file, the answer)
    # raised UnicodeEncodeError / PydanticSerializationError -> 500
    bodies = [
        (
            "/api/coref/resolve",
            b'{"text": "\\u05d3\\u05d5\\u05d3 \\ud800 \\u05e7\\u05e0\\u05d4", "doc_id": "d"}',
        ),
        (
            "/api/coref/resolve",
            b'{"text": "\\u05d3\\u05d5\\u05d3 \\u05e7\\u05e0\\u05d4", "doc_id": "\\udfff"}',
        ),
        ("/api/program/run", b'{"csv": "team,wins\\nhawks\\ud800,3", "program": "hop{all_rows; team}"}'),
        ("/api/check", b'{"table": {"header": ["a\\udfff"], "rows": [["x"]]}, "statements": ["a is x"]}'),
    ]
    for path, body in bodies:
        answer = hostile.post(path, content=body, headers={"content-type": "application/json"})
        assert answer.status_code in (200, 400, 422), (path, answer.status_code, answer.text[:200])
        if answer.status_code != 200:
            one_line_json_error(answer, 400, 422)


# ---- a real server: time, processes, temporary files ---------------------------------------------


def slow_check() -> dict[str, Any]:
    """A check that takes far longer than the time limit (pure Python work)."""
    rows = ["week,team,opponent,score,attendance,city,notes"]
    rows += [
        f"{i},team{i % 50},opp{i * 7 % 300},{i % 50},{1000 + i * 37 % 90000},city{i % 77},note {i}"
        for i in range(2000)
    ]
    statements = [
        f"team{i % 50} scored more than {i} points against opp{i} in city{i % 77}" for i in range(100)
    ]
    return {"csv": "\n".join(rows), "statements": statements}


def test_a_timed_out_upload_leaves_no_temporary_files(served: Served) -> None:
    # coref score writes the uploads into a temporary folder in the worker; the worker is killed at
    # the time limit, so the folder (with the user's files) stays behind.
    # The work must outlast the limit on any machine: four documents of 5,000 nested mentions (one
    # key entity, response pairs) keep the mention alignment busy: `coref score` on them takes
    # about 70 s here, for 0.65 MB of uploads. (One entity of 40,000 side-by-side mentions, linear
    # work of about 3 s here, once came back inside the 3 s limit on a faster CI machine.)
    n, documents = 5_000, 4
    text = "a" * (2 * n + 2)
    mentions = [[i, 2 * n + 1 - i] for i in range(n)]
    key_lines, response_lines = [], []
    for d in range(documents):
        key_lines.append(json.dumps({"doc_id": f"d{d}", "text": text, "clusters": [mentions]}))
        pairs = [mentions[i : i + 2] for i in range(0, n, 2)]
        response_lines.append(json.dumps({"doc_id": f"d{d}", "text": text, "clusters": pairs}))
    key, response = "\n".join(key_lines) + "\n", "\n".join(response_lines) + "\n"
    status, _ = served.post_multipart(
        "/api/coref/score",
        {
            "key": ("k.jsonl", key.encode()),
            "response": ("r.jsonl", response.encode()),
        },
    )
    assert status == 504
    time.sleep(0.5)
    left = [p.name for p in served.tmpdir.iterdir() if p.name.startswith("tabverify")]
    assert not left, f"temporary folders left in TMPDIR after a 504: {left}"


def test_504_comes_at_the_time_limit_even_in_native_code(served: Served) -> None:
    # a query stuck in one SQLite call ignores pebble's SIGTERM; pebble waits 3 s before SIGKILL, and
    # the 504 comes only then - the limit is not the limit
    sql = "select length(printf('%.*c', 1000000000, 'x'))"
    started = time.monotonic()
    try:
        status, body = served.post_json("/api/databases/lite/query", {"sql": sql}, timeout=TIME_LIMIT_S + 1.5)
    except (TimeoutError, urllib.error.URLError) as exc:
        time.sleep(3)  # let the worker be replaced before the next test
        pytest.fail(f"no answer {TIME_LIMIT_S + 1.5:g} s after a {TIME_LIMIT_S:g} s time limit ({exc})")
    try:
        assert status == 504, body
        assert time.monotonic() - started < TIME_LIMIT_S + 1.5
    finally:
        time.sleep(3)  # let the worker be replaced before the next test


def test_an_abandoned_request_frees_its_worker(served: Served) -> None:
    # the client hangs up; its request's work should stop, not run on to the time limit
    quick = {"csv": "a,b\n1,2", "program": "count{all_rows}"}
    assert served.post_json("/api/program/run", quick, timeout=30)[0] == 200  # a live, idle worker
    body = json.dumps(slow_check()).encode()
    before = set(served.workers())
    assert before
    sock = served.raw(
        b"POST /api/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body) + body
    )
    time.sleep(0.6)
    sock.close()
    time.sleep(1.4)  # a cancelled task's worker is stopped in well under a second
    assert not before & set(served.workers()), (
        f"the worker {sorted(before)} still runs the request {2.0:g} s after its client left"
    )
    time.sleep(TIME_LIMIT_S)  # (with the bug, let the limit stop it before the next test)


def test_a_queued_request_is_answered_within_the_time_limit(served: Served) -> None:
    # one worker, three runaway requests queued: a quick request waits for all three (and memory
    # grows with every queued body); the time limit should bound a request's whole stay
    body = slow_check()
    results: list[int] = []

    def slow() -> None:
        try:
            results.append(served.post_json("/api/check", body, timeout=30)[0])
        except Exception:  # noqa: BLE001 - the client gives up; the server's answer is what is tested
            results.append(-1)

    threads = [threading.Thread(target=slow, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    limit = TIME_LIMIT_S + 2.5
    try:
        status, _ = served.post_json(
            "/api/program/run", {"csv": "a,b\n1,2", "program": "count{all_rows}"}, timeout=limit
        )
    except (TimeoutError, urllib.error.URLError):
        status = -1
    waited = time.monotonic() - started
    assert status in (200, 503, 504) and waited < limit, (
        f"a quick request behind 3 runaway ones: status {status} after {waited:.1f} s "
        f"(time limit {TIME_LIMIT_S:g} s)"
    )


def test_a_stalled_client_neither_blocks_others_nor_holds_its_connection_forever(served: Served) -> None:
    # 50 clients stop half-way through a body, 50 half-way through the headers (slowloris)
    bodies = [
        served.raw(
            b"POST /api/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100000\r\n\r\n{"csv": "'
        )  # fmt: skip
        for _ in range(50)
    ]
    headers = [served.raw(b"GET /api/health HTTP/1.1\r\nHost: x\r\n") for _ in range(50)]
    stalled = bodies + headers
    started = time.monotonic()
    with urllib.request.urlopen(served.url("/api/health"), timeout=5) as answer:
        assert answer.status == 200
    assert time.monotonic() - started < 2
    # a body that stops arriving is given up on (408 or a close) within the time limit plus 2 s,
    # or a few hundred such connections exhaust file descriptors and buffered memory
    deadline = started + TIME_LIMIT_S + 2
    open_ones = list(stalled)
    while open_ones and time.monotonic() < deadline:
        time.sleep(0.5)
        still = []
        for sock in open_ones:
            sock.settimeout(0.01)
            try:
                if sock.recv(1024) == b"":
                    continue  # closed by the server
                continue  # answered (408): fine
            except TimeoutError:
                still.append(sock)
            except OSError:
                continue
        open_ones = still
    for sock in stalled:
        sock.close()
    left_bodies = sum(1 for sock in open_ones if sock in bodies)
    assert not open_ones, (
        f"still open after {TIME_LIMIT_S + 2:g} s: {left_bodies} of 50 stalled bodies, "
        f"{len(open_ones) - left_bodies} of 50 stalled header blocks"
    )
