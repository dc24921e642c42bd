from tabverify.program.search import SearchLimits, search
from tabverify.table import Table
from tabverify.text import link


def _programs(table: Table, statement: str) -> dict[str, bool]:
    return {str(c.program): c.value for c in search(table, link(statement, table)).candidates}


def test_search_finds_count_program(election: Table) -> None:
    found = _programs(election, "there be 3 incumbent from the democratic party")
    assert found["eq{count{filter_eq{all_rows; party; democratic}}; 3}"] is True


def test_search_finds_superlative_program(election: Table) -> None:
    found = _programs(election, "mary jones receive the highest number of vote")
    assert found["eq{hop{argmax{all_rows; votes}; incumbent}; mary jones}"] is True


def test_search_finds_only_program(election: Table) -> None:
    found = _programs(election, "alan brown be the only incumbent first elected in 1994")
    # the two filters select the same row, so the view is built once (from the first link)
    wanted = "and{only{filter_eq{all_rows; incumbent; alan brown}}; eq{hop{filter_eq{all_rows; incumbent; alan brown}; first elected}; 1994}}"
    assert found[wanted] is True


def test_search_finds_comparison(election: Table) -> None:
    found = _programs(election, "lisa white get more vote than john smith")
    assert any(p.startswith("greater{hop{filter_eq") and v for p, v in found.items())


def test_search_respects_limits_and_is_deterministic(election: Table) -> None:
    statement = "there be 3 democratic incumbent and 2 republican incumbent"
    small = search(election, link(statement, election), SearchLimits(max_candidates=5)).candidates
    assert len(small) <= 5 + SearchLimits().max_and_pairs
    first = [str(c.program) for c in search(election, link(statement, election)).candidates]
    second = [str(c.program) for c in search(election, link(statement, election)).candidates]
    assert first == second


def test_programs_that_select_the_same_rows_are_kept_once(election: Table) -> None:
    # "ohio 3" and "alan brown" select the same row: the view is built once
    candidates = search(election, link("ohio 3 alan brown democratic", election)).candidates
    views = [str(c.program.args[0]) for c in candidates if c.program.func == "only"]
    assert len(views) == len(set(views))


def test_full_candidates_stop_the_evaluations(election: Table) -> None:
    statement = "there be 3 democratic incumbent and 2 republican incumbent"
    linking = link(statement, election)
    unbounded = search(election, linking)
    small = search(election, linking, SearchLimits(max_candidates=5))
    assert "max_candidates" in small.cut and "max_candidates" not in unbounded.cut
    # once the candidates are full nothing more is evaluated for them
    assert small.evaluations < unbounded.evaluations
    assert [str(c.program) for c in small.candidates[:5]] == [
        str(c.program) for c in unbounded.candidates[:5]
    ]


def test_link_caps_keep_the_first_links(election: Table) -> None:
    linking = link("mary jones be first elected in 1986 for the republican party", election)
    assert len(linking.cells) > 1 and len(linking.numbers) >= 1
    result = search(election, linking, SearchLimits(max_cell_links=1, max_number_links=0))
    assert {"max_cell_links", "max_number_links"} <= set(result.cut)
    allowed = {linking.cells[0].span}
    assert result.candidates
    assert all(c.used <= allowed for c in result.candidates)
