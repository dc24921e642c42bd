import json
from pathlib import Path

import pandas as pd
import pytest

from tabverify.errors import TableError
from tabverify.table import Table, from_dataframe, load_table


def test_tabfact_csv_reads_header_rows_and_types(election: Table) -> None:
    assert election.header[:3] == ("district", "incumbent", "party")
    assert election.n_rows == 5
    assert election.rows[1][4].value == 61002.0
    assert election.column_types == ("text", "text", "text", "number", "number")
    assert election.caption == "ohio house elections"


def test_csv_tsv_and_json_readers_agree(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text('name,score\n"smith, john",7\nann,9\n', encoding="utf-8")
    (tmp_path / "t.tsv").write_text("name\tscore\nsmith, john\t7\nann\t9\n", encoding="utf-8")
    (tmp_path / "t.json").write_text(
        json.dumps([{"name": "smith, john", "score": 7}, {"name": "ann", "score": 9}])
    )
    tables = [load_table(tmp_path / n) for n in ("t.csv", "t.tsv", "t.json")]
    for table in tables:
        assert table.header == ("name", "score")
        assert [c.text for c in table.column(0)] == ["smith, john", "ann"]
        assert [c.value for c in table.column(1)] == [7.0, 9.0]


def test_dataframe_reader() -> None:
    frame = pd.DataFrame({"team": ["a", "b"], "points": [3, None]})
    table = from_dataframe(frame)
    assert table.header == ("team", "points")
    assert table.rows[0][1].value == 3.0
    assert table.rows[1][1].text == ""
    assert load_table(frame).n_rows == 2


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", b"", "empty"),
        ("ragged.html.csv", b"a#b\n1#2\n3\n", "line 3 has 1 fields"),
        ("binary.csv", b"\x00\x01\x02PK\x03", "binary"),
        ("latin1.csv", "name\ncaf\xe9\n".encode("latin-1"), "not valid UTF-8"),
        ("table.xlsx", b"x", "unknown table format"),
        ("bad.json", b"{not json", "not valid JSON"),
        ("nan.json", b'[{"a": NaN}]', "not a JSON number"),
        ("deep.json", b"[" * 10000 + b"]" * 10000, "nested deeper than"),
        ("empty-header.csv", b",,\n1,2,3\n4,5,6\n", "no column names"),
        ("shapes.json", b'{"header": 5, "rows": 3}', "must be lists"),
        ("row.json", b'{"header": ["a"], "rows": [5]}', "row 1"),
        ("nested.json", b'[{"a": {"b": 1}}]', "record 1 holds an object"),
        ("quote.csv", b'a,b\n"' + b"x" * 200_000 + b",1\n", "never closed"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(TableError) as info:
        load_table(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TableError, match="no such file"):
        load_table(tmp_path / "nope.csv")


def test_total_rows_are_not_data_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("party,seats\na,3\nb,4\ntotal,7\n", encoding="utf-8")
    table = load_table(path)
    assert table.n_rows == 3
    assert table.data_row_indices == (0, 1)


def test_messages_and_line_endings_of_table_files(tmp_path: Path) -> None:
    from tabverify.errors import TableError
    from tabverify.table import load_table, read_tables

    cr = tmp_path / "mac.csv"
    cr.write_bytes(b"a,b\r1,2\r3,4\r")
    assert load_table(cr).n_rows == 2 and read_tables(cr)[0].n_rows == 3
    quote = tmp_path / "q.csv"
    quote.write_text('a,b\n1,2\n3,"4\n5,6\n')
    with pytest.raises(TableError, match=r"unterminated quote \(\"\) starting at line 3"):
        load_table(quote)
    for bom in ("utf-16-le", "utf-16-be"):
        wide = tmp_path / "u16.csv"
        wide.write_bytes(("\ufeffa,b\n1,2\n").encode(bom))
        with pytest.raises(TableError, match="looks like UTF-16.*re-save it as UTF-8"):
            load_table(wide)
    for bom in ("utf-32-le", "utf-32-be"):  # FF FE 00 00 also begins like UTF-16
        wider = tmp_path / "u32.csv"
        wider.write_bytes(("\ufeffa,b\n1,2\n").encode(bom))
        with pytest.raises(TableError, match="looks like UTF-32.*re-save it as UTF-8"):
            load_table(wider)
    rows = tmp_path / "r.json"
    rows.write_text('{"header": ["a", "b"], "rows": [[1, 2], [3]]}')
    with pytest.raises(TableError, match='row 2 of "rows" has 1 cells but "header" has 2'):
        load_table(rows)
    other = tmp_path / "t.xyz"
    other.write_text("\\begin{tabular}{c} 1 \\end{tabular}")
    with pytest.raises(TableError, match=r"use a \.csv, \.tsv, \.json or TabFact \.html\.csv file"):
        load_table(other)
    tex = tmp_path / "t.tex"
    tex.write_text("\\begin{tabular}\na & b \\\\\n\\end{tabular}\n")
    with pytest.raises(TableError, match="has no column spec"):
        read_tables(tex)


def test_repeated_header_names_are_made_addressable(tmp_path: Path) -> None:
    from tabverify.table import load_table

    path = tmp_path / "dup.csv"
    path.write_text("a,A,,b,a\n1,2,3,4,5\n")
    table = load_table(path)
    assert table.header == ("a", "A (2)", "", "b", "a (3)")
    assert [table.column_index(n) for n in ("a", "a (2)", "a (3)", "b")] == [0, 1, 4, 3]
