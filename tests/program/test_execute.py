import pytest

from tabverify.errors import ProgramExecutionError
from tabverify.program import execute
from tabverify.table import CellRef, Table


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("eq{count{filter_eq{all_rows; party; democratic}}; 3}", True),
        ("eq{count{filter_eq{all_rows; party; democratic}}; 2}", False),
        ("only{filter_eq{all_rows; first elected; 1994}}", True),
        ("eq{hop{argmax{all_rows; votes}; incumbent}; mary jones}", True),
        ("eq{hop{argmin{all_rows; votes}; incumbent}; tom green}", True),
        (
            "greater{hop{filter_eq{all_rows; incumbent; lisa white}; votes}; hop{filter_eq{all_rows; incumbent; john smith}; votes}}",
            True,
        ),
        ("eq{avg{all_rows; votes}; 51756}", True),
        ("eq{sum{filter_eq{all_rows; party; republican}; votes}; 100,457}", True),
        ("eq{max{all_rows; first elected}; 2000}", True),
        ("all_greater{all_rows; votes; 39000}", True),
        ("all_eq{all_rows; party; democratic}", False),
        (
            "eq{diff{hop{filter_eq{all_rows; district; ohio 2}; first elected}; hop{filter_eq{all_rows; district; ohio 5}; first elected}}; -14}",
            True,
        ),
        ("eq{most_freq{all_rows; party}; democratic}", True),
        ("eq{hop{nth_argmax{all_rows; votes; 2}; incumbent}; lisa white}", True),
        ("eq{hop{first{all_rows}; incumbent}; john smith}", True),
        ("eq{hop{last{all_rows}; incumbent}; tom green}", True),
        (
            "before{filter_eq{all_rows; incumbent; mary jones}; filter_eq{all_rows; incumbent; tom green}}",
            True,
        ),
        ("eq{count{filter_greater_eq{all_rows; first elected; 1990}}; 4}", True),
        ("not_eq{hop{filter_eq{all_rows; incumbent; alan brown}; party}; republican}", True),
        ("and{within{all_rows; party; republican}; none{filter_eq{all_rows; party; green}}}", True),
        ("samerow{all_rows; incumbent; tom green; party; republican}", True),
        ("eq{uniq{all_rows; party}; 2}", True),
    ],
)
def test_programs_compute_the_expected_value(election: Table, program: str, expected: bool) -> None:
    assert execute(program, election).value is expected


def test_numbers_compare_at_the_literals_precision(election: Table) -> None:
    # the mean is 51756.0; "51,756.0" and "51756" both match, "51,757" does not
    assert execute("eq{avg{all_rows; votes}; 51,756.0}", election).value is True
    assert execute("eq{avg{all_rows; votes}; 51,757}", election).value is False


def test_evidence_lists_the_cells_read(election: Table) -> None:
    execution = execute("eq{hop{filter_eq{all_rows; incumbent; mary jones}; votes}; 61002}", election)
    assert CellRef(1, 1) in execution.evidence  # the filtered cell
    assert CellRef(1, 4) in execution.evidence  # the value read
    assert execution.display == "True"


def test_execution_errors_name_the_problem(election: Table) -> None:
    with pytest.raises(ProgramExecutionError, match="no column named 'salary'"):
        execute("eq{hop{all_rows; salary}; 3}", election)
    with pytest.raises(ProgramExecutionError, match="empty view"):
        execute("eq{hop{filter_eq{all_rows; party; green}; votes}; 3}", election)
    with pytest.raises(ProgramExecutionError, match="no numbers"):
        execute("eq{avg{all_rows; party}; 3}", election)
