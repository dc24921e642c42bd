"""Property-based tests of the program language: any text parses or raises one of the two program
errors; generated well-typed programs print and parse back to the same tree; executing them on a
table gives a value or a program error, never anything else."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabverify.errors import ProgramExecutionError, ProgramSyntaxError, ProgramTypeError
from tabverify.program import AllRows, Call, Header, Literal, execute, parse_program
from tabverify.program.functions import FUNCTIONS, compatible
from tabverify.table import Table
from tests.conftest import ELECTION_ROWS

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROGRAM_ERRORS = (ProgramSyntaxError, ProgramTypeError)

# pieces of the syntax, so that random text is often close to a program
_PIECES = st.sampled_from(
    [*FUNCTIONS, "{", "}", ";", "; ", " ", "all_rows", "party", "3", "=True", "=false", "\n", "{}", "x"]
)
_TEXT = st.one_of(st.text(max_size=80), st.lists(_PIECES, max_size=40).map("".join))


@SETTINGS
@given(_TEXT)
def test_any_text_parses_or_raises_a_program_error(text: str) -> None:
    try:
        program = parse_program(text)
    except PROGRAM_ERRORS:
        return
    assert isinstance(program, Call)
    assert parse_program(str(program)) == program


def _word(text: str) -> bool:
    """Text that the brace syntax can carry as a bare argument, unchanged."""
    return bool(text) and text == text.strip() and text.lower() != "all_rows"


_BARE = st.text(
    alphabet=st.characters(blacklist_characters="{};", blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(_word)


def _program(returns: str, words: st.SearchStrategy[str], headers: st.SearchStrategy[str], depth: int):
    """Well-typed programs whose value has a type compatible with ``returns``."""
    names = sorted(name for name, f in FUNCTIONS.items() if compatible(f.returns, returns))
    if returns == "view":
        leaves: st.SearchStrategy = st.just(AllRows())
    elif returns == "header":
        return headers.map(Header)
    elif returns in ("obj", "num", "str"):
        leaves = words.map(Literal)
    else:
        leaves = st.nothing()  # no bool literals
    if depth == 0 or not names:
        return leaves

    @st.composite
    def calls(draw: st.DrawFn) -> Call:
        function = FUNCTIONS[draw(st.sampled_from(names))]
        args = tuple(draw(_program(t, words, headers, depth - 1)) for t in function.args)
        return Call(function.name, args)

    return st.one_of(leaves, calls()) if returns != "bool" else calls()


@SETTINGS
@given(_program("bool", _BARE, _BARE, depth=4))
def test_generated_programs_print_and_parse_back(program: Call) -> None:
    text = str(program)
    assert parse_program(text) == program
    assert parse_program(text + "=True") == program


_ELECTION = Table.from_rows(ELECTION_ROWS[0], ELECTION_ROWS[1:])
_VALUES = st.sampled_from(
    [
        "democratic",
        "mary jones",
        "ohio 2",
        "1990",
        "3",
        "2",
        "61,002",
        "june 11 , 1958",
        "0",
        "-1",
        "1e400",
        "x",
    ]
)


@SETTINGS
@given(_program("bool", _VALUES, st.sampled_from([*ELECTION_ROWS[0], "salary"]), depth=3))
def test_generated_programs_run_or_raise_a_program_error(program: Call) -> None:
    try:
        execution = execute(program, _ELECTION)
    except (ProgramExecutionError, *PROGRAM_ERRORS):
        return
    assert isinstance(execution.value, bool)
    assert execution.display in ("True", "False")
    for ref in execution.evidence:
        assert 0 <= ref.row < _ELECTION.n_rows and 0 <= ref.column < _ELECTION.n_columns


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_function_parses_with_typed_arguments(name: str) -> None:
    function = FUNCTIONS[name]
    sample = {"view": "all_rows", "header": "party", "obj": "3", "num": "2", "str": "x", "bool": "eq{1; 1}"}
    text = f"{name}{{{'; '.join(sample[t] for t in function.args)}}}"
    program = parse_program(text)
    assert program.func == name and str(program) == text
