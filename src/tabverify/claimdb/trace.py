"""Per-claim audit traces of the LLM verifier: one JSON object per claim in a JSON Lines file.

ClaimDB labels inherit BIRD's annotation noise, so every verdict keeps what led to it: the whole
conversation (tool results included), each query with its outcome, the tokens spent and the errors.
A line is written and flushed to disk when a claim is finished, so a crash loses at most the claim
in progress; several threads may share one writer. No API key is ever part of a record (the
client keeps it in a request header, which is not traced).
"""

from __future__ import annotations

import json
import math
import os
import threading
from pathlib import Path
from typing import IO, Any

from tabverify.errors import TabverifyError

TRACE_FIELDS = (
    "claim_id",
    "claim",
    "extra_info",
    "model",
    "status",
    "verdict",
    "subtype",
    "confidence",
    "justification",
    "source",
    "warnings",
    "numbers",
    "nei_check",
    "queries",
    "messages",
    "tokens",
    "tool_calls",
    "llm_calls",
    "elapsed_s",
    "errors",
)
"""The keys of a trace record, in the order they are written."""


def _strict(value: Any) -> Any:
    """``value`` with non-finite floats as strings, so the JSON stays strict."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


class TraceWriter:
    """Appends one JSON line per claim to ``path`` (created with its folder when missing).

    Use as a context manager or call :meth:`close`. Each :meth:`write` is flushed and synced before
    it returns; writes from several threads never interleave."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._handle: IO[str] | None = None
        self.written = 0

    def _open(self) -> IO[str]:
        if self._handle is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                raise TabverifyError(
                    f"trace file {self.path}: cannot write ({exc.strerror or exc}); name a writable file"
                ) from None
        return self._handle

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one JSON line (keys of :data:`TRACE_FIELDS` first) and flush it."""
        ordered = {key: record[key] for key in TRACE_FIELDS if key in record}
        ordered.update({k: v for k, v in record.items() if k not in ordered})
        line = json.dumps(_strict(ordered), ensure_ascii=False, allow_nan=False, default=str)
        with self._lock:
            handle = self._open()
            handle.write(line + "\n")
            handle.flush()
            try:
                os.fsync(handle.fileno())
            except OSError:
                pass  # a pipe or a file system without fsync: flushed is the best there is
            self.written += 1

    def close(self) -> None:
        """Close the file (later writes reopen it for appending)."""
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """The records of a trace file (a last line cut by a crash is skipped)."""
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records
