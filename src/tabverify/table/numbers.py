"""The one number model: a number as written (value, written precision, percent, scale), how its
numeric token is read, and how two numbers agree - ``exact``, ``rounded``, ``scaled`` or ``different``.

Two readers build on this module and keep what is particular to their tables:

- :class:`~tabverify.table.quantity.Quantity` (``parse_quantity``) reads what a TabFact cell or a
  statement phrase stands for - dates, durations, ranges and scores, ordinals, number words - as a
  float, because the program executor does arithmetic on it (sums, averages, differences);
- :class:`~tabverify.table.scientific.Measurement` (``parse_measurement``) reads a scientific-table
  cell through its LaTeX, ``±`` spread, deltas and several metrics, as a :class:`~decimal.Decimal`
  that keeps its written precision (``45.30`` has two decimals), which the crosscheck compares.

Both read the numeric token with :func:`parse_decimal` (sign, thousands separators, decimals,
scientific notation ``1.5e3`` = 1500; out-of-range values such as ``1e999999`` are not numbers, never
infinity and never a prefix such as 1), and both decide precision equality with :func:`reads_as`:
"``precise`` written at the precision of ``written`` gives ``written``". What stays distinct is
the rule each applies, because each answers a different question and its benchmark was measured
with it:

- :func:`rounds_to` compares two *written* numbers (a copied table cell and its source): rounding
  half up, half to even or truncation, the coarser side really coarser and with at least two
  significant digits (``0.3`` says nothing about ``0.3535``);
- :func:`same_at_precision` compares a *computed* float (an average) or a longer cell value with
  a statement's literal, as TabFact statements quote them: half to even or truncation on the
  float scaled to the literal's decimals, any number of significant digits (``4`` for 4.4).

:class:`Number` and :func:`agreement` are the written-number comparison with both tolerances
(rounding and the x100 percent/fraction scale); ``Measurement.number`` gives a measurement's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal, InvalidOperation
from enum import StrEnum

MAX_EXPONENT = 300
"""Numbers beyond ``10**±300`` are not read as numbers (they would overflow floats and arithmetic)."""

_TOKEN = re.compile(r"[-+]?(?:(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
# full-width forms (U+FF01-FF5E: "８１．９", "％") and the ideographic space, as NFKC maps them; the
# rest of NFKC is not applied (it would read a superscript "45.3²" as 45.32)
_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_ONE = Decimal(1)
# wide enough to hold any float exactly, so that Decimal arithmetic on floats never rounds
_EXACT = Context(prec=800, Emax=1000, Emin=-1100)
_HUNDRED = Decimal(100)

WRITTEN_ROUNDINGS = (ROUND_HALF_UP, ROUND_HALF_EVEN, ROUND_DOWN)
"""How a copied number may have been shortened: rounded half up, half to even, or truncated."""

COMPUTED_ROUNDINGS = (ROUND_HALF_EVEN, ROUND_DOWN)
"""How a computed value is read at a statement's precision (Python's ``round``, or truncation)."""


def ascii_forms(text: str) -> str:
    """``text`` with full-width characters written as their ASCII forms (``８１．９％`` -> ``81.9%``),
    as Unicode NFKC normalisation writes them; other characters are kept."""
    return text.translate(_FULL_WIDTH)


def parse_decimal(token: str) -> Decimal | None:
    """The value of a numeric token, with its written precision, or None when it is not one.

    Accepts a sign (``+``, ``-``, U+2212), digits with thousands commas in groups of three
    (``52,340``, ``1,000,000``; ``1,2`` and ``1_234`` are not numbers), a decimal part (``.94``,
    ``12.``), an exponent (``1.5e3``, ``2E-4``) and full-width digits (``８１．９``). Values whose
    magnitude is beyond ``10**±``:data:`MAX_EXPONENT` are refused rather than read as infinity or zero.

    >>> parse_decimal("1,234.50"), parse_decimal("1e3"), parse_decimal("1e999999"), parse_decimal("1,2")
    (Decimal('1234.50'), Decimal('1E+3'), None, None)
    """
    token = ascii_forms(token).strip().replace("\u2212", "-")
    if not _TOKEN.fullmatch(token):
        return None
    token = token.replace(",", "")
    mantissa, _, exponent = token.lower().partition("e")
    if exponent and len(exponent.lstrip("+-").lstrip("0")) > 6:
        return None  # an exponent of a million digits is refused before Decimal sees it
    try:
        value = Decimal(mantissa.rstrip(".") or "0")
        shift = int(exponent) if exponent else 0
    except (InvalidOperation, ValueError):
        return None
    # the magnitude is checked before the exponent is applied (past Decimal's range it overflows);
    # the constructor applies it exactly, every written digit kept
    if abs((value.adjusted() if value else 0) + shift) > MAX_EXPONENT:
        return None
    return Decimal(f"{mantissa.rstrip('.')}e{shift}") if shift else value


def decimals_of(value: Decimal) -> int:
    """Digits written after the decimal point (``45.30`` -> 2, ``1.5e3`` -> 0)."""
    exponent = value.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def reads_as(
    precise: Decimal,
    written: Decimal,
    exponent: int,
    roundings: Iterable[str] = WRITTEN_ROUNDINGS,
    tolerance: Decimal | None = None,
    context: Context | None = None,
) -> bool:
    """True when ``precise``, brought to a multiple of ``10**exponent`` by one of ``roundings``, is
    ``written`` (or within ``tolerance`` of it, strictly). Non-finite values, and values with more
    digits than ``context`` (default: the current decimal context) holds, agree with nothing.

    This is the one place precision equality is decided; :func:`rounds_to` and
    :func:`same_at_precision` are its two rules.
    """
    if not precise.is_finite() or not written.is_finite():
        return False
    quantum = _ONE.scaleb(exponent)
    for rounding in roundings:
        try:
            shortened = precise.quantize(quantum, rounding=rounding, context=context)
        except InvalidOperation:
            return False
        if tolerance is None:
            if shortened == written:
                return True
        elif (context or _EXACT).subtract(shortened, written).copy_abs() < tolerance:
            return True
    return False


def rounds_to(precise: Decimal, coarse: Decimal) -> bool:
    """True when written number ``precise`` written to the precision of ``coarse`` gives ``coarse``,
    by rounding half up, half to even, or truncation, where ``coarse`` really has fewer digits and
    at least two significant ones."""
    exponent = coarse.as_tuple().exponent
    p_exponent = precise.normalize().as_tuple().exponent
    if not isinstance(exponent, int) or not isinstance(p_exponent, int) or p_exponent >= exponent:
        return False
    if coarse.adjusted() - exponent < 1:
        return False  # one significant digit (0.3, 4) is too coarse to say anything
    return reads_as(precise, coarse, exponent, WRITTEN_ROUNDINGS)


def only_precision_differs(a: Number, b: Number) -> bool:
    """True when one written number is the other written with fewer digits, however few are left
    (0.880 and 0.9): they do not contradict each other, although one significant digit is too
    coarse for :func:`agreement` to call them the same (:func:`rounds_to`)."""
    x, y = (
        (a.scaled, b.scaled)
        if a.scale != _ONE and b.scale != _ONE and a.scale != b.scale
        else (a.value, b.value)
    )
    for precise, coarse in ((x, y), (y, x)):
        exponent = coarse.as_tuple().exponent
        p_exponent = precise.normalize().as_tuple().exponent
        if isinstance(exponent, int) and isinstance(p_exponent, int) and p_exponent < exponent:
            if reads_as(precise, coarse, exponent, WRITTEN_ROUNDINGS):
                return True
    return False


_COMPUTED_TOLERANCE = Decimal(1e-6)


def same_at_precision(precise: float, written: float, decimals: int) -> bool:
    """True when ``precise`` (a computed value, or a value written with more decimals) read at
    ``decimals`` decimals - rounded half to even or truncated - is ``written``.

    The value is scaled in floating point first and the result compared with a tolerance of 1e-6,
    exactly as the TabFact accuracy in docs/benchmarks.md was measured (so an average of 4.35 reads
    as 4.3 and as 4.4). Infinite values, and precisions a float cannot scale to, agree with nothing.
    """
    try:
        scale = 10**decimals
        scaled_precise, scaled_written = precise * scale, written * scale
    except OverflowError:
        return False
    if not (math.isfinite(scaled_precise) and math.isfinite(scaled_written)):
        return False
    return reads_as(
        Decimal(scaled_precise), Decimal(scaled_written), 0, COMPUTED_ROUNDINGS, _COMPUTED_TOLERANCE, _EXACT
    )


class Agreement(StrEnum):
    """How two written numbers relate: the comparison vocabulary of tabverify."""

    EXACT = "exact"  # the same number (90.6 and 90.60 count as the same)
    ROUNDED = "rounded"  # one is the other rounded or truncated to fewer digits (0.354 / 0.3535)
    SCALED = "scaled"  # equal after a factor of 100, as percent vs fraction (68.4 / 0.684)
    DIFFERENT = "different"


@dataclass(frozen=True, slots=True)
class Number:
    """A number as written.

    Attributes:
        value: the number without its scale, keeping the written precision (``45.30``, ``21`` of ``21M``).
        percent: a ``%`` was written after it.
        scale: the multiplier a suffix stands for (``M`` -> 10**6), 1 when none was written.
    """

    value: Decimal
    percent: bool = False
    scale: Decimal = _ONE

    @property
    def exponent(self) -> int:
        """The written precision as a power of ten: ``45.30`` -> -2, ``21`` -> 0."""
        exponent = self.value.as_tuple().exponent
        return exponent if isinstance(exponent, int) else 0

    @property
    def scaled(self) -> Decimal:
        """The value with its scale applied (``21M`` -> 21000000)."""
        return self.value * self.scale if self.scale != _ONE else self.value


def agreement(
    a: Number, b: Number, rounding: bool = True, scale: bool = True, copy: bool = False
) -> Agreement:
    """How written number ``a`` relates to written number ``b``.

    Both scaled with different scales (``1.5M`` / ``1500K``) compare what they stand for; otherwise a
    suffix is a unit and the written values compare (``4.0G`` / ``4.0``).

    Args:
        rounding: accept one value being the other rounded/truncated to fewer written digits
            (:func:`rounds_to`).
        scale: accept a factor of 100 between them (percent vs fraction), with rounding if allowed.
        copy: ``a`` was copied from ``b``: a copy may lose digits but never gains them, so ``a``
            rounds ``b`` (45.6 from 45.63) but not the other way (87.5 is no copy of 88).
    """
    if a.scale != _ONE and b.scale != _ONE and a.scale != b.scale:
        x, y = a.scaled, b.scaled
    else:
        x, y = a.value, b.value
    return agreement_of_values(x, y, rounding, scale, copy)


def agreement_of_values(
    x: Decimal, y: Decimal, rounding: bool = True, scale: bool = True, copy: bool = False
) -> Agreement:
    """:func:`agreement` of two written values (no suffix, no percent sign)."""
    if x == y:
        return Agreement.EXACT
    if rounding and (rounds_to(y, x) or (not copy and rounds_to(x, y))):
        return Agreement.ROUNDED
    if scale:
        for big, small in ((x, y), (y, x)):
            scaled = small * _HUNDRED
            if scaled == big or (rounding and (rounds_to(scaled, big) or rounds_to(big, scaled))):
                return Agreement.SCALED
    return Agreement.DIFFERENT
