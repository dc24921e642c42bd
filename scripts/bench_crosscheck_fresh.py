"""Crosscheck flags on tables no rule was written after: the target papers' other tables.

    python scripts/bench_crosscheck_fresh.py --data ../shared/datasets/arxiveri --scope paper \\
        --judgements scripts/crosscheck_fresh_judgements.json --out results/crosscheck-fresh.json

The development portion annotates one table of each target paper against each cited source (66
pairs); the target papers hold 171 tables. This script checks every OTHER table of a target paper
against source papers of the release: with ``--scope cited``, the sources the table itself cites
(its ``list_citation_info``); with ``--scope paper``, every source the paper cites (an editor running
the tool over a paper without saying which table cites what). The 66 annotated (table, source)
pairs are left out. With ``--scope sources`` the SOURCE papers' tables are the targets instead, each
checked against every source paper of the release with a smaller arXiv id (one it could have
copied from): a sample no rule was written after, as an editor would run the tool over a volume.
``--scope uncited`` checks the target papers' tables (all of them) against every earlier source
paper of the release that the paper does NOT cite: the same editor's run on the other papers.
``--scope targets`` checks the target papers' tables against every target paper with a smaller
arXiv id (the 2022 papers against each other: pairs with no annotated copy relation, where a flag
is worth a look only when the two papers print different values for the same thing).
``--half A`` or ``B`` keeps the target papers whose id hashes (sha256, first byte even / odd) to
that half, so rules can be read off one half and measured on the other.
Nothing here is annotated, so the flags are read by a person:
``--judgements`` is a JSON object keyed ``"target/table/source/row,column"`` whose values are
``{"worth_a_look": bool, "why": str}``. The output counts flags, the tables they come from, and the
precision over the judged flags, and lists the flags nobody has judged yet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from tabverify.bench.arxiveri import _grid, normalise_th, source_tables
from tabverify.crosscheck import crosscheck
from tabverify.crosscheck.report import Report
from tabverify.errors import TabverifyError
from tabverify.table.grid import Grid


def _units(root: Path, scope: str) -> Iterator[tuple[str, int, dict[str, object], set[str]]]:
    """(target id, table number, table entry, source ids to check it against) for each table."""
    folder = "source_papers" if scope == "sources" else "target_papers"
    for paper_path in sorted((root / folder).glob("*.json")):
        target_id = paper_path.stem
        paper = json.loads(paper_path.read_text(encoding="utf-8"))
        title_to_id = paper.get("source_title_to_arxiv_id", {})
        citation_to_title = paper.get("citation_info_to_title", {})
        for number, entry in enumerate(paper["list_table_and_caption"], start=1):
            if scope == "targets":
                cited = {p.stem for p in (root / "target_papers").glob("*.json") if p.stem < target_id}
            elif scope in ("sources", "uncited"):
                earlier = {p.stem for p in (root / "source_papers").glob("*.json") if p.stem < target_id}
                cited = earlier - set(title_to_id.values())  # a source paper cites nothing here
            elif scope == "cited":
                cited = {
                    title_to_id.get(citation_to_title.get(c, "")) for c in entry.get("list_citation_info", [])
                }
            else:
                cited = set(title_to_id.values())
            yield (
                target_id,
                number,
                entry,
                {s for s in cited if s and (root / _source_folder(scope) / f"{s}.json").exists()},
            )


def _source_folder(scope: str) -> str:
    """The release folder the sources of ``scope`` are read from."""
    return "target_papers" if scope == "targets" else "source_papers"


def annotated_keys(root: Path) -> set[tuple[str, str, str]]:
    """(target id, normalised target table HTML, source id) of every annotated pair."""
    annotated = set()
    for path in (root / "ground_truth" / "table_match").glob("*/*.json"):
        truth = json.loads(path.read_text(encoding="utf-8"))
        annotated.add((path.parent.name, normalise_th(truth["target_table"]), path.stem))
    return annotated


def half_of(paper_id: str) -> str:
    """The half ("A" or "B") a target paper falls in (first byte of sha256 of its id, even / odd)."""
    return "AB"[hashlib.sha256(paper_id.encode()).digest()[0] % 2]


def flag_items(prefix: str, report: Report) -> list[dict[str, object]]:
    """One JSON item per flag of a report, keyed ``PREFIX/row,column`` (the target cell)."""
    target = report.target
    return [
        {
            "key": f"{prefix}/{d.target[0]},{d.target[1]}",
            "source_table": (report.source_index or 0) + 1,
            "row": target.row_label(d.target[0]),
            "column": target.column_label(d.target[1]),
            "target_text": d.target_text,
            "source_text": d.source_text,
            "kind": str(d.kind),
            "evidence": d.evidence,
        }
        for d in report.discrepancies
    ]


def flag_tally(flags: list[dict[str, object]], judgements: dict[str, dict[str, object]]) -> dict[str, object]:
    """How many flags, from how many tables (the three with most), how many of them are judged and
    worth a look, the precision over the judged ones, and the keys nobody has judged yet."""
    judged = [f for f in flags if f["key"] in judgements]
    good = sum(bool(judgements[str(f["key"])]["worth_a_look"]) for f in judged)
    tables = Counter(str(f["key"]).rsplit("/", 1)[0] for f in flags)
    return {
        "flags": len(flags),
        "tables_with_flags": len(tables),
        "largest": tables.most_common(3),
        "judged": len(judged),
        "worth_a_look": good,
        "precision_judged": round(good / len(judged), 3) if judged else None,
        "not_judged": [f["key"] for f in flags if f["key"] not in judgements],
    }


def fresh_flags(
    root: Path, scope: str, half: str | None = None
) -> tuple[dict[str, int], list[dict[str, object]]]:
    """Counts (combinations checked, matched) and every flag of the non-annotated tables."""
    annotated = annotated_keys(root)
    cache: dict[str, list[Grid]] = {}  # each source paper read once
    counts, flags = Counter[str](), []
    for target_id, number, entry, cited in _units(root, scope):
        if half and half_of(target_id) != half:
            continue
        for source_id in sorted(cited):
            if (target_id, normalise_th(str(entry["table"])), source_id) in annotated:
                continue
            try:
                target = _grid(str(entry["table"]), str(entry["caption"]), f"{target_id} table {number}")
                if source_id not in cache:
                    cache[source_id] = source_tables(root, source_id, _source_folder(scope))[0]
                report = crosscheck(target, cache[source_id])
            except TabverifyError:
                continue  # a figure, or a table the reader refuses
            counts["checked"] += 1
            counts["matched"] += report.source_index is not None
            flags.extend(flag_items(f"{target_id}/{number}/{source_id}", report))
    return dict(counts), flags


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="arXiVeri release folder")
    parser.add_argument(
        "--scope", choices=("cited", "paper", "sources", "uncited", "targets"), default="paper"
    )
    parser.add_argument("--half", choices=("A", "B"), help="only the target papers of this half")
    parser.add_argument("--judgements", type=Path, help="hand judgements (JSON, see the docstring)")
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    args = parser.parse_args()
    if not (args.data / "target_papers").is_dir():
        print(f"{args.data}: no target_papers/ folder (the arXiVeri release layout)", file=sys.stderr)
        return 2
    counts, flags = fresh_flags(args.data, args.scope, args.half)
    judgements = json.loads(args.judgements.read_text(encoding="utf-8")) if args.judgements else {}
    for f in flags:
        if f["key"] in judgements:
            f["judgement"] = judgements[f["key"]]
    result = {"scope": args.scope, "half": args.half, **counts, **flag_tally(flags, judgements)}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(
            json.dumps({**result, "items": flags}, indent=1, ensure_ascii=False), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
