"""Claims against a whole database: the choice between the LLM agent and the offline path.

- ``llm`` (or ``auto`` with a model configured): :class:`tabverify.claimdb.agent.LlmVerifier`, with
  the offline NOT ENOUGH INFO pre-check offered as evidence.
- ``offline`` (or ``auto`` without a model): NOT ENOUGH INFO when the offline detector finds it;
  otherwise, when the claim is about one table (the database has one, or the claim names exactly
  one and every concept word of the claim belongs to that table), the single-table program search
  of :class:`tabverify.verify.TableVerifier`; otherwise the claim is left undecided and the reason
  says that ENTAILED vs CONTRADICTED over several tables needs a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from tabverify.claimdb.nei import NeiCheck, NeiDetector, content_words, identifier_words, stem
from tabverify.database import Database, Schema, TableSchema
from tabverify.llm.client import LlmConfig
from tabverify.verify.verdict import Label, TraceStep, Verdict

VERIFIERS = ("auto", "offline", "llm")
_DATA_WORDS = frozenset(
    stem(w)
    for w in """table tables row rows record records recorded list lists listed entry entries database
    dataset data""".split()
)
"""Words about the data itself ("the circuits table lists 14 rows"), never another table's concept."""


@dataclass(frozen=True)
class Undecided:
    """The offline path could not decide: ``reason`` says why and what would decide it."""

    claim: str
    reason: str
    nei: NeiCheck | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "statement": self.claim,
            "label": None,
            "reason": self.reason,
            "nei_check": self.nei.to_dict() if self.nei else None,
        }


def _table_stems(table: TableSchema) -> set[str]:
    """The stems of a table's name, column names and column/value descriptions."""
    texts = [table.name]
    for column in table.columns:
        texts += [column.name, column.description or "", column.value_description or ""]
    return {stem(w) for text in texts for w in identifier_words(text)}


def named_table(claim: str, schema: Schema, generic: frozenset[str] = frozenset()) -> str | None:
    """The one table the claim is about: the database's only table, or the only table whose name
    (all its words) appears in the claim, provided every concept word of the claim (its lower-case
    content words) belongs to that table's names and descriptions or to ``generic`` question
    language (stems). None otherwise: a claim that names one table in passing ("... across the
    2010-2013 seasons") while it counts wins, which another table records, needs several tables,
    and a single-table search would give a confident verdict from the wrong table."""
    if len(schema.tables) == 1:
        return schema.tables[0].name
    words = {stem(w) for w in identifier_words(claim)}
    named = [
        t for t in schema.tables if (parts := {stem(w) for w in identifier_words(t.name)}) and parts <= words
    ]
    if len(named) != 1:
        return None
    covered = _table_stems(named[0]) | generic | _DATA_WORDS
    if any(stem(w) not in covered for w in content_words(claim)):
        return None
    return named[0].name


class DatabaseClaimVerifier:
    """Verifies claims against one database with the LLM agent or the offline path.

    Args:
        database: the open database (:func:`tabverify.database.connect`).
        verifier: ``auto`` (the model when ``llm`` is given, else offline), ``offline`` or ``llm``.
        llm: where the model is; required for ``llm``.
        trace: a JSON Lines file for the agent's per-claim traces.
        encoder: the NOT ENOUGH INFO detector's encoder (``auto``, ``minilm``, ``hashing``).
        max_tool_calls: the agent's tool-call cap (ClaimDB's 20).
    """

    def __init__(
        self,
        database: Database,
        *,
        verifier: str = "auto",
        llm: LlmConfig | None = None,
        trace: Path | None = None,
        encoder: str = "auto",
        max_tool_calls: int = 20,
    ):
        if verifier not in VERIFIERS:
            raise ValueError(f"verifier {verifier!r}: choose auto, offline or llm")
        if verifier == "llm" and llm is None:
            raise ValueError("the llm verifier needs a model: give --llm-base-url and --model")
        self.database = database
        self.schema = database.schema()
        self.detector = NeiDetector(encoder)
        self.mode = "llm" if verifier == "llm" or (verifier == "auto" and llm is not None) else "offline"
        self.agent = None
        if self.mode == "llm":
            from tabverify.claimdb.agent import LlmVerifier
            from tabverify.claimdb.trace import TraceWriter
            from tabverify.llm.client import ChatClient

            assert llm is not None
            self.agent = LlmVerifier(
                ChatClient(llm),
                max_tool_calls=max_tool_calls,
                trace=TraceWriter(trace) if trace is not None else None,
            )

    def precheck(self, claim: str, extra_info: str = "") -> NeiCheck:
        """The offline NOT ENOUGH INFO check of a claim against this database's schema."""
        return self.detector.check(claim, extra_info, self.schema)

    def verify(self, claim: str, extra_info: str = "", claim_id: str = "") -> Verdict | Undecided:
        """The verdict on one claim (or, offline, :class:`Undecided` with the reason)."""
        nei = self.precheck(claim, extra_info)
        if self.agent is not None:
            return self.agent.verify(claim, self.database, extra_info, claim_id, nei=nei)
        if nei.nei:
            return Verdict(
                statement=claim,
                label=Label.NOT_ENOUGH_INFO,
                program="",
                result=None,
                confidence=nei.probability,
                subtype=nei.subtype,
                source="offline: NOT ENOUGH INFO detector (schema only)",
                trace=(TraceStep("note", nei.reason),),
            )
        table = named_table(claim, self.schema, self.detector.model.generic)
        if table is None:
            return Undecided(
                claim,
                "ENTAILED or CONTRADICTED over several tables needs a model: give --llm-base-url and "
                f"--model (the offline check found no NOT ENOUGH INFO sign: {nei.reason})",
                nei,
            )
        from tabverify.program.database_table import open_table
        from tabverify.verify import TableVerifier

        verdict = TableVerifier().verify(claim, open_table(self.database, table))
        note = TraceStep("note", f"offline: the claim names one table, {table}; single-table program search")
        return replace(verdict, trace=(note, *verdict.trace))


def claims_report(source: str, mode: str, results: Sequence[Verdict | Undecided]) -> dict[str, object]:
    """The JSON record of claims checked against a whole database: ``tabverify check --db --json``
    and the web API's ``POST /api/databases/{name}/check`` print this. ``source`` names the database
    (the CLI's target, the server's configured name), ``mode`` is :attr:`DatabaseClaimVerifier.mode`."""
    return {"database": source, "verifier": mode, "verdicts": [r.to_dict() for r in results]}
