"""How far the crosscheck's discrepancy flags can be trusted, on the arXiVeri development set.

    python scripts/bench_crosscheck_flags.py --data ../shared/datasets/arxiveri --out results/flags.json \\
        --markdown results/flags.md --seed 0

(a) Injected-error recall. The gold cell pairs whose values are equal as written (``45.67`` /
``45.67``) are correct copies. Into a copy of the TARGET grid, errors are injected into such cells and
the crosscheck is run against the gold source table (``model=None``: the table is given). A cell
counts as found when a discrepancy names its position, and as labelled right when the discrepancy's
kind is the one injected. Kinds (each run injects one kind into at most three cells that share no
row and no column):

- ``digit``: one digit of the number replaced by another (never making a leading zero);
- ``transposition``: two adjacent, different digits swapped (``45.67`` -> ``45.76``);
- ``rounding``: wrong rounding - the number shown with one digit fewer and rounded up although the
  dropped digit is 1-4, so neither rounding half up nor truncation gives it (``45.63`` -> ``45.7``);
  only numbers written with a decimal whose last digit is 1-4;
- ``scale_x10`` / ``scale_x100``: the decimal point moved by one or two places (direction chosen at
  random: ``45.67`` -> ``456.7`` or ``4.567``);
- ``row_swap``: the values of two copied cells of one column exchanged (both cells count).

An injection is skipped (and counted) when the new value agrees with a source value in the same
source row or column (then it is truly another cell's value, not the kind injected). Everything is
seeded (``--seed``) and deterministic.

(b) Flags on the clean (uninjected) development set: with each pair's predicted source table and
with the gold source table. Every flag is written to the JSON (and the Markdown) output with both
cells, their row and column labels, its kind and evidence, so that a person can judge them.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

from tabverify.bench.arxiveri import Pair, load_pairs
from tabverify.crosscheck import Report, crosscheck
from tabverify.crosscheck.report import MIN_TIES, is_result
from tabverify.errors import TabverifyError
from tabverify.table.grid import Grid
from tabverify.table.numbers import Agreement
from tabverify.table.scientific import Measurement, compare, parse_measurement

Position = tuple[int, int]
KINDS = ("digit", "transposition", "rounding", "scale_x10", "scale_x100", "row_swap")
EXPECTED_KIND = {
    "digit": "digit",
    "transposition": "transposition",
    "rounding": "rounding",
    "scale_x10": "scale",
    "scale_x100": "scale",
    "row_swap": "row_swap",
}
PER_RUN = 3
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def replace_number(text: str, value: Decimal, new: str) -> str | None:
    """``text`` with the first written number equal to ``value`` (as written: ``45.60`` is not
    ``45.6``) replaced by ``new``; None when no such number is written."""
    for match in _NUMBER.finditer(text):
        if Decimal(match.group()) == value and match.group() == format(value, "f").lstrip("-"):
            return text[: match.start()] + new + text[match.end() :]
    return None


def _written(m: Measurement) -> str:
    return format(abs(m.value), "f")


def digit_change(m: Measurement, rng: random.Random) -> str | None:
    """The number with one digit replaced by another (a leading digit never becomes 0)."""
    written = _written(m)
    places = [i for i, ch in enumerate(written) if ch.isdigit()]
    i = rng.choice(places)
    leading = i == 0 and len(places) > 1 and written[1] != "."
    choices = [d for d in "0123456789" if d != written[i] and not (leading and d == "0")]
    return written[:i] + rng.choice(choices) + written[i + 1 :]


def transposition(m: Measurement, rng: random.Random) -> str | None:
    """The number with two adjacent different digits swapped (the point stays), or None when it has
    none (``11.1``) or the swap would make a leading zero."""
    written = _written(m)
    places = [
        i
        for i in range(len(written) - 1)
        if written[i].isdigit() and written[i + 1].isdigit() and written[i] != written[i + 1]
    ]
    places = [i for i in places if not (i == 0 and written[1] == "0")]
    if not places:
        return None
    i = rng.choice(places)
    return written[:i] + written[i + 1] + written[i] + written[i + 2 :]


def wrong_rounding(m: Measurement, rng: random.Random) -> str | None:  # noqa: ARG001 - one signature for all
    """The number with its last decimal dropped and rounded up although that digit is 1-4 (no correct
    rounding or truncation gives it): ``45.63`` -> ``45.7``; None for other numbers."""
    if m.decimals == 0:
        return None
    written = _written(m)
    if written[-1] not in "1234":
        return None
    kept = m.decimals - 1
    up = abs(m.value).quantize(Decimal(1).scaleb(-kept), rounding="ROUND_CEILING")
    return format(up, "f")


def scale_slip(m: Measurement, rng: random.Random, places: int) -> str:
    """The number with its decimal point moved ``places`` to the right or to the left (at random)."""
    power = places if rng.random() < 0.5 else -places
    return format(abs(m.value).scaleb(power), "f")


def with_texts(grid: Grid, texts: dict[Position, str]) -> Grid:
    """A copy of ``grid`` whose cells at ``texts``' positions hold the given text."""
    rows = [list(row) for row in grid.cells]
    for (i, j), text in texts.items():
        rows[i][j] = replace(rows[i][j], text=text)
    return Grid(tuple(tuple(row) for row in rows), grid.caption, grid.name)


