import pytest

from tabverify.table import Table
from tabverify.text import Span, link, stem, tokenize


def test_span_basics() -> None:
    span = Span(4, 9)
    assert span.of("the mary jones") == "mary "
    assert len(span) == 5
    assert span.overlaps(Span(8, 12)) and not span.overlaps(Span(9, 12))
    assert Span(0, 20).contains(span)
    with pytest.raises(ValueError):
        Span(5, 2)


def test_tokens_keep_offsets() -> None:
    text = "mary jones won 61,002 votes"
    for token in tokenize(text):
        assert token.span.of(text) == token.text


@pytest.mark.parametrize(
    ("raw", "lemma"),
    [("democrats", "democrat"), ("won", "win"), ("was", "be"), ("elected", "elect"), ("parties", "party")],
)
def test_raw_and_lemmatized_forms_share_a_stem(raw: str, lemma: str) -> None:
    assert stem(raw) == stem(lemma)


@pytest.mark.parametrize(
    "statement",
    [
        "mary jones of ohio 2 was first elected in 1986",  # raw text
        "mary jone of ohio 2 be first elect in 1986",  # lemmatized as in the release (sloppy)
    ],
)
def test_link_finds_cells_headers_and_numbers(election: Table, statement: str) -> None:
    linking = link(statement, election)
    cells = {(election.header[c.column], c.literal) for c in linking.cells if c.column is not None}
    assert ("district", "ohio 2") in cells
    assert ("first elected", "1986") in cells
    assert any(h.literal == "first elected" for h in linking.headers)
    assert "1986" in [n.literal for n in linking.numbers]
    for item in linking.cells + linking.headers + linking.numbers:
        assert item.span.of(statement) == item.text


def test_link_prefers_whole_cells(election: Table) -> None:
    linking = link("there be 3 democratic incumbent", election)
    democratic = [c for c in linking.cells if c.literal == "democratic"]
    assert democratic and democratic[0].exact
    assert len(democratic[0].cells) == 3


def test_ngrams_go_longest_first_then_left_to_right() -> None:
    from tabverify.text.linking import ngrams

    assert list(ngrams(3, 2)) == [(0, 2), (1, 3), (0, 1), (1, 2), (2, 3)]
    assert list(ngrams(2, 5)) == [(0, 2), (0, 1), (1, 2)]
    assert list(ngrams(0, 3)) == [] and list(ngrams(4, 0)) == []


def test_longest_match_wins_over_shorter_overlapping_cells() -> None:
    table = Table.from_rows(["team", "city"], [["new york", "york"], ["boston", "new york city"]])
    linking = link("the team from new york city", table)
    spans = {(c.text, c.literal) for c in linking.cells}
    # "new york city" names a whole cell; "new york" and "york" inside it are not linked again
    assert ("new york city", "new york city") in spans
    assert all(text == "new york city" for text, _ in spans)


@pytest.mark.parametrize(
    ("statement", "literal"), [("x finished at - 2", "- 2"), ("y finished at + 2", "+ 2")]
)
def test_a_written_sign_picks_the_cell_it_names(statement: str, literal: str) -> None:
    # "+ 2" and "- 2" share the word "2"; the literal must carry the statement's sign, not the
    # first row's, or a true statement is checked against the other value
    golf = Table.from_rows(["player", "to par"], [["y", "+ 2"], ["x", "- 2"], ["z", "3 - 2"]])
    par = [c for c in link(statement, golf).cells if c.column == 1]
    assert par and par[0].literal == literal
    assert [ref.row for ref in par[0].cells] == [0 if literal == "+ 2" else 1]


def test_a_dash_between_numbers_is_no_sign() -> None:
    golf = Table.from_rows(["player", "to par"], [["y", "+ 2"], ["x", "- 2"]])
    par = [c for c in link("the score was 3 - 2", golf).cells if c.column == 1]
    assert par and len(par[0].cells) == 2  # no sign read: both cells stay candidates
