"""The command line, run as a user runs it (a real process, real files, exit codes): the app as a whole -
help, and bad input that every command must survive (markup in user text, special files)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.cli.conftest import run

COMMANDS = [[], ["check"], ["crosscheck"], ["tables"], ["coref", "score"], ["program", "run"],
            ["program", "functions"], ["bench", "tabfact"], ["bench", "arxiveri"], ["train", "tabfact"]]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "tabverify")
def test_help_has_examples_and_no_python_types(command: list[str]) -> None:
    result = run(*command, "--help")
    assert result.returncode == 0
    assert "Example" in result.stdout
    # placeholders are written in capitals (TABLE, FILE, N); no Python type leaks into the help
    assert not re.search(r"list\[|<str>|<path>|<int>|<float>", result.stdout), result.stdout
    # no line of the help wraps an option name or an example
    assert all(not line.startswith(("ct", "rows")) for line in result.stdout.splitlines())


def test_train_needs_an_output_folder(tmp_path: Path) -> None:
    result = run("train", "tabfact", "--data", str(tmp_path))
    assert result.returncode == 2 and "--out" in result.stderr


MARKUP = ["[/]", "[/foo]", "[bold]x[/bold]", "[link=file:///etc/passwd]y[/link]", "<script>alert(1)</script>"]


@pytest.mark.parametrize("text", MARKUP)
def test_markup_in_user_text_is_printed_as_written(tmp_path: Path, text: str) -> None:
    table = tmp_path / "teams.csv"
    table.write_text(f"team {text},points\nred {text},3\nblue,5\n", encoding="utf-8")
    statement = f"red {text} has 3 points"
    result = run("check", str(table), statement)
    assert result.returncode in (0, 1), result.stderr
    assert statement in result.stdout and f"team {text}" in result.stdout
    program = run("program", "run", str(table), f"hop{{argmax{{all_rows; points}}; team {text}}}")
    assert program.returncode == 0, program.stderr
    assert program.stdout.splitlines()[-1] == "blue"
    bad = run("program", "run", str(table), f"eq{{{text}")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    missing = run("check", str(tmp_path / f"none{text.replace('/', '')}.csv"), "x")
    assert missing.returncode == 2 and f"none{text.replace('/', '')}.csv: no such file" in missing.stderr


@pytest.mark.parametrize("kind", ["fifo", "device", "symlink to a device"])
def test_special_files_are_refused_not_read(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "table.csv"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path.symlink_to("/dev/zero")
    for args in (["check", str(path), "x"], ["tables", str(path)], ["coref", "score", str(path), str(path)],
                 ["crosscheck", str(path), "--source", str(path)]):  # fmt: skip
        result = run(*args, timeout=30)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        # /dev/zero has no extension: refused for its unknown format before anything is read
        assert "not a regular file" in result.stderr or (kind == "device" and "format" in result.stderr)


@pytest.mark.parametrize(
    "args",
    [["crosscheck", "a.html", "--source", "b.tex", "--table", "abc"], ["check"], ["no-such-command"],
     ["coref", "score", "k", "r", "--no-such-option"]],
)  # fmt: skip
def test_usage_errors_are_one_line_and_exit_2(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--help" in lines[0]


def test_terminal_control_sequences_in_user_text_are_made_visible(tmp_path: Path) -> None:
    table = tmp_path / "escape.csv"
    table.write_text("team,points\n\x1b[31mred\x07,3\nblue,5\n", encoding="utf-8")
    result = run("program", "run", str(table), "hop{argmin{all_rows; points}; team}")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert result.stdout.splitlines()[-1] == "\\x1b[31mred\\x07"
    checked = run("check", str(table), "\x1b]0;title\x07 red has 3 points")
    assert "\x1b" not in checked.stdout + checked.stderr
    reordered = run("check", str(table), "\u202e\u200fblue has 5 points\u2066\u202c")
    assert reordered.stdout.splitlines()[0].endswith("\\u202e\u200fblue has 5 points\\u2066\\u202c")


@pytest.mark.parametrize(
    ("args", "option"),
    [(["crosscheck", "{missing}", "--source", "{missing}", "--html", "{out}"], "--html"),
     (["coref", "score", "{missing}", "{missing}", "--html", "{out}"], "--html"),
     (["bench", "arxiveri", "--data", "{data}", "--out", "{out}"], "--out")],
)  # fmt: skip
def test_output_paths_are_checked_before_any_work(tmp_path: Path, args: list[str], option: str) -> None:
    values = {
        "missing": str(tmp_path / "missing.html"),
        "out": str(tmp_path / "nowhere" / "x"),
        "data": str(tmp_path),
    }
    result = run(*[a.format(**values) for a in args])
    assert result.returncode == 2 and f"{option} " in result.stderr and "does not exist" in result.stderr


def test_a_report_never_overwrites_an_input(tmp_path: Path) -> None:
    from tests.crosscheck.conftest import SOURCE_TEX, target_html

    paper, cited = tmp_path / "paper.html", tmp_path / "cited.tex"
    paper.write_text(target_html(), encoding="utf-8")
    cited.write_text(SOURCE_TEX, encoding="utf-8")
    (tmp_path / "link.html").symlink_to(cited)
    for html in (paper, tmp_path / "link.html"):
        result = run("crosscheck", str(paper), "--source", str(cited), "--html", str(html))
        assert result.returncode == 2 and "is an input" in result.stderr
    assert (
        paper.read_text(encoding="utf-8") == target_html() and cited.read_text(encoding="utf-8") == SOURCE_TEX
    )
    inside = run("bench", "arxiveri", "--data", str(tmp_path), "--out", str(tmp_path / "result.json"))
    assert inside.returncode == 2 and "inside an input" in inside.stderr


def test_lone_surrogates_from_json_are_printed_escaped(tmp_path: Path) -> None:
    table = tmp_path / "s.json"
    table.write_text(
        '{"header": ["a\\ud800", "b"], "rows": [["x\\udc00y", "1"], ["z", "2"]]}', encoding="utf-8"
    )
    result = run("program", "run", str(table), "hop{filter_eq{all_rows; b; 1}; b}")
    assert result.returncode == 0, result.stderr
    assert "\\udc00" in result.stdout and "Traceback" not in result.stderr
    verdicts = run("check", str(table), "z has b of 2", "--json")
    assert verdicts.returncode in (0, 1) and "internal error" not in verdicts.stderr
