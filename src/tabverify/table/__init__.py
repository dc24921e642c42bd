"""Tables: Table, Cell, Quantity and readers. Imports nothing else from tabverify but errors."""

from tabverify.table.model import Cell, CellRef, Table
from tabverify.table.quantity import Quantity, parse_date, parse_quantity
from tabverify.table.readers import (
    from_dataframe,
    load_table,
    read_csv,
    read_json,
    read_tabfact_csv,
    table_from_json,
)

__all__ = [
    "Cell", "CellRef", "Quantity", "Table", "from_dataframe", "load_table", "parse_date",
    "parse_quantity", "read_csv", "read_json", "read_tabfact_csv", "table_from_json",
]  # fmt: skip
