"""Execute every human-written program of the release on its table; write the failures by cause.
With ``--refuted``, also measure how often programs of the same shapes return True on statements
that are false (the refuted false-positive check, see :func:`refuted_check`).

python scripts/bench_bootstrap.py --data ../shared/datasets/tabfact [--markdown docs/bootstrap-failures.md]
    [--refuted] [--judgements scripts/bootstrap_judgements.json]

Each failure is shown with the judgement a reader wrote for it (``--judgements``, by table and
statement): "annotation: ..." (the program does not say what the statement says, or says something
false on the table) or "executor: ..." (a reading the executor lacks); the tally of both bounds what
a better executor could reach honestly.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
from pathlib import Path

from tabverify.bench.tabfact import TableCache, _bootstrap, bootstrap_execution
from tabverify.errors import TabverifyError
from tabverify.program import Call, execute, parse_program
from tabverify.program.tree import Header, Literal, Node
from tabverify.table import Table

JUDGEMENTS = Path(__file__).with_name("bootstrap_judgements.json")
"""The judgements of the failing programs, read by default."""

COUNTERFACTUALS_PER_LITERAL = 3
"""Other cell values tried in place of each compared literal (the first ones in table order: a
fixed choice, made before looking at any result, so that the set is the same for every executor)."""

_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
_VALUE_OF_CALL = {"hop", "num_hop", "str_hop", "max", "min", "nth_max", "nth_min", "most_freq"}
_COMPARE = {"eq", "not_eq", "round_eq", "str_eq", "not_str_eq", "greater", "less"}


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w%.]+", " ", text.lower()).split())


def _contains(a: str, b: str) -> bool:
    return bool(a) and bool(b) and (f" {b} " in f" {a} " or f" {a} " in f" {b} ")


def _literal_columns(program: Call) -> list[tuple[Literal, Header | None]]:
    """Each compared literal of the program with the column it is compared against (None: a
    computed number such as a count or a sum)."""
    out: list[tuple[Literal, Header | None]] = []
    for node in program.walk():
        if not isinstance(node, Call):
            continue
        args = node.args
        if len(args) == 3 and isinstance(args[1], Header) and isinstance(args[2], Literal):
            out.append((args[2], args[1]))
        elif node.func in _COMPARE:
            for lit, other in ((args[1], args[0]), (args[0], args[1])):
                if isinstance(lit, Literal) and isinstance(other, Call):
                    header = other.args[1] if other.func in _VALUE_OF_CALL else None
                    out.append((lit, header if isinstance(header, Header) else None))
    return out


def _replace(node: Node, old: Literal, new: str) -> Node:
    if node is old:
        return Literal(new)
    if isinstance(node, Call):
        return Call(node.func, tuple(_replace(a, old, new) for a in node.args))
    return node


def _changed_numbers(text: str) -> list[str]:
    """The literal with its first number changed: plus one, and roughly doubled."""
    match = _NUMBER_RE.search(text)
    if match is None:
        return []
    n = float(match.group(0))
    decimals = len(match.group(0).partition(".")[2])
    out = []
    for m in (n + 1, n * 2 + 1):
        written = f"{m:.{decimals}f}"
        out.append(text[: match.start()] + written + text[match.end() :])
    return out


def counterfactuals(program: Call, table: Table) -> list[Call]:
    """Programs of the same shape that state something else: each compared literal replaced by
    other values of its column (cells that neither equal nor contain it, nor are contained in it,
    as words), or its number changed. Built from the program and the table alone."""
    out: list[Call] = []
    for literal, header in _literal_columns(program):
        wanted = _norm(literal.text)
        values: list[str] = []
        column = table.column_index(header.name) if header is not None else None
        if column is not None:
            seen: set[str] = set()
            for row in table.rows:
                text = row[column].text
                key = _norm(text)
                if not key or key in seen or key == wanted or _contains(key, wanted):
                    continue
                seen.add(key)
                values.append(text)
                if len(values) == COUNTERFACTUALS_PER_LITERAL:
                    break
        else:
            values = _changed_numbers(literal.text)
        for value in values:
            new = _replace(program, literal, value)
            assert isinstance(new, Call)
            out.append(new)
    return out


def _edit(entailed: list[str], refuted: list[str]) -> tuple[str, str] | None:
    """The one span replaced between two statements (at most 3 words on each side), or None."""
    ops = [op for op in difflib.SequenceMatcher(a=entailed, b=refuted).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    if i2 - i1 > 3 or j2 - j1 > 3:
        return None
    return " ".join(entailed[i1:i2]), " ".join(refuted[j1:j2])


def _words(text: str) -> list[str]:
    return [_NUMBER_WORDS.get(w, w) for w in _norm(text).split()]


def refuted_programs(data_dir: str | Path) -> list[tuple[str, str, Call]]:
    """(table, refuted statement, program) triples: the edits by which TabFact's annotators turned
    an entailed train statement of a table into a refuted one (one replaced span of at most 3
    words: "jive exactly 3 time" -> "jive exactly 5 time"), applied to the literals of the human
    programs on the same table that hold the replaced words. The release's statements are not the
    human programs' statements, so this reuses the annotators' refuting edits, not their sentences."""
    examples = json.loads((Path(data_dir) / "tokenized_data" / "train_examples.json").read_text())
    edits: dict[str, list[tuple[str, str, str]]] = {}
    for table_id, entry in examples.items():
        sentences, labels = entry[0], entry[1]
        entailed = [_words(s) for s, y in zip(sentences, labels, strict=False) if y == 1]
        for sentence, label in zip(sentences, labels, strict=False):
            if label != 0:
                continue
            words = _words(sentence)
            for twin in entailed:
                edit = _edit(twin, words)
                if edit is not None:
                    edits.setdefault(table_id, []).append((edit[0], edit[1], sentence))
                    break
    out = []
    seen: set[tuple[str, str]] = set()
    for table_id, _statement, text in _bootstrap(data_dir):
        try:
            program = parse_program(text)
        except TabverifyError:
            continue
        for old, new, sentence in edits.get(table_id, []):
            for node in program.walk():
                if not isinstance(node, Literal):
                    continue
                lit = " ".join(_words(node.text))
                if lit == old or _contains(lit, old):
                    changed = f" {lit} ".replace(f" {old} ", f" {new} ").strip()
                    new_program = _replace(program, node, changed)
                    assert isinstance(new_program, Call)
                    key = (table_id, str(new_program))
                    if key not in seen and changed != lit:
                        seen.add(key)
                        out.append((table_id, sentence, new_program))
    return out


def _true(program: Call, table: Table) -> bool:
    try:
        return execute(program, table).value is True
    except TabverifyError:
        return False


def refuted_check(data_dir: str | Path) -> dict[str, object]:
    """How often programs that state something false return True.

    ``counterfactual``: for every human program, programs of the same shape with a compared
    literal replaced (:func:`counterfactuals`); ``refuted_statements``: the refuted TabFact train
    statements of the same tables written as programs of the human program's shape
    (:func:`refuted_programs`). Some of these may be true by chance (another value selecting as
    many rows), so the rates are ceilings to compare between executors, not error rates.
    """
    cache = TableCache(data_dir)
    total = true = 0
    dump: list[str] = []
    for table_id, _statement, text in _bootstrap(data_dir):
        try:
            program = parse_program(text)
        except TabverifyError:
            continue
        table = cache.get(table_id)
        for other in counterfactuals(program, table):
            total += 1
            if _true(other, table):
                true += 1
                dump.append(f"{table_id}\t{other}")
    refuted = refuted_programs(data_dir)
    refuted_true = 0
    for t, _, p in refuted:
        if _true(p, cache.get(t)):
            refuted_true += 1
            dump.append(f"{t}\t{p}\trefuted")
    return {
        "counterfactual": {"n": total, "true": true, "rate": round(true / max(total, 1), 4)},
        "refuted_statements": {
            "n": len(refuted),
            "true": refuted_true,
            "rate": round(refuted_true / max(len(refuted), 1), 4),
        },
        "true_programs": dump,
    }


def read_judgements(path: Path) -> dict[tuple[str, str], str]:
    """The judgement of each judged program by (table, statement): a JSON list of objects with
    ``table``, ``statement`` and ``judgement`` ("annotation: <reason>" or "executor: <reason>")."""
    out: dict[tuple[str, str], str] = {}
    for entry in json.loads(path.read_text(encoding="utf-8")):
        judgement = entry["judgement"]
        if judgement.partition(":")[0] not in ("annotation", "executor"):
            raise SystemExit(
                f"{path}: a judgement starts with 'annotation:' or 'executor:', not {judgement!r}"
            )
        out[(entry["table"], entry["statement"])] = judgement
    return out


def judgement_tally(
    failures: dict[str, list[dict[str, str]]], judgements: dict[tuple[str, str], str]
) -> dict[str, int]:
    """How many of the failures are judged annotation errors, executor gaps, or not judged."""
    tally = {"annotation": 0, "executor": 0, "unjudged": 0}
    for entries in failures.values():
        for e in entries:
            judgement = judgements.get((e["table"], e["statement"]))
            tally[judgement.partition(":")[0] if judgement else "unjudged"] += 1
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TabFact release folder")
    parser.add_argument("--markdown", type=Path, help="also write the failure list as Markdown here")
    parser.add_argument("--refuted", action="store_true", help="also run the refuted false-positive check")
    parser.add_argument(
        "--refuted-list", type=Path, help="with --refuted: write the false programs that returned True here"
    )
    parser.add_argument(
        "--judgements", type=Path, default=JUDGEMENTS, help="the judgements of the failures (JSON list)"
    )
    args = parser.parse_args()
    judgements = read_judgements(args.judgements)
    report = bootstrap_execution(args.data)
    failures: dict[str, list[dict[str, str]]] = report["failures"]  # type: ignore[assignment]
    tally = judgement_tally(failures, judgements)
    n, true = int(report["n"]), int(report["true"])  # type: ignore[call-overload]
    summary: dict[str, object] = {
        "n": n,
        "true": true,
        "rate": report["rate"],
        "failures_by_cause": {k: len(v) for k, v in failures.items()},
        "failures_judged": tally,
        "ceiling_if_every_executor_gap_were_fixed": round((true + tally["executor"]) / n, 4),
    }
    if args.refuted:
        check = refuted_check(args.data)
        listed = check.pop("true_programs")
        summary["refuted_false_positives"] = check
        if args.refuted_list:
            args.refuted_list.write_text("\n".join(sorted(listed)) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=2))
    if args.markdown:
        lines = [
            "# Human programs that do not execute to True",
            "",
            f"Generated by `python scripts/bench_bootstrap.py --data DIR --markdown {args.markdown}`.",
            "",
            f"{true} of {n} programs return True ({true / n:.1%}).",
            "",
            f"Judged by reading each table ({args.judgements.name}): {tally['annotation']} failures are "
            f"annotation errors, {tally['executor']} executor gaps, {tally['unjudged']} not judged; "
            f"with every executor gap fixed, {true + tally['executor']} of {n} "
            f"({(true + tally['executor']) / n:.1%}) would return True.",
            "",
        ]
        for cause, entries in failures.items():
            lines += [
                f"## {cause} ({len(entries)})",
                "",
                "| table | statement | program | detail | judgement |",
                "|---|---|---|---|---|",
            ]
            for e in entries:
                judgement = judgements.get((e["table"], e["statement"]), "not judged")
                cells = [e["table"], e["statement"], f"`{e['program']}`", e["detail"], judgement]
                lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
            lines.append("")
        args.markdown.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
