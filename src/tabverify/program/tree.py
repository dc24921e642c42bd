"""The program tree, and parsing/printing in the TabFact brace syntax.

One tree serves everything: search builds it, the ranker reads it, the executor runs it, and
users see it printed exactly like the human annotations (``eq{count{filter_eq{all_rows; party;
democratic}}; 3}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tabverify.errors import ProgramSyntaxError, ProgramTypeError


@dataclass(frozen=True, slots=True)
class AllRows:
    """The whole table as a view."""

    def __str__(self) -> str:
        return "all_rows"


@dataclass(frozen=True, slots=True)
class Header:
    """A column, named by its header text."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal value written in the program (a number, date or text), kept as written."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Call:
    """A function applied to arguments."""

    func: str
    args: tuple[Node, ...]

    def __str__(self) -> str:
        return f"{self.func}{{{'; '.join(str(a) for a in self.args)}}}"

    def walk(self):
        """Yield this call and every node below it, depth first."""
        yield self
        for arg in self.args:
            if isinstance(arg, Call):
                yield from arg.walk()
            else:
                yield arg

    @property
    def functions(self) -> tuple[str, ...]:
        """Function names in the program, outermost first."""
        return tuple(n.func for n in self.walk() if isinstance(n, Call))

    @property
    def headers(self) -> tuple[str, ...]:
        """Column names the program mentions, in order."""
        return tuple(n.name for n in self.walk() if isinstance(n, Header))

    @property
    def literals(self) -> tuple[str, ...]:
        """Literal values the program mentions, in order."""
        return tuple(n.text for n in self.walk() if isinstance(n, Literal))

    @property
    def size(self) -> int:
        """Number of function calls."""
        return sum(1 for n in self.walk() if isinstance(n, Call))


Node = Call | Header | Literal | AllRows


MAX_DEPTH = 100
"""Deepest nesting of function calls a program may have (human programs nest at most 7 deep)."""

_ANNOTATION_RE = re.compile(r"=\s*(true|false)$", re.IGNORECASE)  # the human annotations' "=True"
_CONTEXT = 30  # characters of the program shown on each side of a syntax error


def to_text(program: Node) -> str:
    """Print a program in the brace syntax."""
    return str(program)


def parse_program(text: str) -> Call:
    """Parse a program in the TabFact brace syntax.

    A trailing ``=True`` (as in the human annotations) is accepted and ignored; a trailing
    ``=False`` is refused, since ignoring it would run the negation of what it says (write
    ``not{...}`` instead).
    Bare text is typed by the signature of the function it is passed to: a header, a literal or
    ``all_rows``. There are no boolean literals: a bool argument must be a call.

    Raises:
        ProgramSyntaxError: unbalanced braces, empty arguments (except a header: see
            :func:`tabverify.program.execute.resolve_header`), trailing text (``=False``
            included), unknown function, calls nested deeper than :data:`MAX_DEPTH`.
        ProgramTypeError: an argument that cannot have the type its function expects.
    """
    from tabverify.program.functions import FUNCTIONS

    source = text.strip()
    annotation = _ANNOTATION_RE.search(source)
    if annotation is not None and annotation.group(1).lower() == "true":
        source = source[: annotation.start()].rstrip()
    elif annotation is not None:
        raise ProgramSyntaxError(
            "a program ending in '=False' is not accepted: the annotation would be ignored and the "
            "program run as if it were true; write not{...} around the program instead"
        )
    if not source:
        raise ProgramSyntaxError("empty program; expected something like eq{count{all_rows}; 3}")
    position = 0
    depth = 0

    def error(message: str) -> ProgramSyntaxError:
        start = max(0, position - _CONTEXT)
        shown = source[start : position + _CONTEXT]
        before = "..." if start else ""
        after = "..." if position + _CONTEXT < len(source) else ""
        pointer = f"\n  {before}{shown}{after}\n  {' ' * (len(before) + position - start)}^"
        return ProgramSyntaxError(f"{message} at character {position}:{pointer}")

    def parse_arg(func: str, index: int, expected: str) -> Node:
        nonlocal position
        start = position
        while position < len(source):
            ch = source[position]
            if ch == "{":
                # a function call: name{...}
                name = source[start:position].strip()
                if name not in FUNCTIONS:
                    raise error(f"unknown function {name!r}")
                call = parse_call(name)
                check_argument(func, index, call, expected)
                return call
            if ch in ";}":
                break
            position += 1
        word = source[start:position].strip()
        if not word and expected != "header":
            raise error("empty argument")
        node: Node
        if expected == "header":
            # an empty header names the column whose header is empty (TabFact tables often leave
            # the first column, a rank or a name, without a header); resolving it fails on a
            # table that has no such column
            node = Header(word)
        elif word.lower() == "all_rows":
            node = AllRows()
        else:
            node = Literal(word)
        check_argument(func, index, node, expected)
        return node

    def parse_call(name: str) -> Call:
        nonlocal position, depth
        depth += 1
        if depth > MAX_DEPTH:
            raise error(f"the program nests calls more than {MAX_DEPTH} deep")
        signature = FUNCTIONS[name]
        position += 1  # the '{'
        args: list[Node] = []
        while True:
            if len(args) >= len(signature.args):
                raise error(f"{name} takes {len(signature.args)} arguments, got more")
            args.append(parse_arg(name, len(args), signature.args[len(args)]))
            skip_space()
            if position >= len(source):
                raise error(f"missing '}}' to close {name}{{")
            if source[position] == ";":
                position += 1
                continue
            if source[position] == "}":
                position += 1
                break
            raise error("expected ';' or '}'")
        if len(args) != len(signature.args):
            raise error(f"{name} takes {len(signature.args)} arguments, got {len(args)}")
        depth -= 1
        return Call(name, tuple(args))

    def skip_space() -> None:
        nonlocal position
        while position < len(source) and source[position].isspace():
            position += 1

    brace = source.find("{")
    if brace <= 0:
        raise error("a program must start with a function call such as eq{...}")
    name = source[:brace].strip()
    if name not in FUNCTIONS:
        position = 0
        raise error(f"unknown function {name!r}")
    position = brace
    program = parse_call(name)
    skip_space()
    if position != len(source):
        raise error("unexpected text after the program")
    return program


