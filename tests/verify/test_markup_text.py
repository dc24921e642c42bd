"""Statements, cells and headers may hold markup, HTML or the program syntax's own characters:
verification must treat them as text (the CLI renders them; this layer must not trip on them)."""

import json

import pytest

from tabverify import Label, TableVerifier
from tabverify.program import execute
from tabverify.table import Table
from tabverify.text import link

HOSTILE = [
    "[/]",
    "[/foo]",
    "[bold red]x[/bold red]",
    "<script>alert(1)</script>",
    "</td><b>",
    "{",
    "}",
    ";",
    "=True",
]


@pytest.fixture(scope="module")
def verifier() -> TableVerifier:
    return TableVerifier()


@pytest.fixture(scope="module")
def marked() -> Table:
    return Table.from_rows(
        ["player [/]", "<b>team</b>", "score [bold]", "note {x}"],
        [
            ["ann [/foo]", "<script>alert(1)</script>", "12", "a; b"],
            ["bob", "[red]rovers[/red]", "7", "{c}"],
            ["cy [/]", "rovers", "9", "=True"],
        ],
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_statements_verify_without_error(verifier: TableVerifier, marked: Table, text: str) -> None:
    for statement in (text, f"ann {text} score 12", f"{text} bob have more score than cy {text}"):
        verdict = verifier.verify(statement, marked)
        assert verdict.forced_label in (Label.ENTAILED, Label.REFUTED)
        assert json.loads(json.dumps(verdict.to_dict()))["statement"] == statement


def test_cells_and_headers_with_markup_are_linked_and_read_as_text(
    verifier: TableVerifier, marked: Table
) -> None:
    statement = "ann [/foo] play for <script>alert(1)</script> and score 12"
    linking = link(statement, marked)
    assert any(c.literal == "ann [/foo]" for c in linking.cells)
    verdict = verifier.verify(statement, marked)
    assert verdict.program
    # the evidence program runs again from its text
    assert execute(verdict.program, marked).value is verdict.result


def test_programs_name_columns_and_values_with_markup(marked: Table) -> None:
    program = "eq{hop{filter_eq{all_rows; player [/]; ann [/foo]}; <b>team</b>}; <script>alert(1)</script>}"
    assert execute(program, marked).value is True
    assert (
        execute("eq{hop{filter_eq{all_rows; <b>team</b>; [red]rovers[/red]}; score [bold]}; 7}", marked).value
        is True
    )
