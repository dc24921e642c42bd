"""Crosscheck on documents outside arXiVeri: README tables that reprint another project's results.

    python scripts/bench_crosscheck_documents.py --sample scripts/crosscheck_github_sample2.json \\
        --documents DIR --out results/crosscheck-github2.json

The arXiVeri release is HTML converted from arXiv papers, and every crosscheck rule had been read
off it. These samples were gathered elsewhere: public GitHub files (project READMEs with results
tables) in which one project's comparison table reprints another project's published results,
chosen by readers who did not run the tool, by whether the target names the source's method as a
baseline - not by whether the values agree. Each pair goes through the path a user takes:
``read_tables`` on each file, then every target table against every table of the source document,
as ``tabverify crosscheck TARGET --source SOURCE`` runs it (with its default time limit).

A sample file holds::

    {"note": "how it was made",
     "documents": {"NAME": {"repo": "owner/name", "path": "...", "commit": "...", "sha256": "...",
                            "file": "a/docs/NAME.md"}},
     "pairs": [{"id": "a01", "target": "NAME", "source": "NAME", "method": ..., "why": ...}],
     "labels": {"PAIR/TABLE": {"table": 1-based source table or null, "confidence", "why"}},
     "judgements": {"PAIR/TABLE/row,column": {"worth_a_look": bool, "kind_right", "why"}}}

Labels follow arXiVeri's annotators' convention and were made blind to the tool; each flag was read
against both documents. ``--labels`` / ``--judgements`` replace the sample's own (a file of
either, or one holding both under those keys, as ``crosscheck_github_sample1_0164934.json`` does:
sample 1 numbered as first labelled, for rerunning commit 0164934's reading). The documents are
not part of this repository (their licences differ): fetch each from its repository at the listed
commit into ``DIR`` under its ``file`` path; a file whose sha256 differs is reported and skipped.
The output counts pairs, matches and flags, the table-matching accuracy against the labels and the
precision over the judged flags, and lists what nobody has labelled or judged yet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from bench_crosscheck_fresh import flag_items, flag_tally  # noqa: I001
from bench_crosscheck_match_fresh import match_scores

from tabverify.crosscheck.cells import DEFAULT_TIMEOUT_S
from tabverify.crosscheck.documents import check_documents
from tabverify.errors import TabverifyError
from tabverify.table.documents import read_tables
from tabverify.table.grid import Grid


def _read_json(path: Path, what: str) -> dict[str, object]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: cannot read the {what} ({exc})") from None
    if not isinstance(value, dict):
        raise SystemExit(f"{path}: the {what} must be a JSON object")
    return value


def _documents(root: Path, sample: dict[str, object]) -> tuple[dict[str, list[Grid]], list[str]]:
    """Every document of the sample whose file is there with the listed sha256, read as tables."""
    read: dict[str, list[Grid]] = {}
    problems = []
    documents = sample.get("documents", {})
    if not isinstance(documents, dict) or not all(isinstance(info, dict) for info in documents.values()):
        raise SystemExit('the sample\'s "documents" must be an object of {"file", "sha256", ...} objects')
    for name, info in sorted(documents.items()):
        path = root / str(info.get("file") or "")
        if not path.is_file():
            problems.append(f"{name}: {path} is missing")
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if info.get("sha256") and digest != info["sha256"]:
            problems.append(f"{name}: sha256 {digest[:12]} differs from the sample's")
            continue
        try:
            read[name] = read_tables(path)
        except TabverifyError as exc:
            problems.append(f"{name}: {exc}")
    return read, problems


def run(
    root: Path, sample: dict[str, object], labels: dict[str, object], judgements: dict[str, object]
) -> dict[str, object]:
    """Check every pair of the sample (files under ``root``); counts, accuracy, precision, flags."""
    documents, problems = _documents(root, sample)
    counts = Counter[str]()
    answers: dict[str, int | None] = {}
    flags: list[dict[str, object]] = []
    pairs = sample.get("pairs", [])
    if not isinstance(pairs, list) or not all(
        isinstance(p, dict) and all(isinstance(p.get(k), str) for k in ("id", "target", "source"))
        for p in pairs
    ):
        raise SystemExit('the sample\'s "pairs" must be a list of {"id", "target", "source"} objects of text')
    for pair in pairs:
        target, source = documents.get(pair["target"]), documents.get(pair["source"])
        if target is None or source is None:
            counts["pairs_skipped"] += 1
            continue
        counts["pairs"] += 1
        try:  # the run `tabverify crosscheck TARGET SOURCE` makes, with its default time limit
            run_ = check_documents(
                pair["target"], target, [(pair["source"], source)], timeout_s=DEFAULT_TIMEOUT_S
            )
        except TabverifyError as exc:
            problems.append(f"{pair['id']}: {exc}")
            continue
        for result in run_.results:
            key, report = f"{pair['id']}/{result.target_table}", result.report
            counts["tables_checked"] += 1
            counts["matched"] += report.source_index is not None
            answers[key] = None if report.source_index is None else report.source_index + 1
            flags += [
                {**item, "judgement": judgements.get(str(item["key"]))} for item in flag_items(key, report)
            ]
    return {
        **counts,
        "problems": problems,
        **match_scores(labels, answers),  # type: ignore[arg-type]
        "labelled_with_a_table": sum(labels[k]["table"] is not None for k in labels if k in answers),  # type: ignore[index]
        **flag_tally(flags, judgements),  # type: ignore[arg-type]
        "items": flags,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", required=True, type=Path, help="sample file (JSON, see the docstring)")
    parser.add_argument("--documents", required=True, type=Path, help="folder the sample's files are in")
    parser.add_argument("--labels", type=Path, help="table-match labels replacing the sample's")
    parser.add_argument("--judgements", type=Path, help="flag judgements replacing the sample's")
    parser.add_argument("--out", type=Path, help="write the JSON result, flags included, here")
    args = parser.parse_args()
    if not args.documents.is_dir():
        print(f"{args.documents}: not a folder", file=sys.stderr)
        return 2
    try:
        sample = _read_json(args.sample, "sample")
        labels = _read_json(args.labels, "labels") if args.labels else sample.get("labels", {})
        judgements = (
            _read_json(args.judgements, "judgements") if args.judgements else sample.get("judgements", {})
        )
        if not isinstance(labels, dict) or not isinstance(judgements, dict):
            raise SystemExit(f"{args.sample}: labels and judgements must be JSON objects")
        labels = labels.get("labels", labels)  # a file holding both, as the sample file does
        judgements = judgements.get("judgements", judgements)
        result = run(args.documents, sample, labels, judgements)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    summary = {k: v for k, v in result.items() if k != "items"}
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
