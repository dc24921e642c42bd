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

Cross-validation (:func:`cross_validate`, ``--cv K``): the pairs are split into K folds by TARGET
PAPER (:func:`folds_by_paper`: the sorted target ids dealt round-robin, so a paper's pairs are never
on both sides); on each, the no-match model (:func:`tabverify.crosscheck.tables.fit_model`) and the
ranking's weight of pairs whose labels disagree (from :data:`UNLABELLED_FACTORS`, the one giving the
best training accuracy; ties to the smaller) are chosen from the other folds' pairs only and applied
to the held-out fold. With 66 pairs one deal of the papers into folds moves the number by a few
points, so ``repeats`` further deals (papers shuffled with seeds 1, 2, ... before dealing) are
reported by their median, minimum and maximum. Cell matching fits no constant on the data, so its per-fold numbers are its
in-sample numbers on each fold's pairs.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabverify import files
from tabverify.crosscheck import match_cells
from tabverify.crosscheck.tables import (
    Candidate,
    Evidence,
    MatchModel,
    choose,
    evidence,
    fit_model,
    match_table,
    rank_tables,
    rerank,
    shortlist,
)
from tabverify.errors import DatasetError, TableError, TableSizeError
from tabverify.table.grid import CellBudget, Grid
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
            and all(type(cell.get(key)) is int for key in ("rowIndex", "colIndex"))  # not True/False
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


def source_tables(root: Path, source_id: str, folder: str = "source_papers") -> tuple[list[Grid], list[str]]:
    """The candidate tables of a source paper of the release, and the HTML of each one's entry.

    They are numbered as ``read_paper_json`` (and ``tabverify tables``) numbers them: every
    ``<table>`` of every entry, figures and empty entries giving none. The paper is read under one
    cell budget, as any document is. ``folder`` names the release folder the paper is in (a target
    paper taken as a source: ``"target_papers"``).

    Raises:
        DatasetError: the file is malformed, or its tables expand past the cell budget.
    """
    source_path = root / folder / f"{source_id}.json"
    candidates, candidate_html = [], []
    budget = CellBudget(source_id)
    for html, caption in _entries(_load(source_path), source_path):
        try:
            found = read_html_tables(html, source_id, budget)
        except TableSizeError as exc:
            raise DatasetError(f"{source_path}: {exc}") from None
        except TableError:
            continue  # figures and empty entries
        for grid in found:
            name = f"{source_id}#table{len(candidates) + 1}"
            candidates.append(Grid(grid.cells, " ".join(caption.split()), name))
            candidate_html.append(html)
    return candidates, candidate_html


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
        candidates, candidate_html = source_tables(root, source_id)
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


def _cell_counts(pair: Pair) -> tuple[int, int, int]:
    """(correct, predicted, gold) cell pairs of one pair, given its gold source table."""
    if pair.gold_index is None:
        return 0, 0, 0
    found = {(p.target, p.source) for p in match_cells(pair.target, pair.candidates[pair.gold_index])}
    return len(found & pair.gold_cells), len(found), len(pair.gold_cells)


def _cell_metrics(counts: list[tuple[int, int, int]]) -> dict[str, float]:
    hits, predicted, gold = (sum(c[i] for c in counts) for i in range(3))
    precision, recall = _ratio(hits, predicted), _ratio(hits, gold)
    return {
        "cell_precision": precision,
        "cell_recall": recall,
        "cell_f1": _ratio(2 * precision * recall, precision + recall),
    }


