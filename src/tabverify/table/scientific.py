"""Numbers as written in scientific tables.

:func:`parse_measurement` reads cells such as ``\\mathbf{45.3}\\pm0.2``, ``45.3 (±0.2)``, ``68.4%``,
``21M``, ``−0.5``, ``1.2e-3``, ``39.0(+2.6)``, ``83.6 (\\uparrow 3.3)`` or ``45.1 / 60.2`` into a
:class:`Measurement` that keeps the value as a :class:`~decimal.Decimal` with its written precision.
:func:`compare` says whether two measurements agree exactly, after rounding, or after a x100 scale.
The number model, the token reader and the comparison live in :mod:`tabverify.table.numbers`
(shared with the program executor); this module adds what a scientific cell writes around a number:
LaTeX, footnote marks, ``±`` spreads, deltas, units and several metrics in one cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal

from tabverify.table.numbers import (
    Agreement,
    Number,
    agreement,
    agreement_of_values,
    ascii_forms,
    only_precision_differs,
    parse_decimal,
    rounds_to,
)

__all__ = [
    "SUFFIXES", "Agreement", "Measurement", "clean_latex", "compare", "display_text", "parse_measurement",
    "rounds_to",
]  # fmt: skip

_ONE = Decimal(1)
SUFFIXES: dict[str, Decimal] = {
    "k": Decimal(1000), "K": Decimal(1000), "M": Decimal(10**6), "B": Decimal(10**9),
    "G": Decimal(10**9), "T": Decimal(10**12),
}  # fmt: skip

# units that may follow a number in a cell without making it text
_UNITS = {
    "ms", "s", "sec", "h", "hrs", "min", "fps", "gb", "mb", "kb", "tb", "x", "gflops", "mflops",
    "tflops", "flops", "params", "m", "mm", "cm", "km", "db", "hz", "w", "px", "ep", "epochs", "it/s",
}  # fmt: skip

# LaTeX commands whose argument is the content (the command itself is dropped)
_WRAPPERS = re.compile(
    r"\\(?:mathbf|textbf|mathrm|textrm|text|textit|mathit|emph|underline|ul|uline|boldsymbol|bm|bf|"
    r"it|rm|small|footnotesize|scriptsize|tiny|large|Large|textsc|mathsf|textsf|texttt|mathtt|"
    r"textnormal|mathnormal|bold|best|second|first|third|tabularnewline|hphantom|phantom|cellcolor|"
    r"rowcolor|color|textcolor|colorbox|definecolor|pgfsys@color@\w+@\w+)\b\*?"
)
# the repetitions are bounded, so that a hostile cell ("1.5{aaaa...") cannot make the scan quadratic
_COLOR_ARGS = re.compile(
    r"(?:\[[a-zA-Z]{1,20}\])?\{[a-zA-Z]{1,40}[!0-9a-zA-Z.,]{0,40}\}|\[rgb\]\{[\d.,\s]{1,40}\}|\{named\}"
)
_MARKS = re.compile(
    r"\\(?:dagger|ddagger|star|ast|S|P|checkmark|ssymbol\{\d+\})|\\d?dag(?![a-zA-Z])|[*†‡§¶✓✗]"
)
# footnotes in a cell: \footnote[2]{text, maybe {nested}} and \footnotemark[2] are marks, their text
# is no part of the value; \textsuperscript{a} is a superscript like ^{a}
_FOOTNOTES = re.compile(
    r"\\footnote(?:\s*\[[^\]]{0,100}\])?\s*\{(?:[^{}]|\{[^{}]*\})*\}|\\footnotemark(?![a-zA-Z])(?:\s*\[[^\]]{0,100}\])?"
)
_TEXT_SUPERSCRIPT = re.compile(r"\\textsuperscript\s*(?=\{)")
_SUPERSCRIPT = re.compile(r"\^\s*\{[^{}]*\}|\^\s*\\[a-zA-Z]+|\^\s*[^\s{]|\{\}\s*(?=\^)")
_SUBSCRIPT = re.compile(r"_\s*\{([^{}]*)\}|_\s*(\S)")
_SPACES = re.compile(r"[\s\u2009\u202f\u00a0\u2002-\u2008\u200a\u200b~]+|\\[,;:! ]|\\quad|\\qquad")
# thousands commas in groups of three, the first group not starting with 0 ("25,600", "1,000,000");
# "1,2", "0,5", "12,345,67" and "0.5,0.7" are not one number (the comma separates values)
_UNSIGNED = r"(?:(?:[1-9]\d{0,2}(?:,\d{3})+(?!\d|,\d)|\d+)(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER = r"[-+]?" + _UNSIGNED
_MAIN = re.compile(
    rf"^(?P<approx>[≈~]|\\approx|\\sim)?\s*(?P<num>{_NUMBER})\s*"
    r"(?P<suffix>[kKMBGT](?![a-zA-Z]))?\s*(?P<pct>%|\\%)?"
)
_PM = re.compile(rf"^(?:±|\\pm|\+/-|\+-)\s*(?P<num>{_NUMBER})\s*(?:%|\\%)?")
_BRACKETED = re.compile(
    rf"^[(\[]\s*(?P<sign>±|\\pm|\\uparrow|\\downarrow|↑|↓)?\s*(?P<num>{_NUMBER})\s*(?P<pct>%|\\%)?\s*[)\]]"
)
_ARROW_DELTA = re.compile(rf"^(?P<sign>\\uparrow|\\downarrow|↑|↓)\s*(?P<num>{_NUMBER})\s*(?:%|\\%)?")
_SIGNED_DELTA = re.compile(rf"^(?P<num>[-+]{_UNSIGNED})\s*(?:%|\\%)?")
_MULTI_SEPARATOR = re.compile(r"^(?:/|\||,|;)\s*")


MAX_MEASUREMENT_TEXT = 1000
"""A cell with more characters than this is text, not a measurement (the cleaned value must fit in
80 characters anyway; the bound keeps the LaTeX clean-up of a hostile cell from taking seconds)."""

# Unicode format characters (category Cf) that change no digit: direction marks and isolates, the
# byte-order mark / zero-width no-break space, the soft hyphen, joiners and invisible operators.
# U+200B (zero-width space) is not here: it separates like a space (see _SPACES).
_INVISIBLE = dict.fromkeys(
    [0x00AD, 0x061C, 0x180E, 0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F)]
    + [*range(0x2060, 0x2065), *range(0x2066, 0x2070), 0xFEFF, 0xFFF9, 0xFFFA, 0xFFFB]
)


@dataclass(frozen=True, slots=True)
class Measurement:
    """A number read from a table cell, with everything written around it.

    Attributes:
        text: the cell text it was read from.
        value: the first number as written, suffix not applied (``21M`` -> 21).
        suffix: ``k``/``K``/``M``/``B``/``G``/``T`` when written right after the number.
        percent: a ``%`` followed the number.
        uncertainty: the ``±`` part (``45.3 ± 0.2`` -> 0.2), also written ``(±0.2)`` or ``_{(0.2)}``.
        delta: a change written after the value: ``(+17.3)``, ``(\\uparrow 3.3)`` (down arrows negative).
        others: further numbers when the cell holds several metrics (``45.1 / 60.2`` -> (60.2,)).
        approximate: written with ``~`` or ``≈``.
        signed: written with an explicit ``+`` (a change such as "+0.9" rather than a level).
    """

    text: str
    value: Decimal
    suffix: str | None = None
    percent: bool = False
    uncertainty: Decimal | None = None
    delta: Decimal | None = None
    others: tuple[Decimal, ...] = ()
    approximate: bool = False
    signed: bool = False

    @property
    def exponent(self) -> int:
        """The written precision as a power of ten: ``45.30`` -> -2, ``21`` -> 0."""
        exponent = self.value.as_tuple().exponent
        return exponent if isinstance(exponent, int) else 0

    @property
    def decimals(self) -> int:
        """Digits written after the decimal point."""
        return max(0, -self.exponent)

    @property
    def multi(self) -> bool:
        """True when the cell holds several numbers for different metrics."""
        return bool(self.others)

    @property
    def scaled(self) -> Decimal:
        """The value with its suffix applied (``21M`` -> 21000000)."""
        return self.value * SUFFIXES[self.suffix] if self.suffix else self.value

    @property
    def number(self) -> Number:
        """The number it holds in the shared model: value, written precision, percent, scale."""
        return Number(self.value, self.percent, SUFFIXES[self.suffix] if self.suffix else _ONE)

    def __float__(self) -> float:
        return float(self.value)


def clean_latex(text: str) -> str:
    """Cell text with LaTeX formatting, footnote marks and odd spaces removed; ``\\pm`` becomes ``±``.

    >>> clean_latex(r"$\\mathbf{45.3}\\pm0.2$")
    '45.3±0.2'
    """
    t = text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-").replace("&amp;", "&")
    t = t.replace("\\pm", "±").replace("\\%", "%").replace("\\uparrow", "↑").replace("\\downarrow", "↓")
    t = t.replace("\\textpm", "±").replace("\\mp", "±").replace("$", "")
    t = _TEXT_SUPERSCRIPT.sub("^", _FOOTNOTES.sub("", t))
    t = _SPACES.sub(" ", t)
    t = _WRAPPERS.sub("", t)
    t = _COLOR_ARGS.sub("", t)
    t = _SUPERSCRIPT.sub("", t)
    t = _MARKS.sub("", t).replace("^", "")
    # a subscript right after a number is its spread: 45.3_{(0.2)} / 45.3_{0.2}
    t = _SUBSCRIPT.sub(_subscript, t)
    t = t.replace("{", "").replace("}", "")
    t = re.sub(r"(?<=\d)\s(?=\d{3}(?!\d))", "", t)  # thin-space thousands: 11 108
    return " ".join(t.split())


_SYMBOLS = {
    "pm": "±", "textpm": "±", "mp": "∓", "%": "%", "&": "&", "_": "_", "#": "#", "$": "$",
    "uparrow": "↑", "downarrow": "↓", "rightarrow": "→", "to": "→", "times": "×", "approx": "≈",
    "sim": "∼", "dagger": "†", "ddagger": "‡", "dag": "†", "ddag": "‡", "star": "⋆", "ast": "*", "checkmark": "✓",
    "leq": "≤", "geq": "≥", "le": "≤", "ge": "≥", "cdot": "·", "infty": "∞", "S": "§", "P": "¶",
}  # fmt: skip
_DISPLAY_SYMBOL = re.compile(r"\\(%|&|_|#|\$|[a-zA-Z]+)(?![a-zA-Z])")
_DISPLAY_COLOUR = re.compile(
    r"\\(?:cellcolor|rowcolor|columncolor|color|textcolor|colorbox)\s*(?:\[[^\]]{0,100}\])?\s*\{[^{}]*\}"
)
_DISPLAY_CITE = re.compile(r"\\cite[tp]?\*?\s*(?:\[[^\]]{0,100}\])?\s*\{([^{}]*)\}")
_DISPLAY_SCRIPT = re.compile(r"[_^]\s*(?:\{([^{}]*)\}|(\S))")
_DISPLAY_SPACES = re.compile(r"\\[,;:! ]|\\q?quad\b|~")


def display_text(text: str) -> str:
    """A cell as a reader of the typeset table sees it: LaTeX markup removed and symbols written as
    characters (``\\textbf{43.7}`` -> ``43.7``, ``AP$_{50}$`` -> ``AP50``, ``45.3\\pm0.2`` -> ``45.3±0.2``,
    ``68.4\\%`` -> ``68.4%``). Text without LaTeX (no backslash, brace, script or ``$`` pair) is
    returned unchanged, so ``$5`` in an HTML table stays ``$5``.

    >>> display_text(r"$\\mathbf{45.3}\\pm0.2$"), display_text(r"AP$_{50}$")
    ('45.3±0.2', 'AP50')
    """
    if not any(mark in text for mark in "\\{}^_") and text.count("$") < 2:
        return text
    t = text.replace("$", "") if text.count("$") % 2 == 0 else text
    t = _TEXT_SUPERSCRIPT.sub("^", _FOOTNOTES.sub("", _DISPLAY_COLOUR.sub("", t)))
    t = _DISPLAY_CITE.sub(lambda m: f"[{m.group(1)}]", t)
    t = _DISPLAY_SPACES.sub(" ", t)
    # a known symbol becomes its character; any other command is formatting and goes, its
    # argument (the braces removed below) stays
    t = _DISPLAY_SYMBOL.sub(lambda m: _SYMBOLS.get(m.group(1), ""), t)
    for _ in range(3):  # nested scripts: x_{a_{b}}
        t = _DISPLAY_SCRIPT.sub(_display_script, t)
    t = t.replace("{", "").replace("}", "")
    return " ".join(t.split())


def _display_script(match: re.Match[str]) -> str:
    """A subscript joins the text (AP50); a superscript keeps its ``^`` (10^-3) unless it is a mark (†)."""
    content = match.group(1) if match.group(1) is not None else match.group(2)
    if match.group(0).startswith("^") and content.strip() not in ("†", "‡", "*", "⋆", "§", "¶", "✓"):
        return "^" + content
    return content


def _subscript(match: re.Match[str]) -> str:
    content = (match.group(1) if match.group(1) is not None else match.group(2)).strip("() ")
    return f" (±{content})" if content else ""


def parse_measurement(text: str) -> Measurement | None:
    """Read the number a scientific-table cell holds, or None when it holds text.

    A cell is a measurement when, after LaTeX and marks are removed, it is a number optionally
    followed by a suffix/unit/percent, a ``±`` spread, a delta, or further numbers separated by
    ``/``, ``|``, ``,`` or ``;`` (several metrics). Anything else ("ResNet-50", "CVPR 2021") is text.

    Commas in groups of three digits are thousands separators (``25,600`` and LaTeX's ``25{,}600``
    are 25600); any other comma separates values (``1,2`` and ``0.5,0.7`` are two numbers).
    Full-width characters read as their ASCII forms (``８１．９`` is 81.9); ``1_234`` is not a number.
    Invisible format characters (:data:`_INVISIBLE`: direction marks, a byte-order mark, a soft
    hyphen) are no part of the value, so ``"\u200f66.9"`` is 66.9, not text that hides a wrong copy.
    A cell longer than :data:`MAX_MEASUREMENT_TEXT` characters is text.
    """
    if not text or len(text) > MAX_MEASUREMENT_TEXT or not any(ch.isdigit() for ch in text):
        return None
    cleaned = clean_latex(ascii_forms(text.translate(_INVISIBLE)))
    if len(cleaned) > 80:
        return None
    main = _MAIN.match(cleaned)
    if main is None:
        return None
    value = parse_decimal(main.group("num"))
    if value is None:
        return None
    rest = cleaned[main.end() :].strip()
    suffix = main.group("suffix")
    percent = bool(main.group("pct"))
    unit = re.match(r"^([a-zA-Z/]{1,7})(?![\w.])\s*", rest)
    if unit and unit.group(1).lower() in _UNITS:
        rest = rest[unit.end() :]
    uncertainty = delta = None
    others: list[Decimal] = []
    spread = False  # the number read last has its ± spread
    while rest:
        m = _PM.match(rest)
        if m and not spread:  # one spread a number: "48.80±3.16 / 51.25±2.52" (later ones not kept)
            if not others:
                uncertainty = parse_decimal(m.group("num"))
            spread = True
            rest = rest[m.end() :].strip()
            continue
        m = _BRACKETED.match(rest)
        if m:
            number = parse_decimal(m.group("num"))
            sign = m.group("sign") or ""
            if sign in ("±", "\\pm") and uncertainty is None:
                uncertainty = number
            elif delta is None and (sign or m.group("num")[0] in "+-"):
                delta = -abs(number) if sign in ("↓", "\\downarrow") and number is not None else number
            # "(12.3%)" and other bracketed notes do not change the value
            rest = rest[m.end() :].strip()
            continue
        m = _ARROW_DELTA.match(rest) or (_SIGNED_DELTA.match(rest) if delta is None and not others else None)
        if m and delta is None:
            number = parse_decimal(m.group("num"))
            sign = m.groupdict().get("sign") or ""
            delta = -abs(number) if sign in ("↓",) and number is not None else number
            rest = rest[m.end() :].strip()
            continue
        m = _MULTI_SEPARATOR.match(rest)
        if m:
            following = _MAIN.match(rest[m.end() :].strip())
            if following is None:
                return None
            number = parse_decimal(following.group("num"))
            if number is None:
                return None
            others.append(number)
            spread = False
            rest = rest[m.end() :].strip()[following.end() :].strip()
            continue
        if rest in ("↑", "↓", "%"):
            break
        return None
    return Measurement(
        text=text,
        value=value,
        suffix=suffix,
        percent=percent,
        uncertainty=uncertainty,
        delta=delta,
        others=tuple(others),
        approximate=bool(main.group("approx")),
        signed=main.group("num").startswith("+"),
    )


_BOUND = re.compile(
    r"^\s*(?:<=?|>=?|≤|≥|⩽|⩾|&lt;|&gt;|\\(?:leq?|geq?|leqslant|geqslant|lt|gt)(?![a-zA-Z]))\s*"
)


def is_bound(text: str) -> bool:
    """True when a cell holds a bound rather than a value: a number after an inequality sign
    (``>43.7``, ``$<$43.7``, ``\\leq 43.7``, ``≥ 5``). :func:`parse_measurement` reads no number
    from such a cell (43.7 is not what was measured), but the cell is still a number cell: a row's
    label ends before it (see :meth:`tabverify.table.grid.Grid.row_label`).
    """
    if len(text) > 200 or not any(ch.isdigit() for ch in text):
        return False
    bound = _BOUND.match(ascii_forms(text).replace("$", ""))
    return bound is not None and parse_measurement(text.replace("$", "")[bound.end() :]) is not None


_AGREEMENT_ORDER = (Agreement.EXACT, Agreement.ROUNDED, Agreement.SCALED, Agreement.DIFFERENT)


def compare(
    a: Measurement, b: Measurement, rounding: bool = True, scale: bool = True, copy: bool = False
) -> Agreement:
    """How measurement ``a`` relates to measurement ``b``: :func:`tabverify.table.numbers.agreement`
    of their numbers (exact, rounded, scaled or different).

    A cell holding several numbers (``65.5 / 84.5``, :attr:`Measurement.multi`) agrees only with a
    cell holding as many, each pair agreeing; the result is the weakest of the pairs' agreements
    (exact, then rounded, then scaled). It never agrees with a single number.

    Args:
        rounding: accept one value being the other rounded/truncated to fewer written digits.
        scale: accept a factor of 100 between them (percent vs fraction), with rounding if allowed.
        copy: ``a`` is a copy of ``b``, which it may round but never make more precise
            (:func:`tabverify.table.numbers.agreement`).
    """
    if len(a.others) != len(b.others):
        return Agreement.DIFFERENT
    result = agreement(a.number, b.number, rounding, scale, copy)
    for x, y in zip(a.others, b.others, strict=True):
        if result is Agreement.DIFFERENT:
            break
        result = max(result, agreement_of_values(x, y, rounding, scale, copy), key=_AGREEMENT_ORDER.index)
    return result


def contradiction(copy: Measurement, original: Measurement) -> tuple[Measurement, Measurement] | None:
    """The first pair of numbers in which a copied cell contradicts its original, as single-number
    measurements, or None when none does: a pair contradicts when it disagrees as a copy
    (:func:`compare` with ``copy=True``) by more than a difference of precision
    (:func:`~tabverify.table.numbers.only_precision_differs`: 0.880 / 0.9 does not). Cells of
    several numbers are read pair by pair (callers pair only cells of as many numbers)."""
    pairs = [(replace(copy, others=()), replace(original, others=()))] + [
        (
            Measurement(str(x), x, copy.suffix, copy.percent),
            Measurement(str(y), y, original.suffix, original.percent),
        )
        for x, y in zip(copy.others, original.others, strict=False)
    ]
    for x, y in pairs:
        if compare(x, y, copy=True) is Agreement.DIFFERENT and not only_precision_differs(x.number, y.number):
            return x, y
    return None
