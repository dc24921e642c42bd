"""Choose the verdict model's L2 on train tables only (never val): fit on the verdict-model train
tables of `tabverify train tabfact` less a held-out fifth of them, score on that fifth.

    python scripts/bench_verdict_holdout.py --data ../shared/datasets/tabfact --jobs 2 \
        --l2 1e-4 1e-3 3e-3 --tables 4000
"""

from __future__ import annotations

import argparse
import json
import sys

from tabverify.bench.tabfact import verdict_holdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder")
    parser.add_argument("--l2", type=float, nargs="+", required=True, help="L2 values to compare")
    parser.add_argument(
        "--ranker-tables",
        type=int,
        default=None,
        help="train tables the ranker was trained on, skipped (default: half, as the shipped ranker)",
    )
    parser.add_argument(
        "--ranker",
        metavar="NPZ",
        default=None,
        help="the ranker that featurizes the statements (default: the shipped one, trained on the first "
        "half); with --ranker-tables 3000, one from `tabverify train tabfact --no-cross-fit`",
    )
    parser.add_argument("--tables", type=int, default=None, help="first N verdict tables (default: all)")
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    if args.ranker_tables is not None and args.ranker is None:
        parser.error(
            "--ranker-tables needs --ranker: the shipped ranker trained on the first half of the tables"
        )

    def progress(stage: str, done: int, total: int) -> None:
        if done % 500 == 0 or done == total:
            print(f"{stage} {done}/{total}", file=sys.stderr, flush=True)

    print(
        json.dumps(
            verdict_holdout(
                args.data,
                args.l2,
                ranker_tables=args.ranker_tables,
                ranker_path=args.ranker,
                tables=args.tables,
                jobs=args.jobs,
                progress=progress,
            ),
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
