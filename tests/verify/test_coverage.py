"""Honest evidence (issue 12): the shown program executes to the label and covers the words that
carry the statement's meaning, or the confidence is lower and the verdict says why; a statement
with no evidence is NOT ENOUGH INFO."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tabverify.program import execute
from tabverify.program.search import Candidate
from tabverify.program.tree import parse_program
from tabverify.table import Table, load_table
from tabverify.text.linking import link
from tabverify.verify import Label, TableVerifier, Verdict
from tabverify.verify.coverage import GAP_KINDS, coverage_gaps, kinded_gaps, statement_cues
from tabverify.verify.decision import statement_features

COUNTRIES = """country,continent,capital,population (millions),area (km2)
germany,europe,berlin,83.2,357022
france,europe,paris,67.8,551695
italy,europe,rome,60.6,301340
brazil,south america,brasilia,203.1,8515767
nigeria,africa,abuja,223.8,923768
japan,asia,tokyo,125.1,377975
"""

GAMES = """date,opponent,location,result,attendance
november 2,hartford,home,w 85 - 70,4120
november 9,dayton,away,l 60 - 72,9800
november 16,hartford,away,w 77 - 74,3650
november 23,albany,home,l 65 - 66,2900
november 30,dayton,home,w 90 - 81,5100
"""


@pytest.fixture(scope="module")
def countries(tmp_path_factory: pytest.TempPathFactory) -> Table:
    path = tmp_path_factory.mktemp("coverage") / "countries.csv"
    path.write_text(COUNTRIES, encoding="utf-8")
    return load_table(path)


@pytest.fixture(scope="module")
def games(tmp_path_factory: pytest.TempPathFactory) -> Table:
    path = tmp_path_factory.mktemp("coverage") / "games.csv"
    path.write_text(GAMES, encoding="utf-8")
    return load_table(path)


@pytest.fixture(scope="module")
def verifier() -> TableVerifier:
    return TableVerifier()


def candidate(table: Table, statement: str, program: str, used: tuple[str, ...] = ()) -> Candidate:
    """``program`` as the search would rank it for ``statement``; ``used``: the statement words
    (links) the program consumed."""
    linking = link(statement, table)
    parsed = parse_program(program)
    literals = {text.lower() for text in parsed.literals}
    spans = frozenset(
        lk.span for lk in linking.cells + linking.numbers + linking.headers if lk.text.lower() in used
    ) | frozenset(
        lk.span for lk in linking.numbers if lk.text.lower() in literals
    )  # as the search marks them
    value = execute(program, table).json is True
    return Candidate(parsed, value, spans)


def gaps(table: Table, statement: str, program: str, used: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The coverage gaps of ``program`` for ``statement`` (see :func:`candidate`)."""
    cues = statement_cues(link(statement, table), table)
    return coverage_gaps(candidate(table, statement, program, used), cues)


def kinds(table: Table, statement: str, program: str, used: tuple[str, ...] = ()) -> set[str]:
    """The kinds of ``program``'s coverage gaps for ``statement``."""
    cues = statement_cues(link(statement, table), table)
    return {kind for kind, _ in kinded_gaps(candidate(table, statement, program, used), cues)}


# ---- the check itself, on programs written here --------------------------------------------------


def test_ordinal_superlative_direction(countries: Table) -> None:
    statement = "brazil has the second largest population"
    wrong = "eq{hop{nth_argmin{all_rows; population (millions); second}; country}; brazil}"
    right = "eq{hop{nth_argmax{all_rows; population (millions); second}; country}; brazil}"
    assert any("largest" in gap for gap in gaps(countries, statement, wrong, ("brazil", "second")))
    assert gaps(countries, statement, right, ("brazil", "second")) == ()
    # "second" ignored: the largest, not the second largest
    ignored = "eq{hop{argmax{all_rows; population (millions)}; country}; brazil}"
    assert any("second" in gap for gap in gaps(countries, statement, ignored, ("brazil",)))


