"""The trained models shipped with tabverify (``*.npz`` beside this file), and how to read them."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

from tabverify.errors import ModelError

TRAIN_HINT = (
    "train models with `tabverify train tabfact --data DIR --out DIR` and use them with `--models DIR`"
)


def read_arrays(filename: str, path: str | Path | None = None) -> dict[str, np.ndarray]:
    """The arrays of a model file: ``path`` when given, else the package's own ``filename``.

    Raises:
        ModelError: the file is missing or not a readable .npz file.
    """
    try:
        if path is None:
            with (
                resources.files("tabverify").joinpath("models", filename).open("rb") as handle,
                np.load(handle) as data,
            ):
                return {key: data[key] for key in data.files}
        with np.load(path) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, KeyError) as exc:
        where = path or f"the package's models/{filename}"
        raise ModelError(f"cannot load {where}: {exc}; {TRAIN_HINT}") from exc
