"""How program values compare: fuzzy text matching and precision-aware number matching.

These rules are shared by the executor and the entity linker so that a literal the linker
extracts always matches the cell it came from. Numbers are read by :mod:`tabverify.table` and
precision equality is decided there (:func:`tabverify.table.numbers.same_at_precision`, the rule
for a computed value against a statement's literal); what stays here is what only programs need:
dates against years, ranges against plain numbers, and the ordering of values (:func:`order`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from tabverify.table import Cell, Quantity, parse_quantity
from tabverify.table.numbers import decimals_of, parse_decimal, same_at_precision
from tabverify.table.quantity import MONTHS

_PUNCT_RE = re.compile(r"[^\w\s.%$-]|(?<!\d)[.](?!\d)|(?<!\w)-(?!\w)|(?<=\w)-(?=\w)")


def _fold_accents(text: str) -> str:
    """Latin letters without their accents ("zürich" -> "zurich", "álvarez" -> "alvarez"):
    statements and programs often drop the diacritics the table writes.

    Only a mark on a Latin (ASCII) letter is dropped, after the canonical decomposition (NFD):
    the compatibility forms stay apart ("10²" is not "102", "2¹" with a footnote is not "21"), and
    so do the letters other scripts make with a mark (kana "ば" is not "は", Cyrillic "й" is not
    "и")."""
    if text.isascii():
        return text
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) and out and out[-1].isascii() and out[-1].isalpha():
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


_LEADING_SIGN_RE = re.compile(r"\s*([-+\u2212])\s*(?=\d)")


@lru_cache(maxsize=200_000)
def normalize_text(text: str) -> str:
    """Lower-case, fold accents, unify quotes, drop punctuation that carries no meaning, collapse
    spaces.

    A sign before the number a text starts with is kept, written against it ("+ 2" -> "+2",
    "- 2" and "\u22122" -> "-2"): golf's "+ 2" and "- 2" are different values, not the same text "2"
    with punctuation around it."""
    sign = ""
    match = _LEADING_SIGN_RE.match(text)
    if match is not None:
        sign = "+" if match.group(1) == "+" else "-"
        text = text[match.end() :]
    t = _fold_accents(text.lower()).replace("''", '"').replace("`", "'").replace("'s", " 's")
    t = _PUNCT_RE.sub(" ", t)
    return sign + " ".join(t.split())


@lru_cache(maxsize=200_000)
def literal_quantity(text: str) -> Quantity | None:
    """Parse a program literal (cached: literals recur in every row of a filter), as a cell of the
    same text reads (:func:`quantity_of`, a number grouped by spaces included)."""
    return _regrouped(text, parse_quantity(text))


_LOOSE_NUMBER_RE = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")


_MONTH = "(?:" + "|".join(max((m for m in MONTHS if MONTHS[m] == n), key=len) for n in range(1, 13)) + ")"
"""A month written in full ("may", "september"), not abbreviated."""
_EMBEDDED_DATE_RE = re.compile(
    rf"\b(?:{_MONTH} \d{{1,2}} , \d{{4}}|\d{{1,2}} {_MONTH} \d{{4}})\b", re.IGNORECASE
)


@lru_cache(maxsize=200_000)
def loose_quantity(text: str) -> Quantity | None:
    """The first full date ("died october 28 , 1948" -> that day) or stand-alone number in free
    text ("mark price , 18 points" -> 18), whichever comes first, for cells whose text is not a
    number as a whole. A number beyond float range is no number (never infinity)."""
    dated = _EMBEDDED_DATE_RE.search(text)
    match = _LOOSE_NUMBER_RE.search(text)
    if dated is not None and (match is None or dated.start() <= match.start()):
        q = parse_quantity(dated.group(0).lower())
        if q is not None and q.kind == "date":
            return Quantity(text, q.value, q.kind, q.decimals)
    if match is None:
        return None
    value = parse_decimal(match.group(0).replace(",", ""))
    if value is None:
        return None
    return Quantity(text, float(value), "number", decimals_of(value))


_WRITTEN_NUMBER_RE = re.compile(r"[-+\u2212]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


def out_of_range_number(value: object) -> str | None:
    """The number a program value writes but tabverify does not read as one because of its size
    (beyond ``10**±300``, ``tabverify.table.numbers.MAX_EXPONENT``: ``1e308``, 400 digits), or
    None when the value reads as a number or writes none.

    For a literal the whole text must be such a number; for a cell, the number :func:`quantity_of`
    would have read from it (the whole text, else its first stand-alone number).
    """
    if isinstance(value, bool) or quantity_of(value) is not None:
        return None
    if isinstance(value, Cell):
        text = value.text.strip()
        if not _WRITTEN_NUMBER_RE.fullmatch(text):
            match = _LOOSE_NUMBER_RE.search(text)
            if match is None:
                return None
            text = match.group(0)
    elif isinstance(value, str):
        text = value.strip()
        if not _WRITTEN_NUMBER_RE.fullmatch(text):
            return None
    else:
        return None
    # without its commas the token has the shape parse_decimal reads ("1,2" is refused for its
    # commas, not its size), so refusing it now means its magnitude is out of range
    plain = text.replace(",", "")
    mantissa = plain.lower().partition("e")[0]
    if parse_decimal(plain) is not None or not mantissa.strip("+-\u2212.0"):
        return None
    return text


class DateNumber(float):
    """A computed value that is a date: the max or min of a date column, held as the number
    dates are ordered by (YYYYMMDD, or MMDD without a year). It prints and serialises as that
    number, like any computed value, but compares as a date (:func:`quantity_of`)."""


_SPACE_GROUPED_RE = re.compile(r"([-+\u2212]?) ?([1-9]\d{0,2}(?: \d{3}){1,5})(\.\d+)?")


@lru_cache(maxsize=200_000)
def _space_grouped(text: str) -> Quantity | None:
    """A text that is one number with its thousands set apart by spaces ("1 630", "2 009 411",
    "- 1 630", "1 630.5": the SI style), or None. The first group has no leading zero ("0 100" is
    two numbers), and at most five groups follow it, so the value stays far inside float range."""
    match = _SPACE_GROUPED_RE.fullmatch(text.strip())
    if match is None:
        return None
    sign, digits, fraction = match.groups()
    value = parse_decimal(digits.replace(" ", "") + (fraction or ""))
    if value is None:
        return None
    return Quantity(text, float(-value if sign in ("-", "\u2212") else value), "number", decimals_of(value))


def _regrouped(text: str, q: Quantity | None) -> Quantity | None:
    """``q`` (how :mod:`tabverify.table` reads ``text``), unless the text is a whole number grouped
    by spaces, which that reading takes for its first group ("1 630" as 1)."""
    if q is not None and q.kind == "number" and " " in text:
        return _space_grouped(text) or q
    return q


def _cell_quantity(cell: Cell) -> Quantity | None:
    """The number or date a cell stands for: its own reading (:func:`_regrouped`), else the first
    stand-alone number of its text (:func:`loose_quantity`)."""
    q = cell.quantity
    if q is None:
        return loose_quantity(cell.text)
    return _regrouped(cell.text, q)


def quantity_of(value: object) -> Quantity | None:
    """The number or date a program value stands for, or None."""
    if isinstance(value, Cell):
        return _cell_quantity(value)
    if isinstance(value, bool):
        return None
    if isinstance(value, DateNumber):
        return Quantity(format_number(value), float(value), "date", decimals=0)
    if isinstance(value, (int, float)):
        return Quantity(repr(value), float(value), "number", decimals=-1)
    if isinstance(value, str):
        return literal_quantity(value)
    return None


def text_of(value: object) -> str:
    """The display text of a program value."""
    if isinstance(value, Cell):
        return value.text
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def format_number(value: float) -> str:
    """Print a number without a useless '.0' and with at most 4 decimals."""
    if value == int(value):
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


def _contains(haystack: str, needle: str) -> bool:
    if not needle:
        return False
    return f" {needle} " in f" {haystack} "


def text_match(left: str, right: str) -> bool:
    """Do two texts name the same thing: equal after normalisation, or one contains the other
    as whole words ("hong kong" matches "hong kong , china"), or one misspelt letter in names of
    8+ characters (see :func:`_one_typo`). Two texts that both read as numbers or dates are never
    matched with a typo: their values decide (:func:`values_match`)."""
    a, b = normalize_text(left), normalize_text(right)
    if a == b:
        return bool(a)
    if _contains(a, b) or _contains(b, a):
        return True
    return _one_typo(a, b) and (literal_quantity(left) is None or literal_quantity(right) is None)


INFLECTIONS = ("s", "es", "d", "ed")
"""Endings a word written in a program may take in a cell ("retire" / "retired", "america" /
"americas"): plural and past forms."""


@lru_cache(maxsize=200_000)
def inflected_forms(literal: str) -> tuple[str, ...]:
    """The normalised literal with its last word inflected (:data:`INFLECTIONS`), when that word
    is made of 4+ letters; else no form. A cell holding one of them as whole words names the
    literal's thing (:func:`values_match`)."""
    words = normalize_text(literal).split()
    if not words or len(words[-1]) < 4 or not words[-1].isalpha():
        return ()
    return tuple(" ".join([*words[:-1], words[-1] + ending]) for ending in INFLECTIONS)


