"""Reading user files safely: regular files only, a byte cap, UTF-8, and JSON with a nesting cap.

Every reader in the package reads user files through this module (a foundation like ``errors``;
it imports nothing else from tabverify), so ``/dev/zero``, a FIFO, a 10 GB file or JSON nested
10,000 deep is one clear error, never a hang, a MemoryError or a RecursionError.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from tabverify.errors import TabverifyError

MAX_FILE_BYTES = 50_000_000
"""The largest file any reader accepts (50 MB)."""

MAX_JSON_DEPTH = 200
"""The deepest nesting of arrays and objects accepted in a JSON file."""


def read_bytes(path: str | Path, what: str = "file", error: type[TabverifyError] = TabverifyError,
               max_bytes: int = MAX_FILE_BYTES) -> bytes:  # fmt: skip
    """The bytes of a regular file, at most ``max_bytes`` of them.

    Refuses missing paths, folders, devices, FIFOs and sockets (also behind a symlink) before
    opening them, and never reads more than ``max_bytes + 1`` bytes, so a special file or a
    file growing while it is read cannot exhaust memory. Raises ``error`` with a message that
    names the path, what is wrong and what to do.
    """
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{path}: is a folder, expected {_a(what)}")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path}: not a regular file (a device, FIFO or socket); expected {_a(what)}")
    if info.st_size > max_bytes:
        raise error(f"{path}: {info.st_size} bytes is too large for {_a(what)} (limit {max_bytes})")
    try:
        # O_NONBLOCK: if the path was swapped for a FIFO after the check, open must not block
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise error(f"{path}: not a regular file; expected {_a(what)}")
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise error(f"{path}: more than {max_bytes} bytes is too large for {_a(what)}")
    return data


def _a(what: str) -> str:
    """``what`` with its indefinite article: "a table file", "an arXiVeri JSON file"."""
    return ("an " if what[:1].lower() in ("a", "e", "i", "o") else "a ") + what


def read_text(path: str | Path, what: str = "file", error: type[TabverifyError] = TabverifyError,
              max_bytes: int = MAX_FILE_BYTES) -> str:  # fmt: skip
    """The UTF-8 text of a regular file (a BOM is dropped), with :func:`read_bytes`'s checks."""
    data = read_bytes(path, what, error, max_bytes)
    if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        raise error(
            f"{path}: looks like UTF-32 (it starts with a UTF-32 byte order mark); re-save it as UTF-8"
        )
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise error(
            f"{path}: looks like UTF-16 (it starts with a UTF-16 byte order mark); re-save it as UTF-8"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: not valid UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); "
            "re-save the file as UTF-8"
        ) from None


def _json_depth_ok(text: str, limit: int) -> bool:
    """Whether no array/object in ``text`` nests deeper than ``limit`` (brackets in strings skipped)."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return False
        elif char in "]}":
            depth -= 1
    return True


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, source: str = "JSON", error: type[TabverifyError] = TabverifyError,
               max_depth: int = MAX_JSON_DEPTH) -> Any:  # fmt: skip
    """Strict JSON: ``NaN``/``Infinity`` refused, nesting capped at ``max_depth``, errors as ``error``."""
    # a quick bound first: only texts with that many brackets can nest that deep
    if text.count("[") + text.count("{") > max_depth and not _json_depth_ok(text, max_depth):
        raise error(f"{source}: JSON nested deeper than {max_depth} levels; flatten the file")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        reason = str(exc)
        if "integer string conversion" in reason:
            reason = "a number has more than 4,300 digits"
        raise error(f"{source}: not valid JSON ({reason})") from None
    except RecursionError:
        raise error(f"{source}: JSON nested too deeply; flatten the file") from None


def read_json(path: str | Path, what: str = "JSON file", error: type[TabverifyError] = TabverifyError,
              max_bytes: int = MAX_FILE_BYTES) -> Any:  # fmt: skip
    """A JSON file read with :func:`read_text`'s checks and parsed with :func:`parse_json`."""
    return parse_json(read_text(path, what, error, max_bytes), str(path), error)
