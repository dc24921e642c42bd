"""render_schema: a database schema as bounded prompt text (the ClaimDB agent's first message and the
construction pipeline's generation and judging prompts)."""

from __future__ import annotations

from tabverify.database import ColumnSchema, ForeignKey, Schema, TableSchema
from tabverify.database.schema import render_schema


def test_render_schema_shows_keys_types_and_descriptions() -> None:
    drivers = TableSchema(
        "drivers",
        (
            ColumnSchema("driver_id", "INTEGER", primary_key=True, description="driver id"),
            ColumnSchema(
                "full name", "TEXT", description="the driver's  name", value_description="the driver's name"
            ),
            ColumnSchema("dob", "", description="date of birth", value_description="YYYY-MM-DD"),
        ),
        primary_key=("driver_id",),
        row_count=840,
    )
    results = TableSchema(
        "results",
        (ColumnSchema("driver_id", "INTEGER"),),
        foreign_keys=(ForeignKey(("driver_id",), "drivers", ("driver_id",)),),
        row_count=1_200_000,
        row_count_exact=False,
    )
    standings = TableSchema("standings", (ColumnSchema("points", "REAL"),), kind="view")
    text = render_schema(Schema("f1", "sqlite", (drivers, results, standings)))
    assert text.splitlines() == [
        "table drivers (840 rows); primary key: driver_id",
        "  - driver_id (INTEGER)",  # the description only repeats the column name
        '  - "full name" (TEXT): the driver\'s name',  # the value description only repeats the description
        "  - dob (untyped): date of birth; values: YYYY-MM-DD",
        "table results (~1,200,000 rows)",
        "  - driver_id (INTEGER)",
        "  foreign key (driver_id) -> drivers(driver_id)",
        "view standings (unknown rows)",
        "  - points (REAL)",
    ]


def test_render_schema_stays_within_its_bound() -> None:
    long = "a long description of the column " * 20
    tables = tuple(
        TableSchema(
            f"table_{t}",
            tuple(
                ColumnSchema(f"col {c}", "TEXT", description=long, value_description=long) for c in range(30)
            ),
            row_count=1_000_000,
        )
        for t in range(40)
    )
    schema = Schema("big", "sqlite", tables)
    for limit in (200_000, 60_000, 20_000, 3_000):
        text = render_schema(schema, limit)
        assert len(text) <= limit + 100
    assert '"col 1" (TEXT): a long description' in render_schema(schema, 100_000)
    small = render_schema(schema, 3_000)
    assert "more tables, columns not shown" in small and "table_39" in small
