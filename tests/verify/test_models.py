from pathlib import Path

import numpy as np
import pytest

from tabverify.errors import ModelError
from tabverify.program.ranker import Ranker
from tabverify.verify.decision import VerdictModel


def test_shipped_models_load() -> None:
    assert np.count_nonzero(Ranker.load().weights) > 1000
    assert len(VerdictModel.load().vocabulary) > 1000


def test_verdict_model_learns_and_round_trips(tmp_path: Path) -> None:
    rows = [{"bias": 1.0, "row_all": 1.0}] * 40 + [{"bias": 1.0, "no_cell_link": 1.0}] * 40
    labels = [1] * 40 + [0] * 40
    model = VerdictModel(min_count=1, iterations=200).fit(rows, labels)
    assert model.probability({"bias": 1.0, "row_all": 1.0}) > 0.9
    assert model.probability({"bias": 1.0, "no_cell_link": 1.0}) < 0.1
    model.save(tmp_path / "m.npz")
    again = VerdictModel.load(tmp_path / "m.npz")
    assert again.probability({"bias": 1.0, "row_all": 1.0}) == pytest.approx(
        model.probability({"bias": 1.0, "row_all": 1.0}), abs=1e-3
    )


def test_missing_or_wrong_model_files_raise_model_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="tabverify train tabfact"):
        Ranker.load(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ModelError):
        VerdictModel.load(tmp_path / "junk.npz")
    VerdictModel(min_count=1, iterations=5).fit([{"a": 1.0}, {"a": 0.0}], [1, 0]).save(tmp_path / "v.npz")
    with pytest.raises(ModelError, match="not a ranker file"):
        Ranker.load(tmp_path / "v.npz")
