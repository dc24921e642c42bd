"""The crosscheck and coref pages in a real browser (Debian's Chromium under Playwright) against a
live ``tabverify serve``: upload, submit, see the report, download the JSON; score and see the
alignment; resolve Hebrew text and see its entities; injection attempts render as text and never
open a dialog. Screenshots go to docs/screenshots/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from tests.server.conftest import EXAMPLES, LiveServer, screenshot, watch_dialogs

TEXT = "דני קנה מכונית חדשה. הוא אוהב אותה מאוד."
INJECTION = "<img src=x onerror=alert(1)>"


def _downloaded(page: Any, selector: str) -> str:
    with page.expect_download() as started:
        page.click(selector)
    return Path(started.value.path()).read_text(encoding="utf-8")


def test_crosscheck_upload_report_and_download(browser_page: Any, live_server: LiveServer) -> None:
    page = browser_page
    dialogs = watch_dialogs(page)
    page.goto(f"{live_server.url}/crosscheck")
    page.set_input_files("#target", str(EXAMPLES / "paper.html"))
    page.set_input_files("#source", [str(EXAMPLES / "cited.tex")])
    page.click("#check")
    page.wait_for_selector("#result")
    assert "1 discrepancy" in page.inner_text("#result h2")
    wrong = page.locator("#result td.bad")
    assert wrong.count() == 1 and wrong.inner_text() == "66.9"
    assert page.locator("#result table.list").inner_text().count("\n") >= 1  # the discrepancy with its reason
    screenshot(page, "crosscheck")
    downloaded = _downloaded(page, "#download")
    files = [("target", ("paper.html", (EXAMPLES / "paper.html").read_bytes())),
             ("source", ("cited.tex", (EXAMPLES / "cited.tex").read_bytes()))]  # fmt: skip
    api = httpx.post(f"{live_server.url}/api/crosscheck", files=files, timeout=60)
    assert downloaded == api.text and json.loads(downloaded)["discrepancies"] == 1
    # a hostile file name is shown as text
    page.set_input_files("#target", files={"name": f"{INJECTION}.html", "mimeType": "text/html",
                                           "buffer": (EXAMPLES / "paper.html").read_bytes()})  # fmt: skip
    page.set_input_files("#source", [str(EXAMPLES / "cited.tex")])
    page.click("#check")
    page.wait_for_selector("#result")
    assert f"{INJECTION}.html" in page.inner_text("#result h2")
    assert page.locator("#result img").count() == 0
    assert dialogs == []


def test_coref_score_alignment_and_resolve(browser_page: Any, live_server: LiveServer) -> None:
    page = browser_page
    dialogs = watch_dialogs(page)
    page.goto(f"{live_server.url}/coref")
    page.set_input_files("#key", str(EXAMPLES / "coref_gold.jsonl"))
    page.set_input_files("#response", str(EXAMPLES / "coref_system.jsonl"))
    page.select_option("#match", "overlap")
    page.click("#score")
    page.wait_for_selector("#scores")
    assert "b_cubed" in page.inner_text("#metrics") and "lea" in page.inner_text("#metrics")
    gold = page.locator("#alignment .text.gold")
    assert gold.count() == 1 and gold.evaluate("e => getComputedStyle(e).direction") == "rtl"
    assert "Aligned pairs" in page.inner_text("#alignment")
    screenshot(page, "coref")
    scores = json.loads(_downloaded(page, "#download-scores"))
    assert scores["options"]["match"] == "overlap"
    assert f"{scores['metrics']['conll_f1']:.4f}" == page.inner_text("#conll-f1")

    page.fill("#text", TEXT)
    page.fill("#doc_id", "news-1")
    page.click("#resolve")
    page.wait_for_selector("#resolved")
    entities = page.locator("#entities .text.entities")
    assert entities.evaluate("e => getComputedStyle(e).direction") == "rtl"
    assert "E0" in entities.inner_text()
    # a sub-word mention: the pronoun ה inside אותה ("her") is bracketed on its own
    pronoun = page.locator('#entities span[title*="embedded_pronoun"]')
    assert pronoun.count() >= 1 and "ה" in pronoun.first.get_attribute("title")
    screenshot(page, "coref-resolve")
    document = json.loads(_downloaded(page, "#download-document"))
    assert document["doc_id"] == "news-1" and document["text"] == TEXT and document["clusters"]

    page.fill("#text", f"{TEXT} {INJECTION}")
    page.fill("#doc_id", "<script>alert(1)</script>")
    page.click("#resolve")
    page.wait_for_selector("#resolved")
    assert page.inner_text("#resolved h2").startswith("<script>alert(1)</script>:")
    assert INJECTION in page.inner_text("#entities")
    assert page.locator("#resolved img").count() == 0 and page.locator("#resolved script").count() == 0
    assert dialogs == []
