"""Does a program cover the words of a statement that carry its meaning?

A program can execute to the verdict's label and still check something else than the statement
says: "brazil has the second largest population" checked with ``nth_argmin`` (second smallest),
"the total population ..." with ``count``, "the hawks won both games" with a program that never
reads the column where wins are recorded, a REFUTED label resting on ``all_less`` for a statement
that compares nothing. :func:`coverage_gaps` names such gaps, one sentence each, so that the
verifier can prefer a program without them and otherwise lower its confidence and say why.

The checks are general (no word of a particular table or statement is special-cased):

* direction: superlatives and comparisons ("largest", "fewer", "at least") against the
  direction of the program's functions (``argmax`` / ``nth_argmin`` / ``all_less`` ...); a
  comparison function (``all_less``, ``filter_greater``, ``greater`` ...) needs some comparison
  word in the statement at all;
* ordinal + superlative: the ordinal of "second largest" must be used by the program;
* "total" / "sum" / "combined": the program must add up (``sum``/``avg``) when the statement
  names a numeric column and no count ("number of", "how many");
* verbs that name a column's value ("won", "lost", "beat", "drew"): the program must read the
  linked cell, or the column whose cells record wins and losses (``w 85 - 70``, ``won``, ``l``).

Words inside a cell or header link are data, not operators ("largest city" as a column name), and
the trigger vocabulary of :mod:`tabverify.program.triggers` tells when a statement is negated (a
negated comparison may be written with either direction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from tabverify.program.search import Candidate
from tabverify.program.tree import Call, Header
from tabverify.program.triggers import (
    DOWN_WORDS,
    EITHER_WORDS,
    TRIGGER_WORDS,
    UP_WORDS,
    active_families,
    ranks_by_direction,
)
from tabverify.table import Table
from tabverify.table.quantity import ORDINAL_WORDS
from tabverify.text.linking import STOP_WORDS, Linking
from tabverify.text.normalize import Token
from tabverify.text.spans import Span

NEUTRAL_WORDS = frozenset("than compare compared".split())
"""Words that say a comparison is made without its direction ("than" goes with "more" or "less"):
they license a comparison program but leave its direction to the other words."""
NEGATION_FAMILY = "negation"
"""The trigger family (:mod:`tabverify.program.triggers`) of negating words: a negated comparison
("no game had more than ...") is checked with either direction, so direction is not judged."""
SUM_WORDS = frozenset("sum total totals combined combine altogether aggregate".split())
"""Words asking for a sum of a numeric column (unless the statement counts, see COUNT_WORDS)."""
COUNT_WORDS = frozenset("number count many times".split())
"""Words that make "total" a count ("the total number of games", "how many ... in total")."""
VERB_VALUES: dict[str, frozenset[str]] = {
    "win": frozenset({"w", "win", "won", "wins", "victory"}),
    "lose": frozenset({"l", "loss", "lost", "lose", "defeat"}),
    "draw": frozenset({"d", "t", "draw", "drew", "drawn", "tie", "tied"}),
}
"""Outcome verbs and the words a results column records them with (``w 85 - 70``, ``won``)."""
VERB_WORDS: dict[str, str] = {
    "win": "win", "won": "win", "wins": "win", "winning": "win", "beat": "win", "beats": "win",
    "beaten": "lose", "defeated": "win", "victory": "win", "victorious": "win",
    "lose": "lose", "lost": "lose", "loses": "lose", "losing": "lose", "loss": "lose",
    "draw": "draw", "drew": "draw", "drawn": "draw", "tie": "draw", "tied": "draw",
}  # fmt: skip
"""Statement words (surface forms) that name an outcome."""
RESULT_COLUMN_SHARE = 0.5
"""A column records outcomes when at least this share of its non-empty cells begins with an
outcome word of :data:`VERB_VALUES` (half: a results column may hold a few postponed games)."""

_UP_FUNCTIONS = frozenset({"argmax", "max", "nth_argmax", "nth_max"})
_DOWN_FUNCTIONS = frozenset({"argmin", "min", "nth_argmin", "nth_min"})
_COMPARE_UP = frozenset({"filter_greater", "filter_greater_eq", "all_greater", "all_greater_eq"})
_COMPARE_DOWN = frozenset({"filter_less", "filter_less_eq", "all_less", "all_less_eq"})
_COMPARE_ANY = frozenset({"greater", "less"})  # the direction depends on the order of the arguments
_NTH = frozenset({"nth_argmax", "nth_max", "nth_argmin", "nth_min"})
_ADDING = frozenset({"sum", "avg"})
_RANKING = _UP_FUNCTIONS | _DOWN_FUNCTIONS | _ADDING  # functions that read a whole numeric column


@dataclass(frozen=True)
class Cues:
    """What the statement's operator words (words outside cell and header links) ask for."""

    up: tuple[str, ...]
    down: tuple[str, ...]
    either: tuple[str, ...]
    neutral: tuple[str, ...]
    negated: bool
    ordinals: tuple[tuple[Span, str], ...]
    sum_word: str
    counts: bool
    numeric_headers: tuple[str, ...]
    outcomes: tuple[tuple[str, str, Span | None], ...]
    outcome_columns: dict[str, tuple[str, ...]]
    mentioned: frozenset[str] = frozenset()
    numbers: tuple[tuple[Span, str], ...] = ()
    columns: tuple[tuple[str, str], ...] = ()

    @property
    def compares(self) -> bool:
        """Whether the statement names any comparison or superlative."""
        return bool(self.up or self.down or self.either or self.neutral)


