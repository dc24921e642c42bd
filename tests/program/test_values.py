"""How program values compare and read: the typo rule never makes two different numbers or dates
equal; numbers too large to read are reported, not skipped; =False and partial headers are refused."""

from pathlib import Path

import pytest

import tabverify
from tabverify.errors import ProgramExecutionError, ProgramSyntaxError
from tabverify.program import execute, parse_program
from tabverify.program.functions import Context, run_function
from tabverify.program.values import text_match, values_match
from tabverify.table import Table, load_table

LEAGUE = Path(tabverify.__file__).parent / "examples" / "league.csv"


@pytest.fixture
def league() -> Table:
    return load_table(LEAGUE)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("2020-01-15", "2020-01-16"),
        ("12345678", "12345679"),
        ("1234567.5", "1234567.6"),
        ("12345678", "123456789"),  # an inserted digit
        ("12345.678", "12345678"),  # a dropped decimal point
        ("september 7 2024", "september 8 2024"),
        ("september 21 2024", "september 21 2025"),
        ("route 12345a", "route 12346a"),  # a digit inside text that is no number
        ("room 1234 east", "room 12345 east"),
        ("flight 12 34 ab", "flight 1234 ab"),  # a space between digits
    ],
)
def test_values_one_character_apart_in_a_digit_differ(left: str, right: str) -> None:
    assert not values_match(left, right)
    assert not values_match(right, left)
    assert not text_match(left, right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("scuderia sant ambroeus", "scuderi sant ambroeus"),  # a deleted letter
        ("hartford hawks", "hartfort hawks"),  # a replaced letter
        ("santambroeus racing", "sant ambroeus racing"),  # a space between letters
        ("septembr 7 2024", "september 7 2024"),  # a misspelt month: not a date, so text decides
    ],
)
def test_one_misspelt_letter_still_matches(left: str, right: str) -> None:
    assert values_match(left, right)
    assert values_match(right, left)


def test_short_texts_need_the_exact_letters() -> None:
    assert not text_match("hawkes", "hawks")


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("eq{hop{filter_eq{all_rows; opponent; hartford hawks}; date}; september 8 2024}", False),
        ("eq{hop{filter_eq{all_rows; opponent; hartford hawks}; date}; september 7 2024}", True),
        ("eq{hop{filter_eq{all_rows; opponent; salem miners}; date}; september 21 2025}", False),
        ("eq{hop{filter_eq{all_rows; opponent; salem miners}; date}; september 21 2024}", True),
        ("eq{count{filter_eq{all_rows; date; september 8 2024}}; 0}", True),
        ("eq{count{filter_eq{all_rows; date; september 7 2024}}; 1}", True),
        ("eq{hop{filter_eq{all_rows; opponent; hartfort hawks}; date}; september 7 2024}", True),
        ("eq{2020-01-15; 2020-01-16}", False),
        ("eq{12345678; 12345679}", False),
        ("eq{1234567.5; 1234567.6}", False),
    ],
)
def test_league_dates_are_compared_as_dates(league: Table, program: str, expected: bool) -> None:
    assert execute(program, league).value is expected


# ---- numbers beyond the range tabverify reads ------------------------------------------------------


@pytest.mark.parametrize("literal", ["1e308", "1e400", "-1e305", "1e-400", "9" * 400])
def test_a_literal_out_of_range_says_so(league: Table, literal: str) -> None:
    with pytest.raises(ProgramExecutionError, match="is out of the range tabverify reads as numbers"):
        execute(f"eq{{add{{{literal}; {literal}}}; 3}}", league)
    with pytest.raises(ProgramExecutionError, match="is out of the range tabverify reads as numbers"):
        execute(f"greater{{{literal}; 5}}", league)


def test_a_literal_that_is_no_number_is_still_not_a_number(league: Table) -> None:
    with pytest.raises(ProgramExecutionError, match="'abc' is not a number"):
        execute("eq{add{abc; 1}; 3}", league)
    assert execute("eq{add{1e300; 1e300}; 2e300}", league).value is True


def test_an_overflowing_result_is_an_execution_error(league: Table) -> None:
    with pytest.raises(ProgramExecutionError, match="the result overflows"):
        run_function("add", Context(league), [1e308, 1e308])


@pytest.fixture
def huge(tmp_path: Path) -> Table:
    path = tmp_path / "huge.csv"
    rows = ["name,score", "ann,12", "bob,-", "cy," + "9" * 400, "dee,30"]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return load_table(path)


@pytest.mark.parametrize(
    "program",
    [
        "eq{max{all_rows; score}; 30}",
        "eq{min{all_rows; score}; 12}",
        "eq{sum{all_rows; score}; 42}",
        "eq{hop{argmax{all_rows; score}; name}; dee}",
        "eq{nth_max{all_rows; score; 2}; 12}",
    ],
)
def test_a_column_with_an_unreadable_number_is_not_ranked_silently(huge: Table, program: str) -> None:
    with pytest.raises(ProgramExecutionError, match="data row 3: '9999.*out of the range"):
        execute(program, huge)


def test_cells_without_a_number_are_still_skipped(huge: Table) -> None:
    assert execute("eq{max{filter_not_eq{all_rows; name; cy}; score}; 30}", huge).value is True


# ---- syntax and headers --------------------------------------------------------------------------


def test_a_trailing_true_is_accepted_and_false_refused(league: Table) -> None:
    assert execute("eq{count{all_rows}; 6}=True", league).value is True
    assert execute("eq{count{all_rows}; 6} = true", league).value is True
    for text in ("eq{count{all_rows}; 6}=False", "count{all_rows} =false"):
        with pytest.raises(ProgramSyntaxError, match="'=False' is not accepted"):
            parse_program(text)


@pytest.mark.parametrize("header", ["w", "wee", "dat", "attend", "opponent name"])
def test_a_part_of_a_header_names_no_column(league: Table, header: str) -> None:
    with pytest.raises(ProgramExecutionError, match=f"no column named '{header}'"):
        execute(f"eq{{hop{{first{{all_rows}}; {header}}}; 1}}", league)


def test_headers_match_ignoring_case_spaces_and_brackets(tmp_path: Path, league: Table) -> None:
    assert execute("eq{hop{first{all_rows}; WEEK}; 1}", league).value is True
    assert execute("eq{hop{first{all_rows};   Week  }; 1}", league).value is True
    path = tmp_path / "b.csv"
    path.write_text("name,points (pts)\nann,3\n", encoding="utf-8")
    assert execute("eq{hop{first{all_rows}; points pts}; 3}", load_table(path)).value is True


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("3", "3.4", True),  # the more precise side is read at the less precise one's precision
        ("3.4", "3", True),
        ("3.4", "3.46", True),  # truncated
        ("3.4", "3.5", False),  # same precision: exact
        ("120.8", "120.83", True),
        ("120.8", "120.9", False),
    ],
)
def test_numbers_compare_at_the_less_precise_sides_precision(left: str, right: str, expected: bool) -> None:
    assert values_match(left, right) is expected
