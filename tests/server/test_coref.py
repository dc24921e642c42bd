"""The coref page and its API: ``POST /api/coref/score`` answers exactly what ``tabverify coref
score --json`` prints, ``POST /api/coref/resolve`` the document JSON the scorer reads; the page shows
the scores, the alignment view and the resolver's entities; bad input gets the right status with one
line, and document ids and file names are shown as text, never as markup."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tabverify.coref import read_documents
from tabverify.server.uploads import safe_name
from tests.server.conftest import EXAMPLES, ROOT

GOLD = ("coref_gold.jsonl", (EXAMPLES / "coref_gold.jsonl").read_bytes())
SYSTEM = ("coref_system.jsonl", (EXAMPLES / "coref_system.jsonl").read_bytes())
TEXT = "דני קנה מכונית חדשה. הוא אוהב אותה מאוד."
HOSTILE_ID = "<script>alert(1)</script>"


def _score(client: TestClient, path: str, key: tuple[str, bytes] = GOLD, response: tuple[str, bytes] = SYSTEM,
           **options: str):  # fmt: skip
    return client.post(path, files=[("key", key), ("response", response)], data=options)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tabverify.cli", "coref", *args], cwd=EXAMPLES, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT / "src")})  # fmt: skip


def test_the_score_api_mirrors_the_cli_json_exactly(client: TestClient) -> None:
    answer = _score(client, "/api/coref/score")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    data = answer.json()
    assert set(data["metrics"]) == {"muc", "b_cubed", "ceafm", "ceafe", "blanc", "lea", "conll_f1"}
    assert data["documents"] == 1 and 0 < data["metrics"]["conll_f1"] < 1
    cli = _cli("score", "coref_gold.jsonl", "coref_system.jsonl", "--json")
    assert cli.returncode == 0, cli.stderr
    assert answer.text == cli.stdout
    overlap = _score(client, "/api/coref/score", match="overlap", threshold="0.5", singletons="drop",
                     weights="embedded_pronoun=3, subword=2")  # fmt: skip
    cli = _cli("score", "coref_gold.jsonl", "coref_system.jsonl", "--json", "--match", "overlap", "--threshold",
               "0.5", "--drop-singletons", "--weight", "embedded_pronoun=3", "--weight", "subword=2")  # fmt: skip
    assert overlap.status_code == 200 and overlap.text == cli.stdout
    assert overlap.json()["options"]["match"] == "overlap"


def test_the_page_shows_scores_alignment_and_a_download(client: TestClient) -> None:
    form = client.get("/coref")
    assert form.status_code == 200 and 'id="score-form"' in form.text and 'id="resolve-form"' in form.text
    shown = _score(client, "/coref/score", match="overlap")
    assert shown.status_code == 200
    assert 'id="metrics"' in shown.text and "b_cubed" in shown.text and "conll_f1" in shown.text
    assert 'class="text gold" dir="auto"' in shown.text and "Aligned pairs" in shown.text
    assert '<option value="overlap" selected>' in shown.text  # the options stay as chosen
    link = re.search(r'id="download-scores"[^>]*href="data:application/json;base64,([^"]+)"', shown.text)
    assert link is not None
    expected = _score(client, "/api/coref/score", match="overlap").text
    assert base64.b64decode(link.group(1)).decode("utf-8") == expected
    assert ".lost" in client.get("/coref/report.css").text


def test_other_formats_are_read(client: TestClient, tmp_path: Path) -> None:
    conll = "#begin document (d);\nd 0 0 A (1)\nd 0 1 B (1)\nd 0 2 C -\n#end document\n"
    answer = _score(client, "/api/coref/score", ("k.conll", conll.encode()), ("r.conll", conll.encode()))
    assert answer.status_code == 200 and answer.json()["metrics"]["conll_f1"] == 1.0
    conllu = (
        "# newdoc id = d1\n# sent_id = 1\n# text = a b\n"
        "1\ta\t_\t_\t_\t_\t0\troot\t_\tEntity=(e1)\n2\tb\t_\t_\t_\t_\t1\tdep\t_\tEntity=(e1)\n\n"
    )
    as_conllu = _score(
        client, "/api/coref/score", ("k.conllu", conllu.encode()), ("r.conllu", conllu.encode())
    )
    assert as_conllu.status_code == 200, as_conllu.text
    assert as_conllu.json()["metrics"]["muc"]["f1"] == 1.0
    # CoNLL-U without "# newdoc" names documents after the file: same-named files pair up, as in the CLI
    plain = conllu.replace("# newdoc id = d1\n", "")
    same = _score(client, "/api/coref/score", ("doc.conllu", plain.encode()), ("doc.conllu", plain.encode()))
    assert same.status_code == 200 and same.json()["documents"] == 1


KIBUTZR = "#begin document htb:5\nדני\t1\t1\t_\t(1)\nראה\t1\t2\t_\t_\nאת\t1\t3\t_\t_\nבית\t1\t4\t_\t(2\n_הוא\t1\t5\t_\t(1)|2)\n#end document\n"


def test_kibutzr_morphemes_align_onto_uploaded_raw_texts(client: TestClient) -> None:
    key = ("htb:5.conllu", KIBUTZR.encode())
    files = [("key", key), ("response", key), ("raw", ("5.txt", "דני ראה את ביתו".encode()))]
    on_characters = client.post("/api/coref/score", files=files, data={"match": "overlap"})
    assert on_characters.status_code == 200, on_characters.text
    # on the raw text the suffix pronoun _הוא is the ו inside ביתו: a sub-word mention, found
    assert on_characters.json()["mentions"]["embedded_pronoun"]["recall"] == 1.0
    on_morphemes = _score(client, "/api/coref/score", key, key, match="overlap")
    assert on_morphemes.status_code == 200
    assert on_morphemes.json()["mentions"]["embedded_pronoun"]["recall"] == 0.0  # no sub-word mention there
    refused = client.post("/api/coref/score", files=files, data={"format": "json"})
    assert refused.status_code == 400 and "raw texts apply to KibutzR" in refused.json()["error"]["message"]
    page = client.post("/coref/score", files=files, data={"match": "overlap"})
    assert page.status_code == 200 and 'id="alignment"' in page.text and "ביתו" in page.text


@pytest.mark.parametrize(
    ("key", "options", "status", "message"),
    [
        (("empty.jsonl", b""), {}, 400, "empty.jsonl: the uploaded file is empty"),
        (("bin.conll", b"\x00\x01\x02binary"), {}, 400, "bin.conll: looks like a binary file"),
        (("latin.conll", b"caf\xe9"), {}, 400, "latin.conll: not valid UTF-8"),
        (("k.jsonl", b'{"doc_id": "d", "text": "ab", "clusters": [[[0, 5]]]}'), {}, 400, "outside the text"),
        (("k.json", b"[]"), {}, 400, "k.json: holds no documents"),
        (GOLD, {"format": "conll"}, 400, "coref_gold.jsonl"),
        (GOLD, {"format": "docx"}, 400, "format 'docx': use auto or one of"),
        (GOLD, {"match": "fuzzy"}, 400, "unknown matching 'fuzzy'"),
        (GOLD, {"threshold": "0.5"}, 400, "threshold applies to match overlap only"),
        (GOLD, {"match": "overlap", "threshold": "2"}, 400, "must be a number in (0, 1]"),
        (GOLD, {"weights": "word=-1"}, 400, "weight 'word=-1': the weight must be a finite number"),
        (GOLD, {"singletons": "maybe"}, 400, "singletons 'maybe': use keep or drop"),
    ],
)  # fmt: skip
def test_bad_score_input_is_one_line_with_the_right_status(client: TestClient, key: tuple[str, bytes],
                                                           options: dict[str, str], status: int,
                                                           message: str) -> None:  # fmt: skip
    answer = _score(client, "/api/coref/score", key, **options)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]["message"]
    assert message in error and "\n" not in error and "tabverify-upload-" not in error  # no temporary path
    page = _score(client, "/coref/score", key, **options)
    assert page.status_code == status and 'id="error"' in page.text and 'id="score-form"' in page.text


def test_missing_score_fields_are_422(client: TestClient) -> None:
    answer = client.post("/api/coref/score", files=[("key", GOLD)])
    assert (
        answer.status_code == 422
        and answer.json()["error"]["message"] == "invalid request: response: Field required"
    )


def test_resolve_api_answers_the_document_json_the_scorer_reads(client: TestClient, tmp_path: Path) -> None:
    answer = client.post("/api/coref/resolve", json={"text": TEXT, "doc_id": "news-1"})
    assert answer.status_code == 200, answer.text
    record = answer.json()
    assert record["doc_id"] == "news-1" and record["text"] == TEXT
    suffix = TEXT.index("אותה") + 3  # the ה of אותה is the embedded pronoun "her"
    mentions = [m for cluster in record["clusters"] for m in cluster]
    assert [suffix, suffix + 1, {"kind": "subword", "subkind": "embedded_pronoun"}] in mentions
    written = tmp_path / "system.jsonl"
    written.write_text(answer.text, encoding="utf-8")
    (document,) = read_documents(written)
    assert document.doc_id == "news-1" and len(document.entities) == len(record["clusters"])


@pytest.mark.parametrize(
    ("body", "kind", "status", "message"),
    [
        ('{"text": "  "}', "application/json", 400, "text: paste the Hebrew text to resolve"),
        ('{"text": "' + "א" * 100_001 + '"}', "application/json", 413, "the resolver takes at most 100,000"),
        ('{"text": "שלום", "doc_id": ""}', "application/json", 400, "doc_id: give a document id"),
        ('{"text": ', "application/json", 400, "malformed JSON body"),
        ('{"doc_id": "x"}', "application/json", 422, "text: Field required"),
        ('{"text": "שלום"}', "text/plain", 415, "send the body as application/json"),
    ],
)  # fmt: skip
def test_bad_resolve_input(client: TestClient, body: str, kind: str, status: int, message: str) -> None:
    answer = client.post("/api/coref/resolve", content=body.encode(), headers={"content-type": kind})
    assert answer.status_code == status, answer.text
    assert message in answer.json()["error"]["message"]


def test_the_page_resolves_text_and_marks_entities(client: TestClient) -> None:
    shown = client.post("/coref/resolve", data={"text": TEXT, "doc_id": "news-1"})
    assert shown.status_code == 200
    assert 'id="entities"' in shown.text and 'class="text entities" dir="auto"' in shown.text
    assert "<sub>E0</sub>" in shown.text and "embedded_pronoun" in shown.text
    link = re.search(r'id="download-document"[^>]*href="data:application/json;base64,([^"]+)"', shown.text)
    assert link is not None
    assert json.loads(base64.b64decode(link.group(1)))["doc_id"] == "news-1"
    empty = client.post("/coref/resolve", data={"text": ""})
    assert empty.status_code == 400 and 'id="error"' in empty.text and 'id="resolve-form"' in empty.text


def test_document_ids_texts_and_names_are_escaped(client: TestClient) -> None:
    record = {"doc_id": HOSTILE_ID, "text": "<b>a</b> b", "clusters": [[[0, 8], [9, 10]]]}
    hostile = (f"{HOSTILE_ID}.jsonl", json.dumps(record).encode())
    shown = _score(client, "/coref/score", hostile, hostile)
    assert shown.status_code == 200
    assert "<script>alert" not in shown.text and "<b>a</b>" not in shown.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown.text
    error = _score(client, "/coref/score", (f"{HOSTILE_ID}.jsonl", b"{"))
    assert error.status_code == 400 and "<script>alert" not in error.text
    resolved = client.post(
        "/coref/resolve", data={"text": TEXT + " <img src=x onerror=alert(1)>", "doc_id": HOSTILE_ID}
    )
    assert resolved.status_code == 200
    assert "<script>alert" not in resolved.text and "<img src=x" not in resolved.text
    assert "&lt;script&gt;" in resolved.text


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("gold.conllu", "gold.conllu"),
        ("../../etc/passwd", "passwd"),
        ("..", "__"),
        ("..\\..\\boot.ini", "boot"),
        (".hidden.jsonl", "_hidden.jsonl"),
        ("<script>.json", "_script_.json"),
        ("htb:1.conllu", "htb:1.conllu"),
        ("report.exe", "report"),
        ("", "upload"),
    ],
)
def test_temporary_copies_get_safe_names(name: str, safe: str) -> None:
    assert safe_name(name) == safe


def test_temporary_copies_are_removed(client: TestClient) -> None:
    before = set(Path(tempfile.gettempdir()).glob("tabverify-upload-*"))
    assert _score(client, "/api/coref/score").status_code == 200
    assert _score(client, "/api/coref/score", ("k.json", b"{")).status_code == 400
    assert set(Path(tempfile.gettempdir()).glob("tabverify-upload-*")) <= before
