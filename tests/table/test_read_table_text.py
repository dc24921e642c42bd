"""read_table_text: a table pasted or uploaded as text, in any format the readers know."""

from __future__ import annotations

import pytest

from tabverify.errors import TableError
from tabverify.examples import example
from tabverify.table import read_table_text


def test_every_format_gives_the_same_table() -> None:
    texts = {
        "csv": "team,points\nhawks,3\nrivers,5\n",
        "tsv": "team\tpoints\nhawks\t3\nrivers\t5\n",
        "json": '{"header": ["team", "points"], "rows": [["hawks", 3], ["rivers", 5]]}',
        "html": "<table><tr><th>team</th><th>points</th></tr><tr><td>hawks</td><td>3</td></tr>"
        "<tr><td>rivers</td><td>5</td></tr></table>",
        "markdown": "| team | points |\n|---|---|\n| hawks | 3 |\n| rivers | 5 |\n",
        "latex": "\\begin{tabular}{ll}\nteam & points \\\\\n\\hline\nhawks & 3 \\\\\nrivers & 5 \\\\\n"
        "\\end{tabular}\n",
    }
    for fmt, text in texts.items():
        for asked in (fmt, "auto"):
            table, count = read_table_text(text, asked)
            assert count == 1, fmt
            assert table.header == ("team", "points"), (fmt, asked)
            assert [[c.text for c in row] for row in table.rows] == [["hawks", "3"], ["rivers", "5"]], fmt


def test_a_document_with_several_tables_gives_the_one_asked_for() -> None:
    text = example("cited.tex").read_text()
    first, count = read_table_text(text, name="cited.tex")
    second, again = read_table_text(text, name="cited.tex", number=2)
    assert count == again == 2 and first.header != second.header
    with pytest.raises(TableError, match="table 3 asked for, but the document holds 2"):
        read_table_text(text, name="cited.tex", number=3)


def test_the_name_suffix_decides_the_format() -> None:
    table, _ = read_table_text("a;b\n1;2\n", name="x.csv")
    assert table.header == ("a", "b") and table.name == "x.csv"


@pytest.mark.parametrize(
    ("text", "fmt", "message"),
    [
        ("   \n", "auto", "empty"),
        ("a,b\x00\n1,2", "auto", "binary"),
        ("a,b\n1,2,3\n", "csv", "ragged"),
        ('{"header": ["a"], "rows": [[1, 2]]}', "json", "make every row as long as the header"),
        ("{not json", "json", "not valid JSON"),
        ("just words, no table", "html", "table"),
        ("a,b\n1,2", "yaml", "unknown document format"),
    ],
)
def test_bad_text_is_one_clear_error(text: str, fmt: str, message: str) -> None:
    with pytest.raises(TableError, match=message):
        read_table_text(text, fmt)
