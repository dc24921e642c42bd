"""MinHash column sketches and the containment scan (SketchIndex)."""

from __future__ import annotations

import numpy as np
import pytest

from tabverify.lake.sketch import NUM_PERM, ColumnSketch, SketchIndex, sketch_column


def values(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_containment_is_estimated_from_two_sketches() -> None:
    query = sketch_column(values("v", 200))
    holder = sketch_column(values("v", 150) + values("other", 300))  # holds 150 of the 200
    assert holder.size == 450
    assert query.containment_in(holder) == pytest.approx(0.75, abs=0.2)
    assert query.containment_in(sketch_column(values("w", 200))) < 0.1
    assert query.containment_in(sketch_column(values("v", 200))) == 1.0
    # values are normalised (case, spaces, NFKC) and deduplicated; empty cells ignored
    assert sketch_column(["A  b", "a b", "", "ｃ"]).size == 2


def test_the_scan_gives_every_column_over_the_threshold_with_its_containment() -> None:
    query = sketch_column(values("v", 100))
    columns = {
        ("all", 0): sketch_column(values("v", 100) + values("x", 20)),
        ("most", 1): sketch_column(values("v", 80) + values("y", 50)),
        ("some", 0): sketch_column(values("v", 20) + values("z", 300)),
        ("none", 2): sketch_column(values("q", 100)),
        ("empty", 0): sketch_column([]),
    }
    index = SketchIndex.from_entries(columns.items())
    assert len(index) == 4  # the empty column is not indexed
    expected = {key: query.containment_in(s) for key, s in columns.items()}
    for threshold in (0.1, 0.5, 0.9):
        hits = index.query(query, threshold)
        # exactly the columns whose estimate passes, each with the scalar estimate, highest first
        assert {key for key, _ in hits} == {k for k, c in expected.items() if c >= threshold}
        for key, share in hits:
            assert share == pytest.approx(expected[key], rel=1e-12)
        assert [share for _, share in hits] == sorted((share for _, share in hits), reverse=True)
    assert [key for key, _ in index.query(query, 0.5)][:2] == [("all", 0), ("most", 1)]
    assert index.query(sketch_column([]), 0.1) == []
    assert SketchIndex.from_entries([]).query(query, 0.1) == []


def test_the_scan_works_across_its_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SketchIndex, "_CHUNK", 3)
    query = sketch_column(values("v", 50))
    entries = [((i, 0), sketch_column(values("v", 10 * i) + values("n", 30))) for i in range(1, 11)]
    hits = SketchIndex.from_entries(entries).query(query, 0.5)
    expected = {key for key, s in entries if query.containment_in(s) >= 0.5}
    assert {key for key, _ in hits} == expected and len(expected) >= 3


def test_a_signature_array_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="one 64-value signature per key"):
        SketchIndex(["a"], np.zeros((1, NUM_PERM - 1), dtype=np.uint64), np.array([1]))
    with pytest.raises(ValueError, match="one size per key"):
        SketchIndex(["a"], np.zeros((1, NUM_PERM), dtype=np.uint64), np.array([1, 2]))
    assert ColumnSketch.from_bytes(sketch_column(["a"]).to_bytes()).size == 1
