"""``read_tables_text``: a document given as text (an upload) reads as the same file does, its name
only labels it and picks the format, and bad text is one TableError."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabverify.errors import TableError
from tabverify.table.documents import read_tables, read_tables_text

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "tabverify" / "examples"


@pytest.mark.parametrize("name", ["paper.html", "cited.tex", "league.csv"])
def test_text_reads_as_the_file_does(name: str) -> None:
    path = EXAMPLES / name
    from_text = read_tables_text(path.read_text(encoding="utf-8"), name)
    from_file = read_tables(path)
    assert [g.name for g in from_text] == [g.name for g in from_file]
    assert [[c.text for c in row] for g in from_text for row in g.cells] == [
        [c.text for c in row] for g in from_file for row in g.cells
    ]


def test_the_name_picks_the_format_and_is_never_opened() -> None:
    text = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    (grid,) = read_tables_text(text, "../../etc/passwd.md")
    assert grid.name == "../../etc/passwd.md#table1" and grid.cells[1][1].text == "2"
    (as_csv,) = read_tables_text("a,b\n1,2\n", "<b>x</b>.csv")
    assert as_csv.n_columns == 2
    assert len(read_tables_text("a\tb\n1\t2\n", "t", fmt="tsv")[0].cells[0]) == 2


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("", "auto", "up.html: the document is empty"),
        ("a\x00b", "auto", "up.html: looks like a binary file"),
        ("<p>prose</p>", "auto", "no <table>"),
        ("{}", "json", "not a paper record"),
        ("x", "docx", "unknown document format 'docx'"),
    ],
)
def test_bad_text_is_one_table_error(text: str, fmt: str, message: str) -> None:
    with pytest.raises(TableError, match=message.replace("(", r"\(")):
        read_tables_text(text, "up.html", fmt)
