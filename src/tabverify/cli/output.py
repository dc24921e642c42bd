"""What every command shares: the consoles, exit codes, the one error path, progress and output files.

User text (statements, cells, headers, file names, document ids) is never parsed as Rich markup:
the consoles have markup switched off, and styled output is built from ``rich.text.Text`` pieces.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeRemainingColumn
from rich.text import Text

from tabverify.errors import TabverifyError

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
"""0: all good; 1: findings (a refuted statement, a wrong copy); 2: bad input or usage; 3: a bug."""

out = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)

ProgressReport = Callable[[str, int, int], None]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """User text made safe for a terminal: control characters (ESC sequences that could recolour,
    retitle or rewrite the terminal, bells, carriage returns) shown as ``\\x1b`` escapes, and the
    bidirectional embeddings, overrides and isolates that reorder what is shown (U+202A-U+202E,
    U+2066-U+2069) as ``\\u202e``. The right-to-left and left-to-right marks of Hebrew and
    Arabic text (U+200E, U+200F, U+061C) stay: they only place neutral characters."""
    return _CONTROL.sub(lambda match: _escape(match.group()), text)


def text(value: str, style: str = "") -> Text:
    """User text for the terminal: never parsed as markup, control characters made visible."""
    return Text(clean(value), style=style)


def one_line(message: str) -> str:
    """A message on one line (file contents quoted in errors may hold newlines)."""
    return " ".join(message.split())


def print_error(message: str) -> None:
    """Print ``error: message`` on stderr: one line, never markup, control characters made visible."""
    err.print(Text.assemble(("error:", "bold red"), " ", clean(one_line(message))))


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit 2."""
    print_error(message)
    raise typer.Exit(EXIT_INPUT)


def warn(message: str) -> None:
    """Print ``warning: message`` on stderr (one line, never markup)."""
    err.print(Text.assemble(("warning:", "bold yellow"), " ", clean(one_line(message))))


@contextmanager
def input_errors() -> Iterator[None]:
    """Turn the library's errors (bad input, by design) into exit 2 with their message."""
    try:
        yield
    except TabverifyError as exc:
        fail(str(exc))


def check_output(path: Path | None, option: str, inputs: Iterable[Path | None] = ()) -> None:
    """Refuse an output file that cannot or must not be written - before any work is done: a missing
    folder (refused rather than created: a typo must not create folders), a folder, a device or
    other special file, and any input of the command (also through a symlink, and any file inside
    an input folder), so a report can never overwrite what it reports on."""
    if path is None:
        return
    if not path.parent.is_dir():
        fail(f"{option} {path}: the folder {path.parent} does not exist; create it first")
    if path.is_dir():
        fail(f"{option} {path}: is a folder; name a file")
    if path.exists() and not path.resolve().is_file():
        fail(f"{option} {path}: not a regular file; name a file to write")
    target = path.resolve()
    for given in inputs:
        if given is None or not given.exists():
            continue
        source = given.resolve()
        if target == source or source in target.parents:
            fail(
                f"{option} {path}: is {'inside ' if target != source else ''}an input ({given}); name another file"
            )


def write_output(path: Path, text: str, option: str) -> None:
    """Write a report the user asked for, all or nothing: into a temporary file beside it, then
    renamed over it (an interrupted run leaves no half-written report). Text that cannot be
    encoded (a lone surrogate read from JSON) is written as a backslash escape."""
    check_output(path, option)
    target = path.resolve()
    temporary: str | None = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        umask = os.umask(0o022)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)  # as a plain write would create it, not mkstemp's 0600
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text)
        os.replace(temporary, target)
        temporary = None
    except OSError as exc:
        fail(f"{option} {path}: cannot write ({exc.strerror or exc})")
    finally:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)


def worker_count(jobs: int) -> int:
    """``--jobs`` bounded by the machine: more processes than cores only fight over them."""
    cores = os.cpu_count() or 1
    if jobs > cores:
        warn(f"--jobs {jobs}: this machine has {cores} cores; using {cores} worker processes")
        return cores
    return jobs


def count(n: int, one: str, many: str) -> str:
    """``1 discrepancy`` / ``2 discrepancies``."""
    return f"{n} {one if n == 1 else many}"


@contextmanager
def progress() -> Iterator[ProgressReport]:
    """A progress reporter ``(stage, done, total)``: bars on a terminal, a line per 10% otherwise
    (CI logs, files)."""
    if err.is_terminal:
        columns = (
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=err, transient=True) as bar:
            tasks: dict[str, TaskID] = {}

            def update(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(stage, total=total)
                bar.update(tasks[stage], completed=done, total=total)

            yield update
        return
    reported: dict[str, int] = {}

    def report(stage: str, done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if reported.get(stage, -1) < tenth:
            reported[stage] = tenth
            print(f"{stage}: {done}/{total}", file=sys.stderr, flush=True)

    yield report
