"""Folders of coreference files: subfolders are read too, in a fixed order, and paired by id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tabverify.coref import CorefFormatError, read_documents, score


def put(path: Path, doc_id: str, text: str = "Dana saw her dog.", clusters: object = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"doc_id": doc_id, "text": text, "clusters": clusters or [[[0, 4], [9, 12]]]}
    path.write_text(json.dumps(record), encoding="utf-8")
    return path


def test_documents_in_subfolders_are_read_in_path_order(tmp_path: Path) -> None:
    put(tmp_path / "b.json", "top-b")
    put(tmp_path / "a" / "z.json", "a-z")
    put(tmp_path / "a" / "deeper" / "y.json", "a-deeper-y")
    put(tmp_path / "c" / "x.json", "c-x")
    put(tmp_path / ".hidden" / "h.json", "hidden")
    put(tmp_path / "c" / ".h.json", "hidden-file")
    ids = [d.doc_id for d in read_documents(tmp_path)]
    assert ids == ["a-deeper-y", "a-z", "top-b", "c-x"]


def test_key_and_response_in_different_layouts_pair_by_id(tmp_path: Path) -> None:
    put(tmp_path / "key" / "news" / "d1.json", "d1")
    put(tmp_path / "key" / "d2.json", "d2")
    put(tmp_path / "response" / "d1.json", "d1")
    put(tmp_path / "response" / "blogs" / "d2.json", "d2", clusters=[[[0, 4], [9, 16]]])
    key = read_documents(tmp_path / "key")
    response = read_documents(tmp_path / "response")
    assert sorted(d.doc_id for d in key) == sorted(d.doc_id for d in response) == ["d1", "d2"]
    result = score(key, response)
    assert 0 < result.metrics["muc"].f1 < 1  # d1 right, d2's second mention wrong


def test_one_id_in_two_subfolders_with_different_texts_is_an_error(tmp_path: Path) -> None:
    put(tmp_path / "a" / "d.json", "same")
    put(tmp_path / "b" / "d.json", "same", text="Another text entirely.")
    with pytest.raises(CorefFormatError, match="'same' is given twice"):
        read_documents(tmp_path)


def test_a_folder_with_only_empty_subfolders_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with pytest.raises(CorefFormatError, match="hold no files"):
        read_documents(tmp_path)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links")
def test_a_link_to_a_parent_folder_is_not_followed(tmp_path: Path) -> None:
    put(tmp_path / "d.json", "d")
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    assert [d.doc_id for d in read_documents(tmp_path)] == ["d"]