def run_benchmark(
    data_dir: str | Path,
    progress: Callable[[int, int], None] | None = None,
    cv: int = 0,
    cv_repeats: int = 0,
) -> dict[str, object]:
    """Run table matching on every pair and cell matching on every pair with a gold source table.

    Returns the result object: ``{"benchmark", "n_pairs", "metrics", "pairs", "seconds"}``, and
    ``"cv"`` when ``cv`` >= 2 folds are asked for (:func:`cross_validate`, with ``cv_repeats``
    further deals of the papers). In ``pairs``,
    ``predicted_table`` and ``gold_table`` number the source paper's tables from 1 (as ``tabverify
    tables`` lists them; None: no match).
    """
    pairs = load_pairs(data_dir)
    if cv:
        folds_by_paper([p.target_id for p in pairs], cv)  # refuse an impossible fold count up front
    started = time.perf_counter()
    correct = correct_verbatim = 0
    counts = []
    rows = []
    for number, pair in enumerate(pairs, start=1):
        best, _ = match_table(pair.target, pair.candidates)
        chosen = best.index if best is not None else None
        chosen_html = pair.candidate_html[chosen] if chosen is not None else ""
        is_correct = _table_correct(pair, chosen)
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
            hits, predicted, gold = _cell_counts(pair)
            counts.append((hits, predicted, gold))
            row.update({"cells_predicted": predicted, "cells_gold": gold, "cells_correct": hits})
        rows.append(row)
        if progress is not None:
            progress(number, len(pairs))
    result: dict[str, object] = {
        "benchmark": "arxiveri",
        "n_pairs": len(pairs),
        "metrics": {
            "table_match_accuracy": _ratio(correct, len(pairs)),
            "table_match_accuracy_verbatim": _ratio(correct_verbatim, len(pairs)),
            **_cell_metrics(counts),
        },
        "comparison": "table_match_accuracy compares after th->td normalisation; the _verbatim one "
        "compares the released strings as the original evaluator did",
        "seconds": round(time.perf_counter() - started, 3),
        "pairs": rows,
    }
    if cv:
        result["cv"] = cross_validate(pairs, cv, cv_repeats)
    return result


def _table_correct(pair: Pair, chosen: int | None) -> bool:
    """The choice is the gold table, or "no match" where the truth is no match (a gold table that
    is none of the candidates can never be chosen)."""
    return chosen == pair.gold_index if pair.gold_html == "" or pair.gold_index is not None else False


UNLABELLED_FACTORS = (0.0, 0.25, 0.5, 1.0)
"""The ranking weights of label-disagreeing pairs :func:`cross_validate` chooses from."""


def folds_by_paper(target_ids: list[str], k: int, seed: int | None = None) -> list[int]:
    """The fold (0 .. k-1) of each pair, given the pairs' target paper ids: the distinct ids sorted
    (then shuffled with ``seed``, when given) and dealt round-robin, so that every pair of one
    paper is in the same fold and the split does not depend on the order of the pairs."""
    if k < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, not {k}")
    papers = sorted(set(target_ids))
    if len(papers) < k:
        raise DatasetError(f"{k} folds need at least {k} target papers; the data has {len(papers)}")
    if seed is not None:
        random.Random(seed).shuffle(papers)
    fold = {paper: i % k for i, paper in enumerate(papers)}
    return [fold[t] for t in target_ids]


@dataclass(frozen=True)
class _Ranked:
    """One pair's candidates aligned once; the ranking for each factor is derived from them."""

    pair: Pair
    candidates: tuple[Candidate, ...]

    def top(self, factor: float) -> tuple[Candidate | None, Evidence | None]:
        ranking = rerank(self.candidates, factor)
        if not ranking:
            return None, None
        return ranking[0], evidence(self.pair.target, ranking[0])


def _fit_on(ranked: list[_Ranked], factor: float) -> MatchModel | None:
    """The model fitted on these pairs' best-ranked candidates under ``factor`` (None: no example)."""
    examples, labels = [], []
    for item in ranked:
        top, found = item.top(factor)
        if top is not None and found is not None and top.alignment.pairs:
            examples.append(found)
            labels.append(top.index == item.pair.gold_index)
    return fit_model(examples, labels, factor) if examples else None


def _choices(ranked: list[_Ranked], model: MatchModel | None) -> list[int | None]:
    chosen = []
    for item in ranked:
        ranking = rerank(item.candidates, model.unlabelled_factor) if model is not None else []
        best = choose(item.pair.target, ranking, model) if model is not None else None
        chosen.append(best.index if best is not None else None)
    return chosen


