"""Table matching on combinations no dev item covers, against blind hand labels.

    python scripts/bench_crosscheck_match_fresh.py --data ../shared/datasets/arxiveri \\
        --labels scripts/crosscheck_match_labels.json
    python scripts/bench_crosscheck_match_fresh.py --data ../shared/datasets/arxiveri \\
        --labels scripts/crosscheck_match_labels_paper.json

Two label sets, each made by a reader who did not see the tool's answers, following the annotators'
convention (learned from the development pairs): ``{"KEY": {"table": 1-based source table or null,
"confidence": "high"|"medium"|"low", "why": ...}}`` with KEY ``TARGET_ID/TABLE_NUMBER/SOURCE_ID``.

- ``crosscheck_match_labels.json`` (2026-12-05): the 75 non-annotated combinations of
  ``bench_crosscheck_fresh.py --scope cited``: each target table against each source paper it cites.
- ``crosscheck_match_labels_paper.json`` (2026-12-05, later): 60 of the 182 non-annotated combinations
  of ``--scope paper`` that ``--scope cited`` does not hold (a target table against a source its paper
  cites but the table does not): the 27 where the tool of commit b818db8 picked a table and 33 of
  the 155 where it answered "no match" (drawn with ``random.Random(20261205)``), shuffled, so the
  tool's wrong picks are over-represented; the labeller was not told which were which.

- ``crosscheck_match_labels_targets.json`` (2026-12-05, later still): 40 of the 3,629 combinations of
  ``--scope targets`` (a target table against an earlier target paper): the 25 where the tool of
  commit c1a4f27 picked a table and 15 of the 3,604 "no match" answers (``random.Random(202612052)``),
  shuffled, labelled by a third reader.

The output is the share of labelled combinations where the tool picks the labelled table (or "no
match"), overall and on the high-confidence labels, and the disagreements.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench_crosscheck_fresh import _source_folder, _units, annotated_keys  # noqa: I001

from tabverify.bench.arxiveri import _grid, normalise_th, source_tables
from tabverify.crosscheck import crosscheck
from tabverify.errors import TabverifyError
from tabverify.table.grid import Grid


def match_scores(labels: dict[str, dict[str, object]], answers: dict[str, int | None]) -> dict[str, object]:
    """How often the tool's answers (1-based source table or None, by key) are the labelled table,
    overall and on the high-confidence labels, and the disagreements; keys without an answer are
    left out."""
    keys = [k for k in labels if k in answers]
    high = [k for k in keys if labels[k].get("confidence") == "high"]
    right = {k for k in keys if answers[k] == labels[k]["table"]}
    return {
        "checked": len(keys),
        "table_match_accuracy": round(len(right) / len(keys), 3) if keys else None,
        "high_confidence": len(high),
        "high_confidence_accuracy": round(sum(k in right for k in high) / len(high), 3) if high else None,
        "disagreements": [
            {
                "key": k,
                "label": labels[k]["table"],
                "tool": answers[k],
                "confidence": labels[k].get("confidence"),
            }
            for k in keys
            if k not in right
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="arXiVeri release folder")
    parser.add_argument("--labels", required=True, type=Path, help="hand labels (JSON, see the docstring)")
    args = parser.parse_args()
    if not (args.data / "target_papers").is_dir():
        print(f"{args.data}: no target_papers/ folder (the arXiVeri release layout)", file=sys.stderr)
        return 2
    try:
        labels = json.loads(args.labels.read_text(encoding="utf-8"))
        if not isinstance(labels, dict) or not all(
            isinstance(v, dict) and "table" in v for v in labels.values()
        ):
            raise ValueError("expected an object of {key: {table, confidence, why}}")
    except (OSError, ValueError) as exc:
        print(f"{args.labels}: cannot read the labels ({exc})", file=sys.stderr)
        return 2
    annotated = annotated_keys(args.data)
    cache: dict[str, list[Grid]] = {}
    answers: dict[str, int | None] = {}
    units = [(scope, unit) for scope in ("paper", "targets") for unit in _units(args.data, scope)]
    for scope, (target_id, number, entry, cited) in units:  # every source the paper cites; earlier targets
        for source_id in sorted(cited):
            key = f"{target_id}/{number}/{source_id}"
            if key not in labels or (target_id, normalise_th(str(entry["table"])), source_id) in annotated:
                continue
            try:
                target = _grid(str(entry["table"]), str(entry["caption"]), key)
                if source_id not in cache:
                    cache[source_id] = source_tables(args.data, source_id, _source_folder(scope))[0]
                report = crosscheck(target, cache[source_id])
            except TabverifyError:
                continue
            answers[key] = None if report.source_index is None else report.source_index + 1
    result = {"labelled": len(labels), **match_scores(labels, answers)}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
