"""The database page in a real browser against ``tabverify serve --db --lake``: see the schema, run a
query and see its rows, check a claim, search and check against the lake; markup stays text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.server.conftest import LiveServer, screenshot, watch_dialogs
from tests.server.test_database import MARKUP, make_lake, make_league_duckdb


def test_database_page_in_the_browser(
    start_server: Callable[..., LiveServer], browser_page: Any, tmp_path: Path
) -> None:
    league = make_league_duckdb(tmp_path / "league.duckdb", markup=False)
    odd = make_league_duckdb(tmp_path / "odd.duckdb")
    lake = make_lake(tmp_path)
    server = start_server(
        "--workers", "1", "--db", f"league={league}", "--db", f"odd={odd}", "--lake", f"demo={lake}"
    )
    page = browser_page
    dialogs = watch_dialogs(page)

    page.goto(f"{server.url}/database")
    page.click("#databases a:text-is('league')")
    page.wait_for_url(f"{server.url}/database/db/league")
    schema = page.locator("#schema").inner_text()
    assert "attendance" in schema and "BIGINT" in schema and "6 rows" in schema

    page.fill("#sql", "SELECT week, opponent, attendance FROM league WHERE opponent = 'dayton rivers'")
    page.click("#query-form button[type=submit]")
    rows = page.locator("#query-result tbody tr")
    rows.first.wait_for()
    assert rows.count() == 2
    assert rows.nth(0).inner_text().split("\t") == ["2", "dayton rivers", "22410"]
    assert page.input_value("#sql").startswith("SELECT week")  # the query stays in its box

    page.fill("#claims", "the attendance in week 1 was 18250\nthe attendance in week 2 was 99999")
    page.select_option("#encoder", "hashing")
    page.click("#check-form button[type=submit]")
    verdicts = page.locator("#verdicts .verdict")
    verdicts.first.wait_for()
    assert [verdicts.nth(i).locator(".label").inner_text() for i in range(2)] == ["ENTAILED", "REFUTED"]
    assert "eq{hop{filter_eq{all_rows; week; 1}; attendance}; 18250}" in verdicts.first.inner_text()
    assert "SELECT" in verdicts.first.locator("pre.sql").inner_text()
    screenshot(page, "database")

    # a table, a column and a cell that are markup: shown as text, nothing runs
    page.goto(f"{server.url}/database/db/odd")
    page.fill("#sql", f'SELECT * FROM "{MARKUP}"')
    page.click("#query-form button[type=submit]")
    page.locator("#query-result tbody tr").first.wait_for()
    assert MARKUP in page.locator("#schema").inner_text()
    assert page.locator("#query-result td").first.inner_text() == "<script>alert('cell')</script>"
    assert page.locator("main img, main b, #query-result script").count() == 0
    assert dialogs == []

    page.goto(f"{server.url}/database/lake/demo")
    page.fill("#statements", "mars has 2 moons")
    page.click("#check-form button[type=submit]")
    lake_verdict = page.locator("#verdicts .verdict").first
    lake_verdict.wait_for()
    assert lake_verdict.locator(".evidence-table").inner_text() == "planets.csv"
    assert "moons of the planets" in lake_verdict.inner_text() and "runners-up" in lake_verdict.inner_text()
