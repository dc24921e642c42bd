"""Readings that TabFact's human programs rely on: an empty header argument, max/min of dates,
accents, decades, signs, numbers grouped by spaces, dates inside text - and that each still
refuses the false statements of the same shape."""

from pathlib import Path

import pytest

from tabverify.database import connect
from tabverify.errors import ProgramExecutionError
from tabverify.program import execute, parse_program
from tabverify.program.sql import prepare_table, run_program
from tabverify.program.values import _space_grouped, loose_quantity, normalize_text, values_match
from tabverify.table import Table
from tabverify.table.readers import read_tabfact_csv


def _write(tmp_path: Path, name: str, lines: list[str]) -> Table:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_tabfact_csv(path)


@pytest.fixture
def clubs(tmp_path: Path) -> Table:
    # the first column has no header, as in many TabFact tables (1-20877272-5)
    return _write(
        tmp_path,
        "clubs.csv",
        ["#club#won#founded", "1#rk 03 berlin#14#1926", "2#tsv victoria linden#12#1948", "3#zürich#9#1955"],
    )


@pytest.fixture
def games(tmp_path: Path) -> Table:
    return _write(
        tmp_path,
        "games.csv",
        ["date#result", "september 13#w", "september 20#l", "october 4#w", "october 11#w"],
    )


def test_an_empty_header_names_the_unnamed_column(clubs: Table) -> None:
    assert execute("eq{hop{argmax{all_rows; won}; }; 1}", clubs).value is True
    assert execute("eq{hop{argmax{all_rows; won}; }; 2}", clubs).value is False


def test_an_empty_header_on_a_table_without_an_unnamed_column_is_an_error(games: Table) -> None:
    with pytest.raises(ProgramExecutionError, match="empty column name"):
        execute("eq{hop{all_rows; }; 1}", games)


def test_an_empty_value_is_still_a_syntax_error() -> None:
    with pytest.raises(Exception, match="empty argument"):
        parse_program("eq{count{all_rows}; }")


def test_the_empty_header_prints_and_parses_back() -> None:
    program = parse_program("eq{hop{argmax{all_rows; won}; }; 1}")
    assert parse_program(str(program)) == program


def test_min_and_max_of_dates_are_the_dates(games: Table) -> None:
    program = "eq{min{filter_eq{all_rows; result; w}; date}; september 13}"
    assert execute(program, games).value is True
    assert execute(program.replace("september 13", "october 4"), games).value is False
    assert execute("eq{max{all_rows; date}; october 11}", games).value is True
    assert execute("eq{max{all_rows; date}; september 20}", games).value is False
    assert execute("eq{nth_min{all_rows; date; 2}; september 20}", games).value is True


def test_max_of_numbers_is_still_a_number(clubs: Table) -> None:
    assert execute("eq{max{all_rows; won}; 14}", clubs).value is True
    assert execute("eq{max{all_rows; won}; 13}", clubs).value is False


def test_accents_are_folded(clubs: Table) -> None:
    assert normalize_text("Zürich") == "zurich"
    assert execute("eq{hop{filter_eq{all_rows; club; zurich}; won}; 9}", clubs).value is True
    assert execute("eq{hop{filter_eq{all_rows; club; zurich}; won}; 12}", clubs).value is False


def test_a_decade_holds_its_ten_years(clubs: Table) -> None:
    assert (
        execute(
            "and{only{filter_eq{all_rows; founded; 1940s}}; eq{hop{filter_eq{all_rows; founded; 1940s}; club}; tsv victoria linden}}",
            clubs,
        ).value
        is True
    )
    assert execute("only{filter_eq{all_rows; founded; 1950s}}", clubs).value is True
    assert execute("only{filter_eq{all_rows; founded; 1930s}}", clubs).value is False
    assert values_match("1949", "1940s") and not values_match("1950", "1940s")
    assert not values_match("1940s", "1950s")


def test_accent_folding_keeps_letters_and_digits_apart() -> None:
    # only the marks on Latin letters are dropped: a superscript is no digit of the number, and
    # the voicing mark of kana or the breve of Cyrillic "й" makes another letter
    assert normalize_text("Álvarez Núñez") == "alvarez nunez"
    assert not values_match("10²", "102") and not values_match("2¹", "21")
    assert not values_match("ばか", "はか")
    assert not values_match("бой", "бои")


