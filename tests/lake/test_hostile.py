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


def test_a_symlink_loop_in_the_source_is_skipped(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "teams.csv").write_text("team,city\nhawks,atlanta\n", encoding="utf-8")
    (source / "self.csv").symlink_to("self.csv")  # resolving it loops
    (source / "loop").symlink_to(source)  # a symlinked folder: not followed
    listing = enumerate_source(source, exclude=tmp_path / "lake")
    assert [t.id for t in listing.tables] == ["teams.csv"]
    assert listing.skipped == [("self.csv", "a symbolic link (not followed)")]


def test_a_lake_whose_lock_cannot_be_opened_is_a_lake_error(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "teams.csv").write_text("team,city\nhawks,atlanta\n", encoding="utf-8")
    lake = tmp_path / "lake"
    build_lake(source, lake, "lexical")
    (lake / LOCK_FILE).unlink()
    (lake / LOCK_FILE).mkdir()  # as a read-only folder would: the lock file cannot be opened for writing
    with pytest.raises(LakeError, match="cannot write the lake"):
        build_lake(source, lake, "lexical")


def test_indexing_a_lake_into_itself_is_refused_and_keeps_its_tables(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "teams.csv").write_text("team,city\nhawks,atlanta\n", encoding="utf-8")
    lake = tmp_path / "lake"
    build_lake(source, lake, "lexical")
    for wrong in (lake, lake / "lake.json"):  # each lists no table: every table would be 'gone'
        with pytest.raises(LakeError, match="is the lake"):
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
