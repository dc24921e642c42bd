"""The verify page and its API: /api/check answers what `tabverify check --json` prints,
/api/program/run re-runs a program, the page shows verdicts with evidence highlighted, and every
bad input is one line with the right status while user text stays text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from typer.testing import CliRunner

from tabverify.cli import app as cli_app
from tabverify.server import ServerSettings
from tests.server.conftest import EXAMPLES, app_client

LEAGUE = (EXAMPLES / "league.csv").read_text()
HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']


def _evidence_cells(html: str) -> list[str]:
    return re.findall(r'<td data-row="\d+" data-col="\d+" class="evidence">([^<]*)</td>', html)


def test_check_answers_what_the_cli_prints(client: TestClient, tmp_path: Path) -> None:
    statements = ["the hawks played 2 games", "the attendance was 99 in week 1"]
    answer = client.post("/api/check", json={"csv": LEAGUE, "statements": statements})
    assert answer.status_code == 200, answer.text
    path = tmp_path / "league.csv"
    path.write_text(LEAGUE)
    printed = CliRunner().invoke(cli_app, ["check", str(path), *statements, "--json"])
    expected = json.loads(printed.stdout)
    got = answer.json()
    assert set(got) == {"table", "verdicts"} and got["table"] == "csv"
    for ours, theirs in zip(got["verdicts"], expected["verdicts"], strict=True):
        theirs["source"] = ours["source"]  # the CLI names the file; the API names the request's table
        assert ours == theirs
    assert [v["label"] for v in got["verdicts"]] == ["ENTAILED", "REFUTED"]
    assert got["verdicts"][0]["evidence"] and got["verdicts"][0]["alternatives"]


def test_every_way_of_giving_the_table_gives_the_same_verdict(client: TestClient) -> None:
    lines = [line.split(",") for line in LEAGUE.strip().splitlines()]
    markdown = "\n".join(["| " + " | ".join(lines[0]) + " |", "|---" * 5 + "|"])
    markdown += "\n" + "\n".join("| " + " | ".join(row) + " |" for row in lines[1:])
    bodies = [
        {"table": {"header": lines[0], "rows": lines[1:]}},
        {"csv": LEAGUE},
        {"text": LEAGUE.replace(",", "\t"), "format": "tsv"},
        {"text": markdown},
    ]
    programs = set()
    for body in bodies:
        answer = client.post("/api/check", json={**body, "statements": ["the hawks played 2 games"]})
        assert answer.status_code == 200, (body, answer.text)
        verdict = answer.json()["verdicts"][0]
        assert verdict["label"] == "ENTAILED"
        programs.add(verdict["program"])
    assert len(programs) == 1


def test_program_run_gives_value_display_and_evidence(client: TestClient) -> None:
    program = "count{filter_eq{all_rows; opponent; dayton rivers}}"
    answer = client.post("/api/program/run", json={"csv": LEAGUE, "program": program})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "program": program,
        "value": 2,
        "display": "2",
        "evidence": [{"row": 1, "column": 2}, {"row": 3, "column": 2}],
    }


@pytest.mark.parametrize(
    ("kwargs", "status", "message"),
    [
        (
            {"content": b'{"csv": "a,b', "headers": {"content-type": "application/json"}},
            400,
            "malformed JSON",
        ),
        ({"content": b"csv=a", "headers": {"content-type": "text/plain"}}, 415, "application/json"),
        ({"json": {"table": {"header": [], "rows": []}, "statements": ["x"]}}, 400, "no rows"),
        ({"json": {"csv": "a,b\n1,2,3\n", "statements": ["x"]}}, 400, "ragged"),
        ({"json": {"csv": "", "statements": ["x"]}}, 400, "empty"),
        ({"json": {"text": "<p>no table</p>", "format": "html", "statements": ["x"]}}, 400, "table"),
        ({"json": {"table": {"header": ["a"], "rows": [[[1]]]}, "statements": ["x"]}}, 422, "invalid"),
        ({"json": {"csv": LEAGUE, "statements": []}}, 422, "statements"),
        ({"json": {"csv": LEAGUE, "statements": ["x" * 1001]}}, 422, "statements"),
        (
            {"json": {"csv": LEAGUE, "table": {"header": ["a"], "rows": []}, "statements": ["x"]}},
            422,
            "exactly one",
        ),
        ({"json": {"statements": ["x"]}}, 422, "exactly one"),
        ({"json": {"database": "nowhere", "table_name": "t", "statements": ["x"]}}, 400, "no database named"),
    ],
)
def test_bad_check_requests_get_one_line_and_the_right_status(
    client: TestClient, kwargs: dict, status: int, message: str
) -> None:
    answer = client.post("/api/check", **kwargs)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["status"] == status and message in error["message"] and "\n" not in error["message"]


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("count{all_rows", "missing '}'"),
        ("count{nope_function{all_rows}}", "nope_function"),
        ("count{filter_eq{all_rows; no such column; 3}}", "no column named"),
        ("max{all_rows; opponent; 3}", "max"),
    ],
)
def test_a_program_that_does_not_type_check_is_422(client: TestClient, program: str, message: str) -> None:
    answer = client.post("/api/program/run", json={"csv": LEAGUE, "program": program})
    assert answer.status_code == 422, answer.text
    assert message in answer.json()["error"]["message"]


def test_too_many_statements_are_refused() -> None:
    with app_client(ServerSettings(workers=1, max_statements=2)) as small:
        answer = small.post("/api/check", json={"csv": LEAGUE, "statements": ["a", "b", "c"]})
        assert answer.status_code == 422
        assert answer.json()["error"]["message"] == "3 statements; a request may carry at most 2"
        page = small.post("/verify", data={"text": LEAGUE, "statements": "a\nb\nc"})
        assert page.status_code == 422 and "at most 2" in page.text
        assert small.get("/api/health").status_code == 200


def test_markup_in_cells_and_statements_comes_back_as_data(client: TestClient) -> None:
    table = {"header": ["name", "points"], "rows": [[HOSTILE[0], 3], [HOSTILE[1], 5]]}
    statements = [f"{HOSTILE[0]} has 3 points"]
    answer = client.post("/api/check", json={"table": table, "statements": statements})
    assert answer.status_code == 200
    assert answer.json()["verdicts"][0]["statement"] == statements[0]
    run = client.post(
        "/api/program/run", json={"table": table, "program": "hop{argmax{all_rows; points}; name}"}
    )
    assert run.json()["value"] == HOSTILE[1]


def test_the_requests_appear_in_the_openapi_spec(client: TestClient) -> None:
    spec = client.get("/api/openapi.json").json()
    assert {"/api/check", "/api/program/run"} <= set(spec["paths"])
    schemas = spec["components"]["schemas"]
    assert schemas["CheckRequest"]["properties"]["statements"]["maxItems"] > 0
    assert schemas["ProgramRequest"]["properties"]["program"]["maxLength"] == 4000


def test_the_page_renders_verdicts_with_evidence_highlighted(client: TestClient) -> None:
    assert 'id="verify-form"' in client.get("/verify").text
    page = client.post(
        "/verify",
        data={"text": LEAGUE, "statements": "the hawks played 2 games\nthe weather was nice in paris"},
    )
    assert page.status_code == 200, page.text
    assert 'class="label ENTAILED"' in page.text and 'class="label NOT-ENOUGH-INFO"' in page.text
    assert _evidence_cells(page.text) == ["hartford hawks", "hartford hawks"]
    assert "eq{count{filter_eq{all_rows; opponent; hawks}}; 2}" in page.text
    assert "Runner-up programs" in page.text and "No program supports or refutes" in page.text
    assert page.text.count('name="program"') == 2  # a program box per verdict


def test_an_uploaded_file_is_read_and_kept_in_the_form(client: TestClient) -> None:
    document = (EXAMPLES / "cited.tex").read_bytes()
    page = client.post(
        "/verify",
        data={"statements": "the AP is 41.2", "number": "2"},
        files={"file": ("cited.tex", document, "application/x-tex")},
    )
    assert page.status_code == 200, page.text
    assert "the document holds 2 tables; this is table 2" in page.text
    assert "\\begin{tabular}" in page.text  # the upload is in the text box, so a re-run has it


def test_the_form_reruns_an_edited_program_without_javascript(client: TestClient) -> None:
    page = client.post(
        "/verify",
        data={
            "text": LEAGUE,
            "statements": "x\ny",
            "program": ["count{all_rows}", "count{filter_eq{all_rows; opponent; dayton rivers}}"],
            "rerun": "1",
        },
    )
    assert page.status_code == 200, page.text
    assert '<span class="value">2</span>' in page.text
    assert _evidence_cells(page.text) == ["dayton rivers", "dayton rivers"]
    broken = client.post(
        "/verify", data={"text": LEAGUE, "statements": "x", "program": ["count{all_rows"], "rerun": "0"}
    )
    assert broken.status_code == 422 and 'id="error"' in broken.text
    assert "count{all_rows" in broken.text  # the input is kept


@pytest.mark.parametrize(
    ("data", "files", "status", "message"),
    [
        ({"statements": "x"}, None, 400, "paste a table"),
        ({"text": LEAGUE, "statements": "  \n "}, None, 400, "at least one statement"),
        ({"text": "a,b\n1,2,3", "statements": "x"}, None, 400, "ragged"),
        ({"statements": "x"}, {"file": ("t.csv", b"", "text/csv")}, 400, "empty"),
        ({"statements": "x"}, {"file": ("t.csv", b"\xff\xfe\x00a,b", "text/csv")}, 400, "UTF-8"),
        ({"text": LEAGUE, "statements": "x" * 1001}, None, 400, "at most 1,000"),
        ({"text": "a,b\n" + "1,2\n" * 300_000, "statements": "x"}, None, 400, "more than 500,000 cells"),
    ],
)
def test_bad_form_input_is_one_line_on_the_page(
    client: TestClient, data: dict, files: dict | None, status: int, message: str
) -> None:
    page = client.post("/verify", data=data, files=files)
    assert page.status_code == status
    assert page.headers["content-type"].startswith("text/html")
    error = re.search(r'<p class="error" role="alert" id="error">([^<]*)</p>', page.text)
    assert error is not None and message in error.group(1), page.text[:2000]
    assert 'id="verify-form"' in page.text  # the form is still there


def test_the_page_escapes_cells_statements_and_file_names(client: TestClient) -> None:
    table = "name,points\n" + "\n".join(
        '"' + cell.replace('"', '""') + f'",{n}' for n, cell in enumerate(HOSTILE)
    )
    page = client.post(
        "/verify",
        data={"statements": f"{HOSTILE[0]} has 0 points\n{HOSTILE[1]}"},
        files={"file": (f"{HOSTILE[1]}.csv", table.encode(), "text/csv")},
    )
    assert page.status_code == 200, page.text
    for text in HOSTILE:
        assert text not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert "<script>" not in page.text.replace('<script src="/static/verify.js" defer></script>', "")
    assert "<img" not in page.text
    bad_name = client.post(
        "/verify", data={"statements": "x"}, files={"file": (f"{HOSTILE[0]}.csv", b"", "text/csv")}
    )
    assert bad_name.status_code == 400 and HOSTILE[0] not in bad_name.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.csv" in bad_name.text


def _league_database(path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE games AS SELECT * FROM read_csv(?, header = true, all_varchar = false)",
            [str(EXAMPLES / "league.csv")],
        )


def test_a_configured_database_table_is_checked_with_sql(tmp_path: Path) -> None:
    path = tmp_path / "league.duckdb"
    _league_database(path)
    with app_client(ServerSettings(databases={"league": str(path)}, workers=1)) as served:
        body = {"database": "league", "table_name": "games"}
        answer = served.post("/api/check", json={**body, "statements": ["the hawks played 2 games"]})
        assert answer.status_code == 200, answer.text
        got = answer.json()
        assert got["table"] == "league : games"
        verdict = got["verdicts"][0]
        assert verdict["label"] == "ENTAILED" and "SELECT" in verdict["sql"].upper()
        run = served.post("/api/program/run", json={**body, "program": "count{all_rows}"})
        assert run.status_code == 200 and run.json()["value"] == 6 and "SELECT" in run.json()["sql"].upper()
        missing = served.post(
            "/api/check", json={"database": "league", "table_name": "nope", "statements": ["x"]}
        )
        assert missing.status_code == 400 and "nope" in missing.json()["error"]["message"]
        page = served.post(
            "/verify",
            data={"database": "league", "table_name": "games", "statements": "the hawks played 2 games"},
        )
        assert page.status_code == 200, page.text
        assert _evidence_cells(page.text) == ["hartford hawks", "hartford hawks"]
        assert f'<p class="sql">sql: <code>{escape(verdict["sql"])}</code>' in page.text
        assert str(path) not in page.text.split("Verdicts", 1)[1].split("</h2>", 1)[0]
        form = served.get("/verify").text  # the table picker offers the database's tables
        assert '<datalist id="table-names"><option value="games" label="league">' in form


def test_a_long_table_shows_its_first_rows_and_every_evidence_row(client: TestClient) -> None:
    rows = "\n".join(f"team {n},{n * 10}" for n in range(1, 201))
    page = client.post(
        "/verify", data={"text": f"team,points\n{rows}\n", "statements": "team 150 has 1500 points"}
    )
    assert page.status_code == 200, page.text
    labels = re.findall(r'<th scope="row">(\d+)</th>', page.text)
    assert labels == [str(n) for n in range(1, 31)] + ["150"]
    assert "team 150" in _evidence_cells(page.text)
    assert "169 more rows not shown" in page.text


def test_a_large_upload_is_checked_and_the_page_says_it_is_not_kept(client: TestClient) -> None:
    rows = "\n".join(f"team {n},{n},{'long note ' * 600}" for n in range(1, 101))
    upload = f"team,points,notes\n{rows}\n".encode()
    assert len(upload) > 500_000
    page = client.post(
        "/verify", data={"statements": "team 7 has 7 points"}, files={"file": ("big.csv", upload)}
    )
    assert page.status_code == 200, page.text
    assert 'class="label ENTAILED"' in page.text
    assert "too large to keep in the form: upload it again to run a program" in page.text
