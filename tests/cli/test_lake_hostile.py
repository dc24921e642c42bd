"""Hostile and mistaken input to the lake commands, run as a user runs them: a real process, real
files; every refusal is exit 2 with exactly one ``error:`` line and no traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.conftest import run


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line of a refused command (exit 2, no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def write_tables(folder: Path, n: int = 12) -> Path:
    """``n`` tables a DLTE mother can be carved from (a distinct text key, 5 other columns)."""
    folder.mkdir()
    for t in range(n):
        rows = [
            f"player {t} {r},team {r % 3},city {r % 4},{1990 + r},{r * 7 % 50},{r + 1}" for r in range(12)
        ]
        (folder / f"t{t:02d}.csv").write_text("name,team,city,year,points,rank\n" + "\n".join(rows) + "\n")
    return folder


def test_bench_dlte_refuses_a_lake_of_other_tables(tmp_path: Path) -> None:
    tables, other = write_tables(tmp_path / "tables"), tmp_path / "other"
    other.mkdir()
    (other / "teams.csv").write_text("team,city\nhawks,atlanta\nbulls,chicago\n", encoding="utf-8")
    data = tmp_path / "dlte"
    assert (
        run("lake", "make-dlte", str(tables), "--out", str(data), "--mothers", "4", "--tiers", "0").returncode
        == 0
    )
    assert (
        run("lake", "index", str(other), "--encoder", "lexical", "--out", str(tmp_path / "lake")).returncode
        == 0
    )
    args = ("bench", "trl", "--suite", "union", "--data", str(data), "--split", "dev", "--tiers", "0")
    line = one_error(run(*args, "--lake", str(tmp_path / "lake")))
    assert "not a lake of the benchmark's tables" in line
    assert (
        run("lake", "index", str(tables), "--encoder", "lexical", "--out", str(tmp_path / "right")).returncode
        == 0
    )
    assert run(*args, "--lake", str(tmp_path / "right")).returncode == 0
