"""The DLTE generator (lake make-dlte): carving invariants, noise tiers, splits, determinism."""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from tabverify.errors import DatasetError
from tabverify.lake.dlte import carve, eligible, find_key_column, make_dlte, noise_table
from tabverify.table.model import Table
from tabverify.table.readers import load_table

SYLLABLES = [
    "ka",
    "ro",
    "mi",
    "tes",
    "lun",
    "dor",
    "vex",
    "pa",
    "qui",
    "zan",
    "bel",
    "tor",
    "sha",
    "nim",
    "gro",
]
THEMES = [
    ("player", ["team", "position", "college", "height", "weight", "hometown"]),
    ("city", ["country", "river", "mayor", "region", "climate", "airport"]),
    ("film", ["director", "studio", "genre", "language", "composer", "writer"]),
]


def _name(rng: random.Random, parts: int = 3) -> str:
    return " ".join("".join(rng.choice(SYLLABLES) for _ in range(parts)) for _ in range(2))


def write_folder(folder: Path, n_tables: int = 12, rows: int = 14, seed: int = 1) -> list[Path]:
    """A folder of ``n_tables`` CSV tables: a key column of distinct names, six text columns drawn
    from small per-table pools, themes cycling over three schemas."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for t in range(n_tables):
        key, others = THEMES[t % len(THEMES)]
        pools = {h: [f"{h[:3]} {_name(rng, 2)}" for _ in range(5)] for h in others}
        keys: list[str] = []
        while len(keys) < rows:
            name = _name(rng)
            if name not in keys:
                keys.append(name)
        path = folder / f"table{t:02d}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([key, *others])
            for k in keys:
                writer.writerow([k, *(rng.choice(pools[h]) for h in others)])
        paths.append(path)
    return paths


def _rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def dlte(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("dlte")
    write_folder(root / "tables")
    make_dlte(root / "tables", root / "out", seed=3, max_mothers=8)
    return root / "tables", root / "out", json.loads((root / "out" / "dlte.json").read_text())


def test_key_column_rule() -> None:
    table = Table.from_rows(
        ["rank", "name", "team"],
        [["1", "ann", "x"], ["2", "bob", "x"], ["3", "cy", "y"]],
    )
    assert find_key_column(table) == 1  # rank is numeric, team repeats
    dup = Table.from_rows(["name"], [["ann"], ["ANN "]])
    assert find_key_column(dup) is None  # equal after normalisation
    assert eligible(table) is None  # too small to carve


def test_carving_shares_and_blocks(dlte: tuple[Path, Path, dict]) -> None:
    tables, out, info = dlte
    assert info["n_mothers"] == 8 and info["n_queries"] == 8 * 4
    for mother in info["mothers"]:
        table = load_table(Path(mother["mother"]))
        key = table.header.index(mother["key_column"])
        m, n = table.n_columns - 1, table.n_rows
        s, r = len(mother["seed_columns"]), len(mother["seed_rows"])
        assert 0.35 * m <= s <= 0.5 * m
        assert 0.6 * n <= r <= 0.8 * n
        assert sorted(mother["seed_columns"] + mother["join_columns"]) == [
            j for j in range(m + 1) if j != key
        ]
        assert sorted(mother["seed_rows"] + mother["union_rows"]) == list(range(n))
        assert not set(mother["seed_rows"]) & set(mother["union_rows"])


def test_tier0_blocks_give_back_the_mother(dlte: tuple[Path, Path, dict]) -> None:
    tables, out, info = dlte
    for q in (q for q in info["queries"] if q["tier"] == 0):
        mother = load_table(tables / q["mother"])
        cells = {(r[0].text, h): c.text for r in mother.rows for h, c in zip(mother.header, r, strict=True)}
        rebuilt: dict[tuple[str, str], str] = {}
        for part in ("seed", "union_target", "join_target"):
            header, *rows = _rows(out / q[part])
            for row in rows:
                for h, v in zip(header, row, strict=True):
                    if h != q["key_column"]:
                        assert (row[0], h) not in rebuilt, "a non-key cell in two blocks"
                    rebuilt[(row[0], h)] = v
        for (k, h), v in cells.items():
            if h != q["key_column"]:
                assert rebuilt[(k, h)] == v
        assert len(rebuilt) == len(cells)
        # gold regions: union rows x seed columns, seed rows x join columns
        seed_header, *seed_rows = _rows(out / q["seed"])
        assert q["union_region"]["columns"] == seed_header
        assert len(q["join_region"]["rows"]) == len(seed_rows)
        assert len(q["union_region"]["rows"]) == mother.n_rows - len(seed_rows)


def test_splits_by_mother(dlte: tuple[Path, Path, dict]) -> None:
    _, _, info = dlte
    splits: dict[str, set[str]] = {}
    for q in info["queries"]:
        splits.setdefault(q["mother"], set()).add(q["split"])
    assert all(len(s) == 1 for s in splits.values())
    assert Counter(next(iter(s)) for s in splits.values()) == {"dev": 4, "test": 4}
    assert set(info["distractors"]["exclude"]) == set(splits)
    assert info["n_distractors"] == 12 - 8


def test_noise_tiers(dlte: tuple[Path, Path, dict]) -> None:
    tables, out, info = dlte
    by = {(q["mother"], q["tier"]): q for q in info["queries"]}
    for mother in {q["mother"] for q in info["queries"]}:
        t0, t1, t2, t3 = (by[(mother, t)] for t in range(4))
        h0, *r0 = _rows(out / t0["join_target"])
        h1, *r1 = _rows(out / t1["join_target"])
        h3, *r3 = _rows(out / t3["join_target"])
        # tier 1: same cells, renamed and reordered columns, key position recorded
        assert Counter(v for r in r0 for v in r) == Counter(v for r in r1 for v in r)
        assert t1["noise"]["join"]["renamed"] > 0 and h1 != h0
        assert [r[t1["join_key_index"]] for r in r1] and {r[t1["join_key_index"]] for r in r1} == {
            r[0] for r in r0
        }
        # tier 2: 5% of the non-key cells perturbed
        non_key = sum(1 for r in r0 for j, v in enumerate(r) if j and v.strip())
        assert t2["noise"]["join"]["cells"] == round(0.05 * non_key)
        assert t0["noise"]["join"]["cells"] == 0 and t1["noise"]["join"]["cells"] == 0
        # tier 3: 10% keys perturbed, spurious rows and columns
        noise = t3["noise"]["join"]
        assert noise["keys"] == round(0.1 * len(r0))
        assert noise["spurious_rows"] >= 1 and len(r3) == len(r0) + noise["spurious_rows"]
        assert 1 <= noise["spurious_columns"] <= 2 and len(h3) == len(h0) + noise["spurious_columns"]
        # the seed is clean in every tier
        assert _rows(out / t0["seed"]) == _rows(out / t3["seed"])


def test_deterministic(tmp_path: Path, dlte: tuple[Path, Path, dict]) -> None:
    tables, out, info = dlte
    make_dlte(tables, tmp_path / "again", seed=3, max_mothers=8)
    again = json.loads((tmp_path / "again" / "dlte.json").read_text())
    assert again["queries"] == info["queries"]
    for q in info["queries"]:
        for part in ("seed", "union_target", "join_target"):
            assert (out / q[part]).read_bytes() == (tmp_path / "again" / q[part]).read_bytes()
    make_dlte(tables, tmp_path / "other", seed=4, max_mothers=8)
    other = json.loads((tmp_path / "other" / "dlte.json").read_text())
    assert other["queries"] != info["queries"]


def test_noise_table_tier0_is_identity() -> None:
    header, rows, counts = noise_table(["k", "a"], [["x", "1"], ["y", "2"]], 0, 0, random.Random(0))
    assert header == ["k", "a"] and rows == [["x", "1"], ["y", "2"]] and counts["key_index"] == 0


def test_carve_bounds_hold_for_small_tables() -> None:
    table = Table.from_rows(["k", "a", "b", "c", "d"], [[f"n{i}", "a", "b", "c", "d"] for i in range(8)])
    for seed in range(20):
        cut = carve(table, 0, random.Random(seed))
        assert len(cut["seed_columns"]) == 2 and 5 <= len(cut["seed_rows"]) <= 6


def test_bad_arguments(tmp_path: Path) -> None:
    write_folder(tmp_path / "t", n_tables=3)
    with pytest.raises(DatasetError, match="tiers"):
        make_dlte(tmp_path / "t", tmp_path / "o", tiers=(5,))
    with pytest.raises(DatasetError, match="dev_share"):
        make_dlte(tmp_path / "t", tmp_path / "o", dev_share=1.0)
    with pytest.raises(DatasetError, match="not a folder"):
        make_dlte(tmp_path / "missing", tmp_path / "o")
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError, match="carved"):
        make_dlte(tmp_path / "tiny", tmp_path / "o")
