"""Crosscheck: find the source table of a target table and verify every copied number (arXiVeri)."""

from tabverify.crosscheck.cells import Alignment, CellPair, align, match_cells
from tabverify.crosscheck.report import Discrepancy, DiscrepancyKind, Report, as_grids, crosscheck
from tabverify.crosscheck.tables import MIN_SUPPORT, Candidate, match_table, rank_tables

__all__ = [
    "MIN_SUPPORT", "Alignment", "Candidate", "CellPair", "Discrepancy", "DiscrepancyKind", "Report",
    "align", "as_grids", "crosscheck", "match_cells", "match_table", "rank_tables",
]  # fmt: skip
