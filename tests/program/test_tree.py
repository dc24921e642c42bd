import pytest

from tabverify.errors import ProgramSyntaxError, ProgramTypeError
from tabverify.program import AllRows, Call, Header, Literal, parse_program

PROGRAMS = [
    "eq{count{filter_eq{filter_greater{all_rows; total; 30}; style; jive}}; 2}",
    "greater{hop{filter_eq{all_rows; player; jarron collins}; years for jazz}; hop{filter_eq{all_rows; player; dell curry}; years for jazz}}",
    "and{only{filter_eq{all_rows; nationality; united states}}; eq{hop{filter_eq{all_rows; nationality; united states}; athlete}; shawn crawford}}",
    "eq{avg{all_rows; goals}; 120.8}",
]


@pytest.mark.parametrize("text", PROGRAMS)
def test_parse_print_round_trip(text: str) -> None:
    program = parse_program(text + "=True")
    assert str(program) == text
    assert parse_program(str(program)) == program


def test_arguments_are_typed_by_signature() -> None:
    program = parse_program("eq{count{filter_eq{all_rows; party; democratic}}; 3}")
    count = program.args[0]
    assert isinstance(count, Call)
    assert count.args[0] == Call("filter_eq", (AllRows(), Header("party"), Literal("democratic")))
    assert program.args[1] == Literal("3")
    assert program.functions == ("eq", "count", "filter_eq")
    assert program.headers == ("party",)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", ProgramSyntaxError),
        ("eq{count{all_rows}; 3", ProgramSyntaxError),
        ("frobnicate{all_rows}", ProgramSyntaxError),
        ("eq{count{all_rows}; 3} extra", ProgramSyntaxError),
        ("eq{count{all_rows}}", ProgramSyntaxError),
        ("count{democratic}", ProgramTypeError),
        # an empty value is refused (an empty header names the unnamed column: see test_human_program_semantics)
        ("eq{hop{all_rows; name}; }", ProgramSyntaxError),
        ("and{count{all_rows}; only{all_rows}}", ProgramTypeError),
    ],
)
def test_bad_programs_raise_clear_errors(text: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        parse_program(text)