def _comparative(word: str, after: list[str]) -> bool:
    """Whether a word outside the lists above reads as a superlative ("tallest") or as a
    comparative followed by "than" ("heavier than"). Most words ending in -er compare nothing
    ("player", "number", "other", "november"), so -er needs the "than"."""
    if len(word) <= 4:
        return False
    return word.endswith("est") or (word.endswith("er") and "than" in after)


def _data_tokens(linking: Linking) -> set[Span]:
    """Spans of the tokens that sit inside a cell or header link (data, not operators)."""
    links = linking.cells + linking.headers
    return {t.span for t in linking.tokens if any(link.span.contains(t.span) for link in links)}


def statement_cues(linking: Linking, table: object) -> Cues:
    """The statement's operator words, read once per statement (``table``: a :class:`Table` or a
    database table; its column types and, for outcome verbs, its cells are read)."""
    data = _data_tokens(linking)
    free: list[Token] = [t for t in linking.tokens if t.text[0].isalnum() and t.span not in data]
    words = [t.text.lower() for t in free]
    up, down, either, neutral = [], [], [], []
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        if word in ("least", "most") and before == "at":  # "at least 3" is >=, "at most 3" is <=
            (up if word == "least" else down).append(f"at {word}")
        elif word in UP_WORDS:
            up.append(word)
        elif word in DOWN_WORDS:
            down.append(word)
        elif word in NEUTRAL_WORDS:
            neutral.append(word)
        elif word in EITHER_WORDS or _comparative(word, words[i + 1 : i + 3]):
            either.append(word)
    ordinals: list[tuple[Span, str]] = []
    for link in linking.numbers:
        word = link.text.lower()
        value = ORDINAL_WORDS.get(word) or (int(word[:-2]) if word[:-2].isdigit() and word[-2:] in
                                            ("nd", "rd", "th") else 0)  # fmt: skip
        if value < 2 or link.span in data:
            continue
        after = [t.text.lower() for t in free if t.span.start >= link.span.end][:2]
        if ranks_by_direction(after):
            ordinals.append((link.span, f"{link.text} {' '.join(after)}".strip()))
    sum_word = next((w for w in words if w in SUM_WORDS), "")
    types = getattr(table, "column_types", ())
    header = tuple(getattr(table, "header", ()))
    numeric = tuple(
        link.text
        for link in linking.headers
        if link.column is not None and link.column < len(types) and types[link.column] == "number"
    )
    outcomes: list[tuple[str, str, Span | None]] = []
    cell_links = {
        t.span: link.span for link in linking.cells for t in linking.tokens if link.span.contains(t.span)
    }
    for token in linking.tokens:
        outcome = VERB_WORDS.get(token.text.lower())
        if outcome is not None:
            outcomes.append((outcome, token.text, cell_links.get(token.span)))
    columns = _outcome_columns(table) if outcomes and isinstance(table, Table) else {}
    return Cues(
        tuple(up),
        tuple(down),
        tuple(either),
        tuple(neutral),
        NEGATION_FAMILY in active_families(linking.tokens),
        tuple(ordinals),
        sum_word,
        any(w in COUNT_WORDS for w in words) or "how many" in " ".join(words),
        numeric,
        tuple(outcomes),
        columns,
        frozenset(header[c].lower() for c in linking.mentioned_columns if c < len(header)),
        tuple(
            (link.span, link.text)
            for link in linking.numbers  # written with digits: "both", "once" are read by all_/only
            if any(ch.isdigit() for ch in link.text)
            and link.span not in data
            and all(link.span != span for span, _ in ordinals)
        ),
        tuple(
            dict.fromkeys(
                (header[link.column].lower(), link.text)
                for link in linking.headers
                if link.column is not None and link.column < len(header)
            )
        ),
    )