def test_a_decade_in_a_cell_does_not_hold_a_given_year(tmp_path: Path) -> None:
    # the table says "1940s": "founded in 1945" is not known to be true; "1940s" still matches
    # "1940s", and a decade written in the statement holds the years of the table
    table = _write(tmp_path, "clubs.csv", ["club#founded", "tsv linden#1940s", "rk berlin#1926"])
    assert execute("eq{hop{filter_eq{all_rows; club; tsv linden}; founded}; 1945}", table).value is False
    assert execute("eq{hop{filter_eq{all_rows; club; tsv linden}; founded}; 1940s}", table).value is True
    assert execute("eq{hop{filter_eq{all_rows; club; rk berlin}; founded}; 1920s}", table).value is True


@pytest.fixture
def golf(tmp_path: Path) -> Table:
    # signs written apart from their number (2-17231267-4), thousands grouped by spaces
    # (2-15902689-1), dates inside text (1-1694505-4)
    return _write(
        tmp_path,
        "golf.csv",
        [
            "player#to par#prize#note",
            "hale irwin#- 2#1 630#died october 28 , 1948",
            "greg norman#- 2#2 668#died april 18 , 1947",
            "isao aoki#+ 2#1 492#resigned december 31 , 1947",
            "jack nicklaus#+ 2#1973#retired",
            "mike reid#e#950#died may 5 , 1947",
        ],
    )


SIGNS_AND_GROUPS = [
    ("eq{count{filter_eq{all_rows; to par; + 2}}; 2}", True),
    ("eq{count{filter_eq{all_rows; to par; - 2}}; 2}", True),
    ("eq{count{filter_eq{all_rows; to par; 2}}; 2}", True),  # an unsigned 2 is +2
    ("eq{count{filter_eq{all_rows; to par; + 2}}; 4}", False),
    ("eq{hop{filter_eq{all_rows; to par; -2}; player}; hale irwin}", True),
    ("eq{hop{filter_eq{all_rows; to par; +2}; player}; hale irwin}", False),
    ("eq{avg{all_rows; prize}; 1742.6}", True),
    ("eq{max{all_rows; prize}; 2668}", True),
    ("eq{max{all_rows; prize}; 2}", False),
    ("eq{hop{filter_eq{all_rows; prize; 1630}; player}; hale irwin}", True),
    ("eq{hop{argmax{all_rows; note}; player}; hale irwin}", True),
    ("eq{hop{argmin{all_rows; note}; player}; greg norman}", True),
    ("eq{hop{argmax{all_rows; note}; player}; isao aoki}", False),
    (
        "greater{hop{filter_eq{all_rows; player; isao aoki}; note}; hop{filter_eq{all_rows; player; mike reid}; note}}",
        True,
    ),
]


@pytest.mark.parametrize(("program", "expected"), SIGNS_AND_GROUPS)
def test_signs_space_grouped_numbers_and_dates_in_text(
    program: str, expected: bool, golf: Table, tmp_path: Path
) -> None:
    # "+ 2" and "- 2" are two values, not the text "2"; "1 630" is 1630, not 1; "died october
    # 28 , 1948" ranks by its date, not by 28 - and the SQL executor reads them the same way
    assert execute(program, golf).value is expected
    path = tmp_path / "golf.sqlite"
    sql_table = prepare_table(golf, path, "sqlite")
    db = connect(path)
    try:
        assert run_program(program, db, sql_table).value is expected
    finally:
        db.close()


def test_a_sign_stays_with_its_number() -> None:
    assert normalize_text("+ 2") == "+2" and normalize_text("- 2") == "-2" == normalize_text("\u2212 2")
    assert normalize_text("2 - 1") == "2 1"  # a score keeps its reading
    assert not values_match("+ 2", "- 2") and values_match("+ 2", "2") and values_match("- 2", "-2")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 630", 1630.0),
        ("- 1 630", -1630.0),
        ("\u22121 630", -1630.0),
        ("1 630.5", 1630.5),
        ("2 009 411", 2009411.0),
        ("0 100", None),  # a leading zero group: two numbers, not one
        ("12 34", None),
        ("1" + " 000" * 120, None),  # more groups than a value needs: never a float overflow
    ],
)
def test_space_grouped_numbers_are_read_whole_and_bounded(text: str, expected: float | None) -> None:
    q = _space_grouped(text)
    assert (q.value if q is not None else None) == expected


def test_a_date_in_text_is_read_only_when_it_comes_first() -> None:
    assert loose_quantity("Died October 28 , 1948").kind == "date"  # case does not matter
    assert loose_quantity("died october 28 , 1948").value == 19481028
    first_number = loose_quantity("18 points , may 3 , 2001")
    assert first_number.kind == "number" and first_number.value == 18