def copied_cells(pair: Pair) -> list[tuple[Position, Position]]:
    """The gold pairs whose two single numbers are equal as written (exact agreement)."""
    if pair.gold_index is None:
        return []
    source = pair.candidates[pair.gold_index]
    found = []
    for t, s in sorted(pair.gold_cells):
        a, b = pair.target.data_measurements.get(t), source.data_measurements.get(s)
        if a is None or b is None or a.multi or b.multi or a.signed != b.signed:
            continue
        if compare(a, b) is Agreement.EXACT and a.value == b.value:
            found.append((t, s))
    return found


def _collides(new: Measurement, source: Grid, s: Position) -> bool:
    """True when ``new`` agrees with another source value in the source row or column of ``s``."""
    for position, other in source.data_measurements.items():
        if position != s and (position[0] == s[0] or position[1] == s[1]) and not other.multi:
            if compare(new, other) is not Agreement.DIFFERENT:
                return True
    return False


def _spread(
    cells: Sequence[tuple[Position, Position]], per_run: int
) -> list[list[tuple[Position, Position]]]:
    """The cells in runs of at most ``per_run`` that share no target row and no target column."""
    runs: list[list[tuple[Position, Position]]] = []
    for cell in cells:
        for run in runs:
            if len(run) < per_run and all(cell[0][0] != c[0][0] and cell[0][1] != c[0][1] for c in run):
                run.append(cell)
                break
        else:
            runs.append([cell])
    return runs


def _new_number(kind: str, m: Measurement, rng: random.Random) -> str | None:
    if kind == "digit":
        return digit_change(m, rng)
    if kind == "transposition":
        return transposition(m, rng)
    if kind == "rounding":
        return wrong_rounding(m, rng)
    return scale_slip(m, rng, 1 if kind == "scale_x10" else 2)


