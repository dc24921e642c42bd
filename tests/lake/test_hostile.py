"""Hostile inputs to the lake's library functions: real files that must be skipped or refused with
a one-line error, never an unexpected exception."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tabverify.errors import LakeError
from tabverify.lake.indexing import build_lake
from tabverify.lake.sources import enumerate_source
from tabverify.lake.store import LOCK_FILE


def _one_table_folder(tmp_path: Path) -> Path:
    """A folder of tables holding one small CSV (teams.csv)."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "teams.csv").write_text("team,city\nhawks,atlanta\n", encoding="utf-8")
    return source


def test_a_symlink_loop_in_the_source_is_skipped(tmp_path: Path) -> None:
    source = _one_table_folder(tmp_path)
    (source / "self.csv").symlink_to("self.csv")  # resolving it loops
    (source / "loop").symlink_to(source)  # a symlinked folder: not followed
    listing = enumerate_source(source, exclude=tmp_path / "lake")
    assert [t.id for t in listing.tables] == ["teams.csv"]
    assert listing.skipped == [("self.csv", "a symbolic link (not followed)")]


def test_a_lake_whose_lock_cannot_be_opened_is_a_lake_error(tmp_path: Path) -> None:
    source = _one_table_folder(tmp_path)
    lake = tmp_path / "lake"
    build_lake(source, lake, "lexical")
    (lake / LOCK_FILE).unlink()
    (lake / LOCK_FILE).mkdir()  # as a read-only folder would: the lock file cannot be opened for writing
    with pytest.raises(LakeError, match="cannot write the lake"):
        build_lake(source, lake, "lexical")


def test_indexing_a_lake_into_itself_is_refused_and_keeps_its_tables(tmp_path: Path) -> None:
    source = _one_table_folder(tmp_path)
    lake = tmp_path / "lake"
    build_lake(source, lake, "lexical")
    for wrong in (lake, lake / "lake.json"):  # each lists no table: every table would be 'gone'
        with pytest.raises(LakeError, match="is the lake.s --out folder"):
            build_lake(wrong, lake, "lexical")
    assert build_lake(source, lake, "lexical").unchanged == 1


@pytest.mark.parametrize("name", ["missing", "notes.txt", "fifo.csv"])
def test_a_source_no_table_can_come_from_leaves_no_lake_behind(tmp_path: Path, name: str) -> None:
    (tmp_path / "notes.txt").write_text("not a table\n", encoding="utf-8")
    os.mkfifo(tmp_path / "fifo.csv")
    lake = tmp_path / "lake"
    with pytest.raises(LakeError):
        build_lake(tmp_path / name, lake, "lexical")
    assert not lake.exists()


def write_dlte_source(folder: Path, n: int = 12) -> Path:
    """``n`` tables a DLTE mother can be carved from (a distinct text key, 5 other columns)."""
    folder.mkdir()
    for t in range(n):
        rows = [
            f"player {t} {r},team {r % 3},city {r % 4},{1990 + r},{r * 7 % 50},{r + 1}" for r in range(12)
        ]
        (folder / f"t{t:02d}.csv").write_text("name,team,city,year,points,rank\n" + "\n".join(rows) + "\n")
    return folder


def test_make_dlte_again_into_its_folder_leaves_no_stale_target(tmp_path: Path) -> None:
    from tabverify.lake.dlte import make_dlte

    source, out = write_dlte_source(tmp_path / "tables"), tmp_path / "dlte"
    make_dlte(source, out, seed=0, tiers=(0,), max_mothers=6)
    summary = make_dlte(source, out, seed=1, tiers=(0,), max_mothers=6)
    # the suites index the whole target folder: only this run's targets may be in it
    assert len(list((out / "targets" / "tier0").iterdir())) == summary["n_targets"]
    assert len(list((out / "queries" / "tier0").iterdir())) == summary["n_queries"]


def test_make_dlte_refuses_a_folder_that_is_not_a_benchmark(tmp_path: Path) -> None:
    from tabverify.errors import DatasetError
    from tabverify.lake.dlte import make_dlte

    source, out = write_dlte_source(tmp_path / "tables"), tmp_path / "documents"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    with pytest.raises(DatasetError, match="not a DLTE benchmark"):
        make_dlte(source, out, tiers=(0,), max_mothers=4)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("name", [":", "os:", ":abort", ".relative:Encoder"])
def test_a_malformed_module_attribute_encoder_name_is_an_unknown_encoder(name: str) -> None:
    from tabverify.lake.encoders import UnknownEncoderError, get_table_encoder

    with pytest.raises(UnknownEncoderError, match="module:attribute"):
        get_table_encoder(name)