@lru_cache(maxsize=64)
def _outcome_columns(table: Table) -> dict[str, tuple[str, ...]]:
    """For each outcome ("win", "lose", "draw"), the headers of the columns that record it."""
    found: dict[str, list[str]] = {outcome: [] for outcome in VERB_VALUES}
    every = frozenset().union(*VERB_VALUES.values())
    for c, name in enumerate(table.header):
        firsts = []
        for row in table.rows:
            text = row[c].text.strip().lower()
            if text:
                firsts.append(text.split()[0].strip(".,;:()"))
        if not firsts or sum(1 for w in firsts if w in every) < RESULT_COLUMN_SHARE * len(firsts):
            continue
        for outcome, values in VERB_VALUES.items():
            if any(w in values for w in firsts):
                found[outcome].append(name)
    return {outcome: tuple(names) for outcome, names in found.items()}


GAP_KINDS = ("direction", "compare", "column", "number", "ordinal", "sum", "outcome")
"""The kinds of coverage gap :func:`kinded_gaps` names: a superlative or comparison read in the
wrong direction, a comparison the statement does not make, a named column
left unread (or another one ranked), a number or ordinal of the statement left unused, a sum not
added up, an outcome verb not checked."""


def coverage_gaps(candidate: Candidate, cues: Cues) -> tuple[str, ...]:
    """The meaning-carrying words of the statement that ``candidate``'s program does not cover, one
    sentence each (empty when it covers them all)."""
    return tuple(dict.fromkeys(sentence for _, sentence in kinded_gaps(candidate, cues)))


