"""What a query returns: :class:`QueryResult` (rows as plain Python values, caps, error) and the
conversion of engine values (Decimal, dates, bytes, huge text) into bounded plain values."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tabverify.errors import DatabaseError, UnsafeQueryError

MAX_CELL_CHARS = 10_000
"""Text values longer than this are cut (and end with :data:`CUT_MARK`)."""

CUT_MARK = "…[cut]"

MAX_ROWS_LIMIT = 100_000
MAX_TIMEOUT_S = 600.0

ERROR_KINDS = ("refused", "timeout", "syntax", "execution")


@dataclass(frozen=True)
class QueryResult:
    """The outcome of one :meth:`Database.query`: rows (plain Python values) or an error, never both.

    ``truncated`` says that the query produced more rows (or bytes) than were returned;
    ``total_rows`` is then the full row count when a bounded follow-up count finished in time.
    """

    sql: str
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[object, ...], ...] = ()
    truncated: bool = False
    total_rows: int | None = None
    error: str | None = None
    error_kind: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the query ran (``error`` is None)."""
        return self.error is None

    @property
    def notice(self) -> str | None:
        """A sentence for a reader (person or model) when rows were left out, else None."""
        if not self.truncated:
            return None
        shown = len(self.rows)
        if self.total_rows is not None:
            of = f"{self.total_rows:,}"
        else:
            of = "more than that (the full count did not finish in time)"
        return (
            f"showing {shown:,} of {of} rows; aggregate in SQL (COUNT, SUM, GROUP BY, LIMIT) "
            "instead of reading rows"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite floats as strings, so the JSON stays strict)."""
        return {
            "sql": self.sql,
            "ok": self.ok,
            "columns": list(self.columns),
            "rows": [[_json_value(v) for v in row] for row in self.rows],
            "truncated": self.truncated,
            "total_rows": self.total_rows,
            "notice": self.notice,
            "error": self.error,
            "error_kind": self.error_kind,
            "elapsed_s": round(self.elapsed_s, 4),
        }

    def raise_for_error(self) -> QueryResult:
        """Return self when the query ran; raise :class:`UnsafeQueryError` for a refused query and
        :class:`DatabaseError` for any other error (for callers that want exceptions)."""
        if self.error is None:
            return self
        if self.error_kind == "refused":
            raise UnsafeQueryError(self.error)
        raise DatabaseError(self.error)


def _json_value(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def cut_text(text: str) -> str:
    """``text`` cut to :data:`MAX_CELL_CHARS` characters (with a visible mark) when longer."""
    if len(text) > MAX_CELL_CHARS:
        return text[:MAX_CELL_CHARS] + CUT_MARK
    return text


def plain(value: object, depth: int = 0) -> object:
    """An engine value as a plain Python value: int, float, str, bool, None (lists and dicts of
    them for nested types). Dates are ISO strings, Decimals int or float, bytes a short text."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return cut_text(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return float(value)
        if value == value.to_integral_value():
            return int(value)
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        return "0x" + data.hex() if len(data) <= 16 else f"<{len(data):,} bytes>"
    if isinstance(value, dt.timedelta | uuid.UUID):
        return str(value)
    if depth < 8 and isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value[:MAX_CELL_CHARS]]
    if depth < 8 and isinstance(value, dict):
        return {cut_text(str(k)): plain(v, depth + 1) for k, v in list(value.items())[:MAX_CELL_CHARS]}
    return cut_text(str(value))


def value_size(value: object) -> int:
    """Approximate bytes a plain value takes in the output (what ``max_bytes`` counts)."""
    if value is None or isinstance(value, bool):
        return 4
    if isinstance(value, int | float):
        return 8
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, list):
        return 2 + sum(value_size(v) + 1 for v in value)
    if isinstance(value, dict):
        return 2 + sum(len(k) + 3 + value_size(v) for k, v in value.items())
    return len(str(value))


def collect(
    batches: Iterable[Sequence[Sequence[object]]], max_rows: int, max_bytes: int
) -> tuple[list[tuple[object, ...]], bool]:
    """Rows converted to plain values until ``max_rows`` or ``max_bytes`` is reached; the flag says
    whether rows were left out. ``batches`` should yield at most ``max_rows + 1`` rows in all."""
    rows: list[tuple[object, ...]] = []
    size = 0
    for batch in batches:
        for raw in batch:
            if len(rows) >= max_rows:
                return rows, True
            row = tuple(plain(v) for v in raw)
            size += sum(value_size(v) for v in row) + 2
            if size > max_bytes:
                return rows, True
            rows.append(row)
    return rows, False


def check_limits(max_rows: int, max_bytes: int, timeout_s: float) -> None:
    """Raise ValueError for caps outside their ranges (a programming error, not a query error)."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= MAX_ROWS_LIMIT:
        raise ValueError(f"max_rows must be an integer from 1 to {MAX_ROWS_LIMIT:,}, got {max_rows!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive integer, got {max_bytes!r}")
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not math.isfinite(timeout_s)
        or not 0 < timeout_s <= MAX_TIMEOUT_S
    ):
        raise ValueError(
            f"timeout_s must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, got {timeout_s!r}"
        )
