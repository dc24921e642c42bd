"""Evidence agreement of a TabFact run: of the answers that show a program, the share whose program
executes (re-run here, in memory) to the label given; and the share of NOT ENOUGH INFO answers
(no evidence found: no program shown - the bench scores their forced guess).

    tabverify bench tabfact --data ../shared/datasets/tabfact --split val --jobs 2 --out results/tabfact-val.json
    python scripts/bench_evidence.py --data ../shared/datasets/tabfact results/tabfact-val.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tabverify.bench.tabfact import TableCache
from tabverify.errors import TabverifyError
from tabverify.program import execute


def agreement(run: dict, data: str | Path) -> dict[str, object]:
    """The evidence numbers of a ``bench tabfact --out`` file's contents (``run``)."""
    cache = TableCache(data)
    predictions = run["predictions"]
    shown = agree = abstained = failed = 0
    disagreeing: list[dict[str, object]] = []
    for record in predictions:
        if "error" in record:
            failed += 1
            continue
        if not record["program"]:
            abstained += 1
            continue
        shown += 1
        try:
            value = execute(record["program"], cache.get(record["table"])).json
        except TabverifyError as exc:
            value = f"error: {exc}"
        if isinstance(value, bool) and value == (record["predicted"] == 1):
            agree += 1
        elif len(disagreeing) < 20:
            disagreeing.append({"table": record["table"], "program": record["program"], "value": str(value)})
    n = max(1, len(predictions))
    metrics = run.get("metrics", {})
    return {
        "n": len(predictions),
        "accuracy": metrics.get("accuracy"),
        "not_enough_info": abstained,
        "not_enough_info_share": round(abstained / n, 4),
        "programs_shown": shown,
        "programs_agreeing": agree,
        "evidence_agreement": round(agree / max(1, shown), 4),
        "failures": failed,
        "disagreeing_examples": disagreeing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder (the run's tables)")
    parser.add_argument("run", help="the JSON file `tabverify bench tabfact --out` wrote")
    args = parser.parse_args()
    try:
        run = json.loads(Path(args.run).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        sys.exit(f"error: cannot read {args.run}: {exc}")
    print(json.dumps(agreement(run, args.data), indent=2))


if __name__ == "__main__":
    main()
