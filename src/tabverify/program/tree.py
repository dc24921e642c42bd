"""The program tree, and parsing/printing in the TabFact brace syntax.

One tree serves everything: search builds it, the ranker reads it, the executor runs it, and
users see it printed exactly like the human annotations (``eq{count{filter_eq{all_rows; party;
democratic}}; 3}``).
"""

from __future__ import annotations

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


def to_text(program: Node) -> str:
    """Print a program in the brace syntax."""
    return str(program)


def parse_program(text: str) -> Call:
    """Parse a program in the TabFact brace syntax.

    A trailing ``=True`` / ``=False`` (as in the human annotations) is accepted and ignored.
    Bare text is typed by the signature of the function it is passed to: a header, a literal or
    ``all_rows``.

    Raises:
        ProgramSyntaxError: unbalanced braces, empty arguments, trailing text, unknown function.
        ProgramTypeError: an argument that cannot have the type its function expects.
    """
    from tabverify.program.functions import FUNCTIONS

    source = text.strip()
    for suffix in ("=true", "=false"):
        if source.lower().endswith(suffix):
            source = source[: -len(suffix)].rstrip()
    if not source:
        raise ProgramSyntaxError("empty program; expected something like eq{count{all_rows}; 3}")
    position = 0

    def error(message: str) -> ProgramSyntaxError:
        pointer = f"\n  {source}\n  {' ' * position}^"
        return ProgramSyntaxError(f"{message} at character {position}:{pointer}")

    def parse_arg(expected: str) -> Node:
        nonlocal position
        start = position
        depth = 0
        while position < len(source):
            ch = source[position]
            if ch == "{":
                # a function call: name{...}
                name = source[start:position].strip()
                if name not in FUNCTIONS:
                    raise error(f"unknown function {name!r}")
                return parse_call(name, start)
            if ch in ";}" and depth == 0:
                break
            position += 1
        word = source[start:position].strip()
        if not word:
            raise error("empty argument")
        if expected == "view":
            if word.lower() == "all_rows":
                return AllRows()
            raise ProgramTypeError(f"{word!r} is used where a view (all_rows or a filter) is expected")
        if expected == "header":
            return Header(word)
        if word.lower() == "all_rows":
            raise ProgramTypeError(f"all_rows is used where a {expected} is expected")
        return Literal(word)

    def parse_call(name: str, start: int) -> Call:
        nonlocal position
        signature = FUNCTIONS[name]
        position += 1  # the '{'
        args: list[Node] = []
        while True:
            if len(args) >= len(signature.args):
                raise error(f"{name} takes {len(signature.args)} arguments, got more")
            args.append(parse_arg(signature.args[len(args)]))
            _check_type(name, len(args) - 1, args[-1], signature.args[len(args) - 1])
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
    program = parse_call(name, 0)
    skip_space()
    if position != len(source):
        raise error("unexpected text after the program")
    return program


def _check_type(func: str, index: int, arg: Node, expected: str) -> None:
    from tabverify.program.functions import FUNCTIONS, compatible

    if isinstance(arg, Call):
        produced = FUNCTIONS[arg.func].returns
        if not compatible(produced, expected):
            raise ProgramTypeError(
                f"argument {index + 1} of {func} must be a {expected}, but {arg.func} returns a {produced}"
            )
