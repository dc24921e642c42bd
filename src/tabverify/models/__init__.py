"""The trained models shipped with tabverify (``*.npz`` beside this file), and how to read them.

Model files are untrusted input (``check --models DIR``): :func:`read_arrays` turns any failure to
read one into a :class:`~tabverify.errors.ModelError`, and :func:`check_array` is what the loaders
use to check each array's dtype and shape before trusting it. Before any array is decompressed,
:func:`read_arrays` refuses a file whose members declare more than :data:`MAX_MODEL_BYTES`
uncompressed (a small compressed file can otherwise expand to gigabytes in memory).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import BinaryIO

import numpy as np

from tabverify.errors import ModelError

MAX_MODEL_BYTES = 100 * 1024 * 1024
"""The most a model file may hold uncompressed (each array and all together): 100 MB. The largest
shipped model, the coreference e5 pair network, holds about 30 MB; Python's zipfile never yields more than a member's declared size, so the
declared sizes bound what loading can allocate."""

TRAIN_HINT = (
    "train models with `tabverify train tabfact --data DIR --out DIR` and use them with `--models DIR`"
)


def model_location(filename: str, path: str | Path | None) -> str:
    """How messages name a model file: the path given, else the package's own file."""
    return str(path) if path is not None else f"the package's models/{filename}"


def not_a_model(
    filename: str, path: str | Path | None, kind: str, reason: str, hint: str = TRAIN_HINT
) -> ModelError:
    """The error for a file that reads but does not hold a ``kind`` model ("ranker", "verdict"),
    ending with how to get a good one (``hint``)."""
    return ModelError(f"{model_location(filename, path)} is not a {kind} model file ({reason}); {hint}")


def check_declared_size(source: str | Path | BinaryIO, location: str, hint: str = TRAIN_HINT) -> None:
    """Refuse a model file whose members declare more than :data:`MAX_MODEL_BYTES` uncompressed.

    ``source`` is a path or a seekable binary handle (left at the start again); only the zip
    directory is read. A file that is not a zip passes here, so :func:`numpy.load` reports it.

    Raises:
        ModelError: one member, or all of them together, declare more than the cap.
    """
    try:
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile:
        return
    finally:
        if not isinstance(source, (str, Path)):
            source.seek(0)
    total = 0
    for member in members:
        total += member.file_size
        if member.file_size > MAX_MODEL_BYTES:
            what = f"member {member.filename!r} declares {member.file_size} bytes"
        elif total > MAX_MODEL_BYTES:
            what = f"its members declare {total} bytes together"
        else:
            continue
        raise ModelError(
            f"cannot load {location}: {what} uncompressed, more than the {MAX_MODEL_BYTES} "
            f"(100 MB) a model file may hold; {hint}"
        )


def read_arrays(
    filename: str, path: str | Path | None = None, hint: str = TRAIN_HINT
) -> dict[str, np.ndarray]:
    """The arrays of a model file: ``path`` when given, else the package's own ``filename``.

    Every array is read in full here (no pickled objects), so a truncated or corrupt file fails
    now, not when the model is first used; first the zip directory is checked against
    :data:`MAX_MODEL_BYTES` so that nothing is decompressed from an oversized file.

    Raises:
        ModelError: the file is missing, or not a readable .npz file (not a zip, truncated,
            corrupt member, pickled objects), or it declares more than :data:`MAX_MODEL_BYTES`
            uncompressed.
    """
    try:
        if path is None:
            with resources.files("tabverify").joinpath("models", filename).open("rb") as handle:
                check_declared_size(handle, model_location(filename, path), hint)
                with np.load(handle, allow_pickle=False) as data:
                    return {key: np.asarray(data[key]) for key in data.files}
        check_declared_size(path, model_location(filename, path), hint)
        with np.load(path, allow_pickle=False) as data:
            return {key: np.asarray(data[key]) for key in data.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ModelError(f"cannot load {model_location(filename, path)}: {reason}; {hint}") from exc


def check_array(
    data: dict[str, np.ndarray], key: str, dtype_kinds: str, ndim: int, fail: Callable[[str], ModelError]
) -> np.ndarray:
    """The array ``key`` of a model file, checked: it exists, its dtype is of one of
    ``dtype_kinds`` (numpy kind codes: "i" signed, "u" unsigned integers, "f" floats) and it has
    ``ndim`` dimensions.

    Raises:
        ModelError: ``fail(reason)`` when the array is missing or of the wrong dtype or shape.
    """
    if key not in data:
        raise fail(f"no array {key!r}; it has {', '.join(sorted(data)) or 'no arrays'}")
    array = data[key]
    if array.dtype.kind not in dtype_kinds:
        raise fail(f"array {key!r} has dtype {array.dtype}")
    if array.ndim != ndim:
        raise fail(f"array {key!r} has shape {array.shape}, expected {ndim} dimension(s)")
    return array
