"""Verify a statement against one table: link, search programs, rank them, run the best."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from tabverify.errors import TabverifyError
from tabverify.program.database_table import SEARCH_MILLISECONDS, DatabaseTable
from tabverify.program.execute import execute, json_value
from tabverify.program.ranker import Ranker
from tabverify.program.search import Candidate, SearchLimits, search
from tabverify.table import Table
from tabverify.text.linking import Linking, link
from tabverify.verify.coverage import coverage_gaps, first_covering, statement_cues, unlinked_words
from tabverify.verify.decision import VerdictModel, statement_features
from tabverify.verify.verdict import Alternative, Label, LimitNotice, TraceStep, Verdict

LARGE_TABLE_ROWS = 100_000
"""A database table with more rows is searched with :data:`LARGE_TABLE_LIMITS`."""
LARGE_SEARCH_MILLISECONDS = 1500
"""Time bound of one search over a large database table: on 10 million rows in DuckDB it keeps the
median statement under 2 s (docs/benchmarks.md: 1.5 s; 3 s gives a few more right answers and a
2.6 s median)."""
LARGE_TABLE_LIMITS = {"max_columns": 2, "max_compare_columns": 1, "max_bases": 3}
"""Narrower search shape for large database tables (each superlative or aggregate is a pass over
the table): the two numeric columns the statement names first, three bases for superlatives."""

UNCOVERED_MARGIN = 0.5
"""How much of its margin over 0.5 a verdict keeps when its evidence program leaves a
meaning-carrying word uncovered (:mod:`tabverify.verify.coverage`): half (see docs/benchmarks.md
for the accuracy of such verdicts on train tables)."""


@dataclass(frozen=True)
class Ranking:
    """A statement's links and candidate programs, best first, with the ranker's probabilities
    and the search limits that cut the work (names of :class:`SearchLimits` fields)."""

    linking: Linking
    candidates: list[Candidate]
    probabilities: np.ndarray
    cut: tuple[str, ...] = ()


class TableVerifier:
    """Program-based verifier in the spirit of LPA (TabFact).

    Args:
        ranker: a trained :class:`Ranker`, or None for the one shipped with the package.
        limits: search bounds.
        alternatives: how many runner-up programs to report with each verdict.
    """

    def __init__(
        self,
        ranker: Ranker | str | Path | None = None,
        model: VerdictModel | str | Path | None = None,
        limits: SearchLimits | None = None,
        alternatives: int = 3,
    ) -> None:
        if ranker is None or isinstance(ranker, (str, Path)):
            ranker = Ranker.load(ranker)
        if model is None or isinstance(model, (str, Path)):
            model = VerdictModel.load(model)
        self.ranker = ranker
        self.model = model
        self.limits = limits or SearchLimits()
        self.alternatives = alternatives

    def check_length(self, statement: str) -> None:
        """Refuse a statement this verifier will not check, before any work is spent on it (a lake
        check calls this before retrieving tables).

        Raises:
            TabverifyError: the statement is longer than ``limits.max_statement_chars``.
        """
        if len(statement) > self.limits.max_statement_chars:
            raise TabverifyError(
                f"the statement has {len(statement)} characters; at most {self.limits.max_statement_chars} "
                "are checked (SearchLimits.max_statement_chars): split it into shorter claims"
            )

    def rank(self, table: Table | DatabaseTable, statement: str) -> Ranking:
        """The statement's links and all candidate programs with their probabilities (best first).

        Raises:
            TabverifyError: the statement is longer than ``limits.max_statement_chars``.
        """
        self.check_length(statement)
        # a database table links through its value index, never by reading its rows
        linking = link(statement, table, getattr(table, "linking_index", None))
        limits = self._limits_for(table)
        if isinstance(table, DatabaseTable) and limits.max_milliseconds:
            # queries get only the time the search has left (see DatabaseTable.query_timeout)
            table.deadline = time.monotonic() + limits.max_milliseconds / 1000
        try:
            found = search(table, linking, limits)
        finally:
            if isinstance(table, DatabaseTable):
                table.deadline = 0.0
        if not found.candidates:
            return Ranking(linking, [], np.zeros(0), found.cut)
        scores = self.ranker.score(linking, found.candidates, table)
        order = np.argsort(-scores, kind="stable")
        scores = scores[order] - scores.max()
        probabilities = np.exp(scores) / np.exp(scores).sum()
        return Ranking(linking, [found.candidates[i] for i in order], probabilities, found.cut)

    def _limits_for(self, table: Table | DatabaseTable) -> SearchLimits:
        """The search bounds for a table. Over a database every function that reads rows is a
        query: the search is bounded in time unless a bound is set (:data:`SEARCH_MILLISECONDS`;
        :data:`LARGE_SEARCH_MILLISECONDS` on a table of more than :data:`LARGE_TABLE_ROWS` rows),
        and a large table is searched with fewer columns and bases (:data:`LARGE_TABLE_LIMITS`)
        when the limits are otherwise the defaults."""
        limits = self.limits
        if not isinstance(table, DatabaseTable):
            return limits
        large = table.n_rows > LARGE_TABLE_ROWS
        if large and replace(limits, max_milliseconds=0) == SearchLimits():
            limits = replace(limits, **LARGE_TABLE_LIMITS)
        if not limits.max_milliseconds:
            limits = replace(
                limits, max_milliseconds=LARGE_SEARCH_MILLISECONDS if large else SEARCH_MILLISECONDS
            )
        return limits

    def features(self, table: Table, statement: str) -> dict[str, float]:
        """The verdict model's features for a statement (used for training)."""
        ranking = self.rank(table, statement)
        return statement_features(table, ranking.linking, ranking.candidates, ranking.probabilities)

    def verify(self, statement: str, table: Table | DatabaseTable) -> Verdict:
        """Decide ENTAILED or REFUTED, with the best program as evidence (the :class:`Verifier`
        protocol: the claim first, then the evidence).

        Raises:
            TabverifyError: the statement is empty or too long, or the table has no data rows.
        """
        if not isinstance(statement, str) or not isinstance(table, (Table, DatabaseTable)):
            raise TypeError(
                "TableVerifier.verify(statement, table): the statement first, then the Table "
                "(or a DatabaseTable from tabverify.program.database_table.open_table)"
            )
        queries_before = len(table.trace) if isinstance(table, DatabaseTable) else 0
        if not statement or not statement.strip():
            raise TabverifyError("the statement is empty; give a sentence to check against the table")
        if not table.n_rows:
            raise TabverifyError(
                f"{table.name or 'the table'} has no data rows: nothing to check a statement against"
            )
        ranking = self.rank(table, statement)
        ranked, probabilities = ranking.candidates, ranking.probabilities
        p_entailed = self.model.probability(statement_features(table, ranking.linking, ranked, probabilities))
        wanted = p_entailed >= 0.5
        used = self._limits_for(table)
        limits = tuple(
            LimitNotice(name, getattr(used, name), used.describe(name))
            for name in ranking.cut
            if name in SearchLimits.REPORTED
        )
        source = table.source if isinstance(table, DatabaseTable) else (table.name or "")
        linking = ranking.linking
        if not ranked or not (linking.cells or linking.numbers):
            # no program, or nothing of the statement's values linked: no evidence either way
            if not ranked:
                guess = wanted
            else:  # the label the evidence rule below would give, for benchmarks that force one
                guess = wanted if any(c.value == wanted for c in ranked) else ranked[0].value
            return Verdict(
                statement,
                Label.NOT_ENOUGH_INFO,
                "",
                None,
                1.0,
                limits=limits,
                source=source,
                trace=_trace(table, queries_before),
                guess=Label.ENTAILED if guess else Label.REFUTED,
                notes=(no_evidence_note(linking, bool(ranked)),),
            )
        # the evidence is the best-ranked program that supports the decision and covers the words
        # that carry the statement's meaning; when no program supports the decision, the best
        # program decides (a verdict is never left without a supporting program)
        cues = statement_cues(linking, table)
        supporting = [i for i, c in enumerate(ranked) if c.value == wanted]
        pool = supporting or [i for i, c in enumerate(ranked) if c.value == ranked[0].value]
        covering = first_covering(ranked, pool, cues)
        chosen = pool[0] if covering is None else covering
        best = ranked[chosen]
        gaps = () if covering is not None else coverage_gaps(best, cues)
        if isinstance(table, DatabaseTable):
            result, evidence, sql = table.evidence(best.program)
        else:
            execution = execute(best.program, table)
            result, evidence, sql = execution.json, execution.evidence, ""
        entailed = result is True
        confidence = p_entailed if entailed else 1 - p_entailed
        confidence = max(0.5, min(1.0, confidence)) if supporting else 0.5
        notes: tuple[str, ...] = ()
        if gaps:
            confidence = 0.5 + (confidence - 0.5) * UNCOVERED_MARGIN
            notes = tuple(f"lower confidence: {gap}" for gap in gaps)
            other = first_covering(ranked, [i for i, c in enumerate(ranked) if c.value != best.value], cues)
            if other is not None:
                notes += (
                    f"a program that covers these words returns {ranked[other].value}: "
                    f"{ranked[other].program}",
                )
        others = [i for i in range(len(ranked)) if i != chosen][: self.alternatives]
        alternatives = tuple(
            Alternative(str(ranked[i].program), json_value(ranked[i].value), float(probabilities[i]))
            for i in others
        )
        return Verdict(
            statement,
            Label.ENTAILED if entailed else Label.REFUTED,
            str(best.program),
            result,
            confidence,
            tuple(sorted(evidence, key=lambda r: (r.row, r.column))),
            alternatives,
            limits,
            sql=sql,
            source=source,
            trace=_trace(table, queries_before),
            notes=notes,
        )


