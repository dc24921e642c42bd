"""Load benchmark of the web app: N concurrent clients checking statements against the example table
over loopback, through ``POST /api/check``, as a developer's service would call it.

    python scripts/bench_serve.py --clients 1,8,32 --requests 400 --memory-requests 2000 \\
        --out results/serve-bench.json

It starts ``tabverify serve --port 0`` itself (``--workers``, ``--time-limit`` passed through),
warms the workers up, then for each N runs N client threads, each with its own keep-alive connection,
until ``--requests`` requests are done (or ``--max-seconds`` pass). Each request checks one statement
(cycling over eight statements about src/tabverify/examples/league.csv, the table sent as CSV).
Reported per N: throughput (requests/s), latency p50/p95/max, failed requests (any status but 200 or
a verdict list of the wrong length). Memory: the resident set of the server and its worker processes
(from /proc) before and after each block of ``--memory-requests`` / 10 requests at N = 8, so a leak
shows as a rising line. Bounded: at most ``--max-seconds`` per N and loopback only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "src" / "tabverify" / "examples" / "league.csv"
STATEMENTS = [
    "the salem miners game had the lowest attendance",
    "there were 2 games against the dayton rivers",
    "the game against albany comets was in week 2",
    "the highest attendance was in week 6",
    "the team won more games than it lost",
    "the game against the dayton rivers in week 3 was a win",
    "there were more than 5 games",
    "the total attendance of all games was over 20000",
]


def start_server(workers: int, time_limit: float) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "tabverify.cli", "serve", "--port", "0", "--workers", str(workers),
               "--time-limit", str(time_limit)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert process.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        found = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
        if found:
            threading.Thread(target=process.stdout.read, daemon=True).start()  # keep the pipe drained
            return process, int(found.group(1))
        if not line and process.poll() is not None:
            break
    process.kill()
    raise SystemExit("bench_serve: the server did not start")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def resident_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(found.group(1)) if found else 0
        stack += _children(current)
    return total / 1024


class Client:
    """One keep-alive HTTP connection that checks statements."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.csv = EXAMPLE.read_text(encoding="utf-8")

    def check(self, statement: str) -> tuple[float, bool]:
        body = json.dumps({"csv": self.csv, "statements": [statement]})
        started = time.perf_counter()
        try:
            self.connection.request("POST", "/api/check", body, {"content-type": "application/json"})
            response = self.connection.getresponse()
            data = response.read()
            ok = response.status == 200 and len(json.loads(data)["verdicts"]) == 1
        except (OSError, http.client.HTTPException, ValueError, KeyError):
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            ok = False
        return time.perf_counter() - started, ok


def run_load(port: int, clients: int, requests: int, max_seconds: float) -> dict[str, float | int]:
    """``requests`` checks spread over ``clients`` threads; latency and throughput."""
    latencies: list[float] = []
    failures = 0
    lock = threading.Lock()
    issued = 0
    deadline = time.monotonic() + max_seconds

    def worker(number: int) -> None:
        nonlocal issued, failures
        client = Client(port)
        while True:
            with lock:
                if issued >= requests or time.monotonic() > deadline:
                    return
                index = issued
                issued += 1
            elapsed, ok = client.check(STATEMENTS[(index + number) % len(STATEMENTS)])
            with lock:
                latencies.append(elapsed)
                failures += 0 if ok else 1

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ordered = sorted(latencies)

    def quantile(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")

    return {
        "clients": clients,
        "requests": len(latencies),
        "failed": failures,
        "seconds": round(wall, 2),
        "throughput_rps": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * quantile(0.95), 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="1,8,32", help="concurrent clients, comma-separated")
    parser.add_argument("--requests", type=int, default=400, help="requests per client count")
    parser.add_argument("--memory-requests", type=int, default=2000, help="requests of the memory run (N=8)")
    parser.add_argument("--max-seconds", type=float, default=120.0, help="time bound per run")
    parser.add_argument("--workers", type=int, default=2, help="the server's worker processes")
    parser.add_argument("--time-limit", type=float, default=30.0, help="the server's per-request limit")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    counts = [int(x) for x in args.clients.split(",") if x.strip()]
    if not counts or min(counts) < 1 or max(counts) > 256 or not 1 <= args.requests <= 100_000:
        raise SystemExit("bench_serve: give 1-256 clients and 1-100000 requests")
    process, port = start_server(args.workers, args.time_limit)
    try:
        run_load(port, max(2, args.workers), 4 * args.workers, 60)  # every worker has imported and loaded
        runs = []
        for clients in counts:
            result = run_load(port, clients, args.requests, args.max_seconds)
            runs.append(result)
            print(json.dumps(result), flush=True)
        memory = [{"requests": 0, "rss_mb": round(resident_mb(process.pid), 1)}]
        block = max(1, args.memory_requests // 10)
        done = 0
        memory_failed = 0
        while done < args.memory_requests:
            result = run_load(port, 8, block, args.max_seconds)
            done += int(result["requests"])
            memory_failed += int(result["failed"])
            memory.append({"requests": done, "rss_mb": round(resident_mb(process.pid), 1)})
            if not result["requests"]:
                break
        print(json.dumps({"memory": memory, "failed": memory_failed}), flush=True)
    finally:
        process.terminate()
        process.wait(timeout=30)
    report = {
        "benchmark": "serve",
        "machine": f"{os.cpu_count()} cores",
        "server": {"workers": args.workers, "time_limit_s": args.time_limit, "uvicorn": "1 process, asyncio"},
        "runs": runs,
        "memory": {"clients": 8, "failed": memory_failed, "samples": memory},
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("| clients | requests | failed | throughput (req/s) | p50 (ms) | p95 (ms) | max (ms) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        print(f"| {r['clients']} | {r['requests']} | {r['failed']} | {r['throughput_rps']} | {r['p50_ms']} "
              f"| {r['p95_ms']} | {r['max_ms']} |")  # fmt: skip
    print("memory (MB, server + workers) by requests served at N=8: "
          + ", ".join(f"{m['requests']}: {m['rss_mb']}" for m in memory))  # fmt: skip


if __name__ == "__main__":
    main()