def kinded_gaps(candidate: Candidate, cues: Cues) -> tuple[tuple[str, str], ...]:
    """The gaps of :func:`coverage_gaps` as ``(kind, sentence)`` pairs, the kind one of
    :data:`GAP_KINDS` (what the verdict model reads: the sentences are for people)."""
    program = candidate.program
    functions = set(program.functions)
    gaps: list[tuple[str, str]] = []

    def add(kind: str, sentence: str) -> None:
        gaps.append((kind, sentence))

    superlative_up, superlative_down = functions & _UP_FUNCTIONS, functions & _DOWN_FUNCTIONS
    if superlative_down and cues.up and not cues.down and not cues.either:
        add(
            "direction",
            f"'{cues.up[0]}' asks for the largest values; the program reads the smallest "
            f"({sorted(superlative_down)[0]})",
        )
    if superlative_up and cues.down and not cues.up and not cues.either:
        add(
            "direction",
            f"'{cues.down[0]}' asks for the smallest values; the program reads the largest "
            f"({sorted(superlative_up)[0]})",
        )
    if cues.numeric_headers:  # the statement names a numeric column: rank and add up that one
        for node in program.walk():
            if isinstance(node, Call) and node.func in _RANKING:
                column = next((a.name for a in node.args if isinstance(a, Header)), "")
                if column and column.lower() not in cues.mentioned:
                    add(
                        "column",
                        f"the program reads '{column}' ({node.func}), which the statement does not "
                        f"name; it names '{cues.numeric_headers[0]}'",
                    )
                    break
    comparing = functions & (_COMPARE_UP | _COMPARE_DOWN | _COMPARE_ANY)
    if comparing and not cues.compares:
        add(
            "compare",
            f"the program compares values ({sorted(comparing)[0]}) but the statement names no comparison",
        )
    elif not cues.negated and not cues.either:
        if functions & _COMPARE_DOWN and cues.up and not cues.down:
            add(
                "direction",
                f"'{cues.up[0]}' asks for larger values; the program keeps smaller ones "
                f"({sorted(functions & _COMPARE_DOWN)[0]})",
            )
        if functions & _COMPARE_UP and cues.down and not cues.up:
            add(
                "direction",
                f"'{cues.down[0]}' asks for smaller values; the program keeps larger ones "
                f"({sorted(functions & _COMPARE_UP)[0]})",
            )
    read = {name.lower() for name in program.headers}
    # "the capital of kenya": a program that reads none of the columns the statement names (one
    # named column left unread is common and benign: "the total population of the countries")
    if cues.columns and not any(column in read for column, _ in cues.columns):
        column, words = cues.columns[0]
        add("column", f"the statement names the column '{column}' ('{words}'); the program does not read it")
    for span, text in cues.numbers:  # a number the statement gives and the program never reads
        if span not in candidate.used:
            add("number", f"the program does not use the number '{text}' of the statement")
    for span, words in cues.ordinals:
        if span not in candidate.used:
            add(
                "ordinal",
                f"the program does not use '{words}' (no nth_ function with that ordinal)"
                if not functions & _NTH
                else f"the program does not use the ordinal of '{words}'",
            )
    if cues.sum_word and not functions & _ADDING:
        if cues.sum_word == "sum" or (cues.numeric_headers and not cues.counts):
            what = f"a sum of '{cues.numeric_headers[0]}'" if cues.numeric_headers else "a sum"
            does = "counts rows" if "count" in functions else "adds nothing up"
            add("sum", f"'{cues.sum_word}' asks for {what}; the program {does}")
    if cues.outcomes:
        literals = {text.lower().split()[0].strip(".,;:()") for text in program.literals if text.split()}
        for outcome, word, span in dict.fromkeys(cues.outcomes):
            if span is not None:  # the word names cells itself ("won" in a column of won/lost)
                if span not in candidate.used:
                    add("outcome", f"the program does not check '{word}', which names values of the table")
                continue
            columns = cues.outcome_columns.get(outcome, ())
            if columns and not literals & VERB_VALUES[outcome]:
                add(
                    "outcome",
                    f"'{word}' names a value of '{columns[0]}' (wins and losses); the program does "
                    "not check it",
                )
    return tuple(dict.fromkeys(gaps))


def unlinked_words(linking: Linking) -> tuple[str, ...]:
    """The statement's content words that name nothing of the table (no cell, header or number
    link, not a stop word or an operator word of the trigger vocabulary), in order."""
    links = linking.cells + linking.headers + linking.numbers
    out = []
    for token in linking.tokens:
        if not token.text[0].isalnum() or any(link.span.contains(token.span) for link in links):
            continue
        if token.stem in STOP_WORDS or token.text.lower() in STOP_WORDS or token.stem in TRIGGER_WORDS:
            continue
        if token.text.lower() in TRIGGER_WORDS:
            continue
        out.append(token.text)
    return tuple(dict.fromkeys(out))


def first_covering(candidates: Sequence[Candidate], indices: Sequence[int], cues: Cues) -> int | None:
    """The first of ``indices`` (positions in ``candidates``) whose program has no coverage gap."""
    for i in indices:
        if not coverage_gaps(candidates[i], cues):
            return i
    return None