def test_superlative_on_a_column_the_statement_does_not_name(countries: Table) -> None:
    statement = "brazil has the second largest population"
    area = "eq{hop{nth_argmax{all_rows; area (km2); second}; country}; brazil}"
    assert any("area (km2)" in gap for gap in gaps(countries, statement, area, ("brazil", "second")))


def test_smallest_checked_with_argmax(countries: Table) -> None:
    statement = "italy has the lowest population"
    wrong = "eq{hop{argmax{all_rows; population (millions)}; country}; italy}"
    right = "eq{hop{argmin{all_rows; population (millions)}; country}; italy}"
    assert any("lowest" in gap for gap in gaps(countries, statement, wrong, ("italy",)))
    assert gaps(countries, statement, right, ("italy",)) == ()


def test_total_is_a_sum_not_a_count(countries: Table) -> None:
    statement = "the total population of the european countries is 211.6"
    counted = "eq{count{all_rows}; 211.6}"
    summed = "eq{sum{filter_eq{all_rows; continent; europe}; population (millions)}; 211.6}"
    assert any("total" in gap and "counts rows" in gap for gap in gaps(countries, statement, counted))
    assert gaps(countries, statement, summed) == ()
    # a total that counts is a count
    counted_total = gaps(countries, "the total number of countries in europe is 3", "eq{count{all_rows}; 3}")
    assert not any("'total'" in gap for gap in counted_total)
    # "sum" always asks for a sum
    assert gaps(countries, "the sum of the area of france and italy is 3", "eq{count{all_rows}; 3}")


def test_outcome_verbs_need_the_results_column(games: Table) -> None:
    statement = "the hawks won both games against hartford"
    blind = "eq{count{filter_eq{all_rows; opponent; hartford}}; 2}"
    checks = "all_str_eq{filter_eq{all_rows; opponent; hartford}; result; w}"
    assert any("'won'" in gap and "result" in gap for gap in gaps(games, statement, blind, ("hartford",)))
    assert gaps(games, statement, checks, ("hartford",)) == ()
    assert gaps(games, "the hawks beat dayton at home", "eq{count{filter_eq{all_rows; opponent; dayton}}; 2}")
    # a table that records no draws: "drew 3000 fans" is not an outcome to check
    drew = "eq{hop{filter_eq{all_rows; opponent; albany}; attendance}; 2900}"
    assert gaps(games, "the game against albany drew 2900 fans", drew, ("albany", "2900")) == ()


def test_comparison_program_for_a_statement_that_compares_nothing(games: Table) -> None:
    statement = "the hawks played dayton at home"
    assert any(
        "compares" in gap
        for gap in gaps(games, statement, "all_less{filter_eq{all_rows; opponent; dayton}; attendance; 100}")
    )
    # with a comparison word of the program's direction it is covered; of the other one it is not
    fewer = "all fewer than 10000 fans saw the games against dayton"
    program = "all_less{filter_eq{all_rows; opponent; dayton}; attendance; 10000}"
    assert gaps(games, fewer, program, ("dayton", "10000")) == ()
    more = "all games against dayton had more than 100 fans"
    program = "all_less{filter_eq{all_rows; opponent; dayton}; attendance; 100}"
    assert any("more" in gap for gap in gaps(games, more, program, ("dayton", "100")))


def test_words_inside_links_are_data_not_operators(tmp_path: Path) -> None:
    path = tmp_path / "cities.csv"
    path.write_text("country,largest city,people\nkenya,nairobi,4.4\nghana,accra,2.5\n", encoding="utf-8")
    table = load_table(path)
    statement = "the largest city of kenya is nairobi"
    program = "eq{hop{filter_eq{all_rows; country; kenya}; largest city}; nairobi}"
    assert gaps(table, statement, program, ("kenya", "nairobi", "largest city")) == ()


