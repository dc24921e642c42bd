"""``tabverify lake index`` and ``lake search`` as a user runs them: real processes, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.conftest import run

TABLES = {
    "teams.csv": "team,city,arena\nhawks,atlanta,state farm arena\nbulls,chicago,united center\n",
    "planets.csv": "planet,moons\nmercury,0\nvenus,0\nearth,1\nmars,2\n",
    "nested/1-200-1.html.csv": "district#incumbent#party\nohio 1#john smith#democratic\nohio 2#mary jones#republican\n",
}


def write_source(root: Path) -> Path:
    for name, content in TABLES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("lake")
    source = write_source(root / "src")
    captions = root / "captions.json"
    captions.write_text(json.dumps({"1-200-1.html.csv": ["ohio house elections", "https://example.org"]}))
    result = run("lake", "index", str(source), "--encoder", "lexical", "--out", str(root / "lake"),
                 "--captions", str(captions))  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3 added, 0 updated, 0 unchanged, 0 removed, 0 skipped (3 tables in the lake)" in result.stdout
    return source, root / "lake"


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_search_by_text_table_and_keywords(indexed: tuple[Path, Path]) -> None:
    source, lake = indexed
    result = run(
        "lake", "search", str(lake), "--query", "ohio house elections district incumbent", "--k", "2"
    )
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert "nested/1-200-1.html.csv" in first and "ohio house elections" in first
    assert len(result.stdout.splitlines()) == 2
    result = run("lake", "search", str(lake), "--table", str(source / "planets.csv"), "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["encoder"] == "lexical" and record["mode"] == "vector"
    assert record["hits"][0]["id"] == "planets.csv" and record["hits"][0]["rank"] == 1
    assert record["hits"][0]["score"] == pytest.approx(1.0, abs=1e-4)
    assert [h["n_columns"] for h in record["hits"] if h["id"] == "teams.csv"] == [3]
    import duckdb

    parquet = source.parent / "planets.parquet"
    duckdb.connect().execute(
        f"COPY (SELECT * FROM read_csv('{source / 'planets.csv'}')) TO '{parquet}' (FORMAT parquet)"
    )
    result = run("lake", "search", str(lake), "--table", str(parquet), "--k", "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[2] == "planets.csv"
    result = run("lake", "search", str(lake), "--query", "united center", "--keywords", "--json")
    assert json.loads(result.stdout)["hits"][0]["id"] == "teams.csv"


def test_a_rerun_is_incremental_and_skipped_tables_exit_1(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src")
    lake = tmp_path / "lake"
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    (source / "ragged.csv").write_text("a,b\n1,2,3\n")
    (source / "new.csv").write_text("animal,legs\ncat,4\n")
    (source / "planets.csv").unlink()
    result = run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake), "--jobs", "2")
    assert result.returncode == 1, result.stderr
    assert "1 added, 0 updated, 2 unchanged, 1 removed, 1 skipped (3 tables in the lake)" in result.stdout
    assert "warning: skipped ragged.csv:" in result.stderr and "ragged rows" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "{lake}"), "give one of --query TEXT or --table FILE"),
        (
            ("search", "{lake}", "--query", "x", "--table", "t.csv"),
            "give one of --query TEXT or --table FILE",
        ),
        (("search", "{lake}", "--query", "  "), "--query: the text is empty"),
        (("search", "{lake}", "--table", "{lake}/../missing.csv"), "no such file"),
        (("search", "{lake}/../nowhere", "--query", "x"), "no such lake"),
        (("search", "{lake}", "--query", "x", "--k", "0"), "--k"),
        (
            ("index", "{lake}/../src", "--encoder", "no-such-encoder", "--out", "{lake}"),
            "unknown table encoder",
        ),
        (("index", "{lake}/../nowhere", "--encoder", "lexical", "--out", "{lake}"), "no such file or folder"),
        (("index", "{lake}/../src", "--out", "{lake}"), "--encoder"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    indexed: tuple[Path, Path], args: tuple[str, ...], message: str
) -> None:
    _, lake = indexed
    result = run("lake", *(a.format(lake=lake) for a in args))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in error_line(result)


def test_a_lake_of_another_encoder_is_refused_with_how_to_rebuild(tmp_path: Path) -> None:
    source = write_source(tmp_path / "src")
    lake = tmp_path / "lake"
    assert run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake)).returncode == 0
    meta = json.loads((lake / "lake.json").read_text())
    (lake / "lake.json").write_text(json.dumps({**meta, "encoder_version": "0"}))
    result = run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake))
    assert result.returncode == 2
    line = error_line(result)
    assert "built with encoder lexical version 0" in line
    assert f"rebuild with: tabverify lake index SOURCE --encoder lexical --out {lake}" in line
    assert "built with encoder lexical version 0" in error_line(
        run("lake", "search", str(lake), "--query", "x")
    )


def test_an_interrupted_index_run_says_how_to_resume(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for i in range(1200):
        (source / f"t{i:04d}.csv").write_text(f"id,word{i}\n{i},value{i}\n")
    lake = tmp_path / "lake"
    command = [sys.executable, "-m", "tabverify.cli", "lake", "index", str(source), "--encoder", "lexical",
               "--out", str(lake), "--batch", "16"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lake / "meta.sqlite").exists():
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=60)
    # 130, or death by SIGINT (what a shell also shows as 130): depending on where the interrupt
    # lands, CPython ends the process by SIGINT even though the command handled it (seen here)
    if process.returncode in (130, -signal.SIGINT):
        assert "run the same command again to resume" in stderr and "Traceback" not in stderr
    else:  # the machine was fast enough to finish first
        assert process.returncode == 0, stderr
    result = run("lake", "index", str(source), "--encoder", "lexical", "--out", str(lake), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "(1200 tables in the lake)" in result.stdout
    import sqlite3

    connection = sqlite3.connect(lake / "meta.sqlite")
    assert connection.execute("SELECT count(*), count(DISTINCT id) FROM tables").fetchone() == (1200, 1200)
    connection.close()
    assert not [name for name in os.listdir(lake) if name.startswith(".") and name != ".lock"]


def test_help_shows_examples() -> None:
    result = run("lake", "index", "--help")
    assert result.returncode == 0
    assert "tabverify lake index" in result.stdout and "--captions" in result.stdout
    result = run("lake", "--help")
    assert "search" in result.stdout and "tabverify lake search" in result.stdout
