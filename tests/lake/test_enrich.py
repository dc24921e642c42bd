"""Enrichment (the three DLTE stages) on a real lake built in tmp_path: the carved rows and columns
come back, and every added cell says truly where it came from."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tabverify.lake.align import Thresholds
from tabverify.lake.encoders import get_table_encoder
from tabverify.lake.enrich import enrich_table, enrich_with_candidates
from tabverify.lake.related import Candidate
from tabverify.lake.store import Lake
from tabverify.table.model import Table
from tabverify.table.readers import load_table
from tests.lake.test_related import LOOSE, build_tiny_lake


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return build_tiny_lake(tmp_path_factory.mktemp("enrich"), tier=1)


def _texts(table: Table) -> list[list[str]]:
    return [[c.text for c in r] for r in table.rows]


def test_enrich_recovers_carved_rows_and_columns(tiny: tuple[Path, dict]) -> None:
    lake_path, info = tiny
    for q in info["queries"]:
        seed = load_table(lake_path.parent / "dlte" / q["seed"])
        with Lake.open(lake_path) as lake:
            result = enrich_table(lake, seed, k=3, thresholds=LOOSE, max_unions=1)
            texts = _texts(result.table)
            n, m = seed.n_rows, seed.n_columns
            # the seed is kept in place
            assert [r[:m] for r in texts[:n]] == _texts(seed) and list(result.table.header[:m]) == list(
                seed.header
            )
            # union: every carved row comes back under the seed's columns
            new_rows = Counter(tuple(r[:m]) for r in texts[n:])
            assert all(new_rows[tuple(r)] >= 1 for r in q["union_region"]["rows"])
            # join: each seed row gets its own carved cells (tier 1: renamed headers, so by value)
            for row, gold in zip(texts[:n], q["join_region"]["rows"], strict=True):
                assert Counter(gold) <= Counter(row[m:])
            # provenance: each added cell is the lake table's cell it names
            assert result.provenance and result.added_rows >= len(q["union_region"]["rows"])
            for cell in result.provenance:
                source = lake.load(cell.source)
                j = source.header.index(cell.source_column)
                assert source.rows[cell.source_row][j].text == cell.text == texts[cell.row][cell.column]
                # appended rows get the union's cells under the seed's columns, and the joins fill them too
                assert cell.operation == ("union" if cell.column < m else "join")
                assert cell.row >= n or cell.column >= m
            union_sources = {c.source for c in result.provenance if c.operation == "union"}
            assert union_sources == {"targets/" + Path(q["union_target"]).name}
            report = json.loads(json.dumps(result.report()))
            assert report["added_cells"] == len(result.provenance) and report["candidates"]


def test_nothing_to_add_for_an_unrelated_table(tiny: tuple[Path, dict]) -> None:
    lake_path, _ = tiny
    alien = Table.from_rows(
        ["molecule", "formula"], [["water", "h2o"], ["salt", "nacl"], ["ammonia", "nh3"], ["methane", "ch4"]]
    )
    with Lake.open(lake_path) as lake:
        result = enrich_table(lake, alien, k=3)
    assert result.provenance == [] and result.table == alien.__class__.from_rows(alien.header, _texts(alien))
    assert all(d.operation == "none" for d in result.decisions)


def test_enrich_with_given_candidates_no_lake() -> None:
    encoder = get_table_encoder("lexical")
    seed = Table.from_rows(["city", "country"], [["paris", "france"], ["rome", "italy"], ["oslo", "norway"]])
    more = Table.from_rows(["town", "nation"], [["lima", "peru"], ["paris", "france"], ["quito", "ecuador"]])
    extra = Table.from_rows(
        ["city", "mayor"], [["rome", "gualtieri"], ["oslo", "stenseng"], ["paris", "hidalgo"]]
    )
    q, a, b = encoder.encode([seed, more, extra])
    candidates = [Candidate("more", more, a.columns), Candidate("extra", extra, b.columns, 0.0, (0, 0, 1.0))]
    t = Thresholds(min_sim=0.0, union_ratio=1.0, union_sim=0.0)
    result = enrich_with_candidates(seed, q.columns, candidates, encoder, t)
    assert [r.operation for r in result.decisions] == ["union", "join"]
    texts = _texts(result.table)
    assert texts[3:] == [["lima", "peru", ""], ["quito", "ecuador", ""]]  # paris is already there
    assert [r[2] for r in texts[:3]] == ["hidalgo", "gualtieri", "stenseng"]
    assert result.table.header[2] == "mayor"
    assert np.all([c.source in ("more", "extra") for c in result.provenance])
