"""Crosscheck: find the source table of a target table and verify every copied number (arXiVeri).

Tables are numbered from 1 in every output (``Report.to_dict``, the bench JSON, the HTML page), as
``tabverify tables`` lists them; cell positions are 0-based ``(row, column)`` offsets into the
expanded grid, header rows included.
"""

from tabverify.crosscheck.cells import Alignment, CellPair, align, check_workload, match_cells
from tabverify.crosscheck.report import Discrepancy, DiscrepancyKind, Report, as_grids, crosscheck
from tabverify.crosscheck.tables import (
    DEFAULT_MODEL,
    MAX_ALIGNED_TABLES,
    Candidate,
    MatchModel,
    match_table,
    rank_tables,
)

__all__ = [
    "DEFAULT_MODEL", "MAX_ALIGNED_TABLES", "Alignment", "MatchModel", "Candidate", "CellPair", "Discrepancy", "DiscrepancyKind", "Report",
    "align", "as_grids", "check_workload", "crosscheck", "match_cells", "match_table", "rank_tables",
]  # fmt: skip
