"""Numbers, dates and durations as written in table cells and statements.

A :class:`Quantity` keeps the text it came from, a float value and what kind of value it is,
so that "1370 lb (635 kg)", "7 - 5", "3rd", "45%", "june 11 , 1958" and "1:23.4" all compare
sensibly while the original text stays available for display.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tabverify.table.numbers import decimals_of, parse_decimal

MONTHS: dict[str, int] = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip

NUMBER_WORDS: dict[str, int] = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100,
    "once": 1, "twice": 2, "thrice": 3, "single": 1, "double": 2, "triple": 3, "both": 2,
}  # fmt: skip

ORDINAL_WORDS: dict[str, int] = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}  # fmt: skip

KINDS = ("number", "percent", "ordinal", "range", "date", "duration", "year")

_NUM = r"[-+\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?"
_NUMBER_RE = re.compile(
    r"(?<![\w.])([-+\u2212]?(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?)"
)
_ORDINAL_RE = re.compile(r"^(\d+)\s*(?:st|nd|rd|th)$")
_RANGE_RE = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(?:-|–|—|to|:)\s*(\d+(?:\.\d+)?)(?:\s*\(.*\))?$")
_DURATION_RE = re.compile(r"^(?:(\d+):)?(\d{1,2}):(\d{2}(?:\.\d+)?)$|^(\d+):(\d{2}(?:\.\d+)?)$")
_TIME_OF_DAY_RE = re.compile(r"^(\d{1,2}):(\d{2})\s*(am|pm|a\.m\.|p\.m\.)?(?:\s*\(.*\))?$")
_ISO_DATE_RE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_YEAR_RE = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
_PREFIX_WORDS = {
    "about",
    "approx",
    "approx.",
    "ca",
    "ca.",
    "c.",
    "~",
    "over",
    "under",
    "us$",
    "usd",
    "eur",
    "gbp",
}
_WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}


@dataclass(frozen=True, slots=True)
class Quantity:
    """A parsed numeric reading of some text.

    Attributes:
        text: the text it was read from, unchanged.
        value: the number used for comparison and arithmetic. Dates are encoded as
            ``year * 10000 + month * 100 + day`` (year 0 when unknown) so that they order correctly.
        kind: one of ``number, percent, ordinal, range, date, duration, year``.
        decimals: digits written after the decimal point (the written precision).
        second: the second number of a range or score ("7 - 5" -> 5), else None.
        unit: trailing unit word(s) when the text is a number followed by a unit ("1370 lb").
    """

    text: str
    value: float
    kind: str = "number"
    decimals: int = 0
    second: float | None = None
    unit: str | None = None

    @property
    def is_date(self) -> bool:
        """True for calendar dates (full or month/day)."""
        return self.kind == "date"


def _to_float(token: str) -> tuple[float, int]:
    value = parse_decimal(token)
    if value is None:
        raise ValueError(f"{token!r} is out of range")
    return float(value), decimals_of(value)


def parse_date(text: str) -> Quantity | None:
    """Read a calendar date such as "11 june 1958", "june 11, 1958", "october 15", "1958-06-11"."""
    t = text.strip().lower().replace(",", " ").replace(".", " ")
    iso = _ISO_DATE_RE.match(text.strip())
    if iso:
        y, m, d = (int(g) for g in iso.groups())
        if 1 <= m <= 12 and 1 <= d <= 31:
            return Quantity(text, float(y * 10000 + m * 100 + d), "date")
    words = [w for w in t.split() if w not in _WEEKDAYS and w not in ("of", "the")]
    if not words or len(words) > 4:
        return None
    month = day = year = None
    for w in words:
        w2 = re.sub(r"(st|nd|rd|th)$", "", w) if re.match(r"^\d+(st|nd|rd|th)$", w) else w
        if w in MONTHS and month is None:
            month = MONTHS[w]
        elif w2.isdigit() and len(w2) == 4 and year is None:
            year = int(w2)
        elif w2.isdigit() and len(w2) <= 2 and day is None and 1 <= int(w2) <= 31:
            day = int(w2)
        else:
            return None
    if month is None or (day is None and year is None):
        return None
    return Quantity(text, float((year or 0) * 10000 + month * 100 + (day or 0)), "date")


def parse_quantity(text: str) -> Quantity | None:
    """Read the number a cell or phrase stands for, or None when it holds no number.

    Understands thousands separators, decimals, signs (also U+2212), scientific notation ("1.5e3"
    is 1500), percentages, ranges and scores ("7-5", "2 - 1"), ordinals ("3rd", "third"), number
    words ("two"), values with units and bracketed alternatives ("1370 lb (635 kg)" -> 1370), dates,
    months and durations ("1:23.4"). The first number wins when several appear in free text.
    A number beyond what a float holds ("1e400", 400 digits) makes the text no number at all: it is
    never read as infinity, nor as the prefix before its exponent.
    """
    if text is None:
        return None
    try:
        quantity = _parse(text)
    except (ValueError, OverflowError):
        # digits a float or int cannot hold (1e400, 5000 digits) or that int() refuses ("june ²")
        return None
    if quantity is None or not math.isfinite(quantity.value):
        return None
    if quantity.second is not None and not math.isfinite(quantity.second):
        return None
    return quantity


_GROUP_SPACE_RE = re.compile(r"(?<=\d)[\u2009\u202f\xa0](?=\d{3}(?!\d))")


def _parse(text: str) -> Quantity | None:
    raw = text.strip()
    # a thin or no-break space between digit groups is a thousands separator ("1 000" is 1000);
    # a plain space is not (scores and lists such as "7 5" stay several numbers)
    t = _GROUP_SPACE_RE.sub("", raw.lower())
    t = t.replace("\u2212", "-").replace("\u2009", " ").replace("\u202f", " ").replace("\xa0", " ")
    if not t:
        return None
    spaced_sign = re.match(r"^([-+])\s+(\d)", t)
    if spaced_sign:  # "- 1" in golf and goal-difference columns
        t = spaced_sign.group(1) + t[spaced_sign.end(1) :].lstrip()
    total = re.match(r"^\d+(?:\s*\+\s*\d+)+\s*=\s*(\d+(?:\.\d+)?)$", t)
    if total:  # golf scores "69 + 71 = 140" stand for their total
        return Quantity(raw, float(total.group(1)), "number")
    if t in ("e", "even", "par"):
        return Quantity(raw, 0.0, "number")
    if t in NUMBER_WORDS:
        return Quantity(raw, float(NUMBER_WORDS[t]), "number")
    if t in ORDINAL_WORDS:
        return Quantity(raw, float(ORDINAL_WORDS[t]), "ordinal")
    tied = re.match(r"^(?:t|=)\s?(\d+)$", t)
    if tied:  # tied places in golf and athletics: "t5", "=5"
        return Quantity(raw, float(tied.group(1)), "ordinal")
    m = _ORDINAL_RE.match(t)
    if m:
        return Quantity(raw, float(m.group(1)), "ordinal")
    if _YEAR_RE.match(t):
        return Quantity(raw, float(t), "year")
    m = _TIME_OF_DAY_RE.match(t)
    if m and (m.group(3) or int(m.group(1)) < 24):
        hours = int(m.group(1)) % 12 if m.group(3) else int(m.group(1))
        if m.group(3) and m.group(3).startswith("p"):
            hours += 12
        if m.group(3):
            return Quantity(raw, float(hours * 60 + int(m.group(2))), "duration")
    m = _DURATION_RE.match(t)
    if m:
        if m.group(4) is not None:
            minutes, seconds = int(m.group(4)), float(m.group(5))
            hours = 0
        else:
            hours = int(m.group(1) or 0)
            minutes, seconds = int(m.group(2)), float(m.group(3))
        decimals = len(t.rsplit(".", 1)[1]) if "." in t.rsplit(":", 1)[-1] else 0
        return Quantity(raw, hours * 3600 + minutes * 60 + seconds, "duration", decimals)
    date = parse_date(t)
    if date is not None:
        return Quantity(raw, date.value, "date")
    m = _RANGE_RE.match(t)
    if m and not t.startswith("-"):
        first, decimals = _to_float(m.group(1))
        second, _ = _to_float(m.group(2))
        return Quantity(raw, first, "range", decimals, second=second)
    m = _NUMBER_RE.search(t)
    if m is None:
        return None
    # text before the number must be short ("$", "us$", "approx"), else this is a phrase, not a number
    # text before the number may only be a currency, "about", or a one/two-letter mark such as
    # the w/l of a result ("w 27 - 0"); otherwise this is a name with a number ("ohio 1")
    prefix = t[: m.start()].strip()
    if prefix and not (len(prefix) <= 2 or prefix.endswith(("$", "€", "£", "¥")) or prefix in _PREFIX_WORDS):
        return None
    value, decimals = _to_float(m.group(1))
    rest = t[m.end() :].strip()
    if rest.startswith("%") or rest.startswith("percent"):
        return Quantity(raw, value, "percent", decimals)
    unit = None
    if rest:
        unit_match = re.match(r"^([a-z$€£/²³ ]{1,12}?)(?:\s*\(|\s*$|\s*/)", rest)
        if unit_match and unit_match.group(1).strip():
            unit = unit_match.group(1).strip()
        elif not rest.startswith("("):
            # "12 apples and 3 pears": still the first number, but no recognised unit
            unit = None
    return Quantity(raw, value, "number", decimals, unit=unit)
