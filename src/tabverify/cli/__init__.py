"""The tabverify command line: one Typer app, one module per capability, each command a thin skin over
one public function. Output, errors and exit codes are shared (``tabverify.cli.output``).

Where new commands go: ``verify`` (one table), ``crosscheck`` (documents), ``coref``, ``bench`` (and
``train``); a new capability (database, lake, web server) gets its own module with a ``register(app)``.
"""

from __future__ import annotations

import os
import signal
import sys

import typer

from tabverify.cli import bench, claimdb, coref, crosscheck, lake, lake_enrich, serve, sql, verify
from tabverify.cli.output import EXIT_INPUT, EXIT_INTERNAL, clean, err, one_line, print_error
from tabverify.errors import TabverifyError

app = typer.Typer(
    help="Check text against structured evidence, and measure how well the checking works.",
    epilog="""Examples:

\b
  tabverify check results.csv "the hawks won both games against dayton"
  tabverify program run results.csv "eq{count{filter_eq{all_rows; opponent; dayton}}; 2}"
  tabverify crosscheck my-paper.tex --source cited-paper.html
  tabverify coref score gold.jsonl system.jsonl --match overlap
  tabverify check --db formula_1.sqlite "Sebastian Vettel scored the most points in 2013" --model M --llm-base-url URL
  tabverify bench tabfact --data ../shared/datasets/tabfact --split val --jobs 2
""",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    # help is read in logs and pipes too: one width everywhere, so no example or option name wraps
    context_settings={"terminal_width": 120, "max_content_width": 120},
)


def _metavars_only_in_help() -> None:
    """Typer 0.2x prints an argument's Python type beside its metavar (``STATEMENT <list[str]>``);
    our metavars already say what to write, so the help shows the metavar alone."""
    argument = getattr(typer.core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "display_type_rich"):
        argument.display_type_rich = lambda self, ctx: None


_metavars_only_in_help()

for module in (verify, crosscheck, coref, bench, sql, claimdb, lake, lake_enrich, serve):
    module.register(app)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    """Entry point. Exit 0 / 1 (findings) / 2 (bad input, with one line on stderr) / 3 (a bug in
    tabverify, one line; set TABVERIFY_DEBUG=1 for the traceback). Never a traceback by default."""
    # a stop request (SIGTERM: `kill`, a CI timeout) ends a run as Ctrl-C does: no traceback, no half file
    signal.signal(signal.SIGTERM, _interrupt)
    for stream in (sys.stdout, sys.stderr):
        # text read from JSON may hold lone surrogates ("\\ud800"): print them escaped, never crash
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # usage errors (the parser's): one line too, and always exit 2
        if type(exc).__name__ == "NoArgsIsHelpError":  # `tabverify program` alone: show its help
            exc.show()  # type: ignore[attr-defined]
            sys.exit(EXIT_INPUT)
        context = getattr(exc, "ctx", None)
        hint = f" (see '{context.command_path} --help')" if context is not None else ""
        print_error(f"{exc.format_message()}{hint}")
        sys.exit(EXIT_INPUT)
    except typer.Abort:
        err.print("interrupted")
        sys.exit(130)
    except TabverifyError as exc:
        print_error(str(exc))
        sys.exit(EXIT_INPUT)
    except (RecursionError, MemoryError) as exc:
        print_error(f"the input is too large or too deeply nested to process ({type(exc).__name__})")
        sys.exit(EXIT_INPUT)
    except BrokenPipeError:
        # the reader of our output went away (e.g. `| head`): not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except Exception as exc:  # a bug: one line, not a traceback, and not an exit code that means findings
        if os.environ.get("TABVERIFY_DEBUG"):
            raise
        err.print(
            f"internal error: {type(exc).__name__}: {clean(one_line(str(exc)))[:300]} "
            "(a bug in tabverify; rerun with TABVERIFY_DEBUG=1 for the traceback and report it)"
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)
