"""Shared fixtures: small tables written to disk by the tests themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tabverify.table import Table, load_table

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
TABFACT = SHARED / "tabfact"
ARXIVERI = SHARED / "arxiveri"

ELECTION_ROWS = [
    ["district", "incumbent", "party", "first elected", "votes"],
    ["ohio 1", "john smith", "democratic", "1990", "52,340"],
    ["ohio 2", "mary jones", "republican", "1986", "61,002"],
    ["ohio 3", "alan brown", "democratic", "1994", "48,113"],
    ["ohio 4", "lisa white", "democratic", "1990", "57,870"],
    ["ohio 5", "tom green", "republican", "2000", "39,455"],
]


@pytest.fixture
def election_path(tmp_path: Path) -> Path:
    path = tmp_path / "election.html.csv"
    path.write_text("\n".join("#".join(row) for row in ELECTION_ROWS) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def election(election_path: Path) -> Table:
    return load_table(election_path, caption="ohio house elections")


def needs_dataset(path: Path) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not path.is_dir(), reason=f"../shared/datasets/{path.name} is not present")


def needs_tabfact() -> pytest.MarkDecorator:
    return needs_dataset(TABFACT)


# In CI (CI=true) nothing may be skipped: a missing ../shared/datasets or a missing browser must fail
# the run, not pass it quietly. Locally a skip stays a skip (with its reason in the summary).
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if IN_CI and _skipped:
        print(f"\nCI=true: {len(_skipped)} test(s) were skipped, which CI does not allow:", file=sys.stderr)
        for nodeid in _skipped[:20]:
            print(f"  {nodeid}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def browser_dom(page: Path) -> str:
    """The DOM a real browser (Debian's headless Chromium) builds from a page, serialised.

    Skipped when Chromium is missing - which CI turns into a failure (see above)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium on this machine (`apt-get install chromium`; .ci/run installs it)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--dump-dom"]  # fmt: skip
    return subprocess.run(
        [chromium, *flags, page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
