"""Crosscheck whole documents: a target document's tables (all, or the N-th) against every table of
each source document - the run ``tabverify crosscheck`` and the web app's crosscheck make, and the
one JSON payload both give (``crosscheck --json``, ``POST /api/crosscheck``).

Documents come in as already read tables (:func:`tabverify.table.documents.read_tables` for files,
:func:`~tabverify.table.documents.read_tables_text` for uploads) with the name each is shown under.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath

from tabverify.crosscheck.cells import check_workload, time_limit
from tabverify.crosscheck.report import Report, crosscheck
from tabverify.errors import TableError
from tabverify.table.grid import Grid


@dataclass(frozen=True)
class TableResult:
    """One target table against one source document."""

    target_table: int
    """The target table's number (from 1, as ``tabverify tables`` lists them)."""
    source: str
    """The source document as named by the caller (a path as typed, an uploaded file's name)."""
    title: str
    """``TARGET table N <- SOURCE`` with the documents' file names: a report section's heading."""
    report: Report


@dataclass(frozen=True)
class DocumentCheck:
    """Every result of one run, in target-table order, then source order."""

    target: str
    results: tuple[TableResult, ...]

    @property
    def discrepancies(self) -> int:
        """Wrong copies found in all results."""
        return sum(len(result.report.discrepancies) for result in self.results)

    def sections(self) -> list[tuple[str, Report]]:
        """(title, report) pairs, as :func:`tabverify.crosscheck.html.render_html` takes them."""
        return [(result.title, result.report) for result in self.results]

    def to_dict(self) -> dict[str, object]:
        """The JSON payload: ``{"target", "discrepancies", "results": [{"target_table", "source",
        **Report.to_dict()}, ...]}``."""
        return {
            "target": self.target,
            "discrepancies": self.discrepancies,
            "results": [
                {"target_table": r.target_table, "source": r.source, **r.report.to_dict()}
                for r in self.results
            ],
        }


def check_documents(
    target: str,
    target_tables: Sequence[Grid],
    sources: Sequence[tuple[str, Sequence[Grid]]],
    table: int | None = None,
    timeout_s: float | None = None,
) -> DocumentCheck:
    """Crosscheck the target's tables (only the ``table``-th, from 1, when given) against every table
    of each source; ``target`` and each source's name are what the results call them.

    Raises:
        TableError: ``table`` is not one of the target's table numbers.
        TableSizeError: the run would weigh more than :func:`tabverify.crosscheck.check_workload` allows.
        TimeLimitError: the comparisons took more than ``timeout_s`` seconds (None: no limit; see
            :func:`tabverify.crosscheck.cells.time_limit`).
    """
    if table is not None:
        if not 1 <= table <= len(target_tables):
            raise TableError(
                f"table {table}: {target} has {len(target_tables)} table(s); choose 1 to {len(target_tables)}"
            )
        chosen = [(table, target_tables[table - 1])]
    else:
        chosen = list(enumerate(target_tables, start=1))
    check_workload([grid for _, grid in chosen], [grid for _, tables in sources for grid in tables])
    target_name = PurePath(target).name
    with time_limit(timeout_s):
        results = [
            TableResult(
                number,
                name,
                f"{target_name} table {number} <- {PurePath(name).name}",
                crosscheck(grid, tables),
            )
            for number, grid in chosen
            for name, tables in sources
        ]
    return DocumentCheck(target, tuple(results))
