"""Column alignment, the union/join/none decision and row matching."""

from __future__ import annotations

import numpy as np

from tabverify.lake.align import (
    JOIN,
    NONE,
    UNION,
    AlignedColumn,
    Thresholds,
    align_columns,
    csls,
    decide,
    keys_may_match,
    match_rows,
)
from tabverify.lake.encoders import get_table_encoder
from tabverify.table.model import Table

HEADER = ["player", "team", "position", "college"]
ROWS = [
    ["anna lopez", "chicago bulls", "guard", "duke university"],
    ["brian moore", "boston celtics", "forward", "kansas state"],
    ["carla nunez", "miami heat", "center", "ohio state"],
    ["derek owens", "utah jazz", "guard", "villanova"],
    ["erin price", "denver nuggets", "forward", "gonzaga"],
]


def test_alignment_finds_renamed_reordered_columns() -> None:
    query = Table.from_rows(HEADER, ROWS)
    order = [2, 0, 3, 1]
    renamed = ["POSITION", "Player", "college_name", "club"]
    other = Table.from_rows(renamed, [[r[j] for j in order] for r in ROWS[::-1]])
    encoder = get_table_encoder("lexical")
    q, c = encoder.encode([query, other])
    alignment = align_columns(q.columns, c.columns, min_sim=0.1)
    assert {(a.query, a.candidate) for a in alignment} == {(0, 1), (1, 3), (2, 0), (3, 2)}
    assert all(0.1 <= a.similarity <= 1.0001 for a in alignment)


def test_alignment_is_one_to_one_and_drops_weak_pairs() -> None:
    q = np.eye(3, dtype=np.float32)
    c = np.array([[1, 0, 0], [0.9, 0.1, 0], [0, 0, 0.2]], dtype=np.float32)  # col 2 is weakly like q2
    alignment = align_columns(q, c, min_sim=0.5)
    # (1, 1) has cosine 0.11: aligned by the matching, then dropped below min_sim
    assert [(a.query, a.candidate) for a in alignment] == [(0, 0), (2, 2)]
    assert [round(a.similarity, 3) for a in alignment] == [1.0, 1.0]
    assert len(align_columns(q, c, min_sim=0.0)) == 3
    assert align_columns(np.zeros((0, 3)), c) == []


def _aligned(*sims: float) -> list[AlignedColumn]:
    return [AlignedColumn(i, i, s) for i, s in enumerate(sims)]


def test_decision_cases() -> None:
    t = Thresholds(union_ratio=0.8, union_sim=0.5, join_ratio=0.5, key_sim=0.7)
    assert decide(_aligned(0.9, 0.8, 0.7, 0.9), 4, t).operation == UNION
    assert decide(_aligned(0.95), 4, t).operation == JOIN  # one strong key column
    assert decide(_aligned(0.95, 0.4), 4, t).operation == JOIN
    assert decide(_aligned(0.4), 4, t).operation == NONE  # one weak column
    assert decide(_aligned(0.9, 0.3, 0.3), 4, t).operation == NONE  # 75% aligned: neither
    assert decide([], 4, t).operation == NONE
    wide = Thresholds(union_ratio=0.8, union_sim=0.5, join_ratio=1.0, key_sim=0.5, max_join_columns=3)
    assert decide(_aligned(0.9, 0.9, 0.9, 0.9), 8, wide).operation == NONE  # 4 > 3 columns for a join
    d = decide(_aligned(0.9, 0.7), 4, t)
    assert d.match_ratio == 0.5 and abs(d.mean_sim - 0.8) < 1e-9 and d.max_sim == 0.9 and d.n_matched == 2


def test_rows_by_key_then_csls() -> None:
    rng = np.random.default_rng(0)
    base = rng.normal(size=(6, 16)).astype(np.float32)
    perm = [3, 0, 5, 1, 4, 2]
    cand = base[perm] + 0.05 * rng.normal(size=(6, 16)).astype(np.float32)
    # keys: rows 0 and 1 match by key; the others by vectors (their keys are garbled)
    q_keys = ["ann", "bob", "cy", "dee", "eve", "fay"]
    c_keys = ["dee!", "Ann", "fay!", "BOB ", "eve!", "cy!"]
    matches = match_rows(base, cand, q_keys, c_keys, Thresholds(row_z=0.5))
    found = {m.query: (m.candidate, m.how) for m in matches}
    assert found[0] == (1, "key") and found[1] == (3, "key")
    for i in range(2, 6):
        assert found[i] == (perm.index(i), "csls")


def test_repeated_keys_do_not_match_and_unrelated_rows_stay_unmatched() -> None:
    matches = match_rows(None, None, ["x", "x", "y"], ["x", "y", "y"])
    assert matches == []
    rng = np.random.default_rng(1)
    q = rng.normal(size=(5, 32)).astype(np.float32)
    c = rng.normal(size=(5, 32)).astype(np.float32)
    assert match_rows(q, c, thresholds=Thresholds(row_min_cosine=0.5)) == []


def test_csls_penalises_hubs() -> None:
    sims = np.array([[0.9, 0.8], [0.85, 0.1]])
    scores = csls(sims, k=1)
    # 2 cos - (the row's best cosine) - (the column's best cosine)
    expected = np.array([[1.8 - 0.9 - 0.9, 1.6 - 0.9 - 0.8], [1.7 - 0.85 - 0.9, 0.2 - 0.85 - 0.8]])
    assert np.allclose(scores, expected)


def test_large_tables_match_by_key_only(monkeypatch) -> None:
    import tabverify.lake.align as align

    vectors = np.eye(2, dtype=np.float32)
    loose = Thresholds(row_z=-10)
    assert [(m.query, m.candidate) for m in match_rows(vectors, vectors, thresholds=loose)] == [
        (0, 0),
        (1, 1),
    ]
    monkeypatch.setattr(align, "MAX_CSLS_PAIRS", 3)  # 2 x 2 pairs: too many, keys only
    matches = match_rows(vectors, vectors, ["a", "b"], ["b", "zz"], loose)
    assert [(m.query, m.candidate, m.how) for m in matches] == [(1, 0, "key")]
    assert match_rows(vectors, vectors, thresholds=loose) == []


def test_a_leftover_row_never_takes_another_entitys_row() -> None:
    """After key matching, the last free row on each side (knicks vs heat) have near vectors (the
    same city-less shape) but name different entities: no match. A typo'd key still matches."""
    rng = np.random.default_rng(2)
    base = rng.normal(size=(3, 16)).astype(np.float32)
    cand = base + 0.01 * rng.normal(size=(3, 16)).astype(np.float32)
    q_keys = ["hawks", "bulls", "knicks"]
    matches = match_rows(base, cand, q_keys, ["hawks", "bulls", "heat"], Thresholds(row_z=0.0))
    assert {(m.query, m.candidate) for m in matches} == {(0, 0), (1, 1)}
    matches = match_rows(base, cand, q_keys, ["hawks", "bulls", "knikcs"], Thresholds(row_z=0.0))
    assert (2, 2, "csls") in {(m.query, m.candidate, m.how) for m in matches}


def test_keys_may_match() -> None:
    assert keys_may_match("heat", "haet") and keys_may_match("Manchester United", "manchester")
    assert keys_may_match("", "anything") and keys_may_match("A  B", "a b")
    assert not keys_may_match("knicks", "heat") and not keys_may_match("lakers", "celtics")
