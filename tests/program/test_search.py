from pathlib import Path

from tabverify.program.search import SearchLimits, search
from tabverify.table import Table, load_table
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
    linking = link("mary jones have the most vote in 1986 for the republican party", election)
    assert len(linking.cells) > 1 and len(linking.numbers) >= 1
    result = search(election, linking, SearchLimits(max_cell_links=1, max_number_links=0))
    assert {"max_cell_links", "max_number_links"} <= set(result.cut)
    allowed = {linking.cells[0].span}
    assert result.candidates
    assert all(c.used <= allowed for c in result.candidates)


def _table(tmp_path: Path, rows: list[str]) -> Table:
    path = tmp_path / "table.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return load_table(path)


def test_two_rows_holding_one_linked_value(tmp_path: Path) -> None:
    # "X and Y both ...": the two rows share the value, which the conjunction of two disjoint
    # programs could never say (both halves use the literal 4)
    table = _table(tmp_path, ["player,played,won", "terry jenkins,4,2", "colin lloyd,4,1", "phil taylor,5,5"])
    found = _programs(table, "terry jenkins and colin lloyd both play 4 time")
    both = (
        "and{eq{hop{filter_eq{all_rows; player; terry jenkins}; played}; 4}; "
        "eq{hop{filter_eq{all_rows; player; colin lloyd}; played}; 4}}"
    )
    assert found[both] is True
    refuted = _programs(table, "terry jenkins and phil taylor both play 4 time")
    assert refuted[both.replace("colin lloyd", "phil taylor")] is False


def test_two_rows_holding_one_linked_text_value(tmp_path: Path) -> None:
    table = _table(
        tmp_path,
        ["model,class,price", "ps500,professional,500", "ps1000,professional,1000", "sr60,prestige,60"],
    )
    found = _programs(table, "the ps500 and ps1000 both use the same class , professional")
    both = (
        "and{eq{hop{filter_eq{all_rows; model; ps500}; class}; professional}; "
        "eq{hop{filter_eq{all_rows; model; ps1000}; class}; professional}}"
    )
    assert found[both] is True


def test_an_ordinal_that_is_not_a_rank_is_a_value(tmp_path: Path) -> None:
    table = _table(tmp_path, ["rank,nation,gold", "5,canada,3", "6,ukraine,2", "7,kenya,1"])
    found = _programs(table, "ukraine finish 6th")
    assert found["eq{hop{filter_eq{all_rows; nation; ukraine}; rank}; 6th}"] is True
    # before a direction word it is only a rank: no program compares a value with "2nd"
    ranked = _programs(table, "kenya have the 2nd highest gold")
    assert not [p for p in ranked if p.endswith("; 2nd}") and not p.startswith("nth")]
    assert any("nth_argmax{all_rows; gold; 2nd}" in p for p in ranked)


def test_a_second_filter_that_keeps_every_row_is_its_own_view(tmp_path: Path) -> None:
    # every atlantic records row is a united states one: the nested filter selects the rows of
    # the first, yet it reads both values, so a count over it accounts for the whole statement
    table = _table(
        tmp_path,
        [
            "region,label,format",
            "united states,atlantic records,lp",
            "united states,atlantic records,cd",
            "united states,swan song,lp",
            "japan,atlantic records,cd",
        ],
    )
    statement = "when the label be swan song , there be 1 time the region be the united states"
    nested = "eq{count{filter_eq{filter_eq{all_rows; label; swan song}; region; united states}}; 1}"
    assert _programs(table, statement)[nested] is True
    # a second filter that drops rows was always a view of its own
    statement = "when the label be atlantic records , there be 2 time the region be the united states"
    atlantic = nested.replace("swan song", "atlantic records").replace("1}", "2}")
    assert _programs(table, statement)[atlantic] is True


def test_a_word_of_a_named_column_is_no_superlative(election: Table) -> None:
    # "first" in "be first elected in 1994" names the "first elected" column: no argmin reading,
    # which would leave 1994 unread (the shipped models took it for ENTAILED)
    plain = _programs(election, "mary jones be first elected in 1994")
    assert not [p for p in plain if "argmin" in p or p.startswith("eq{hop{first")]
    assert plain["eq{hop{filter_eq{all_rows; incumbent; mary jones}; first elected}; 1994}"] is False
    # after "the" the same words are a rank as well
    ranked = _programs(election, "mary jones be the first elected")
    assert ranked["eq{hop{argmin{all_rows; first elected}; incumbent}; mary jones}"] is True
    # a superlative outside the name still counts
    assert any("argmin" in p for p in _programs(election, "mary jones be first elected earliest"))