def _accuracy(ranked: list[_Ranked], model: MatchModel | None) -> int:
    return sum(_table_correct(r.pair, c) for r, c in zip(ranked, _choices(ranked, model), strict=True))


def _choose_constants(ranked: list[_Ranked]) -> MatchModel | None:
    """The no-match model and unlabelled factor with the best accuracy on these (training) pairs:
    for each factor of :data:`UNLABELLED_FACTORS`, a model is fitted; ties go to the smaller factor."""
    best: tuple[int, MatchModel | None] = (-1, None)
    for factor in UNLABELLED_FACTORS:
        model = _fit_on(ranked, factor)
        score = _accuracy(ranked, model)
        if score > best[0]:
            best = (score, model)
    return best[1]


def _held_out_correct(ranked: list[_Ranked], fold_of: list[int], k: int) -> int:
    """Pairs whose table is matched right by constants chosen on the other folds only."""
    correct = 0
    for fold in range(k):
        train = [r for r, f in zip(ranked, fold_of, strict=True) if f != fold]
        correct += _accuracy(
            [r for r, f in zip(ranked, fold_of, strict=True) if f == fold], _choose_constants(train)
        )
    return correct


def cross_validate(pairs: list[Pair], k: int = 5, repeats: int = 0) -> dict[str, object]:
    """K-fold cross-validation by target paper of table matching (see the module docstring).

    Returns ``{"k", "folding", "folds": [...], "pooled": {...}, "full_model"}``: per fold its target
    papers, pair count, the constants chosen on the other folds, and table-matching accuracy and cell
    P/R/F1 on its pairs; pooled over the held-out predictions; and the model fitted on every pair.
    With ``repeats`` > 0 also ``"repeated"``: the pooled accuracy of each further deal (seeds 1 ..
    ``repeats``) and their median, minimum and maximum.
    """
    fold_of = folds_by_paper([p.target_id for p in pairs], k)
    ranked = []
    for pair in pairs:
        indices, _ = shortlist(pair.target, pair.candidates)
        ranked.append(_Ranked(pair, tuple(rank_tables(pair.target, pair.candidates, indices))))
    counts = [_cell_counts(p) for p in pairs]
    folds, correct = [], 0
    for fold in range(k):
        train = [r for r, f in zip(ranked, fold_of, strict=True) if f != fold]
        held = [i for i, f in enumerate(fold_of) if f == fold]
        model = _choose_constants(train)
        hits = _accuracy([ranked[i] for i in held], model)
        correct += hits
        folds.append(
            {
                "fold": fold,
                "targets": sorted({pairs[i].target_id for i in held}),
                "n_pairs": len(held),
                "table_match_accuracy": _ratio(hits, len(held)),
                "table_match_correct": hits,
                **_cell_metrics([counts[i] for i in held if pairs[i].gold_index is not None]),
                "constants": model.to_dict() if model is not None else None,
            }
        )
    full = _choose_constants(ranked)
    result: dict[str, object] = {
        "k": k,
        "folding": "target papers sorted by id and dealt round-robin into k folds; constants chosen on "
        "the other folds only",
        "folds": folds,
        "pooled": {
            "table_match_accuracy": _ratio(correct, len(pairs)),
            "table_match_correct": correct,
            **_cell_metrics([c for p, c in zip(pairs, counts, strict=True) if p.gold_index is not None]),
        },
        "full_model": full.to_dict() if full is not None else None,
    }
    if repeats > 0:
        ids = [p.target_id for p in pairs]
        accuracies = [
            _ratio(_held_out_correct(ranked, folds_by_paper(ids, k, seed), k), len(pairs))
            for seed in range(1, repeats + 1)
        ]
        result["repeated"] = {
            "seeds": f"1-{repeats}",
            "table_match_accuracy": accuracies,
            "median": statistics.median(accuracies),
            "min": min(accuracies),
            "max": max(accuracies),
        }
    return result