def test_a_database_that_cannot_be_opened_leaves_no_empty_lake(tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)  # a header, then nothing
    lake = tmp_path / "lake"
    with pytest.raises(LakeError, match="broken.sqlite"):
        build_lake(broken, lake, "lexical")
    assert not lake.exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(LakeError):
        build_lake(broken, existing, "lexical")
    assert existing.is_dir() and not any(existing.iterdir())


def test_make_dlte_cut_short_can_be_run_again_into_its_folder(tmp_path: Path) -> None:
    from tabverify.lake.dlte import make_dlte

    source, out = write_dlte_source(tmp_path / "tables"), tmp_path / "dlte"
    make_dlte(source, out, seed=0, tiers=(0,), max_mothers=6)
    (out / "dlte.json").unlink()  # as a run interrupted before its last step leaves it
    summary = make_dlte(source, out, seed=1, tiers=(0,), max_mothers=6)
    assert (out / "dlte.json").is_file()
    assert len(list((out / "targets" / "tier0").iterdir())) == summary["n_targets"]


def test_a_benchmark_folder_that_cannot_be_written_is_a_dataset_error(tmp_path: Path) -> None:
    from tabverify.bench.trl import run_suite
    from tabverify.errors import DatasetError
    from tabverify.lake.dlte import make_dlte
    from tabverify.lake.encoders import get_table_encoder

    source = write_dlte_source(tmp_path / "tables")
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "queries").write_text("")  # where make-dlte makes a folder (as a read-only disk refuses it)
    with pytest.raises(DatasetError, match="must be writable"):
        make_dlte(source, blocked, tiers=(0,), max_mothers=4)
    data = tmp_path / "dlte"
    make_dlte(source, data, tiers=(0,), max_mothers=4)
    (data / "lakes").write_text("")  # where the suites cache their lakes
    with pytest.raises(DatasetError, match="writable copy"):
        run_suite("union", get_table_encoder("lexical"), data, split="dev", tiers=(0,))


def test_a_lake_among_the_tables_is_not_read_as_tables(tmp_path: Path) -> None:
    source = _one_table_folder(tmp_path)
    build_lake(source, source / "old.lake", "lexical")  # a lake kept inside the folder of tables
    summary = build_lake(source, tmp_path / "lake", "lexical")
    assert (summary.added, summary.skipped) == (1, [])  # not old.lake/lake.json, old.lake/faiss.json
    with pytest.raises(LakeError, match="is a lake, not a folder of tables"):
        build_lake(source / "old.lake", tmp_path / "other", "lexical")
    assert not (tmp_path / "other").exists()


CALLED: list[str] = []


def record_call() -> object:
    """A module:attribute a hostile lake.json may name: it must never be called by opening the lake."""
    CALLED.append("called")
    return object()


def test_opening_a_lake_never_runs_the_module_attribute_its_lake_json_names(tmp_path: Path) -> None:
    import json

    from tabverify.lake.store import Lake

    source = _one_table_folder(tmp_path)
    lake = tmp_path / "lake"
    build_lake(source, lake, "lexical")
    meta = json.loads((lake / "lake.json").read_text(encoding="utf-8"))
    meta["encoder"] = f"{__name__}:record_call"
    (lake / "lake.json").write_text(json.dumps(meta), encoding="utf-8")
    with Lake.open(lake) as opened, pytest.raises(LakeError, match="third-party encoder"):
        opened.search_text("hawks", 1)
    assert CALLED == []


def test_claim_retrieval_refuses_a_lake_without_the_statements_tables(tmp_path: Path) -> None:
    import json

    from tabverify.bench.trl.claims import run
    from tabverify.errors import DatasetError
    from tabverify.lake.encoders import get_table_encoder

    data = tmp_path / "tabfact"
    (data / "data" / "all_csv").mkdir(parents=True)
    (data / "tokenized_data").mkdir()
    (data / "data" / "all_csv" / "1-1-1.html.csv").write_text(
        "planet#moons\nmars#2\nearth#1\n", encoding="utf-8"
    )
    statements = {"1-1-1.html.csv": [["mars have 2 moon"], [1], "solar system"]}
    (data / "tokenized_data" / "val_examples.json").write_text(json.dumps(statements), encoding="utf-8")
    other = tmp_path / "other"
    other.mkdir()
    (other / "teams.csv").write_text("team,city\nhawks,atlanta\n", encoding="utf-8")
    encoder = get_table_encoder("lexical")
    build_lake(other, tmp_path / "lake", encoder)
    with pytest.raises(DatasetError, match="not in the lake"):
        run(encoder, data, split="val", lake=tmp_path / "lake")
