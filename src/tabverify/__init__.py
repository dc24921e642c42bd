"""tabverify: check text against structured evidence, and measure how well the checking works."""

from tabverify.crosscheck import Report, crosscheck
from tabverify.errors import TabverifyError
from tabverify.table import Cell, Quantity, Table, load_table
from tabverify.verify import Label, TableVerifier, Verdict, verify

__version__ = "0.1.0"

__all__ = [
    "Cell",
    "Label",
    "Quantity",
    "Report",
    "Table",
    "TableVerifier",
    "TabverifyError",
    "Verdict",
    "crosscheck",
    "load_table",
    "verify",
]