def no_evidence_note(linking: Linking, programs: bool) -> str:
    """Why a statement is NOT ENOUGH INFO: no evidence found, and what of it could not be linked."""
    missing = unlinked_words(linking)
    if missing:
        named = ", ".join(f"'{word}'" for word in missing[:8])
    elif linking.cells or linking.headers or linking.numbers:
        linked = dict.fromkeys(lk.text for lk in linking.cells + linking.headers + linking.numbers)
        named = "none; linked: " + ", ".join(f"'{text}'" for text in list(linked)[:8])
    else:
        named = "no word of it names the table"
    if programs:
        return (
            "no evidence found: no value of the statement names a cell or a number of the table "
            f"(not linked: {named})"
        )
    return f"no evidence found: no program checks the statement against the table (not linked: {named})"


def _trace(table: Table | DatabaseTable, start: int) -> tuple[TraceStep, ...]:
    """The queries a database table ran for one statement (none for an in-memory table)."""
    if not isinstance(table, DatabaseTable):
        return ()
    return tuple(
        TraceStep("query", sql, rows, seconds, error) for sql, rows, seconds, error in table.trace[start:]
    )


_DEFAULT: TableVerifier | None = None


def verify(table: Table, statement: str) -> Verdict:
    """Verify a statement against a table with the default verifier (shipped ranker)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = TableVerifier()
    return _DEFAULT.verify(statement, table)
