"""lake related / enrich / make-dlte in a real process: outputs, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import run as tabverify
from tests.lake.test_dlte import write_folder
from tests.lake.test_related import build_tiny_lake


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    root = tmp_path_factory.mktemp("cli_enrich")
    lake, info = build_tiny_lake(root)
    return lake, info, root / "dlte" / info["queries"][0]["seed"]


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_related_text_and_json(tiny: tuple[Path, dict, Path]) -> None:
    lake, info, seed = tiny
    result = tabverify("lake", "related", str(lake), "--table", str(seed), "--k", "5")
    assert result.returncode == 0, result.stderr
    assert "join" in result.stdout and "contains 100% of the query's" in result.stdout
    result = tabverify("lake", "related", str(lake), "--table", str(seed), "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    join = "targets/" + Path(info["queries"][0]["join_target"]).name
    assert any(r["id"] == join and r["operation"] == "join" for r in record["related"])


def test_enrich_writes_table_and_report(tiny: tuple[Path, dict, Path], tmp_path: Path) -> None:
    lake, info, seed = tiny
    out, report = tmp_path / "enriched.csv", tmp_path / "report.json"
    result = tabverify(
        "lake", "enrich", str(lake), "--table", str(seed), "--out", str(out), "--report", str(report)
    )
    assert result.returncode == 0, result.stderr
    assert "columns" in result.stdout and out.is_file()
    record = json.loads(report.read_text())
    assert record["added_cells"] == len(record["cells"]) > 0
    assert record["added_columns"] >= len(info["queries"][0]["join_region"]["columns"])
    cell = record["cells"][0]
    assert set(cell) == {"row", "column", "text", "source", "source_row", "source_column", "operation"}
    header = out.read_text().splitlines()[0].split(",")
    assert len(header) == record["columns"]


def test_enrich_nothing_found_exits_1(tiny: tuple[Path, dict, Path], tmp_path: Path) -> None:
    lake, _, _ = tiny
    alien = tmp_path / "alien.csv"
    alien.write_text("molecule,formula\nwater,h2o\nsalt,nacl\nammonia,nh3\n")
    out = tmp_path / "out.csv"
    result = tabverify("lake", "enrich", str(lake), "--table", str(alien), "--out", str(out))
    assert result.returncode == 1, result.stderr
    assert "nothing found to add" in result.stdout and out.is_file()


def test_usage_errors_exit_2(tiny: tuple[Path, dict, Path], tmp_path: Path) -> None:
    lake, _, seed = tiny
    line = _one_error_line(tabverify("lake", "related", str(lake), "--table", str(tmp_path / "missing.csv")))
    assert "missing.csv" in line
    _one_error_line(tabverify("lake", "related", str(tmp_path), "--table", str(seed)))  # not a lake
    line = _one_error_line(
        tabverify("lake", "enrich", str(lake), "--table", str(seed), "--out", str(tmp_path / "no" / "x.csv"))
    )
    assert "does not exist" in line
    _one_error_line(
        tabverify("lake", "enrich", str(lake), "--table", str(seed), "--out", str(seed))
    )  # an input
    _one_error_line(tabverify("lake", "enrich", str(lake), "--table", str(seed)))  # --out missing
    _one_error_line(tabverify("lake", "related", str(lake), "--table", str(seed), "--k", "0"))


def test_make_dlte(tmp_path: Path) -> None:
    write_folder(tmp_path / "tables", n_tables=6)
    result = tabverify(
        "lake", "make-dlte", str(tmp_path / "tables"), "--out", str(tmp_path / "d"), "--mothers", "4"
    )
    assert result.returncode == 0, result.stderr
    assert "4 mothers (2 dev, 2 test), 16 queries" in result.stdout
    assert (tmp_path / "d" / "dlte.json").is_file()
    line = _one_error_line(
        tabverify(
            "lake", "make-dlte", str(tmp_path / "tables"), "--out", str(tmp_path / "e"), "--tiers", "0,7"
        )
    )
    assert "tiers" in line
    _one_error_line(
        tabverify("lake", "make-dlte", str(tmp_path / "tables"), "--out", str(tmp_path / "tables" / "x"))
    )
    _one_error_line(tabverify("lake", "make-dlte", str(tmp_path / "nope"), "--out", str(tmp_path / "f")))
