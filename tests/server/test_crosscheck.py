"""The crosscheck page and ``POST /api/crosscheck``: the shipped example gives one discrepancy, the
API answers exactly what ``tabverify crosscheck --json`` prints, bad uploads get the right status
with one line, and uploaded names are shown as text, never as markup."""

from __future__ import annotations

import base64
import re
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import EXAMPLES, ROOT

PAPER = ("paper.html", (EXAMPLES / "paper.html").read_bytes())
CITED = ("cited.tex", (EXAMPLES / "cited.tex").read_bytes())
HOSTILE = "<img src=x onerror=alert(1)>.html"


def _post(client: TestClient, path: str, target: tuple[str, bytes], *sources: tuple[str, bytes], **data: str):
    files = [("target", target), *[("source", source) for source in sources]]
    return client.post(path, files=files, data=data)


def test_the_api_mirrors_the_cli_json_exactly(client: TestClient) -> None:
    answer = _post(client, "/api/crosscheck", PAPER, CITED)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    payload = answer.json()
    assert payload["target"] == "paper.html" and payload["discrepancies"] == 1
    (result,) = payload["results"]
    assert result["source"] == "cited.tex" and result["target_table"] == 1 and result["source_table"] == 2
    (wrong,) = result["discrepancies"]
    assert wrong["target_text"] == "66.9" and wrong["kind"]
    cli = subprocess.run(
        [sys.executable, "-m", "tabverify.cli", "crosscheck", "paper.html", "--source", "cited.tex", "--json"],
        cwd=EXAMPLES, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert cli.returncode == 1, cli.stderr  # exit 1: discrepancies found
    assert answer.text == cli.stdout


def test_the_page_shows_the_report_and_a_download_of_the_same_json(client: TestClient) -> None:
    form = client.get("/crosscheck")
    assert form.status_code == 200 and 'name="source" multiple' in form.text
    shown = _post(client, "/crosscheck", PAPER, CITED)
    assert shown.status_code == 200
    assert "1 discrepancy" in shown.text and 'class="bad"' in shown.text and "66.9" in shown.text
    link = re.search(r'href="data:application/json;base64,([^"]+)"', shown.text)
    assert link is not None
    assert (
        base64.b64decode(link.group(1)).decode("utf-8") == _post(client, "/api/crosscheck", PAPER, CITED).text
    )
    css = client.get("/crosscheck/report.css")
    assert (
        css.status_code == 200 and css.headers["content-type"].startswith("text/css") and ".bad" in css.text
    )


def test_a_table_number_chooses_the_target_table(client: TestClient) -> None:
    chosen = _post(client, "/api/crosscheck", PAPER, CITED, table="1").json()
    assert [r["target_table"] for r in chosen["results"]] == [1]
    refused = _post(client, "/api/crosscheck", PAPER, CITED, table="7")
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "table 7: paper.html has 1 table(s); choose 1 to 1"
    assert _post(client, "/api/crosscheck", PAPER, CITED, table="x").status_code == 400


@pytest.mark.parametrize(
    ("target", "status", "message"),
    [
        (("empty.html", b""), 400, "empty.html: the uploaded file is empty"),
        (("blank.html", b"  \n "), 400, "blank.html: the uploaded file is empty"),
        (("bin.html", b"\x89PNG\r\n\x1a\n\x00\x00"), 400, "bin.html: looks like a binary file (NUL bytes); upload a text file"),
        (("latin.tex", "Tabelle \xe9".encode("latin-1")), 400, "latin.tex: not valid UTF-8 (byte 8); upload UTF-8 text"),
        (("prose.html", b"<p>no table here</p>"), 400, "prose.html: no <table> with rows found in the HTML"),
        (("record.json", b'{"list_table_and_caption": 3}'), 400, '"list_table_and_caption" must be a list'),
    ],
)  # fmt: skip
def test_bad_uploads_get_400_with_one_line(client: TestClient, target: tuple[str, bytes], status: int,
                                           message: str) -> None:  # fmt: skip
    answer = _post(client, "/api/crosscheck", target, CITED)
    assert answer.status_code == status
    error = answer.json()["error"]
    assert message in error["message"] and "\n" not in error["message"]
    page = _post(client, "/crosscheck", target, CITED)  # the page keeps the form and says why
    assert page.status_code == status and 'id="error"' in page.text and 'id="crosscheck-form"' in page.text


def test_missing_fields_are_422_json_is_415_and_the_server_keeps_serving(client: TestClient) -> None:
    no_source = client.post("/api/crosscheck", files=[("target", PAPER)])
    assert no_source.status_code == 422
    assert no_source.json()["error"]["message"] == "invalid request: source: Field required"
    no_target = client.post("/api/crosscheck", files=[("source", CITED)])
    assert no_target.status_code == 422 and "target" in no_target.json()["error"]["message"]
    not_multipart = client.post("/api/crosscheck", json={"target": "x"})
    assert (
        not_multipart.status_code == 415 and "multipart/form-data" in not_multipart.json()["error"]["message"]
    )
    assert _post(client, "/api/crosscheck", PAPER, CITED).status_code == 200


def test_file_names_are_escaped_on_the_page(client: TestClient) -> None:
    shown = _post(client, "/crosscheck", (HOSTILE, PAPER[1]), ('"><script>alert(2)</script>.tex', CITED[1]))
    assert shown.status_code == 200 and "1 discrepancy" in shown.text
    assert "<img src=x" not in shown.text and "<script>alert" not in shown.text
    assert "&lt;img src=x onerror=alert(1)&gt;.html" in shown.text
    error = _post(client, "/crosscheck", (HOSTILE, b"<p>prose</p>"), CITED)
    assert error.status_code == 400 and "<img src=x" not in error.text and "&lt;img" in error.text
    assert _post(client, "/api/crosscheck", (HOSTILE, PAPER[1]), CITED).json()["target"] == HOSTILE
