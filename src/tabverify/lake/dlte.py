"""The DLTE benchmark generator (TRL-Bench's data-lake table enrichment, built from a folder of tables).

``make_dlte(tables_dir, out_dir)`` turns some tables of a folder ("mother" tables) into enrichment
queries; the other tables of the folder are the distractors (referenced by path, never copied).

Which tables can be mothers: at least :data:`MIN_ROWS` data rows, at most :data:`MAX_ROWS`, and at
least :data:`MIN_NONKEY` columns besides a key column. The key column is the leftmost column whose
cells are all non-empty, pairwise distinct after normalisation
(:func:`tabverify.lake.sketch.normalize_value`), and mostly not numbers or dates (at most half of
its cells parse as a quantity: a rank or a year is a poor join key). Tables without one are not
used. Mothers are drawn at random (fixed seed) among the eligible tables, ``max_mothers`` of them
(default :data:`DEFAULT_MOTHERS`: 1,000 over TabFact's 16,573 tables, so a lake is the ~15.6k other
tables plus 8,000 targets for four tiers; TRL-Bench used 1,379 mothers and a 47,772-table lake,
beyond what a 2-core machine encodes in minutes).

How a mother is carved (one random draw per mother, the same in every tier): its ``m`` non-key
columns are shuffled; the seed keeps ``s`` of them, ``s`` drawn in [ceil(0.35 m), floor(0.5 m)],
and the other ``m - s`` form the join block; its ``n`` rows are shuffled; the seed keeps ``r``
of them, ``r`` drawn in [ceil(0.6 n), floor(0.8 n)], and the others form the union block. Then

- the seed (the query) = seed rows x (key + seed columns), in the mother's order;
- the union target = union rows x (key + seed columns): new rows with the seed's schema;
- the join target = all rows x (key + join columns), rows shuffled: a lookup table holding every
  key, so the seed's keys are all in it. With the seed, the two blocks give back the whole mother,
  and apart from the key column no cell is in two of them.

Gold regions (what an enrichment should add): the union region = union rows x the seed's columns
(key included); the join region = seed rows x join columns. Cells are kept as text.

Noise tiers, applied to the targets (the seed stays clean), each with its own random draw:
0 none; 1 renamed headers (synonyms, abbreviations, case changes, separators) and reordered columns
and rows; 2 tier 1 plus 5% of the non-key cells perturbed (a typo, a case change or a cut); 3 tier
2 plus 10% of the key cells perturbed, 10% spurious rows (made of values drawn from other rows,
under new keys) and 1-2 spurious columns (borrowed from distractor tables).

Dev/test split by mother (a mother's queries are all in one split), ``dev_share`` of the mothers
in dev. Output layout: ``DIR/queries/tier{t}/<query>_seed.csv``,
``DIR/targets/tier{t}/<query>_union.csv`` and ``_join.csv`` (comma-separated), and
``DIR/dlte.json``. Everything is deterministic for a given folder and seed.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tabverify.errors import DatasetError, TableError
from tabverify.lake.sketch import normalize_value
from tabverify.table.model import Table
from tabverify.table.readers import load_table, read_tabfact_csv

__all__ = [
    "DEFAULT_MOTHERS",
    "DLTE_VERSION",
    "MAX_ROWS",
    "MIN_NONKEY",
    "MIN_ROWS",
    "TABLE_SUFFIXES",
    "carve",
    "find_key_column",
    "list_tables",
    "make_dlte",
    "noise_table",
    "read_any_table",
]

DLTE_VERSION = "1"
DEFAULT_MOTHERS = 1000
MIN_ROWS = 8
MAX_ROWS = 500
MIN_NONKEY = 4
TABLE_SUFFIXES = (".csv", ".tsv", ".tab", ".json")
SEED_COLUMNS = (0.35, 0.5)
SEED_ROWS = (0.6, 0.8)
CELL_NOISE = 0.05
KEY_NOISE = 0.10
SPURIOUS_ROWS = 0.10

Progress = Callable[[str, int, int], None]

_SYNONYMS = {
    "name": "title",
    "player": "athlete",
    "team": "club",
    "club": "team",
    "country": "nation",
    "nation": "country",
    "date": "day",
    "year": "season",
    "season": "year",
    "score": "result",
    "result": "outcome",
    "position": "pos",
    "points": "pts",
    "location": "venue",
    "venue": "location",
    "opponent": "opposition",
    "number": "no",
    "no": "number",
    "rank": "ranking",
    "total": "sum",
    "city": "town",
    "county": "district",
    "party": "affiliation",
    "district": "constituency",
    "title": "name",
    "director": "directed by",
    "writer": "written by",
    "time": "duration",
    "attendance": "crowd",
    "record": "standing",
    "round": "rd",
    "event": "competition",
    "winner": "champion",
    "votes": "ballots",
    "population": "inhabitants",
    "area": "size",
    "election": "poll",
    "film": "movie",
    "height": "tall",
    "weight": "mass",
    "school": "college",
    "college": "school",
    "game": "match",
    "week": "wk",
    "home team": "host",
    "away team": "visitor",
}


def list_tables(folder: Path) -> list[Path]:
    """The table files of ``folder`` (not recursive), sorted by name."""
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a folder of tables")
    return sorted(p for p in folder.iterdir() if p.is_file() and p.name.lower().endswith(TABLE_SUFFIXES))


def read_any_table(path: Path) -> Table:
    """A table file: TabFact's ``.html.csv`` ('#'-separated) or any CSV/TSV/JSON file, no caption."""
    if path.name.lower().endswith(".html.csv"):
        return read_tabfact_csv(path)
    return load_table(path)


