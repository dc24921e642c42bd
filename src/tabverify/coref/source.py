"""Reading coreference files: the one error every reader raises and the one way each reads a file.

Every coreference reader reads through :mod:`tabverify.files` (regular files only, a byte cap, UTF-8,
strict JSON with a nesting cap), so a device, a FIFO, ``NaN`` or JSON nested 10,000 deep is one
:class:`CorefFormatError` with a message that names the file, never a traceback or a hang.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tabverify import files
from tabverify.errors import TabverifyError

MAX_LISTED = 5
"""How many items (entities, ids) an error message lists before it says "and N more"."""

MAX_SHOWN = 60
"""How many characters of a value read from a file (a column, a mention, an id) a message shows."""


class CorefFormatError(TabverifyError):
    """A coreference file could not be read (unbalanced brackets, spans outside the text, ...)."""


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` for a message: one line (``repr`` escapes line breaks), cut to ``limit``
    characters with "…" so that a hostile value cannot make a message long.

    >>> shown("abc")
    "'abc'"
    >>> shown("x" * 100, 10)
    "'xxxxxxxx…"
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def listed(items: Iterable[object], limit: int = MAX_LISTED) -> str:
    """Items for a message, joined by ", ": the first ``limit``, then "and N more" for the rest,
    each cut as by :func:`shown` when it is not a short string.

    >>> listed(["e1", "e2"])
    'e1, e2'
    >>> listed([str(i) for i in range(8)], 3)
    '0, 1, 2 and 5 more'
    """
    items = list(items)
    parts = [
        str(i) if isinstance(i, str) and len(i) <= 20 and i.isprintable() else shown(i, 20)
        for i in items[:limit]
    ]
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(parts) + more


def read_source(path: str | Path, what: str = "coreference file") -> str:
    """The UTF-8 text of a coreference file (or a raw text), with :func:`tabverify.files.read_text`'s
    checks.

    Raises:
        CorefFormatError: not a regular file, too large, or not UTF-8.
    """
    return files.read_text(path, what, CorefFormatError)


def parse_json_source(text: str, source: str) -> Any:
    """Strict JSON (``NaN``/``Infinity`` refused, nesting capped) from a coreference file.

    Raises:
        CorefFormatError: invalid JSON, a non-finite number, or nesting deeper than the cap.
    """
    return files.parse_json(text, source, CorefFormatError)