def _inflected_in(cell: str, literal: str) -> bool:
    """Does the cell hold the literal with its last word inflected, as whole words."""
    haystack = normalize_text(cell)
    return any(_contains(haystack, form) for form in inflected_forms(literal))


def _one_typo(a: str, b: str) -> bool:
    """At most one inserted, deleted or replaced character, for texts of 8+ characters
    (misspelt names in statements: "scuderi sant ambroeus").

    The typo must touch only letters: the replaced, inserted or deleted character is a letter,
    or a space between two letters. A digit, a decimal point, a sign or a space beside a digit is
    never a typo, so two numbers or dates one character apart ("september 7 2024" and
    "september 8 2024", "1234567.5" and "1234567.6") are different values, not a misspelling.
    """
    if min(len(a), len(b)) < 8 or abs(len(a) - len(b)) > 1 or a[0] != b[0]:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    if i == len(a) == len(b):
        return True
    if len(a) == len(b):
        # one replaced character
        return a[i + 1 :] == b[i + 1 :] and _letter_edit(a, i) and _letter_edit(b, i)
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    # one inserted character: the first difference is where the extra one stands
    return longer[i + 1 :] == shorter[i:] and _letter_edit(longer, i)


def _letter_edit(text: str, i: int) -> bool:
    """May the character at ``i`` be a typo: a letter, or a space with letters on both sides."""
    ch = text[i]
    if ch.isalpha():
        return True
    return ch == " " and 0 < i < len(text) - 1 and text[i - 1].isalpha() and text[i + 1].isalpha()