def test_every_gap_has_its_kind(countries: Table, games: Table) -> None:
    second = "brazil has the second largest population"
    smallest = "eq{hop{nth_argmin{all_rows; population (millions); second}; country}; brazil}"
    assert kinds(countries, second, smallest, ("brazil", "second")) == {"direction"}
    area = "eq{hop{nth_argmax{all_rows; area (km2); second}; country}; brazil}"
    assert kinds(countries, second, area, ("brazil", "second")) == {"column"}
    largest = "eq{hop{argmax{all_rows; population (millions)}; country}; brazil}"
    assert kinds(countries, second, largest, ("brazil",)) == {"ordinal"}
    total = "the total population of the european countries is 211.6"
    assert "sum" in kinds(countries, total, "eq{count{all_rows}; 211.6}")
    assert "number" in kinds(countries, total, "eq{count{all_rows}; 6}")
    blind = "eq{count{filter_eq{all_rows; opponent; hartford}}; 2}"
    assert kinds(games, "the hawks won both games against hartford", blind, ("hartford",)) == {"outcome"}
    compares = "all_less{filter_eq{all_rows; opponent; dayton}; attendance; 100}"
    assert "compare" in kinds(games, "the hawks played dayton at home", compares)
    # the sentences are the same gaps, one per kind and wording
    cues = statement_cues(link(second, countries), countries)
    ranked = candidate(countries, second, smallest, ("brazil", "second"))
    assert coverage_gaps(ranked, cues) == tuple(sentence for _, sentence in kinded_gaps(ranked, cues))
    assert all(kind in GAP_KINDS for kind, _ in kinded_gaps(ranked, cues))


def test_the_verdict_model_reads_what_the_coverage_check_says(countries: Table) -> None:
    statement = "brazil has the second largest population"
    linking = link(statement, countries)
    wrong = candidate(
        countries,
        statement,
        "eq{hop{nth_argmin{all_rows; population (millions); second}; country}; brazil}",
        ("brazil", "second"),
    )
    right = candidate(
        countries,
        statement,
        "eq{hop{nth_argmax{all_rows; population (millions); second}; country}; brazil}",
        ("brazil", "second"),
    )
    assert (wrong.value, right.value) == (False, True)
    f = statement_features(countries, linking, [wrong, right], np.array([0.75, 0.25]))
    assert f["c:top_gap:direction"] == 1.0 and f["c:top_covers"] == 0.0
    assert f["c:first_value"] == 1.0 and f["c:first_rank"] == pytest.approx(1 / 30)
    assert f["c:mass"] == pytest.approx(0.25) and f["c:vote"] == 1.0
    assert (f["c:anyT"], f["c:anyF"]) == (1.0, 0.0) and "c:none" not in f
    # no program covers the statement's words: the model is told so, and nothing else of coverage
    f = statement_features(countries, linking, [wrong], np.array([1.0]))
    assert f["c:none"] == 1.0 and not {"c:vote", "c:first_value", "c:anyT"} & set(f)


# ---- verdicts ------------------------------------------------------------------------------------


def assert_honest(verdict: Verdict, table: Table) -> None:
    """The shown program executes to the label; a program with a coverage gap lowers the confidence
    and the verdict says why."""
    if verdict.label is Label.NOT_ENOUGH_INFO:
        assert verdict.program == "" and verdict.guess is not None
        assert verdict.notes and verdict.notes[0].startswith("no evidence found")
        return
    assert execute(verdict.program, table).json is (verdict.label is Label.ENTAILED)
    linking = link(verdict.statement, table)
    candidate = Candidate(parse_program(verdict.program), verdict.entailed, frozenset())
    program_gaps = coverage_gaps(candidate, statement_cues(linking, table))
    if any("ordinal" not in gap and "does not use" not in gap for gap in program_gaps):
        assert verdict.notes and verdict.confidence <= 0.75


def test_no_evidence_is_not_enough_info(countries: Table, verifier: TableVerifier) -> None:
    verdict = verifier.verify("the capital of kenya is lagos", countries)
    assert verdict.label is Label.NOT_ENOUGH_INFO
    assert verdict.program == "" and verdict.result is None
    assert "no evidence found" in verdict.notes[0]
    assert "'kenya'" in verdict.notes[0] and "'lagos'" in verdict.notes[0]
    # only a protocol that forces a binary answer reads the guess
    assert verdict.guess in (Label.ENTAILED, Label.REFUTED)
    assert verdict.forced_label is verdict.guess
    assert verdict.to_dict()["label"] == "NOT ENOUGH INFO" and verdict.to_dict()["notes"] == list(
        verdict.notes
    )


