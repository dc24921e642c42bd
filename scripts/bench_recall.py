"""Search recall on the human-annotated statements (train tables): the share whose candidate set
holds a program with the same functions and columns as the human program.

    python scripts/bench_recall.py --data ../shared/datasets/tabfact
"""

from __future__ import annotations

import argparse
import json

from tabverify.bench.tabfact import search_recall


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder")
    print(json.dumps(search_recall(parser.parse_args().data), indent=2))


if __name__ == "__main__":
    main()
