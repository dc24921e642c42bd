"""The verify page in a real browser (Debian's Chromium under Playwright) against `tabverify serve`:
paste a table, check statements, see the evidence highlighted, edit a program and re-run it in
place, and an injection attempt in a cell that stays text."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.server.conftest import EXAMPLES, LiveServer, screenshot, watch_dialogs

HOSTILE_TABLE = 'name,points\n"<img src=x onerror=alert(1)>",3\n"<script>alert(2)</script>",5\n'


def test_check_highlight_and_rerun_a_program(browser_page: Any, live_server: LiveServer) -> None:
    page = browser_page
    dialogs = watch_dialogs(page)
    page.goto(f"{live_server.url}/verify")
    page.fill("#text", (EXAMPLES / "league.csv").read_text())
    page.fill("#statements", "the hawks played 2 games\nthe attendance in week 1 was 99")
    page.click("#check")
    page.wait_for_selector("section.verdict")
    verdicts = page.locator("section.verdict")
    assert verdicts.count() == 2
    assert verdicts.nth(0).locator(".label").inner_text() == "ENTAILED"
    assert verdicts.nth(1).locator(".label").inner_text() == "REFUTED"
    first = verdicts.nth(0)
    assert first.locator("td.evidence").all_inner_texts() == ["hartford hawks", "hartford hawks"]
    screenshot(page, "verify")

    # edit the first verdict's program and re-run it: the value and the highlighted cells change
    # in place (the page is not reloaded: the second verdict's cells keep their highlight)
    first.locator(".program-box").fill("count{filter_eq{all_rows; opponent; dayton rivers}}")
    first.locator("button.rerun").click()
    expect(first.locator(".run-status")).to_contain_text("ran:")
    assert first.locator(".value").inner_text() == "2"
    assert first.locator("td.evidence").all_inner_texts() == ["dayton rivers", "dayton rivers"]
    assert verdicts.nth(1).locator("td.evidence").count() > 0

    assert not dialogs


def test_an_injection_attempt_in_a_cell_renders_as_text(browser_page: Any, live_server: LiveServer) -> None:
    page = browser_page
    dialogs = watch_dialogs(page)
    page.goto(f"{live_server.url}/verify")
    page.fill("#text", HOSTILE_TABLE)
    page.fill("#statements", "<script>alert(2)</script> has 5 points")
    page.click("#check")
    page.wait_for_selector("section.verdict")
    cells = page.locator("table.verify-table td").all_inner_texts()
    assert "<img src=x onerror=alert(1)>" in cells and "<script>alert(2)</script>" in cells
    assert page.locator("main img").count() == 0
    assert page.locator("main script").count() == 0
    assert page.locator(".statement").inner_text() == "<script>alert(2)</script> has 5 points"
    assert not dialogs


def test_a_program_that_does_not_type_check_is_one_line_under_its_box(
    browser: Any, live_server: LiveServer
) -> None:
    # its own context, not browser_page: the browser logs the 422 answer as a console error, which
    # browser_page counts as a failure; script errors still fail this test
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_server.url}/verify")
        page.fill("#text", (EXAMPLES / "league.csv").read_text())
        page.fill("#statements", "the hawks played 2 games")
        page.click("#check")
        verdict = page.locator("section.verdict").first
        value = verdict.locator(".value").inner_text()
        verdict.locator(".program-box").fill("count{nope{all_rows}}")
        verdict.locator("button.rerun").click()
        expect(verdict.locator(".run-status")).to_have_class("run-status failed")
        assert "nope" in verdict.locator(".run-status").inner_text()
        assert verdict.locator(".value").inner_text() == value  # nothing else changed
        # answered in place: a posted form would show the error at the top of a new page
        assert page.locator("#error").count() == 0
    finally:
        context.close()
    assert not errors
