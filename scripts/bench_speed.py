"""Per-statement verification time on one core (one process), median and p95.

python scripts/bench_speed.py --data ../shared/datasets/tabfact --limit 2000
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from tabverify.bench.tabfact import TableCache, load_examples
from tabverify.verify import TableVerifier


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder")
    parser.add_argument("--split", default="val")
    parser.add_argument("--limit", type=int, default=2000, help="statements to time (first N of the split)")
    args = parser.parse_args()
    examples = load_examples(args.data, args.split)[: args.limit]
    cache = TableCache(args.data)
    verifier = TableVerifier()
    for example in examples[:20]:  # warm caches and imports
        verifier.verify(example.statement, cache.get(example.table_id))
    times = []
    for example in examples:
        table = cache.get(example.table_id)  # table reading is not part of verification
        started = time.perf_counter()
        verifier.verify(example.statement, table)
        times.append(time.perf_counter() - started)
    times.sort()
    result = {
        "statements": len(times),
        "median_ms": round(1000 * statistics.median(times), 2),
        "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 2),
        "max_ms": round(1000 * times[-1], 2),
        "mean_ms": round(1000 * statistics.fmean(times), 2),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
