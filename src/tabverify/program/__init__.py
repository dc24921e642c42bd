"""The table program language: functions, brace syntax, executor, search and ranker."""

from tabverify.program.execute import Execution, execute
from tabverify.program.functions import FUNCTIONS
from tabverify.program.tree import AllRows, Call, Header, Literal, check_program, parse_program, to_text

__all__ = [
    "FUNCTIONS",
    "AllRows",
    "Call",
    "Execution",
    "Header",
    "Literal",
    "check_program",
    "execute",
    "parse_program",
    "to_text",
]
