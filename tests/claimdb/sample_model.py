"""A scripted GOOD model for the ClaimDB sample (tests/claimdb/conftest.py): for each claim it finds
the claim in the request's user message, calls ``execute_sql`` with the claim's reference SQL from
the sample records, checks that the tool result really holds the recorded answer, and only then
answers the JSON verdict with the claim's gold label. NOT ENOUGH INFO claims are answered with their
gold subtype without a query. So a run over the sample exercises the whole claim -> queries ->
verdict path on real SQL: a broken path (the query not run, a wrong result shown to the model, a
lost tool message) ends in a wrong label, not in a silent pass.

Played by :class:`tests.llm_server.LlmServer`; the other scripts here model failing servers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.llm_server import Reply, answer, call, claim_of, tool_results


def _values(content: str) -> list[str]:
    """The cells of a tool result's row lines, as text (numbers rounded to 6 places)."""
    cells: list[str] = []
    for line in content.splitlines()[1:]:
        if not line.startswith("["):
            continue
        for value in json.loads(line):
            cells.append(f"{value:.6f}" if isinstance(value, int | float) else str(value))
    return cells


def _holds(content: str, expected: list[list[Any]]) -> bool:
    """Whether the tool result shows every cell of the recorded answer."""
    shown = _values(content)
    for row in expected:
        for value in row:
            cell = f"{value:.6f}" if isinstance(value, int | float) else str(value)
            if cell not in shown:
                return False
    return True


class SampleModel:
    """The good model over ``records`` (the sample's claim records with ``sql`` and ``answer``).

    ``seen`` lists the claims it was asked about, in order (a claim it does not know is answered
    OUT-OF-SCHEMA so a test can notice); ``mismatches`` the claims whose tool result did not hold the
    recorded answer."""

    def __init__(self, records: list[dict[str, Any]]):
        self.by_claim = {str(r["claim"]): r for r in records}
        self.seen: list[str] = []
        self.mismatches: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        claim = claim_of(request)
        record = self.by_claim.get(claim)
        results = tool_results(request)
        if not results:
            with self._lock:
                self.seen.append(claim)
        if record is None:
            return answer("NOT ENOUGH INFO", "I do not know this claim.", "OUT-OF-SCHEMA")
        if record["label"] == "NOT ENOUGH INFO":
            return answer("NOT ENOUGH INFO", "The database cannot settle it.", str(record["category"]))
        if not results:
            return call(str(record["sql"]), "call_ref")
        if not _holds(results[-1], record["answer"]):  # type: ignore[arg-type]
            with self._lock:
                self.mismatches.append(claim)
            return answer("NOT ENOUGH INFO", f"The query returned something else: {results[-1][:200]}")
        return answer(str(record["label"]), f"The query returned {results[-1].splitlines()[1]}.")


def hanging(seconds: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model whose every reply takes ``seconds`` (longer than the client's timeout in the tests)."""

    def script(request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(seconds)
        return answer("ENTAILED", "Too late.")

    return script


class DiesAfter:
    """Plays ``model`` for the first ``claims`` claims (conversations), then answers every request
    with HTTP 503, as a server whose GPU died mid-run."""

    def __init__(self, model: Callable[[dict[str, Any]], Any], claims: int):
        self.model = model
        self.claims = claims
        self.started: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Any:
        claim = claim_of(request)
        with self._lock:
            if claim not in self.started:
                self.started.append(claim)
            alive = self.started.index(claim) < self.claims
        if alive:
            return self.model(request)
        return Reply(status=503, body={"error": {"message": "CUDA error: device lost"}})
