"""The program language refuses what it cannot mean: text where a bool is expected, arithmetic on
dates, programs nested too deep. These used to give silently wrong answers or tracebacks."""

import pytest

from tabverify.errors import ProgramExecutionError, ProgramSyntaxError, ProgramTypeError
from tabverify.program import Call, Literal, execute, parse_program
from tabverify.program.tree import MAX_DEPTH, check_program
from tabverify.table import Table


@pytest.fixture
def matches() -> Table:
    return Table.from_rows(
        ["date", "opponent", "score", "attendance"],
        [
            ["june 11 , 1958", "albany", "3 - 1", "1,200"],
            ["june 18 , 1958", "dayton", "0 - 2", "950"],
            ["july 2 , 1959", "albany", "1 - 1", "1,430"],
        ],
    )


@pytest.mark.parametrize(
    "program",
    [
        "and{false; false}",
        "and{true; eq{1; 1}}",
        "not{false}",
        "not{true}",
        "and{eq{1; 1}; yes}",
    ],
)
def test_text_where_a_bool_is_expected_is_a_type_error(program: str) -> None:
    with pytest.raises(ProgramTypeError, match="must be a bool"):
        parse_program(program)


def test_a_tree_built_in_code_is_checked_before_it_runs(matches: Table) -> None:
    # the parser is not the only way in: a tree built in code meets the same types
    with pytest.raises(ProgramTypeError, match="must be a bool"):
        execute(Call("and", (Literal("false"), Literal("false"))), matches)
    with pytest.raises(ProgramTypeError, match="must be a bool"):
        execute(Call("not", (Literal("false"),)), matches)
    with pytest.raises(ProgramSyntaxError, match="takes 2 arguments"):
        execute(Call("eq", (Literal("1"),)), matches)
    with pytest.raises(ProgramSyntaxError, match="unknown function"):
        execute(Call("frobnicate", (Literal("1"),)), matches)


def test_booleans_still_combine(matches: Table) -> None:
    assert execute("and{eq{1; 1}; not{eq{1; 2}}}", matches).value is True
    assert execute("and{eq{1; 1}; eq{1; 2}}", matches).value is False
    assert execute("not{eq{hop{first{all_rows}; opponent}; albany}}", matches).value is False


@pytest.mark.parametrize(
    "program",
    [
        "eq{sum{all_rows; date}; 1}",
        "eq{avg{all_rows; date}; 1}",
        "eq{add{hop{first{all_rows}; date}; 1}; 1}",
        "eq{diff{hop{first{all_rows}; date}; 3}; 1}",
        "eq{diff{june 11; may 13}; 29}",
    ],
)
def test_arithmetic_on_dates_is_refused(matches: Table, program: str) -> None:
    with pytest.raises(ProgramExecutionError, match="is a date"):
        execute(program, matches)


def test_dates_still_order_and_subtract_as_years(matches: Table) -> None:
    assert execute("eq{hop{argmax{all_rows; date}; opponent}; albany}", matches).value is True
    assert execute("eq{hop{argmin{all_rows; date}; opponent}; albany}", matches).value is True
    assert execute("greater{hop{last{all_rows}; date}; hop{first{all_rows}; date}}", matches).value is True
    assert execute("eq{count{filter_greater{all_rows; date; june 15 , 1958}}; 2}", matches).value is True
    assert (
        execute("eq{diff{hop{last{all_rows}; date}; hop{first{all_rows}; date}}; 1}", matches).value is True
    )
    # numbers beside the dates still add up
    assert execute("eq{sum{all_rows; attendance}; 3580}", matches).value is True


def test_nth_max_reads_numbers_inside_text_cells() -> None:
    # a cell whose text holds a number without being one used to fail an internal assertion
    table = Table.from_rows(["driver", "points"], [["a", "18 points"], ["b", "mark 12 , fined"], ["c", "7"]])
    assert execute("eq{nth_max{all_rows; points; 2}; 12}", table).value is True


def test_nesting_is_capped_with_a_clear_message() -> None:
    deep = "not{" * 500 + "eq{1; 1}" + "}" * 500
    with pytest.raises(ProgramSyntaxError, match=f"more than {MAX_DEPTH} deep"):
        parse_program(deep)
    fine = "not{" * (MAX_DEPTH - 1) + "eq{1; 1}" + "}" * (MAX_DEPTH - 1)
    assert parse_program(fine).size == MAX_DEPTH


def test_deep_trees_built_in_code_are_refused_without_recursion(matches: Table) -> None:
    program: Call = Call("eq", (Literal("1"), Literal("1")))
    for _ in range(5000):
        program = Call("not", (program,))
    with pytest.raises(ProgramSyntaxError, match="deep"):
        check_program(program)
    with pytest.raises(ProgramSyntaxError, match="deep"):
        execute(program, matches)


def test_syntax_errors_quote_a_window_of_a_long_program() -> None:
    program = "eq{count{all_rows}; " + "x" * 100_000 + "} extra"
    with pytest.raises(ProgramSyntaxError) as caught:
        parse_program(program)
    message = str(caught.value)
    assert "unexpected text after the program" in message
    assert len(message) < 300