def aligned_numbers(left: Quantity, right: Quantity) -> tuple[float, float] | None:
    """Bring two quantities to a common scale: dates vs years compare years, dates without a year
    compare month and day."""
    a, b = left.value, right.value
    if left.kind == "date" or right.kind == "date":
        if left.kind == "date" and right.kind == "date":
            if a < 10000 or b < 10000:
                return a % 10000, b % 10000
            return a, b
        if left.kind == "date" and right.kind in ("year", "number") and a >= 10000:
            return a // 10000, b
        if right.kind == "date" and left.kind in ("year", "number") and b >= 10000:
            return a, b // 10000
        if left.kind == "date" and right.kind in ("number", "ordinal") and a < 10000:
            return None
        return None
    return a, b


def _same_at_precision(precise: float, written: float, decimals: int) -> bool:
    """The program rule of precision equality (:func:`tabverify.table.numbers.same_at_precision`)."""
    return same_at_precision(precise, written, decimals)


def numbers_equal(left: Quantity, right: Quantity) -> bool:
    """Numeric equality at the written precision: a computed value (or a value written with more
    decimals) is rounded to the precision of the other side before comparing."""
    pair = aligned_numbers(left, right)
    if pair is None:
        return False
    a, b = pair
    if (left.kind == "range") != (right.kind == "range"):
        # "7 - 5" is not 7, but a computed maximum of 2 may be quoted as the score "2 - 0"
        if min(left.decimals, right.decimals) >= 0:
            return False
    elif left.second != right.second:
        return False
    if a == b:
        return True
    # a computed value, or one written with more decimals, is read at the other's precision:
    # rounded or truncated ("2069.16" for 2069.1666)
    if left.decimals < 0 or left.decimals > right.decimals >= 0:
        return _same_at_precision(a, b, right.decimals)
    if right.decimals < 0 or right.decimals > left.decimals >= 0:
        return _same_at_precision(b, a, left.decimals)
    return abs(a - b) <= 1e-9


