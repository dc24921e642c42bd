"""The typo rule of text matching never makes two different numbers or dates equal."""

from pathlib import Path

import pytest

import tabverify
from tabverify.program import execute
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
