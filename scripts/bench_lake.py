"""Lake build time and search latency on all TabFact tables; prints JSON.

Indexes every table of DATA/all_csv (captions from DATA/table_to_page.json) into a fresh lake
(or reuses --lake when it exists and --reuse is given), reopens it (timing the open), then times
searches: text queries (TabFact train statements), table queries (TabFact tables read from disk,
encoded by the lake's encoder), the bare vector search and keyword (BM25) search. The encoder is
loaded and warmed before timing, so latencies exclude model load.

    nice -n 10 python scripts/bench_lake.py --data ../shared/datasets/tabfact --encoder lexical
    nice -n 10 python scripts/bench_lake.py --data ../shared/datasets/tabfact --encoder minilm --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")


def _ms(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {
        "n": len(times),
        "p50_ms": round(1000 * statistics.median(times), 3),
        "p95_ms": round(1000 * times[int(0.95 * (len(times) - 1))], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder (holding data/all_csv)")
    parser.add_argument("--encoder", default="lexical")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lake", help="Lake folder (default: a temporary folder, deleted afterwards)")
    parser.add_argument("--reuse", action="store_true", help="Time only the searches when --lake exists")
    parser.add_argument("--queries", type=int, default=300, help="Queries of each kind")
    parser.add_argument("--limit", type=int, default=0, help="Index only the first N tables (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)

    from tabverify.bench.tabfact import load_examples
    from tabverify.lake.encoders import get_table_encoder
    from tabverify.lake.indexing import build_lake
    from tabverify.lake.store import Lake
    from tabverify.table.readers import read_tabfact_csv

    data = Path(args.data) / "data"
    tables_dir = data / "all_csv"
    captions_file = data / "table_to_page.json"
    source: Path = tables_dir
    scratch = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    if args.limit:
        source = scratch / "subset"
        source.mkdir()
        for name in sorted(os.listdir(tables_dir))[: args.limit]:  # copies: a lake source refuses symlinks
            shutil.copyfile(tables_dir / name, source / name)
    lake_path = Path(args.lake) if args.lake else scratch / "lake"
    result: dict[str, object] = {
        "encoder": args.encoder,
        "jobs": args.jobs,
        "batch": args.batch,
        "source": str(source),
    }

    started = time.perf_counter()
    encoder = get_table_encoder(args.encoder)
    result["encoder_load_s"] = round(time.perf_counter() - started, 2)
    if not (args.reuse and (lake_path / "lake.json").exists()):
        if lake_path.exists() and args.lake:
            raise SystemExit(f"{lake_path} exists; remove it or pass --reuse")
        started = time.perf_counter()
        cpu = time.process_time()
        summary = build_lake(
            source, lake_path, encoder, jobs=args.jobs, captions=captions_file, batch=args.batch
        )
        result["index_s"] = round(time.perf_counter() - started, 1)
        result["index_main_cpu_s"] = round(time.process_time() - cpu, 1)
        result["index"] = {
            "added": summary.added,
            "skipped": len(summary.skipped),
            "skipped_examples": summary.skipped[:5],
            "tables": summary.tables,
        }
        started = time.perf_counter()
        again = build_lake(source, lake_path, encoder, jobs=1, captions=captions_file, batch=args.batch)
        result["reindex_unchanged_s"] = round(time.perf_counter() - started, 1)
        result["reindex_unchanged"] = again.unchanged
    result["lake_bytes"] = sum(p.stat().st_size for p in lake_path.iterdir() if p.is_file())

    started = time.perf_counter()
    lake = Lake.open(lake_path, encoder)
    result["open_s"] = round(time.perf_counter() - started, 3)
    result["tables"] = len(lake)

    rng = random.Random(args.seed)
    ids = lake.ids()
    sample_ids = rng.sample(ids, min(args.queries, len(ids)))
    examples = [e for e in load_examples(Path(args.data), "train") if e.table_id in set(ids)]
    statements = [e.statement for e in rng.sample(examples, min(args.queries, len(examples)))]
    captions = json.loads(captions_file.read_text())
    query_tables = []
    for table_id in sample_ids:
        caption = captions.get(Path(table_id).name, [""])
        query_tables.append(
            (
                table_id,
                read_tabfact_csv(source / table_id, caption[0] if isinstance(caption, list) else caption),
            )
        )

    # warm up (model load, first calls)
    for statement in statements[:5]:
        lake.search_text(statement, 10)
    for _, table in query_tables[:5]:
        lake.search_table(table, 10)

    text_times, table_times, vector_times, keyword_times = [], [], [], []
    self_top1 = 0
    for statement in statements:
        started = time.perf_counter()
        lake.search_text(statement, 10)
        text_times.append(time.perf_counter() - started)
    for table_id, table in query_tables:
        started = time.perf_counter()
        hits = lake.search_table(table, 10)
        table_times.append(time.perf_counter() - started)
        self_top1 += bool(hits) and hits[0].id == table_id
    vectors = lake.table_vectors(sample_ids)
    for vector in vectors:
        started = time.perf_counter()
        lake.search_vector(vector, 10)
        vector_times.append(time.perf_counter() - started)
    for statement in statements:
        started = time.perf_counter()
        lake.search_keywords(statement, 10)
        keyword_times.append(time.perf_counter() - started)
    result["search_text"] = _ms(text_times)
    result["search_table"] = _ms(table_times)
    result["search_table_self_at_1"] = round(self_top1 / max(len(query_tables), 1), 4)
    result["search_vector"] = _ms(vector_times)
    result["search_keywords"] = _ms(keyword_times)
    lake.close()
    if not args.lake:
        shutil.rmtree(scratch, ignore_errors=True)
    elif args.limit:
        shutil.rmtree(scratch / "subset", ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
