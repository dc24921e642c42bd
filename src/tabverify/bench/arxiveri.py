"""arXiVeri: load the release's dataset layout, run table and cell matching, score them.

Layout (``--data DIR``): ``ground_truth/table_match/<target>/<source>.json``,
``ground_truth/cell_match/<target>/<source>.json``, ``source_papers/<source>.json`` (the candidate
tables) and, when present, ``target_papers/<target>.json``.

Table-matching accuracy is reported with two comparisons. The ground-truth source table had its
``<th>`` tags rewritten to ``<td>``, so the released evaluator's verbatim string comparison with the
candidates cannot credit many correct answers; ``table_match_accuracy`` compares after the same
rewrite (th -> td), ``table_match_accuracy_verbatim`` reproduces the verbatim comparison.
Cell matching is scored given the gold source table, micro-averaged over the pairs that have one.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabverify.crosscheck import crosscheck, match_cells
from tabverify.errors import DatasetError, TableError
from tabverify.table.grid import Grid
from tabverify.table.html import read_html_table

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


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DatasetError(
            f"{path} is missing; --data must be a folder in the arXiVeri release layout "
            "(ground_truth/table_match, ground_truth/cell_match, source_papers)"
        ) from exc
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc


def _grid(html: str, caption: str, name: str) -> Grid:
    grid = read_html_table(html, name)
    return Grid(grid.cells, " ".join(caption.split()), name)


def load_pairs(data_dir: str | Path) -> list[Pair]:
    """Every target-source pair of the ground truth, sorted by target and source id."""
    root = Path(data_dir)
    table_dir = root / "ground_truth" / "table_match"
    if not table_dir.is_dir():
        raise DatasetError(
            f"{table_dir} is missing; --data must be a folder in the arXiVeri release layout "
            "(ground_truth/table_match, ground_truth/cell_match, source_papers)"
        )
    pairs = []
    for path in sorted(table_dir.glob("*/*.json")):
        target_id, source_id = path.parent.name, path.stem
        truth = _load(path)
        if not isinstance(truth, dict) or "target_table" not in truth:
            raise DatasetError(f"{path}: expected an object with target_table and source_table")
        target_html = truth["target_table"]
        target_caption = truth.get("target_caption", "")
        target_paper = root / "target_papers" / f"{target_id}.json"
        if target_paper.exists():  # the same table with its <th> cells, when the paper holds it
            for entry in _load(target_paper).get("list_table_and_caption", []):  # type: ignore[union-attr]
                if normalise_th(entry.get("table", "")) == target_html:
                    target_html = entry["table"]
                    break
        source_paper = _load(root / "source_papers" / f"{source_id}.json")
        entries = source_paper.get("list_table_and_caption", []) if isinstance(source_paper, dict) else []
        candidates, candidate_html = [], []
        for number, entry in enumerate(entries, start=1):
            try:
                candidates.append(
                    _grid(entry["table"], entry.get("caption", ""), f"{source_id}#table{number}")
                )
            except TableError:
                continue  # figures and empty entries
            candidate_html.append(entry["table"])
        gold_html = truth.get("source_table", "") or ""
        gold_index = None
        if gold_html:
            matches = [i for i, h in enumerate(candidate_html) if normalise_th(h) == normalise_th(gold_html)]
            gold_index = matches[0] if matches else None
        cells_path = root / "ground_truth" / "cell_match" / target_id / f"{source_id}.json"
        flat = _load(cells_path) if cells_path.exists() else []
        gold_cells = frozenset(
            ((a["rowIndex"], a["colIndex"]), (b["rowIndex"], b["colIndex"]))
            for a, b in zip(flat[::2], flat[1::2], strict=True)  # type: ignore[index]
        )
        pairs.append(
            Pair(
                target_id,
                source_id,
                _grid(target_html, target_caption, f"{target_id} target"),
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

    Returns the result object: ``{"benchmark", "n_pairs", "metrics", "pairs", "seconds"}``.
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
            "predicted_table": chosen,
            "gold_table": pair.gold_index,
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