def check_argument(func: str, index: int, arg: Node, expected: str) -> None:
    """Check that ``arg`` can be argument ``index`` (0-based) of ``func``, whose signature asks
    for an ``expected`` type.

    Raises:
        ProgramTypeError: the argument cannot have that type (text where a bool or a view is
            expected, all_rows where a value is expected, a call that returns another type).
    """
    from tabverify.program.functions import FUNCTIONS, compatible

    where = f"argument {index + 1} of {func}"
    if isinstance(arg, Call):
        produced = FUNCTIONS[arg.func].returns
        if not compatible(produced, expected):
            raise ProgramTypeError(f"{where} must be a {expected}, but {arg.func} returns a {produced}")
    elif isinstance(arg, AllRows):
        if expected != "view":
            raise ProgramTypeError(f"all_rows is used where a {expected} is expected ({where})")
    elif expected == "view":
        raise ProgramTypeError(
            f"{str(arg)!r} is used where a view (all_rows or a filter) is expected ({where})"
        )
    elif expected == "bool":
        raise ProgramTypeError(
            f"{str(arg)!r} is text, but {where} must be a bool: a comparison such as eq{{...}} "
            "(the language has no true/false literals)"
        )
    elif isinstance(arg, Header) != (expected == "header"):
        kind = "a column" if isinstance(arg, Header) else "a value"
        raise ProgramTypeError(f"{str(arg)!r} is {kind}, but {where} must be a {expected}")


def check_program(program: Node) -> None:
    """Check a program tree (built in code, not parsed) the way the parser checks text: known
    functions, argument counts and types, nesting at most :data:`MAX_DEPTH` calls deep. Works
    without recursion, so any depth is refused cleanly.

    Raises:
        ProgramSyntaxError: an unknown function, a wrong argument count, nesting too deep, or
            something that is not a program node.
        ProgramTypeError: an argument of the wrong type.
    """
    from tabverify.program.functions import FUNCTIONS

    if not isinstance(program, Call):
        raise ProgramSyntaxError("a program must be a function call such as eq{...}")
    stack: list[tuple[Call, int]] = [(program, 1)]
    while stack:
        call, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ProgramSyntaxError(f"the program nests calls more than {MAX_DEPTH} deep")
        signature = FUNCTIONS.get(call.func) if isinstance(call.func, str) else None
        if signature is None:
            raise ProgramSyntaxError(f"unknown function {call.func!r}")
        if len(call.args) != len(signature.args):
            raise ProgramSyntaxError(
                f"{call.func} takes {len(signature.args)} arguments, got {len(call.args)}"
            )
        for index, (arg, expected) in enumerate(zip(call.args, signature.args, strict=True)):
            if not isinstance(arg, (Call, Header, Literal, AllRows)):
                raise ProgramSyntaxError(
                    f"argument {index + 1} of {call.func} is not a program node: {arg!r}"
                )
            check_argument(call.func, index, arg, expected)
            if isinstance(arg, Call):
                stack.append((arg, depth + 1))
