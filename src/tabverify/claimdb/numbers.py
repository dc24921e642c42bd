"""A rule-based check of the numbers a claim asserts against the values the agent's queries
returned, run after a language model gave its verdict (docs/llm.md, "The numbers rule").

A model can say ENTAILED for "Pizza spending came to $745.29" after a query returned 731.40, or
CONTRADICTED although every number matches. This module reads the claim's numbers and looks for
each one among the query results, so that the first case can be corrected and the second flagged.

What is read from the claim (:func:`claim_numbers`):

- digits with thousands separators, decimals, a sign, currency (``$745.29``), percentages
  (``12.3%``, ``12.3 percent``), scale words and suffixes (``2.5 million``, ``3k``, ``1.2bn``),
  and spelled numbers (``six``, ``twenty-one``);
- skipped as not a quantity: dates, times, phone numbers, codes touching letters (``TR001``,
  ``00D4``, ``K-12``), ordinals (``3rd``), version-like tokens (``1.2.3``).

Each number gets a role: ``bound`` when it is a condition or a bound rather than an asserted value
(``over 1,800``, ``at least 20``, ``1500 or more``, ``between 60 and 65``, ``1980-2010``, ``top 3``),
``hedged`` after ``about``/``approximately``/``nearly``..., and a kind: ``number``, ``year`` (a whole
1800-2100 without separators) or ``spelled``. Only *firm* numbers (kind ``number``, neither bound
nor hedged) can change a verdict; the others can only add a warning.

A claim number matches a value (:func:`matches`) when the value, read at the claim's written
precision, gives the claim's number: anything within half a unit of the last written digit
(rounding, ``397`` for 396.6) or truncated to it (``17.22`` for 17.2299); ``397.0`` and ``397`` are the
same number at different precisions. Also accepted: the value written more coarsely than the claim
(a query's ``ROUND(x, 1)`` = 39.8 for a claim of 39.75203), a percent as a fraction and back
(``25%`` / 0.25, a claim of 0.25 / a value of 25), a factor of 1000 (seconds / milliseconds), and
for hedged numbers 5% either way. Values are the numeric cells of every successful query of the
session (numeric text such as ``"52,340"`` included), each result's row count (``total_rows`` when
truncated), distinct counts, column sums and averages, and, over the last five successful results,
the sums, differences and ratios of two values (the arithmetic a model does between queries).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tabverify.database.result import QueryResult
from tabverify.table.numbers import ascii_forms, decimals_of, parse_decimal
from tabverify.verify.verdict import Label

DERIVED_RESULTS = 5
"""Pairwise sums, differences and ratios are taken over this many last successful results."""

DERIVED_VALUES = 40
"""... and over at most this many distinct values of them."""

HEDGE_TOLERANCE = 0.05
"""A hedged number (``about 55%``) matches values within 5% of it."""

_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_SUFFIX_SCALES = {"k": 1e3, "m": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9}
_UNITS = {
    "cm", "mm", "km", "m", "kg", "g", "mg", "lb", "lbs", "s", "sec", "secs", "ms", "min", "mins", "h",
    "hr", "hrs", "kph", "mph", "ml", "l", "ft", "in", "usd", "eur",
}  # fmt: skip
_ORDINAL_SUFFIXES = {"st", "nd", "rd", "th"}

_SPELLED_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_SPELLED_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}  # fmt: skip

_NUMBER = re.compile(r"(?<![\w.,])([-+]?)((?:\d{1,3}(?:,\d{3})+(?![\d,]\d)|\d+)(?:\.\d+)?|\.\d+)")
_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_MASKS = (
    ("date", re.compile(r"\b" + _MONTHS + r"\s+\d{1,2}(?:st|nd|rd|th)?,?\s+\d{4}\b", re.IGNORECASE)),
    (
        "date",
        re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTHS + r",?\s+\d{4}\b", re.IGNORECASE),
    ),
    ("date", re.compile(r"\b" + _MONTHS + r"\s+\d{1,2}(?:st|nd|rd|th)?\b(?!\s*,?\s*\d)", re.IGNORECASE)),
    ("name", re.compile(r"\bFormula\s+(?:1|One)\b|\bF1\b", re.IGNORECASE)),
    ("date", re.compile(r"\b\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?\b")),
    ("date", re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b")),
    ("date", re.compile(r"\b\d{4}/\d{1,2}/\d{1,2}\b")),
    ("time", re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\.\d+)?")),
    ("phone", re.compile(r"\(\d{3}\)\s?\d{3}[-.\s]\d{4}\b")),
    ("phone", re.compile(r"\b\d{3}[-.]\d{3}[-.]\d{4}\b")),
)
_SPELLED = re.compile(
    r"\b(?:(" + "|".join(_SPELLED_TENS) + r")(?:[-\s](" + "|".join(k for k in _SPELLED_UNITS if k != "zero")
    + r"))?|(" + "|".join(_SPELLED_UNITS) + r"))(?:\s+(hundred|thousand|million))?\b",
    re.IGNORECASE,
)  # fmt: skip
_HEDGE_BEFORE = re.compile(
    r"(?:\babout|\bapproximately|\bapprox\.?|\baround|\broughly|\bnearly|\balmost|\bsome|\bcirca|\bca\."
    r"|\bclose to|\ban estimated|\bestimated|~|≈)\s*(?:[$€£¥]|us\$)?\s*$"
)
_BOUND_BEFORE = re.compile(
    r"(?:\bmore than|\bless than|\bfewer than|\bgreater than|\bhigher than|\blower than|\blarger than"
    r"|\bsmaller than|\bbigger than|\blonger than|\bshorter than|\bolder than|\byounger than|\bover|\babove"
    r"|\bbelow|\bunder|\bat least|\bat most|\bup to|\bexceed(?:s|ed|ing)?|\bsurpass(?:es|ed|ing)?"
    r"|\bbeyond|\bwithin|\bbetween(?:\s+\w+)?|\bfrom(?:\s+\w+)?|\bevery|\bper|\boutnumber(?:s|ed|ing)?"
    r"|\btop|\bbottom|\bfirst|\blast"
    r"|\bminimum(?: of)?|\bmaximum(?: of)?|\bunder|\bpast|\bsince|\bbefore|\bafter|\buntil|\bthrough"
    r"|>=?|<=?|≥|≤|=\s*>)\s*(?:the\s+)?(?:[$€£¥]|us\$)?\s*$"
)
_BOUND_AFTER = re.compile(
    r"^\s*(?:%|percent|per cent)?\s*(?:\+|or (?:more|above|higher|greater|over|less|fewer|below|lower|under|"
    r"later|earlier|before|after)\b|and (?:above|up|over|below|under|higher|lower)\b|plus\b)"
)
_RANGE_BETWEEN = re.compile(r"^\s*(?:-|–|—|to|through|thru|until|and)\s*$")
_PERCENT_AFTER = re.compile(r"^\s*(?:%|percent\b|per cent\b|percentage points?\b|pct\b)")
_SCALE_AFTER = re.compile(r"^\s+(thousand|million|billion|trillion)\b", re.IGNORECASE)
_LETTERS_AFTER = re.compile(r"^([A-Za-z]+)")
_NAME_BEFORE = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][A-Za-z]*) $")
_ID_WORDS = {
    "id", "ids", "no", "number", "user", "users", "race", "races", "player", "patient", "customer", "post",
    "driver", "client", "account", "loan", "order", "member", "molecule", "card", "station", "school",
    "district", "chain", "event", "game", "match", "season", "year", "round", "grade", "grades", "page",
    "usd", "eur", "gbp", "czk", "chf", "jpy", "cad", "aud",
}  # fmt: skip


@dataclass(frozen=True)
class ClaimNumber:
    """A number as the claim writes it.

    Attributes:
        text: the characters it was read from (``$745.29``, ``2.5 million``, ``twenty-one``).
        value: its value (``2.5 million`` -> 2500000.0; a percent keeps its number: ``12.3%`` -> 12.3).
        step: the unit of its last written digit, scale included (``17.22`` -> 0.01, ``2.5 million`` ->
            100000): the precision it is compared at.
        percent: written with ``%`` or ``percent``.
        kind: ``number``, ``year`` (a whole 1800-2100 without separators) or ``spelled``.
        bound: a condition or bound (``over 1,800``, ``between 60 and 65``), not an asserted value.
        hedged: written as approximate (``about 55%``).
        start: its offset in the claim.
    """

    text: str
    value: float
    step: float
    percent: bool = False
    kind: str = "number"
    bound: bool = False
    hedged: bool = False
    start: int = 0

    @property
    def firm(self) -> bool:
        """True for an asserted number written in digits, not a year, bound or hedged: the only
        kind whose mismatch may change a verdict."""
        return self.kind == "number" and not self.bound and not self.hedged

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return {
            "text": self.text,
            "value": self.value,
            "step": self.step,
            "percent": self.percent,
            "kind": self.kind,
            "bound": self.bound,
            "hedged": self.hedged,
        }


@dataclass(frozen=True)
class Skipped:
    """A claim token that is not checked, and why (``date``, ``phone``, ``code``, ``ordinal``,
    ``bound``, ``in extra_info``, ``in a query``)."""

    text: str
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"text": self.text, "reason": self.reason}


@dataclass(frozen=True)
class NumberMatch:
    """How one checked claim number fared: the value it matched (None: no value matched) and how
    (``exact``: a query value at the claim's precision; ``scaled``: after x100 or x1000;
    ``coarse``: a value written with fewer digits; ``hedged``: within 5%; ``derived``: a row count,
    sum, difference, ratio, average...); ``nearest``: the closest query value when none matched."""

    number: ClaimNumber
    value: float | None
    how: str = ""
    source: str = ""
    nearest: float | None = None

    @property
    def matched(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, object]:
        return {
            "number": self.number.text,
            "value": _json_float(self.value),
            "how": self.how,
            "source": self.source,
            "nearest": _json_float(self.nearest),
        }


@dataclass(frozen=True)
class NumberCheck:
    """The claim's numbers against the query results.

    Attributes:
        numbers: every number read from the claim.
        matches: one entry per checked number (not bound, not in extra_info or a query's SQL).
        skipped: tokens and numbers left out, with the reason.
        results: how many successful query results were compared.
        complete: whether the last successful result (the decisive one) holds all its rows.
    """

    numbers: tuple[ClaimNumber, ...] = ()
    matches: tuple[NumberMatch, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    results: int = 0
    complete: bool = False

    @property
    def unmatched(self) -> tuple[NumberMatch, ...]:
        """The checked numbers no value matched."""
        return tuple(m for m in self.matches if not m.matched)

    @property
    def has_bounds(self) -> bool:
        """Whether the claim has a bound or condition number (``over 1,800``)."""
        return any(n.bound for n in self.numbers)

    def to_dict(self) -> dict[str, object]:
        return {
            "numbers": [n.to_dict() for n in self.numbers],
            "matches": [m.to_dict() for m in self.matches],
            "skipped": [s.to_dict() for s in self.skipped],
            "results": self.results,
            "complete": self.complete,
        }


@dataclass(frozen=True)
class NumbersFinding:
    """What the numbers rule concludes about a verdict: ``action`` is ``none``, ``warn`` or
    ``override``; ``label`` the label to report (changed only for ``override``); ``message`` one
    sentence for the trace and the verdict's warnings ("" for ``none``)."""

    action: str
    label: Label
    message: str = ""


def _json_float(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return str(value)


# ---- reading the claim --------------------------------------------------------------------------


def _mask(text: str) -> tuple[str, list[Skipped]]:
    """``text`` with dates, times and phone numbers blanked out (same length), and what was blanked."""
    skipped: list[Skipped] = []
    chars = list(text)
    for reason, pattern in _MASKS:
        for match in pattern.finditer("".join(chars)):
            skipped.append(Skipped(match.group(0), reason))
            chars[match.start() : match.end()] = " " * (match.end() - match.start())
    return "".join(chars), skipped


def _step(token: str) -> float:
    value = parse_decimal(token)
    return 10.0 ** -decimals_of(value) if value is not None else 1.0


def _roles(text: str, start: int, end: int) -> tuple[bool, bool]:
    """(bound, hedged) from the words around the number at ``text[start:end]``."""
    before = text[max(0, start - 40) : start].lower()
    after = text[end : end + 30].lower()
    bound = bool(_BOUND_BEFORE.search(before) or _BOUND_AFTER.match(after))
    hedged = bool(_HEDGE_BEFORE.search(before))
    return bound, hedged


def claim_numbers(text: str) -> tuple[list[ClaimNumber], list[Skipped]]:
    """The numbers a claim writes (in order), and the number-like tokens that are not quantities."""
    text = ascii_forms(text).replace("\u2212", "-").replace("\u00a0", " ").replace("\u202f", " ")
    masked, skipped = _mask(text)
    numbers: list[ClaimNumber] = []
    for match in _NUMBER.finditer(masked):
        sign, token = match.group(1), match.group(2)
        start, end = match.start(), match.end()
        before = masked[start - 1] if start else " "
        if sign and not (start == 0 or masked[start - 1] in " ([{\"'"):
            sign, start = "", start + 1
            before = "-"
        if before in "-/–—" and start >= 2 and masked[start - 2].isalpha():
            skipped.append(Skipped(masked[start - 2 : end], "code"))
            continue
        rest = masked[end:]
        if rest[:1] == "." and rest[1:2].isdigit() or rest[:1] == "," and rest[1:2].isdigit():
            tail = re.match(r"[.,\d]+", rest)
            skipped.append(Skipped(token + (tail.group(0) if tail else ""), "code"))
            continue
        value_d = parse_decimal(sign + token)
        if value_d is None:
            continue
        value, step, shown_end = float(value_d), _step(token), end
        letters = _LETTERS_AFTER.match(rest)
        if letters:
            word = letters.group(1).lower()
            if word in _ORDINAL_SUFFIXES:
                skipped.append(Skipped(token + letters.group(1), "ordinal"))
                continue
            if word in _SUFFIX_SCALES:
                value, step = value * _SUFFIX_SCALES[word], step * _SUFFIX_SCALES[word]
                shown_end = end + len(word)
            elif word not in _UNITS:
                skipped.append(Skipped(token + letters.group(1), "code"))
                continue
        scale = _SCALE_AFTER.match(rest)
        if scale:
            factor = _SCALES[scale.group(1).lower()]
            value, step, shown_end = value * factor, step * factor, end + scale.end()
        percent_match = _PERCENT_AFTER.match(masked[shown_end:])
        percent = bool(percent_match)
        if percent_match:
            shown_end += percent_match.end()
        name = _NAME_BEFORE.search(masked[max(0, start - 30) : start]) if start > 1 else None
        if (
            name
            and not sign
            and name.group(1).lower() not in _ID_WORDS
            and not name.group(1).endswith(("ID", "IDs"))
            and not re.match(r"\s*[-–—]\s*\d", rest)
        ):
            word = name.group(1)
            reason = "date" if re.fullmatch(_MONTHS, word, re.IGNORECASE) else "name"
            skipped.append(Skipped(f"{word} {token}", reason))  # "Ligue 1", "Football 2", "June 2013"
            continue
        currency = start >= 1 and masked[start - 1] in "$€£¥"
        bound, hedged = _roles(masked, start - (1 if currency else 0), shown_end)
        is_year = (
            "," not in token
            and "." not in token
            and not sign
            and not percent
            and not currency
            and not scale
            and 1800 <= value <= 2100
        )
        numbers.append(
            ClaimNumber(
                text=text[start - (1 if currency else 0) : shown_end].strip(),
                value=value,
                step=step,
                percent=percent,
                kind="year" if is_year else "number",
                bound=bound,
                hedged=hedged,
                start=start,
            )
        )
    for match in _SPELLED.finditer(masked):
        tens, unit, single, scale_word = match.groups()
        word = (single or "").lower()
        if word == "one" and not re.search(
            r"\b(?:only|exactly|just|is|are|was|were)\s*$", masked[: match.start()].lower()
        ):
            continue
        if tens:
            value = float(_SPELLED_TENS[tens.lower()] + (_SPELLED_UNITS[unit.lower()] if unit else 0))
        else:
            value = float(_SPELLED_UNITS[word])
        step = 1.0
        if scale_word:
            factor = {"hundred": 100.0, "thousand": 1e3, "million": 1e6}[scale_word.lower()]
            value, step = value * factor, factor
        percent_match = _PERCENT_AFTER.match(masked[match.end() :])
        bound, hedged = _roles(masked, match.start(), match.end())
        numbers.append(
            ClaimNumber(
                text=match.group(0),
                value=value,
                step=step,
                percent=bool(percent_match),
                kind="spelled",
                bound=bound,
                hedged=hedged,
                start=match.start(),
            )
        )
    numbers.sort(key=lambda n: n.start)
    return _mark_ranges(masked, numbers), skipped


def _mark_ranges(text: str, numbers: list[ClaimNumber]) -> list[ClaimNumber]:
    """Both ends of a range (``60-65``, ``1 to 10``, ``between 60 and 65``) become bounds."""
    result = list(numbers)
    for i in range(len(result) - 1):
        first, second = result[i], result[i + 1]
        gap = text[first.start + len(first.text) : second.start]
        gap = gap.lstrip("%").removeprefix(" percent")
        if not _RANGE_BETWEEN.match(gap):
            continue
        if gap.strip() == "and" and not re.search(
            r"\bbetween(?:\s+\w+)?\s*$", text[max(0, first.start - 30) : first.start].lower()
        ):
            continue
        result[i] = _as_bound(first)
        result[i + 1] = _as_bound(second)
    return result


def _as_bound(number: ClaimNumber) -> ClaimNumber:
    return ClaimNumber(
        number.text, number.value, number.step, number.percent, number.kind, True, number.hedged, number.start
    )


def numbers_in_text(text: str) -> set[float]:
    """Every number written in ``text`` (SQL, extra_info), digits only, as floats; thousands
    separators read and numbers inside quotes, dates and identifiers included."""
    found: set[float] = set()
    for match in re.finditer(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+", text):
        try:
            found.add(float(match.group(0).replace(",", "")))
        except ValueError:
            continue
    return found


# ---- values from the results -------------------------------------------------------------------


@dataclass(frozen=True)
class _Value:
    value: float
    how: str  # "value" or a derivation
    source: str
    step: float | None = None  # the written precision of a direct value, when it has a short form


_NUMERIC_TEXT = re.compile(r"^\s*[-+]?[$€£¥]?\s*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?\s*%?\s*$")


def _cell_number(cell: object) -> tuple[float, float | None] | None:
    """A numeric cell's value and written precision (None for text that is not a number)."""
    if isinstance(cell, bool) or cell is None:
        return None
    if isinstance(cell, int):
        return float(cell), 1.0
    if isinstance(cell, float):
        if not math.isfinite(cell):
            return None
        text = repr(cell)
        if "e" in text or "E" in text:
            return cell, None
        decimals = len(text.partition(".")[2].rstrip("0"))
        return cell, (10.0**-decimals if decimals <= 6 else None)
    if (
        isinstance(cell, str)
        and 0 < len(cell) <= 40
        and any(c.isdigit() for c in cell)
        and _NUMERIC_TEXT.match(cell)
    ):
        token = re.sub(r"[\s$€£¥%]", "", cell)
        value = parse_decimal(token)
        if value is None:
            return None
        return float(value), 10.0 ** -decimals_of(value)
    return None


def _direct_values(results: Sequence[QueryResult]) -> list[_Value]:
    values: list[_Value] = []
    for index, result in enumerate(results, start=1):
        source = f"query {index}"
        count = result.total_rows if result.truncated else len(result.rows)
        if count is not None:
            values.append(_Value(float(count), "row count", source))
        columns: list[list[float]] = [[] for _ in result.columns]
        for row in result.rows:
            for position, cell in enumerate(row):
                number = _cell_number(cell)
                if number is None:
                    continue
                values.append(_Value(number[0], "value", source, number[1]))
                if position < len(columns):
                    columns[position].append(number[0])
        if not result.truncated:
            for position, column in enumerate(result.columns):
                cells = [row[position] for row in result.rows if position < len(row)]
                if len(cells) > 1:
                    distinct = {repr(c) for c in cells if c is not None}
                    values.append(_Value(float(len(distinct)), "distinct count", f"{source} {column}"))
                numbers = columns[position]
                if len(numbers) > 1:
                    total = math.fsum(numbers)
                    values.append(_Value(total, "column sum", f"{source} {column}"))
                    values.append(_Value(total / len(numbers), "column average", f"{source} {column}"))
    return values


def _derived_values(results: Sequence[QueryResult]) -> list[_Value]:
    """Sums, differences and ratios of two values of the last :data:`DERIVED_RESULTS` results."""
    pool: dict[float, str] = {}
    for index, result in list(enumerate(results, start=1))[-DERIVED_RESULTS:]:
        if not result.truncated:
            pool.setdefault(float(len(result.rows)), f"query {index}")
        for row in result.rows:
            for cell in row:
                number = _cell_number(cell)
                if number is not None and len(pool) < DERIVED_VALUES:
                    pool.setdefault(number[0], f"query {index}")
    items = list(pool.items())
    derived: list[_Value] = []
    for i, (a, source_a) in enumerate(items):
        for b, source_b in items[i + 1 :]:
            source = f"{source_a}, {source_b}" if source_a != source_b else source_a
            derived.append(_Value(a + b, "sum", source))
            derived.append(_Value(a - b, "difference", source))
            derived.append(_Value(b - a, "difference", source))
            if b:
                derived.append(_Value(a / b, "ratio", source))
            if a:
                derived.append(_Value(b / a, "ratio", source))
    return [d for d in derived if math.isfinite(d.value)]


# ---- matching -----------------------------------------------------------------------------------


def _targets(number: ClaimNumber) -> list[tuple[float, float, str]]:
    """(value, step, how) forms a query value may take for ``number``."""
    value, step = number.value, number.step
    targets = [(value, step, "exact")]
    if number.percent:
        targets.append((value / 100, step / 100, "exact"))  # a fraction for a percent: 0.123 for 12.3%
    else:
        targets.append((value * 100, step * 100, "scaled"))  # a percent for a fraction (0.25 / 25)
        targets.append((value / 100, step / 100, "scaled"))  # a rate per 100 (18 per 100 / 0.18)
        targets.append((value * 1000, step * 1000, "scaled"))  # seconds / milliseconds
        targets.append((value / 1000, step / 1000, "scaled"))
    return targets


def _interval(target: float, step: float, hedged: bool) -> tuple[float, float]:
    """The values that read as ``target`` at precision ``step``: rounding (half a unit either way)
    or truncation (up to a unit away from zero); 5% either way for a hedged number."""
    eps = 1e-9 * max(1.0, abs(target))  # float noise of computed values
    low, high = target - step / 2 - eps, target + step / 2 + eps
    inner = step * (1 - 1e-6)  # truncation stops just short of the next unit
    if target >= 0:
        high = max(high, target + inner)
    if target <= 0:
        low = min(low, target - inner)
    if hedged:
        spread = max(step / 2, HEDGE_TOLERANCE * abs(target))
        low, high = min(low, target - spread - eps), max(high, target + spread + eps)
    return low, high


def matches(number: ClaimNumber, value: float, value_step: float | None = None) -> str | None:
    """How ``value`` matches ``number`` (``exact``, ``scaled``, ``coarse``, ``hedged``), or None.

    ``value_step`` is the value's own written precision when known (0.1 for a query's
    ``ROUND(x, 1)`` = 39.8): a value written more coarsely than the claim matches when the claim's
    number rounds to it."""
    if not math.isfinite(value):
        return None
    for target, step, how in _targets(number):
        low, high = _interval(target, step, False)
        if low <= value <= high:
            return how
    if value_step is not None and value_step > number.step:
        for target, _, how in _targets(number):
            scale = target / number.value if number.value else 1.0
            allowed = abs(value_step * scale) / 2 + 1e-9 * max(1.0, abs(value))
            if abs(value - target) <= allowed:
                return "coarse" if how == "exact" else how
    if number.hedged:
        for target, step, _ in _targets(number):
            low, high = _interval(target, step, True)
            if low <= value <= high:
                return "hedged"
    return None


class _Index:
    """Sorted values for fast interval look-ups (derived values run to thousands)."""

    def __init__(self, values: Iterable[_Value]):
        self.values = sorted(values, key=lambda v: v.value)
        self.keys = [v.value for v in self.values]

    def find(self, low: float, high: float) -> _Value | None:
        at = bisect.bisect_left(self.keys, low)
        if at < len(self.keys) and self.keys[at] <= high:
            return self.values[at]
        return None


def _match(number: ClaimNumber, direct: list[_Value], derived: _Index | None) -> NumberMatch:
    for item in direct:
        how = matches(number, item.value, item.step)
        if how is not None:
            if item.how != "value":
                how = "derived" if how in ("exact", "coarse") else how
            source = item.source if item.how == "value" else f"{item.how} of {item.source}"
            return NumberMatch(number, item.value, how, source)
    if derived is not None:
        for hedged in (False, True) if number.hedged else (False,):
            for target, step, _ in _targets(number):
                low, high = _interval(target, step, hedged)
                found = derived.find(low, high)
                if found is not None:
                    return NumberMatch(number, found.value, "derived", f"{found.how} of {found.source}")
    nearest = min(
        (item.value for item in direct if item.how == "value"),
        key=lambda v: abs(v - number.value),
        default=None,
    )
    return NumberMatch(number, None, nearest=nearest)


def check_numbers(
    claim: str,
    results: Sequence[QueryResult],
    *,
    extra_info: str = "",
    queries: Iterable[str] = (),
) -> NumberCheck:
    """The claim's numbers against ``results`` (the session's query results in order; failed ones
    are ignored). Numbers written in ``extra_info`` or in the SQL of ``queries`` (a condition the
    model filtered on, or a value it looked up directly) and bound numbers are not checked."""
    numbers, skipped = claim_numbers(claim)
    ok = [r for r in results if r.ok]
    used_info = numbers_in_text(extra_info)
    used_sql: set[float] = set()
    for sql in queries:
        used_sql |= numbers_in_text(sql)
    direct = _direct_values(ok)
    derived = _Index(_derived_values(ok)) if ok else None
    found: list[NumberMatch] = []
    for number in numbers:
        forms = {number.value, number.value / 100} if number.percent else {number.value}
        if number.bound:
            skipped.append(Skipped(number.text, "bound"))
        elif forms & used_info:
            skipped.append(Skipped(number.text, "in extra_info"))
        elif forms & used_sql:
            skipped.append(Skipped(number.text, "in a query"))
        else:
            found.append(_match(number, direct, derived))
    return NumberCheck(
        numbers=tuple(numbers),
        matches=tuple(found),
        skipped=tuple(skipped),
        results=len(ok),
        complete=bool(ok) and not ok[-1].truncated,
    )


def _shown(value: float | None) -> str:
    if value is None:
        return "none"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.6g}"


def judge_numbers(label: Label, check: NumberCheck) -> NumbersFinding:
    """The numbers rule (docs/llm.md):

    - ENTAILED, no checked claim number matches any value of the session's successful queries, at
      least one of them is *firm* (digits, not a year, bound or hedged), and the decisive (last
      successful) result is complete: **override** to REFUTED - the claim asserts numbers the
      model's own queries do not give;
    - ENTAILED with some number unmatched otherwise (others match, only weak ones are unmatched,
      the decisive result was truncated, no query succeeded): **warn**;
    - REFUTED, the claim has no bound, and every checked number (at least one) equals a query value
      at the claim's precision (``exact``): **warn** - the contradiction must come from another part of
      the claim (a name, an order), which is often right, so the label is kept;
    - anything else, and NOT ENOUGH INFO: nothing.
    """
    if label is Label.ENTAILED:
        unmatched = check.unmatched
        if not unmatched:
            return NumbersFinding("none", label)
        texts = ", ".join(m.number.text for m in unmatched)
        nearest = "; ".join(f"{m.number.text}: nearest query value {_shown(m.nearest)}" for m in unmatched)
        firm = [m for m in unmatched if m.number.firm]
        if firm and len(unmatched) == len(check.matches) and check.results and check.complete:
            return NumbersFinding(
                "override",
                Label.REFUTED,
                f"numbers check: the claim's {texts} matches no value the queries returned ({nearest}); "
                "ENTAILED changed to CONTRADICTED",
            )
        why = (
            "no query succeeded"
            if not check.results
            else "the last result was truncated"
            if not check.complete
            else "other numbers of the claim match"
            if len(unmatched) < len(check.matches)
            else "only approximate, year or spelled numbers differ"
        )
        return NumbersFinding(
            "warn",
            label,
            f"numbers check: the claim's {texts} matches no value the queries returned ({nearest}); "
            f"ENTAILED kept because {why}",
        )
    if label is Label.REFUTED:
        if check.matches and not check.has_bounds and all(m.how == "exact" for m in check.matches):
            texts = ", ".join(m.number.text for m in check.matches)
            return NumbersFinding(
                "warn",
                label,
                f"numbers check: every number of the claim ({texts}) equals a query value; the "
                "contradiction must come from another part of the claim",
            )
    return NumbersFinding("none", label)


__all__ = [
    "ClaimNumber",
    "NumberCheck",
    "NumberMatch",
    "NumbersFinding",
    "Skipped",
    "check_numbers",
    "claim_numbers",
    "judge_numbers",
    "matches",
    "numbers_in_text",
]