def find_key_column(table: Table) -> int | None:
    """The leftmost column usable as a key (all cells non-empty, pairwise distinct after
    normalisation, at most half of them numbers or dates), or None."""
    if table.n_rows == 0:
        return None
    for j in range(table.n_columns):
        cells = table.column(j)
        values = [normalize_value(c.text) for c in cells]
        if any(not v for v in values) or len(set(values)) != len(values):
            continue
        if sum(c.quantity is not None for c in cells) * 2 > len(cells):
            continue
        return j
    return None


def eligible(table: Table) -> int | None:
    """The key column of ``table`` when it can be a mother table (see the module docstring)."""
    if not (MIN_ROWS <= table.n_rows <= MAX_ROWS) or table.n_columns < MIN_NONKEY + 1:
        return None
    if any(not h.strip() for h in table.header):
        return None
    return find_key_column(table)


def _draw(rng: random.Random, n: int, bounds: tuple[float, float]) -> int:
    low, high = math.ceil(bounds[0] * n - 1e-9), math.floor(bounds[1] * n + 1e-9)
    if low > high:
        raise ValueError(f"no whole share of {n} lies in {bounds}")
    return rng.randint(low, high)


def carve(table: Table, key: int, rng: random.Random) -> dict[str, Any]:
    """One mother's carving: ``seed_columns`` and ``join_columns`` (non-key column indexes, in
    the mother's order), ``seed_rows`` and ``union_rows`` (row indexes, in order)."""
    nonkey = [j for j in range(table.n_columns) if j != key]
    shuffled = nonkey[:]
    rng.shuffle(shuffled)
    s = _draw(rng, len(nonkey), SEED_COLUMNS)
    rows = list(range(table.n_rows))
    rng.shuffle(rows)
    r = _draw(rng, table.n_rows, SEED_ROWS)
    return {
        "seed_columns": sorted(shuffled[:s]),
        "join_columns": sorted(shuffled[s:]),
        "seed_rows": sorted(rows[:r]),
        "union_rows": sorted(rows[r:]),
    }


