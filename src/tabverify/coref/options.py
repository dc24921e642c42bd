"""Scoring options given as text (a command line, a web form): kind weights as ``KIND=W``."""

from __future__ import annotations

import math
from collections.abc import Iterable

from tabverify.errors import TabverifyError


def parse_weights(items: Iterable[str]) -> dict[str, float]:
    """``KIND=W`` items as ``{kind: weight}`` (for :func:`tabverify.coref.score`'s ``kind_weights``).

    Raises:
        TabverifyError: an item without ``=``, or a weight that is not a finite number >= 0; the
            message starts with the item (``'word=x': ...``) so a caller can prefix its option name.
    """
    weights: dict[str, float] = {}
    for item in items:
        kind, _, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            raise TabverifyError(f"{item!r}: write KIND=NUMBER, e.g. embedded_pronoun=3") from None
        if not kind.strip() or not math.isfinite(number) or number < 0:
            raise TabverifyError(
                f"{item!r}: the weight must be a finite number >= 0 after a kind, e.g. embedded_pronoun=3"
            )
        weights[kind.strip()] = number
    return weights