def values_match(left: object, right: object) -> bool:
    """Equality as the eq / filter_eq functions see it: same text (a cell may hold a word of a
    program's literal inflected, see :func:`inflected_forms`), or same number or date."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left == right
    left_is_text = isinstance(left, (Cell, str))
    right_is_text = isinstance(right, (Cell, str))
    if left_is_text and right_is_text:
        if text_match(text_of(left), text_of(right)):
            return True
        # a word the program writes may stand in the cell inflected ("retire" for "retired")
        if isinstance(left, Cell) and isinstance(right, str) and _inflected_in(left.text, right):
            return True
        if isinstance(right, Cell) and isinstance(left, str) and _inflected_in(right.text, left):
            return True
    ql, qr = quantity_of(left), quantity_of(right)
    if ql is None or qr is None:
        return False
    if left_is_text and right_is_text:
        # a decade the statement or program writes ("1940s") holds the ten years; a decade in a
        # cell does not hold a given year (the table does not say which one)
        decade = _in_decade(text_of(left), qr) if not isinstance(left, Cell) else None
        if decade is None and not isinstance(right, Cell):
            decade = _in_decade(text_of(right), ql)
        if decade is not None:
            return decade
    return numbers_equal(ql, qr)


_DECADE_RE = re.compile(r"(1\d|20)\d0\s?'?s")


def decade_start(text: str) -> int | None:
    """The first year of the decade ``text`` is written as ("1940s", "1940 's": 1940); None when it
    is no decade. A year ending in 00 ("1900s") is left out: it may name a century."""
    written = text.strip().lower()
    if _DECADE_RE.fullmatch(written) is None or written[2:4] == "00":
        return None
    return int(written[:4])


def _in_decade(text: str, other: Quantity) -> bool | None:
    """Whether ``other`` (a year, or a full date) falls in the decade ``text`` names ("1940s":
    1940 to 1949); None when the text names no decade or the other side is no year."""
    start = decade_start(text)
    if start is None:
        return None
    if other.kind == "date" and other.value >= 10000:
        year = other.value // 10000
    elif other.kind in ("year", "number") and other.value == int(other.value) and other.decimals <= 0:
        year = other.value
    else:
        return None
    if decade_start(normalize_text(other.text)) is not None:
        return None  # two decades: their values decide
    return start <= year <= start + 9


def order(left: object, right: object) -> int | None:
    """-1, 0 or 1 ordering two values as numbers (or dates); None when either is not a number.

    Not to be confused with :func:`tabverify.table.compare`, which says how two written numbers
    agree (exact, rounded, scaled); ``compare`` here is the old name of this function.
    """
    ql, qr = quantity_of(left), quantity_of(right)
    if ql is None or qr is None:
        return None
    pair = aligned_numbers(ql, qr)
    if pair is None:
        return None
    a, b = pair
    return (a > b) - (a < b)