def _rename(header: str, rng: random.Random) -> str:
    low = header.strip().lower()
    choice = rng.randrange(4)
    if choice == 0 and low in _SYNONYMS:
        return _SYNONYMS[low]
    if choice == 0:
        for word, synonym in _SYNONYMS.items():
            if word in low.split():
                return " ".join(synonym if w == word else w for w in low.split())
        choice = 1
    if choice == 1:  # abbreviation
        words = low.split()
        if len(words) > 1:
            return "".join(w[0] for w in words if w)
        return low[: max(3, len(low) // 2)] + "."
    if choice == 2:
        return header.upper() if rng.random() < 0.5 else header.title().replace(" ", "")
    return "_".join(low.split())


def _perturb(text: str, rng: random.Random) -> str:
    if not text:
        return text
    choice = rng.randrange(4)
    if choice == 0 and len(text) > 1:  # swap two neighbouring characters
        i = rng.randrange(len(text) - 1)
        out = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
        if out != text:
            return out
    if choice == 1 and len(text) > 2:  # drop a character
        i = rng.randrange(len(text))
        return text[:i] + text[i + 1 :]
    if choice == 2 and text.upper() != text:
        return text.upper()
    return text + rng.choice("xqz")  # a stray character


def noise_table(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    key: int,
    tier: int,
    rng: random.Random,
    borrow: Sequence[tuple[str, list[str]]] = (),
) -> tuple[list[str], list[list[str]], dict[str, int]]:
    """A target's header and rows after the noise of ``tier`` (key = column ``key``; ``borrow``:
    (header, values) columns of other tables for tier 3's spurious columns), and counts of what
    was changed (renamed, cells, keys, spurious_rows, spurious_columns) with the key column's
    new position (key_index)."""
    header = list(header)
    rows = [list(r) for r in rows]
    counts = {
        "renamed": 0,
        "cells": 0,
        "keys": 0,
        "spurious_rows": 0,
        "spurious_columns": 0,
        "key_index": key,
    }
    if tier >= 2:
        cells = [(i, j) for i, r in enumerate(rows) for j in range(len(r)) if j != key and r[j].strip()]
        picked = rng.sample(cells, round(CELL_NOISE * len(cells)))
        for i, j in picked:
            rows[i][j] = _perturb(rows[i][j], rng)
        counts["cells"] = len(picked)
    if tier >= 3:
        picked_rows = rng.sample(range(len(rows)), round(KEY_NOISE * len(rows)))
        for i in picked_rows:
            rows[i][key] = _perturb(rows[i][key], rng)
        counts["keys"] = len(picked_rows)
        n_spurious = max(1, round(SPURIOUS_ROWS * len(rows)))
        for number in range(n_spurious):
            fake = [rng.choice(rows)[j] if rows else "" for j in range(len(header))]
            fake[key] = f"{_perturb(rng.choice(rows)[key], rng)} {number + 2}" if rows else str(number)
            rows.append(fake)
        counts["spurious_rows"] = n_spurious
        for h, values in list(borrow)[: rng.randint(1, 2)]:
            name = h if h not in header else f"{h} (x)"
            header.append(name)
            for i, r in enumerate(rows):
                r.append(values[i % len(values)] if values else "")
            counts["spurious_columns"] += 1
    if tier >= 1:
        new = []
        for h in header:
            renamed = _rename(h, rng)
            counts["renamed"] += renamed != h
            new.append(renamed)
        header = new
        order = list(range(len(header)))
        rng.shuffle(order)
        header = [header[j] for j in order]
        rows = [[r[j] for j in order] for r in rows]
        counts["key_index"] = order.index(key)
        rng.shuffle(rows)
    return header, rows, counts


def _write_csv(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".html.csv", *TABLE_SUFFIXES):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _texts(table: Table) -> list[list[str]]:
    return [[c.text for c in row] for row in table.rows]


def make_dlte(
    tables_dir: str | Path,
    out_dir: str | Path,
    seed: int = 0,
    tiers: Sequence[int] = (0, 1, 2, 3),
    dev_share: float = 0.5,
    max_mothers: int | None = DEFAULT_MOTHERS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Build a DLTE benchmark from the tables of ``tables_dir`` into ``out_dir`` (see the module
    docstring) and return its summary (counts per split and tier, the paths).

    An earlier benchmark in ``out_dir`` is replaced (its query and target files removed first).

    Raises:
        DatasetError: ``tables_dir`` is not a folder, no table can be a mother, bad tiers or share;
            ``out_dir`` is a non-empty folder that is not a DLTE benchmark, or cannot be written.
    """
    try:
        return _make_dlte(tables_dir, out_dir, seed, tiers, dev_share, max_mothers, progress)
    except OSError as exc:  # a read-only or full disk, a file gone while reading
        where = exc.filename or out_dir
        raise DatasetError(f"{where}: {exc.strerror or exc}; the benchmark folder must be writable") from None


def _make_dlte(
    tables_dir: str | Path,
    out_dir: str | Path,
    seed: int,
    tiers: Sequence[int],
    dev_share: float,
    max_mothers: int | None,
    progress: Progress | None,
) -> dict[str, Any]:
    tables_dir = Path(tables_dir)
    out_dir = Path(out_dir)
    tiers = sorted(set(tiers))
    if not tiers or any(t not in (0, 1, 2, 3) for t in tiers):
        raise DatasetError(f"noise tiers are 0, 1, 2 and 3, not {tiers}")
    if not 0.0 < dev_share < 1.0:
        raise DatasetError(f"dev_share must lie strictly between 0 and 1, not {dev_share}")
    if max_mothers is not None and max_mothers < 2:
        raise DatasetError("max_mothers must be at least 2 (one dev and one test mother)")
    _clear_out(out_dir, check_only=True)  # refused before the tables are read
    paths = list_tables(tables_dir)
    candidates: list[tuple[Path, int]] = []
    skipped = 0
    for number, path in enumerate(paths, start=1):
        try:
            table = read_any_table(path)
        except TableError:
            skipped += 1
            continue
        key = eligible(table)
        if key is not None:
            candidates.append((path, key))
        if progress is not None and (number % 500 == 0 or number == len(paths)):
            progress("reading tables", number, len(paths))
    if len(candidates) < 2:
        raise DatasetError(f"{tables_dir}: fewer than 2 tables can be carved (see lake/dlte.py for the rule)")
    n_eligible = len(candidates)
    rng = random.Random(f"dlte:{seed}")
    rng.shuffle(candidates)
    if max_mothers is not None:
        candidates = candidates[:max_mothers]
    n_dev = min(len(candidates) - 1, max(1, round(dev_share * len(candidates))))
    mother_names = {p.name for p, _ in candidates}
    distractor_paths = [p for p in paths if p.name not in mother_names]
    borrow_pool = distractor_paths[:: max(1, len(distractor_paths) // 300)] if distractor_paths else []
    _clear_out(out_dir)
    for sub in ("queries", "targets"):
        for t in tiers:
            (out_dir / sub / f"tier{t}").mkdir(parents=True, exist_ok=True)
    queries: list[dict[str, Any]] = []
    mothers: list[dict[str, Any]] = []
    for number, (path, key) in enumerate(candidates):
        split = "dev" if number < n_dev else "test"
        table = read_any_table(path)
        stem = _stem(path)
        cut = carve(table, key, random.Random(f"dlte:{seed}:{path.name}"))
        cells = _texts(table)
        seed_cols = [key, *cut["seed_columns"]]
        join_cols = [key, *cut["join_columns"]]
        seed_header = [table.header[j] for j in seed_cols]
        seed_rows = [[cells[i][j] for j in seed_cols] for i in cut["seed_rows"]]
        union_rows = [[cells[i][j] for j in seed_cols] for i in cut["union_rows"]]
        join_rows = [[cells[i][j] for j in join_cols] for i in range(table.n_rows)]
        mothers.append({"mother": str(path), "split": split, "key_column": table.header[key], **cut})
        for t in tiers:
            trng = random.Random(f"dlte:{seed}:{path.name}:tier{t}")
            borrow: list[tuple[str, list[str]]] = []
            if t >= 3 and borrow_pool:
                for other in trng.sample(borrow_pool, min(2, len(borrow_pool))):
                    try:
                        donor = read_any_table(other)
                    except TableError:
                        continue
                    j = trng.randrange(donor.n_columns)
                    borrow.append((donor.header[j], [c.text for c in donor.column(j)]))
            qid = f"{stem}@t{t}"
            seed_path = out_dir / "queries" / f"tier{t}" / f"{stem}_seed.csv"
            union_path = out_dir / "targets" / f"tier{t}" / f"{stem}_union.csv"
            join_path = out_dir / "targets" / f"tier{t}" / f"{stem}_join.csv"
            _write_csv(seed_path, seed_header, seed_rows)
            uh, ur, ucounts = noise_table(seed_header, union_rows, 0, t, trng, borrow)
            jrows = join_rows[:]
            trng.shuffle(jrows)
            jh, jr, jcounts = noise_table([table.header[j] for j in join_cols], jrows, 0, t, trng, borrow)
            _write_csv(union_path, uh, ur)
            _write_csv(join_path, jh, jr)
            queries.append(
                {
                    "id": qid,
                    "mother": path.name,
                    "split": split,
                    "tier": t,
                    "seed": str(seed_path.relative_to(out_dir)),
                    "union_target": str(union_path.relative_to(out_dir)),
                    "join_target": str(join_path.relative_to(out_dir)),
                    "key_column": table.header[key],
                    "union_key_index": ucounts.pop("key_index"),
                    "join_key_index": jcounts.pop("key_index"),
                    "seed_columns": seed_header,
                    "union_region": {"columns": seed_header, "rows": union_rows},
                    "join_region": {
                        "columns": [table.header[j] for j in cut["join_columns"]],
                        "rows": [[cells[i][j] for j in cut["join_columns"]] for i in cut["seed_rows"]],
                    },
                    "noise": {"union": ucounts, "join": jcounts},
                }
            )
        if progress is not None:
            progress("carving mothers", number + 1, len(candidates))
    summary = {
        "version": DLTE_VERSION,
        "seed": seed,
        "tiers": tiers,
        "dev_share": dev_share,
        "tables_dir": str(tables_dir.resolve()),
        "n_tables": len(paths),
        "n_unreadable": skipped,
        "n_eligible": n_eligible,
        "n_mothers": len(candidates),
        "n_dev_mothers": n_dev,
        "n_test_mothers": len(candidates) - n_dev,
        "n_queries": len(queries),
        "n_targets": 2 * len(queries),
        "n_distractors": len(distractor_paths),
        "out": str(out_dir),
    }
    data = {
        **summary,
        "distractors": {"folder": str(tables_dir.resolve()), "exclude": sorted(mother_names)},
        "mothers": mothers,
        "queries": queries,
    }
    partial = out_dir / ".dlte.json.partial"
    partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    partial.replace(out_dir / "dlte.json")  # last, in one step: a folder with dlte.json is complete
    return summary


def _clear_out(out_dir: Path, check_only: bool = False) -> None:
    """Make ``out_dir`` ready for a new benchmark: a new or empty folder is used as it is; an
    earlier ``make-dlte`` output, complete or cut short, loses its ``dlte.json`` (so a run cut short
    leaves no benchmark) and its query and target files (the suites index whole target folders: a
    file left from another seed or mother count would be a stale target); anything else is refused.
    ``check_only``: only refuse, remove nothing.

    Raises:
        DatasetError: ``out_dir`` is a file, or a non-empty folder that is not a DLTE benchmark.
    """
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise DatasetError(f"{out_dir}: not a folder")
    if not any(out_dir.iterdir()):
        return
    ours = {"dlte.json", ".dlte.json.partial", "queries", "targets", "lakes"}  # lakes: the suites' cache
    if not (out_dir / "dlte.json").is_file() and not {p.name for p in out_dir.iterdir()} <= ours:
        raise DatasetError(
            f"{out_dir}: a folder that is not a DLTE benchmark (no dlte.json) and is not empty; name a new folder"
        )
    if check_only:
        return
    (out_dir / "dlte.json").unlink(missing_ok=True)  # missing: a run cut short
    for sub in ("queries", "targets"):
        for tier in sorted((out_dir / sub).glob("tier*")):
            if tier.is_dir() and not tier.is_symlink():
                for old in tier.iterdir():
                    if old.is_file() and old.name.endswith(".csv"):
                        old.unlink()
