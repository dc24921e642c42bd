"""Claim retrieval over a TabFact lake: fit the reranker on train, score it on held-out train tables,
and time `check --lake`.

    # the lake over all 16,573 TabFact tables (once; resumable)
    .venv/bin/tabverify lake index ../shared/datasets/tabfact/data/all_csv --encoder lexical \
        --captions ../shared/datasets/tabfact/data/table_to_page.json --out results/lakes/tabfact-lexical
    # the reranker's weights from 3,000 TRAIN statements (what tabverify.lake.retrieve.MODELS holds):
    # the lake encoder's model, and with --keyword-model also the keyword-only one (same pools)
    .venv/bin/python scripts/bench_check_lake.py fit --lake results/lakes/tabfact-lexical --keyword-model
    # the minilm lake: first its query adapter (TRAIN statements of other tables; torch), then the
    # reranker on adapted vectors
    .venv/bin/python scripts/bench_check_lake.py fit-adapter --lake results/lakes/tabfact-minilm \
        --out src/tabverify/models/claim_adapter_minilm.npz
    .venv/bin/python scripts/bench_check_lake.py fit --lake results/lakes/tabfact-minilm \
        --adapter claim_adapter_minilm.npz
    # Recall@k / MRR of the shipped weights on 2,000 statements of the held-out train tables
    .venv/bin/python scripts/bench_check_lake.py held-out --lake results/lakes/tabfact-lexical
    # Recall@k / MRR on val (the TRL-Bench suite)
    .venv/bin/tabverify bench trl --suite claim-retrieval --encoder lexical \
        --data ../shared/datasets/tabfact --split val --lake results/lakes/tabfact-lexical
    # check --lake latency: median / p95 seconds per val statement after start-up
    .venv/bin/python scripts/bench_check_lake.py latency --lake results/lakes/tabfact-lexical --n 100
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

DATA = "../shared/datasets/tabfact"


def main() -> int:
    """Run the ``fit``, ``held-out`` or ``latency`` command."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("fit", "fit-adapter", "held-out", "latency"))
    parser.add_argument("--lake", required=True)
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--n", type=int, default=100, help="latency: val statements timed")
    parser.add_argument(
        "--statements", type=int, default=3000, help="fit: train statements (3000 with --adapter)"
    )
    parser.add_argument("--no-dense", action="store_true", help="fit: only the keyword-only model")
    parser.add_argument(
        "--keyword-model", action="store_true", help="fit: also the keyword-only model, from the same pools"
    )
    parser.add_argument("--adapter", help="fit: the query adapter's file name in the package's models")
    parser.add_argument("--out", help="fit-adapter: where to write the adapter (.npz)")
    parser.add_argument("--held-out-seed", type=int, default=1, help="held-out: the statements' sample seed")
    args = parser.parse_args()

    from tabverify.lake.store import Lake

    if args.command == "fit":
        from tabverify.bench.trl.claims import fit_models

        lake = Lake.open(args.lake)
        started = time.perf_counter()
        variants = (False,) if args.no_dense else (True, False) if args.keyword_model else (True,)
        models = fit_models(lake, args.data, statements=args.statements, dense=variants, adapter=args.adapter)
        seconds = round(time.perf_counter() - started, 1)
        for model in models:
            print(json.dumps({"encoder": lake.meta.get("encoder"), "coef": model.coef,
                              "intercept": model.intercept, "dense": model.dense,
                              "listwise": model.listwise, "adapter": model.adapter,
                              "seconds": seconds}))  # fmt: skip
        return 0

    if args.command == "fit-adapter":
        from tabverify.bench.trl.claims import fit_adapter_for_lake

        if not args.out:
            parser.error("fit-adapter needs --out FILE.npz")
        started = time.perf_counter()
        adapter = fit_adapter_for_lake(
            Lake.open(args.lake), args.data, progress=lambda stage, done, total: print(stage, done, total)
        )
        adapter.save(args.out)
        print(json.dumps({"encoder": adapter.encoder, "dim": adapter.dim, "out": args.out,
                          "seconds": round(time.perf_counter() - started, 1)}))  # fmt: skip
        return 0

    if args.command == "held-out":
        from tabverify.bench.trl.claims import evaluate_held_out

        lake = Lake.open(args.lake)
        started = time.perf_counter()
        scores = evaluate_held_out(lake, args.data, seed=args.held_out_seed)
        seconds = round(time.perf_counter() - started, 1)
        print(json.dumps({"encoder": lake.meta.get("encoder"), "metrics": scores, "seconds": seconds}))
        return 0

    from tabverify.bench.tabfact import load_examples
    from tabverify.lake.retrieve import Retriever, check_with_lake
    from tabverify.verify import TableVerifier

    started = time.perf_counter()
    lake = Lake.open(args.lake)
    retriever = Retriever(lake)
    verifier = TableVerifier()
    check_with_lake(lake, "start-up statement", verifier=verifier, retriever=retriever)  # loads models
    startup = time.perf_counter() - started
    examples = random.Random(0).sample(load_examples(args.data, "val"), args.n)
    times, hits = [], 0
    for example in examples:
        t0 = time.perf_counter()
        verdict = check_with_lake(lake, example.statement, verifier=verifier, retriever=retriever)
        times.append(time.perf_counter() - t0)
        hits += verdict.evidence_table == example.table_id
    times.sort()
    print(json.dumps({"n": len(times), "startup_s": round(startup, 2),
                      "median_s": round(statistics.median(times), 3),
                      "p95_s": round(times[int(0.95 * (len(times) - 1))], 3),
                      "evidence_table_is_gold": round(hits / len(times), 3)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