def injections(pair: Pair, kind: str, seed: int) -> tuple[list[dict[Position, str]], int]:
    """The runs of one kind for one pair (each a map target position -> injected text) and the
    number of cells skipped (no such error possible, or the new value is another source cell's)."""
    rng = random.Random(f"{seed}:{pair.target_id}:{pair.source_id}:{kind}")
    source = pair.candidates[pair.gold_index] if pair.gold_index is not None else None
    cells = copied_cells(pair)
    if source is None or not cells:
        return [], 0
    rng.shuffle(cells)
    skipped = 0
    if kind == "row_swap":
        by_column: dict[int, list[tuple[Position, Position]]] = defaultdict(list)
        for cell in cells:
            by_column[cell[0][1]].append(cell)
        runs = []
        for column in sorted(by_column):
            group = by_column[column]
            while len(group) >= 2:
                (t1, _), (t2, _) = group.pop(), group.pop()
                a, b = pair.target.data_measurements[t1], pair.target.data_measurements[t2]
                if compare(a, b) is not Agreement.DIFFERENT or compare(b, a) is not Agreement.DIFFERENT:
                    skipped += 2
                    continue
                runs.append({t1: pair.target.text(*t2), t2: pair.target.text(*t1)})
            skipped += len(group)
        return runs, skipped
    planned: list[tuple[Position, Position]] = []
    texts: dict[Position, str] = {}
    for t, s in cells:
        m = pair.target.data_measurements[t]
        number = _new_number(kind, m, rng)
        text = replace_number(pair.target.text(*t), abs(m.value), number) if number else None
        new = parse_measurement(text) if text else None
        if (
            new is None
            or new.value != Decimal(number) * (-1 if m.value < 0 else 1)
            or _collides(new, source, s)
        ):
            skipped += 1
            continue
        planned.append((t, s))
        texts[t] = text
    return [{t: texts[t] for t, _ in run} for run in _spread(planned, PER_RUN)], skipped


def injected_recall(pairs: Iterable[Pair], seed: int) -> dict[str, object]:
    """Recall and label accuracy per injected kind (see the module docstring)."""
    stats: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
    missed: list[dict[str, object]] = []
    for pair in pairs:
        if pair.gold_index is None:
            continue
        source = pair.candidates[pair.gold_index]
        copied = {t for t, _ in copied_cells(pair)}
        numbers = pair.target.data_measurements
        for kind in KINDS:
            runs, skipped = injections(pair, kind, seed)
            stats[kind]["skipped"] += skipped
            for texts in runs:
                report = crosscheck(with_texts(pair.target, texts), [source], model=None)
                flags = {d.target: d for d in report.discrepancies}
                for position, text in texts.items():
                    stats[kind]["injected"] += 1
                    flag = flags.get(position)
                    eligible = sum(
                        t[0] == position[0] and t not in texts and is_result(numbers[t]) for t in copied
                    )
                    if eligible >= MIN_TIES:
                        stats[kind]["eligible"] += 1
                        stats[kind]["eligible flagged"] += flag is not None
                    if flag is None:
                        missed.append(
                            {"pair": f"{pair.target_id}/{pair.source_id}", "kind": kind, "cell": list(position),
                             "was": pair.target.text(*position), "injected": text}
                        )  # fmt: skip
                        continue
                    stats[kind]["flagged"] += 1
                    stats[kind]["labelled"] += str(flag.kind) == EXPECTED_KIND[kind]
                    stats[kind][f"as {flag.kind}"] += 1
    per_kind = {}
    for kind, c in stats.items():
        per_kind[kind] = {
            "injected": c["injected"],
            "flagged": c["flagged"],
            "recall": round(c["flagged"] / c["injected"], 4) if c["injected"] else None,
            "eligible": c["eligible"],
            "recall_eligible": round(c["eligible flagged"] / c["eligible"], 4) if c["eligible"] else None,
            "label_accuracy": round(c["labelled"] / c["flagged"], 4) if c["flagged"] else None,
            "skipped": c["skipped"],
            "labels": {k[3:]: v for k, v in sorted(c.items()) if k.startswith("as ")},
        }
    injected = sum(c["injected"] for c in stats.values())
    flagged = sum(c["flagged"] for c in stats.values())
    labelled = sum(c["labelled"] for c in stats.values())
    eligible = sum(c["eligible"] for c in stats.values())
    eligible_flagged = sum(c["eligible flagged"] for c in stats.values())
    return {
        "per_kind": per_kind,
        "overall": {
            "injected": injected,
            "flagged": flagged,
            "recall": round(flagged / injected, 4) if injected else None,
            "eligible": eligible,
            "recall_eligible": round(eligible_flagged / eligible, 4) if eligible else None,
            "label_accuracy": round(labelled / flagged, 4) if flagged else None,
        },
        "missed": missed,
    }


