"""The TRL-Bench protocol (../shared/specs/trl-bench.md): frozen table encoders evaluated with the
same probes and metrics, one suite per module.

- ``linkage`` (:mod:`.linkage`): record linkage on the DeepMatcher datasets as row-to-row alignment;
  the cosine-threshold baseline and the linear and MLP probes (:mod:`.probes`).
- ``dlte``, ``union``, ``join`` (:mod:`.dlte`): data-lake table enrichment, union search and join
  search on a lake built from TabFact tables by ``tabverify lake make-dlte``.
- ``claim-retrieval`` (:mod:`.claims`): each TabFact statement of a split against all the tables.

Every suite returns ``{"benchmark": "trl", "suite": ..., "encoder": ..., "metrics": {...}, ...}``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabverify.errors import DatasetError
from tabverify.lake.encoders import TableEncoder

__all__ = ["SUITES", "run_suite"]

SUITES: dict[str, str] = {
    "linkage": "linkage",
    "dlte": "dlte",
    "union": "dlte",
    "join": "dlte",
    "claim-retrieval": "claims",
}
"""Suite name -> the module of this package that runs it."""


def run_suite(
    suite: str,
    encoder: TableEncoder,
    data: str | Path,
    *,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Run one suite with a frozen ``encoder`` on the data folder ``data``; ``options`` are the
    suite's own (``split``, ``lake``, ``tiers``, ``limit``, ...: see each module's ``run``).

    Raises:
        DatasetError: an unknown suite, an option the suite does not take, or data not in the
            suite's layout.
    """
    if suite not in SUITES:
        raise DatasetError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)}")
    module = importlib.import_module(f"tabverify.bench.trl.{SUITES[suite]}")
    accepted = inspect.signature(module.run).parameters
    for option in options:
        if option not in accepted:
            flag = "--" + option.replace("_", "-")
            raise DatasetError(f"{flag} does not apply to the {suite} suite")
    if SUITES[suite] == "dlte":
        options["suite"] = suite
    return module.run(encoder, Path(data), progress=progress, **options)
