"""Related tables (union and join candidates) on a real lake built in tmp_path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tabverify.lake.align import JOIN, UNION, Thresholds
from tabverify.lake.dlte import make_dlte
from tabverify.lake.indexing import build_lake
from tabverify.lake.related import key_like_columns, related_tables
from tabverify.lake.store import Lake
from tabverify.table.model import Table
from tabverify.table.readers import load_table
from tests.lake.test_dlte import write_folder

LOOSE = Thresholds(min_sim=0.05, union_ratio=0.67, union_sim=0.1, join_ratio=0.5, key_sim=0.5)
"""Thresholds for the synthetic tables (names never repeat across tables, so key columns of a
union pair share no values and align weakly)."""


def build_tiny_lake(root: Path, tier: int = 0) -> tuple[Path, dict]:
    """A make-dlte folder of 2 mothers over 9 synthetic tables, and a lake of the distractors plus
    the targets of ``tier``: returns the lake path and the dlte.json description."""
    write_folder(root / "tables", n_tables=9, rows=12, seed=7)
    make_dlte(root / "tables", root / "dlte", seed=1, tiers=(tier,), max_mothers=2)
    info = json.loads((root / "dlte" / "dlte.json").read_text())
    source = root / "source"
    (source / "targets").mkdir(parents=True)
    for path in (root / "tables").iterdir():
        if path.name not in info["distractors"]["exclude"]:
            shutil.copy(path, source / path.name)
    for path in (root / "dlte" / "targets" / f"tier{tier}").iterdir():
        shutil.copy(path, source / "targets" / path.name)
    build_lake(source, root / "lake", "lexical")
    return root / "lake", info


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return build_tiny_lake(tmp_path_factory.mktemp("related"))


def test_union_and_join_targets_are_found_with_reasons(tiny: tuple[Path, dict]) -> None:
    lake_path, info = tiny
    for q in info["queries"]:
        seed = load_table(lake_path.parent / "dlte" / q["seed"])
        stem = Path(q["union_target"]).name
        with Lake.open(lake_path) as lake:
            found = related_tables(lake, seed, k=5, thresholds=LOOSE)
        ops = {r.id: r for r in found}
        union = ops[f"targets/{stem}"]
        join = ops[f"targets/{Path(q['join_target']).name}"]
        assert union.operation == UNION and union.reason.startswith("union: ")
        assert "columns align (mean cosine" in union.reason
        assert join.operation == JOIN
        assert join.key == (q["key_column"], q["key_column"])
        assert f"key '{q['key_column']}' contains 100% of the query's" in join.reason
        # aligned columns are named, with their cosine
        assert all(
            isinstance(a, str) and isinstance(b, str) and -1 <= s <= 1.0001 for a, b, s in union.aligned
        )
        assert json.loads(json.dumps(union.to_dict()))["operation"] == "union"


def test_include_none_lists_unrelated_tables(tiny: tuple[Path, dict]) -> None:
    lake_path, info = tiny
    seed = load_table(lake_path.parent / "dlte" / info["queries"][0]["seed"])
    with Lake.open(lake_path) as lake:
        strict = Thresholds(min_sim=0.3, union_ratio=0.8, union_sim=0.5)
        every = related_tables(lake, seed, k=len(lake), thresholds=strict, include_none=True)
        some = related_tables(lake, seed, k=len(lake), thresholds=strict)
    assert len(every) >= len(lake) > len(some)
    assert any(r.operation == "none" and r.reason.startswith("none: ") for r in every)


def test_key_like_columns() -> None:
    table = Table.from_rows(
        ["id", "name", "team"],
        [["1", "ann", "x"], ["2", "bob", "x"], ["3", "cy", "y"], ["4", "dee", "y"], ["5", "eve", "x"]],
    )
    assert key_like_columns(table) == [1]
    assert key_like_columns(table, text_only=False) == [0, 1]


def test_the_query_itself_in_the_lake_is_not_related(tiny: tuple[Path, dict]) -> None:
    """A table indexed in the lake finds its own copy first by every measure; it is left out (it
    adds nothing), while the other tables it relates to remain."""
    lake_path, info = tiny
    q = info["queries"][0]
    target = lake_path.parent / "source" / "targets" / Path(q["union_target"]).name
    table = load_table(target)
    with Lake.open(lake_path) as lake:
        found = related_tables(lake, table, k=5, thresholds=LOOSE, include_none=True)
    ids = [r.id for r in found]
    assert f"targets/{target.name}" not in ids
    assert ids, "the other tables of the lake are still candidates"
