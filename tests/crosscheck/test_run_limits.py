"""The bounds on one crosscheck run: the (target table, source table) pair cap, the time limit
(``--timeout``), and the per-call cache of number comparisons, which must tell written forms apart
(45.3 and 45.30 are equal Decimals but round differently)."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tabverify.crosscheck import check_workload
from tabverify.crosscheck.cells import MAX_TABLE_PAIRS, candidate_pairs, check_time, time_limit
from tabverify.errors import TableSizeError, TimeLimitError
from tabverify.table import Grid
from tabverify.table.numbers import Agreement
from tests.cli.conftest import run


def test_the_pair_cap_refuses_a_run_naming_both_counts() -> None:
    one = Grid.from_rows([["m", "v"], ["a", "1.5"]])
    check_workload([one] * MAX_TABLE_PAIRS, [one])
    with pytest.raises(TableSizeError, match=r"50,001 target tables x 1 source tables .*--table N"):
        check_workload([one] * (MAX_TABLE_PAIRS + 1), [one])


def test_the_time_limit_passes_within_and_raises_after() -> None:
    check_time()  # no limit in force
    with time_limit(30):
        check_time()
    with time_limit(0.01):
        time.sleep(0.02)
        with pytest.raises(TimeLimitError, match="time limit of 0.01 s.*--timeout"):
            check_time()
    check_time()  # the limit ends with its block
    with pytest.raises(ValueError, match="above 0"):
        with time_limit(0):
            pass


def test_the_comparison_cache_keeps_written_precision_apart() -> None:
    source = Grid.from_rows([["m", "v"], ["a", "45.34"]])
    target = Grid.from_rows([["m", "v"], ["a", "45.3"], ["b", "45.30"]])
    found = candidate_pairs(target, source)
    assert found == {(1, 1): [((1, 1), Agreement.ROUNDED)]}  # 45.30 does not round 45.34


def _collisions(path: Path, tables: int, seed: int) -> None:
    """Tables of random two-decimal numbers: every value has many near neighbours."""
    rng = random.Random(seed)
    parts = []
    for _ in range(tables):
        rows = "".join(
            "<tr>" + "".join(f"<td>{rng.randint(0, 9999) / 100}</td>" for _ in range(20)) + "</tr>"
            for _ in range(150)
        )
        parts.append("<table><tr>" + "".join(f"<th>c{j}</th>" for j in range(20)) + f"</tr>{rows}</table>")
    path.write_text("<html><body>" + "".join(parts) + "</body></html>", encoding="utf-8")


def test_a_run_past_its_timeout_stops_with_one_line(tmp_path: Path) -> None:
    _collisions(tmp_path / "target.html", 1, seed=1)
    _collisions(tmp_path / "source.html", 6, seed=2)
    started = time.monotonic()
    stopped = run(
        "crosscheck",
        str(tmp_path / "target.html"),
        "--source",
        str(tmp_path / "source.html"),
        "--timeout",
        "0.05",
    )
    assert stopped.returncode == 2, stopped.stderr
    assert stopped.stderr.strip().count("\n") == 0 and "time limit of 0.05 s" in stopped.stderr
    assert "Traceback" not in stopped.stderr and time.monotonic() - started < 60


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "3601"])
def test_a_bad_timeout_is_refused(tmp_path: Path, value: str) -> None:
    page = tmp_path / "t.md"
    page.write_text("| m | v |\n|---|---|\n| a | 1.5 |\n", encoding="utf-8")
    refused = run("crosscheck", str(page), "--source", str(page), "--timeout", value)
    assert refused.returncode == 2 and "--timeout" in refused.stderr and "Traceback" not in refused.stderr


def test_no_limit_of_its_own_keeps_the_outer_one() -> None:
    with time_limit(0.01):
        with time_limit(None):
            time.sleep(0.02)
            with pytest.raises(TimeLimitError):
                check_time()


def test_the_html_report_is_refused_past_its_length_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabverify.crosscheck import crosscheck
    from tabverify.crosscheck import html as report_html
    from tabverify.examples import example

    report = crosscheck(example("paper.html"), example("cited.tex"))
    one = len(report_html.render_sections([("t", report)]))
    monkeypatch.setattr(report_html, "MAX_REPORT_CHARS", one * 2 + 10)
    assert report_html.render_sections([("t", report)] * 2)
    with pytest.raises(TableSizeError, match="HTML report would be longer than .*--table N.*--json"):
        report_html.render_sections([("t", report)] * 3)
