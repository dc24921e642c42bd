"""arXiVeri: load the release's dataset layout, run table and cell matching, score them.

Layout (``--data DIR``): ``ground_truth/table_match/<target>/<source>.json``,
``ground_truth/cell_match/<target>/<source>.json`` (one for every table_match file, ``[]`` when no
cell is annotated; a missing one, or a cell outside its table's grid, is a DatasetError),
``source_papers/<source>.json`` (the candidate tables) and, when present, ``target_papers/<target>.json``.

Table-matching accuracy is reported with two comparisons. The ground-truth source table had its
``<th>`` tags rewritten to ``<td>``, so the released evaluator's verbatim string comparison with the
candidates cannot credit many correct answers; ``table_match_accuracy`` compares after the same
rewrite (th -> td), ``table_match_accuracy_verbatim`` reproduces the verbatim comparison.
Cell matching is scored given the gold source table, micro-averaged over the pairs that have one.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabverify import files
from tabverify.crosscheck import crosscheck, match_cells
from tabverify.errors import DatasetError, TableError, TableSizeError
from tabverify.table.grid import Grid
from tabverify.table.html import read_html_table, read_html_tables

Position = tuple[int, int]
_TH = re.compile(r"<(/?)th\b", re.IGNORECASE)


def normalise_th(html: str) -> str:
    """The table HTML with ``<th>`` rewritten to ``<td>``, as in the ground-truth files."""
    return _TH.sub(r"<\1td", html)


@dataclass(frozen=True)
class Pair:
    """One target table and one cited source paper.

    Attributes:
        target: the target table (read from the target paper when it holds it, so header cells keep
            their ``<th>``; else from the ground-truth file).
        candidates: the source paper's tables, in paper order.
        candidate_html: their HTML as released (for the verbatim comparison).
        gold_html: the ground-truth source table HTML ("" = no match).
        gold_index: the candidate equal to it after th -> td, or None for "no match".
        gold_cells: (target position, source position) pairs of the cell annotation.
    """

    target_id: str
    source_id: str
    target: Grid
    candidates: tuple[Grid, ...]
    candidate_html: tuple[str, ...]
    gold_html: str
    gold_index: int | None
    gold_cells: frozenset[tuple[Position, Position]]


_LAYOUT = (
    "--data must be a folder in the arXiVeri release layout "
    "(ground_truth/table_match, ground_truth/cell_match, source_papers)"
)


def _load(path: Path) -> object:
    if not path.exists():
        raise DatasetError(f"{path} is missing; {_LAYOUT}")
    return files.read_json(path, "arXiVeri JSON file", DatasetError)


def _text(value: object, path: Path, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DatasetError(f"{path}: {what} must be text, found {type(value).__name__}")
    return value


def _entries(paper: object, path: Path) -> list[tuple[str, str]]:
    """The (table HTML, caption) entries of a paper record, checked."""
    if not isinstance(paper, dict):
        raise DatasetError(f'{path}: expected an object with "list_table_and_caption"')
    entries = paper.get("list_table_and_caption", [])
    if not isinstance(entries, list):
        raise DatasetError(f'{path}: "list_table_and_caption" must be a list')
    found = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise DatasetError(f"{path}: entry {number} must be an object with table and caption")
        found.append(
            (
                _text(entry.get("table"), path, f"entry {number}'s table"),
                _text(entry.get("caption"), path, f"entry {number}'s caption"),
            )
        )
    return found


def _cells(flat: object, path: Path) -> frozenset[tuple[Position, Position]]:
    """The (target, source) positions of a cell annotation: a flat list alternating the two."""
    if not isinstance(flat, list) or len(flat) % 2:
        raise DatasetError(f"{path}: expected a list alternating target and source cells")
    positions = []
    for cell in flat:
        if not (
            isinstance(cell, dict)
            and isinstance(cell.get("rowIndex"), int)
            and isinstance(cell.get("colIndex"), int)
        ):
            raise DatasetError(f"{path}: every cell must be an object with integer rowIndex and colIndex")
        positions.append((cell["rowIndex"], cell["colIndex"]))
    return frozenset(zip(positions[::2], positions[1::2], strict=True))


def _check_positions(
    cells: frozenset[tuple[Position, Position]], target: Grid, source: Grid | None, path: Path
) -> None:
    """Raise :class:`DatasetError` when an annotated cell lies outside its table's grid (the target
    grid, and the gold source table's when there is one; without one, indices must be >= 0)."""
    for target_position, source_position in sorted(cells):
        for position, grid, which in (
            (target_position, target, "target"),
            (source_position, source, "source"),
        ):
            row, column = position
            rows, columns = (grid.n_rows, grid.n_columns) if grid is not None else (None, None)
            if row < 0 or column < 0 or (rows is not None and (row >= rows or column >= columns)):
                size = f"a {rows} x {columns} grid" if rows is not None else "a grid"
                raise DatasetError(
                    f"{path}: the {which} cell at rowIndex {row}, colIndex {column} lies outside the "
                    f"{which} table ({size}; indices are 0-based over the expanded grid)"
                )


def _grid(html: str, caption: str, name: str) -> Grid:
    grid = read_html_table(html, name)
    return Grid(grid.cells, " ".join(caption.split()), name)