def _flag_records(pair: Pair, report: Report, mode: str) -> list[dict[str, object]]:
    source = report.source
    records = []
    for d in report.discrepancies:
        records.append(
            {
                "pair": f"{pair.target_id}/{pair.source_id}",
                "mode": mode,
                "source_table": report.source_index + 1 if report.source_index is not None else None,
                "gold_table": pair.gold_index + 1 if pair.gold_index is not None else None,
                "target_cell": list(d.target),
                "source_cell": list(d.source),
                "target_text": d.target_text,
                "source_text": d.source_text,
                "target_row": pair.target.row_label(d.target[0]),
                "source_row": source.row_label(d.source[0]) if source is not None else "",
                "target_column": pair.target.column_label(d.target[1]),
                "source_column": source.column_label(d.source[1]) if source is not None else "",
                "kind": str(d.kind),
                "evidence": d.evidence,
            }
        )
    return records


def clean_flags(pairs: Sequence[Pair]) -> dict[str, object]:
    """Flags raised on the uninjected pairs, with the predicted and with the gold source table."""
    flags: list[dict[str, object]] = []
    for pair in pairs:
        flags.extend(_flag_records(pair, crosscheck(pair.target, pair.candidates), "predicted"))
        if pair.gold_index is not None:
            gold = crosscheck(pair.target, [pair.candidates[pair.gold_index]], model=None)
            for record in _flag_records(pair, gold, "gold"):
                record["source_table"] = pair.gold_index + 1
                flags.append(record)
    summary = {}
    for mode in ("predicted", "gold"):
        chosen = [f for f in flags if f["mode"] == mode]
        tables = Counter(str(f["pair"]) for f in chosen)
        summary[mode] = {
            "flags": len(chosen),
            "pairs_with_flags": len(tables),
            "flags_per_pair": round(len(chosen) / len(pairs), 3),
            "largest": tables.most_common(3),
            "kinds": dict(Counter(str(f["kind"]) for f in chosen)),
        }
    return {"summary": summary, "flags": flags}


def markdown(result: dict[str, object]) -> str:
    """The result as Markdown: the recall table, then every clean-set flag, one line each."""
    lines = ["# Crosscheck flags on arXiVeri dev", "", "| kind | injected | flagged | recall | label right |"]
    lines.append("|---|---|---|---|---|")
    recall = result["injected"]
    for kind, row in {**recall["per_kind"], "overall": recall["overall"]}.items():  # type: ignore[index]
        lines.append(
            f"| {kind} | {row['injected']} | {row['flagged']} | {row['recall']} | {row['label_accuracy']} |"
        )
    lines += ["", "## Flags on the clean set", ""]
    for number, f in enumerate(result["clean"]["flags"], start=1):  # type: ignore[index]
        lines.append(
            f"{number}. [{f['mode']}] {f['pair']} table {f['source_table']}: target {f['target_cell']} "
            f"`{f['target_text']}` (row '{f['target_row']}', column '{f['target_column']}') vs source "
            f"{f['source_cell']} `{f['source_text']}` (row '{f['source_row']}', column '{f['source_column']}')"
            f" - {f['kind']}: {f['evidence']}"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run both measurements and print the summary; exit 2 with one line on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="arXiVeri folder in the release layout")
    parser.add_argument("--out", help="write the full result (every flag, every missed injection) as JSON")
    parser.add_argument("--markdown", help="write the recall table and every clean-set flag as Markdown")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        pairs = load_pairs(args.data)
    except TabverifyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result: dict[str, object] = {"seed": args.seed, "injected": injected_recall(pairs, args.seed)}
    result["clean"] = clean_flags(pairs)
    result["seconds"] = round(time.perf_counter() - started, 2)
    try:
        if args.out:
            Path(args.out).write_text(
                json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        if args.markdown:
            Path(args.markdown).write_text(markdown(result), encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write the output: {exc}", file=sys.stderr)
        return 2
    summary = {
        "injected": {k: v for k, v in result["injected"].items() if k != "missed"},  # type: ignore[union-attr]
        "clean": result["clean"]["summary"],  # type: ignore[index]
        "seconds": result["seconds"],
    }
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
