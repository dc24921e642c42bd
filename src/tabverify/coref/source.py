"""Reading coreference files: the one error every reader raises and the one way each reads a file.

Every coreference reader reads through :mod:`tabverify.files` (regular files only, a byte cap, UTF-8,
strict JSON with a nesting cap), so a device, a FIFO, ``NaN`` or JSON nested 10,000 deep is one
:class:`CorefFormatError` with a message that names the file, never a traceback or a hang.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tabverify import files
from tabverify.errors import TabverifyError


class CorefFormatError(TabverifyError):
    """A coreference file could not be read (unbalanced brackets, spans outside the text, ...)."""


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
