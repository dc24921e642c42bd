"""Tables: Table, Cell, Grid, the number model (Number, Quantity, Measurement) and readers.

Imports nothing else from tabverify but errors and files.
"""

from tabverify.table.documents import read_markdown_tables, read_table_text, read_tables
from tabverify.table.grid import Grid, GridCell
from tabverify.table.html import read_html_tables
from tabverify.table.latex import read_latex_tables
from tabverify.table.model import Cell, CellRef, Table
from tabverify.table.numbers import Agreement, Number, agreement, parse_decimal
from tabverify.table.quantity import Quantity, parse_date, parse_quantity
from tabverify.table.readers import (
    from_dataframe,
    load_table,
    read_csv,
    read_json,
    read_tabfact_csv,
    table_from_json,
)
from tabverify.table.scientific import Measurement, compare, parse_measurement

__all__ = [
    "Agreement", "Cell", "CellRef", "Grid", "GridCell", "Measurement", "Number", "Quantity", "Table",
    "agreement", "compare", "from_dataframe", "parse_decimal", "load_table", "parse_date", "parse_measurement", "parse_quantity", "read_csv",
    "read_html_tables", "read_json", "read_latex_tables", "read_markdown_tables", "read_table_text",
    "read_tables",
    "read_tabfact_csv", "table_from_json",
]  # fmt: skip