@pytest.mark.parametrize(
    "statement",
    [
        "brazil has the second largest population",
        "the total population of the european countries is 211.6",
        "italy has the lowest population",
        "nigeria has the largest area",
        "japan has the third largest population",
        "the capital of france is paris",
        "there are 3 countries in europe",
    ],
)
def test_country_verdicts_are_honest(countries: Table, verifier: TableVerifier, statement: str) -> None:
    assert_honest(verifier.verify(statement, countries), countries)


@pytest.mark.parametrize(
    "statement",
    [
        "the hawks won both games against hartford",
        "the hawks lost both games against hartford",
        "the hawks beat dayton at home",
        "the game against albany had the second highest attendance",
        "the total attendance of the home games was 12120",
    ],
)
def test_game_verdicts_are_honest(games: Table, verifier: TableVerifier, statement: str) -> None:
    assert_honest(verifier.verify(statement, games), games)


def test_nth_argmin_for_second_largest_is_not_shown_with_full_confidence(
    countries: Table, verifier: TableVerifier
) -> None:
    verdict = verifier.verify("brazil has the second largest population", countries)
    if "nth_argmin" in verdict.program:
        assert any("largest" in note for note in verdict.notes) and verdict.confidence < 0.75
    else:
        assert "nth_argmax" in verdict.program


def test_won_without_a_program_that_checks_it_says_so(games: Table, verifier: TableVerifier) -> None:
    verdict = verifier.verify("the hawks won both games against hartford", games)
    assert verdict.label is Label.NOT_ENOUGH_INFO or any("'won'" in note for note in verdict.notes)


def test_words_ending_in_er_are_not_comparisons_by_themselves(countries: Table) -> None:
    # "member", "other", "number", "player" end in -er but compare nothing: they must not switch
    # off the direction check ("lowest" read with argmax)
    wrong = "eq{hop{argmax{all_rows; population (millions)}; country}; italy}"
    for statement in (
        "italy has the lowest population of any member",
        "italy has the lowest population of all other countries",
    ):
        assert any("lowest" in gap for gap in gaps(countries, statement, wrong, ("italy",))), statement
    # a comparative with "than" still licenses either direction (its column decides)
    assert gaps(countries, "italy is smaller than germany", "less{hop{filter_eq{all_rows; country; italy}; "
                "area (km2)}; hop{filter_eq{all_rows; country; germany}; area (km2)}}") == ()  # fmt: skip


def test_no_evidence_note_does_not_deny_linked_words(countries: Table, verifier: TableVerifier) -> None:
    # "brazil" names a cell, yet no program checks a lone name: the note must not say that no
    # word of the statement names the table
    verdict = verifier.verify("brazil", countries)
    assert verdict.label is Label.NOT_ENOUGH_INFO
    assert "no word of it names the table" not in verdict.notes[0]
    assert "brazil" in verdict.notes[0]


def test_a_number_the_program_never_reads_is_a_gap(countries: Table) -> None:
    statement = "brazil has 1e5 people"
    ignoring = "eq{hop{all_rows; country}; brazil}"
    assert any("'1e5'" in gap for gap in gaps(countries, statement, ignoring, ("brazil",)))
    reading = "eq{hop{filter_eq{all_rows; country; brazil}; population (millions)}; 1e5}"
    assert not any("number" in gap for gap in gaps(countries, statement, reading, ("brazil",)))


def test_a_column_the_statement_names_and_the_program_never_reads_is_a_gap(countries: Table) -> None:
    statement = "the capital of nigeria is lagos"
    blind = "eq{hop{all_rows; country}; nigeria}"
    assert any("'capital'" in gap for gap in gaps(countries, statement, blind, ("nigeria", "capital")))
    reading = "eq{hop{filter_eq{all_rows; country; nigeria}; capital}; lagos}"
    assert not any("column" in gap for gap in gaps(countries, statement, reading, ("nigeria", "capital")))
