"""The ClaimDB agent against scripted models on the sample database: does every misbehaviour end in
a verdict (or a clear error) within the tool-call cap, is the trace complete, and what do the tool
calls and tokens look like?

Builds the formula_1 sample (real schema, simulated rows, 36 claims with reference SQL), starts the
test suite's stand-in server (tests/llm_server.py: real HTTP, the OpenAI wire protocol) playing
scripted models, and runs the real command for each:

    tabverify bench claimdb --claims CLAIMS --schema SCHEMA --dbs DBS --llm-base-url URL --model NAME ...

Usage: python scripts/bench_claimdb_agent.py [--schema ../shared/datasets/claimdb/schema] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.claimdb.sample_model import SampleModel  # noqa: E402
from tests.llm_server import (  # noqa: E402
    FlakyModel,
    LlmServer,
    chaos_model,
    chaos_recovers_model,
    empty_model,
    flood_model,
    looper_model,
    sleepy_model,
    stubborn_model,
)

from tabverify.claimdb.sample import build_sample  # noqa: E402

CAP = 20


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--schema", default=str(ROOT.parent / "shared/datasets/claimdb/schema"))
    parser.add_argument("--out", default=None, help="write the per-model results as JSON here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="claimdb-agent-"))
    sample = build_sample(work / "sample", schema_dir=args.schema)
    records = [json.loads(line) for line in sample.claims_path.read_text(encoding="utf-8").splitlines()]
    good = SampleModel(records)
    models = {
        "good (reference SQL)": good,
        "flaky (500/503/429, then good)": FlakyModel(3, then=good),
        "looper (SQL for ever)": looper_model,
        "stubborn (SQL even without tools)": stubborn_model,
        "chaos (unknown tool, bad arguments, prose)": chaos_model,
        "chaos, then a fenced lower-case verdict": chaos_recovers_model,
        "flood (SELECT * on a big table)": flood_model,
        "empty replies": empty_model,
        "sleepy (3 s > 1 s timeout)": sleepy_model(3.0),
    }
    names = {label: f"m{i}" for i, label in enumerate(models)}
    rows = []
    with LlmServer({names[k]: v for k, v in models.items()}) as server:
        for label, name in names.items():
            limit = ["--limit", "6"] if "sleepy" in label else []
            out = work / f"{name}.json"
            started = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "tabverify.cli", "bench", "claimdb", "--claims", str(sample.claims_path),
                 "--schema", str(sample.schema_dir), "--dbs", str(sample.root), "--llm-base-url", server.url,
                 "--model", name, "--encoder", "hashing", "--llm-timeout", "1", "--llm-retries", "1",
                 "--max-tool-calls", str(CAP), "--out", str(out), *limit],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            wall = time.perf_counter() - started
            row: dict[str, object] = {"model": label, "exit": result.returncode, "wall_s": round(wall, 1)}
            if out.exists():
                data = json.loads(out.read_text(encoding="utf-8"))
                metrics = data["metrics"]
                trace = Path(data["trace"])
                lines = [json.loads(x) for x in trace.read_text(encoding="utf-8").splitlines()]
                complete = all(
                    {"claim_id", "messages", "queries", "tokens", "tool_calls", "verdict"} <= set(r)
                    for r in lines
                )
                row.update(
                    n=data["n"],
                    accuracy=metrics["accuracy"],
                    macro_f1=metrics["macro_f1"],
                    failed_claims=metrics["failed_claims"],
                    tool_calls=metrics["tool_calls"],
                    tokens=metrics.get("tokens", {}),
                    trace_lines=len(lines),
                    trace_complete=complete,
                    max_tool_calls_within_cap=max(r["tool_calls"] for r in lines) <= CAP,
                )
            else:
                row["error"] = (result.stderr.strip().splitlines() or [""])[-1]
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