def load_pairs(data_dir: str | Path) -> list[Pair]:
    """Every target-source pair of the ground truth, sorted by target and source id.

    Raises:
        DatasetError: the folder does not have the release layout, or a file is malformed.
    """
    root = Path(data_dir)
    table_dir = root / "ground_truth" / "table_match"
    if not table_dir.is_dir():
        raise DatasetError(f"{table_dir} is missing; {_LAYOUT}")
    pairs = []
    for path in sorted(table_dir.glob("*/*.json")):
        target_id, source_id = path.parent.name, path.stem
        truth = _load(path)
        if not isinstance(truth, dict) or "target_table" not in truth:
            raise DatasetError(f"{path}: expected an object with target_table and source_table")
        target_html = _text(truth["target_table"], path, "target_table")
        target_caption = _text(truth.get("target_caption"), path, "target_caption")
        target_paper = root / "target_papers" / f"{target_id}.json"
        if target_paper.exists():  # the same table with its <th> cells, when the paper holds it
            for html, _ in _entries(_load(target_paper), target_paper):
                if normalise_th(html) == target_html:
                    target_html = html
                    break
        source_path = root / "source_papers" / f"{source_id}.json"
        candidates, candidate_html = [], []
        # numbered as read_paper_json (and `tabverify tables`) numbers them: every <table> of every
        # entry, figures and empty entries giving none; a table's HTML is its entry's
        for html, caption in _entries(_load(source_path), source_path):
            try:
                found = read_html_tables(html, source_id)
            except TableSizeError as exc:
                raise DatasetError(f"{source_path}: {exc}") from None
            except TableError:
                continue  # figures and empty entries
            for grid in found:
                name = f"{source_id}#table{len(candidates) + 1}"
                candidates.append(Grid(grid.cells, " ".join(caption.split()), name))
                candidate_html.append(html)
        gold_html = _text(truth.get("source_table"), path, "source_table")
        gold_index = None
        if gold_html:
            matches = [i for i, h in enumerate(candidate_html) if normalise_th(h) == normalise_th(gold_html)]
            gold_index = matches[0] if matches else None
        # every release pair has its cell annotation ("[]" when none): a missing one is an error,
        # not "no gold cells", which would lower the cell scores without a word
        cells_path = root / "ground_truth" / "cell_match" / target_id / f"{source_id}.json"
        gold_cells = _cells(_load(cells_path), cells_path)
        try:
            target = _grid(target_html, target_caption, f"{target_id} target")
        except TableError as exc:
            raise DatasetError(f"{path}: the target table cannot be read ({exc})") from None
        _check_positions(
            gold_cells, target, candidates[gold_index] if gold_index is not None else None, cells_path
        )
        pairs.append(
            Pair(
                target_id,
                source_id,
                target,
                tuple(candidates),
                tuple(candidate_html),
                gold_html,
                gold_index,
                gold_cells,
            )
        )
    if not pairs:
        raise DatasetError(f"{table_dir}: no <target>/<source>.json files found")
    return pairs


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def run_benchmark(
    data_dir: str | Path, progress: Callable[[int, int], None] | None = None
) -> dict[str, object]:
    """Run table matching on every pair and cell matching on every pair with a gold source table.

    Returns the result object: ``{"benchmark", "n_pairs", "metrics", "pairs", "seconds"}``. In
    ``pairs``, ``predicted_table`` and ``gold_table`` number the source paper's tables from 1 (as
    ``tabverify tables`` lists them; None: no match).
    """
    pairs = load_pairs(data_dir)
    started = time.perf_counter()
    correct = correct_verbatim = 0
    true_positive = predicted = gold = 0
    rows = []
    for number, pair in enumerate(pairs, start=1):
        report = crosscheck(pair.target, pair.candidates)
        chosen = report.source_index
        chosen_html = pair.candidate_html[chosen] if chosen is not None else ""
        is_correct = (
            chosen == pair.gold_index if pair.gold_html == "" or pair.gold_index is not None else False
        )
        correct += is_correct
        correct_verbatim += chosen_html == pair.gold_html
        row: dict[str, object] = {
            "target": pair.target_id,
            "source": pair.source_id,
            "predicted_table": chosen + 1 if chosen is not None else None,
            "gold_table": pair.gold_index + 1 if pair.gold_index is not None else None,
            "table_correct": is_correct,
        }
        if pair.gold_index is not None:
            cells = match_cells(pair.target, pair.candidates[pair.gold_index])
            found = {(p.target, p.source) for p in cells}
            hits = len(found & pair.gold_cells)
            true_positive += hits
            predicted += len(found)
            gold += len(pair.gold_cells)
            row.update(
                {"cells_predicted": len(found), "cells_gold": len(pair.gold_cells), "cells_correct": hits}
            )
        rows.append(row)
        if progress is not None:
            progress(number, len(pairs))
    precision, recall = _ratio(true_positive, predicted), _ratio(true_positive, gold)
    return {
        "benchmark": "arxiveri",
        "n_pairs": len(pairs),
        "metrics": {
            "table_match_accuracy": _ratio(correct, len(pairs)),
            "table_match_accuracy_verbatim": _ratio(correct_verbatim, len(pairs)),
            "cell_precision": precision,
            "cell_recall": recall,
            "cell_f1": _ratio(2 * precision * recall, precision + recall),
        },
        "comparison": "table_match_accuracy compares after th->td normalisation; the _verbatim one "
        "compares the released strings as the original evaluator did",
        "seconds": round(time.perf_counter() - started, 3),
        "pairs": rows,
    }
