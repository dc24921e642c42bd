import pytest

from tabverify import Label, TabverifyError, verify
from tabverify.program import execute
from tabverify.table import Table


@pytest.mark.parametrize(
    ("statement", "label"),
    [
        ("mary jones be first elected in 1986", Label.ENTAILED),
        ("mary jones be first elected in 1994", Label.REFUTED),
    ],
)
def test_verdicts_on_single_row_facts(election: Table, statement: str, label: Label) -> None:
    verdict = verify(election, statement)
    assert verdict.label is label


def test_verdict_carries_a_program_that_reexecutes(election: Table) -> None:
    verdict = verify(election, "there be 3 incumbent from the democratic party")
    assert verdict.program
    execution = execute(verdict.program, election)
    assert execution.value is verdict.result
    assert set(execution.evidence) == set(verdict.evidence)
    assert 0.5 <= verdict.confidence <= 1.0
    assert verdict.to_dict()["label"] in ("ENTAILED", "REFUTED")


def test_empty_statement_is_an_input_error(election: Table) -> None:
    with pytest.raises(TabverifyError, match="empty"):
        verify(election, "   ")


def test_unlinkable_statement_is_not_enough_info_with_a_guess(election: Table) -> None:
    verdict = verify(election, "zebras fly over mountains")
    assert verdict.label is Label.NOT_ENOUGH_INFO and verdict.program == ""
    assert "no evidence found" in verdict.notes[0] and "'zebras'" in verdict.notes[0]
    # a benchmark that forces a binary answer still gets one
    assert verdict.forced_label in (Label.ENTAILED, Label.REFUTED)
