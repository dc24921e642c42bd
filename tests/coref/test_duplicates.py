"""A mention listed in two entities (or twice in one): each format is scored as its reference scorer
scores it - CoNLL-2012 as the Perl scorer v8.01, CoNLL-U as the CorefUD scorer v1.2, JSON keeping the
first entity - and every such mention is named in the result's warnings."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabverify.coref import Document, Mention, read_documents, score
from tests.coref import reference_scorers

# The smallest case. Key: A in entities 1 and 2, B in 1, C and D in 3, E in 4;
# response: the same, but D in entity 5.
KEY_ROWS = [("A", "(1)(2)"), ("B", "(1)"), ("C", "(3)"), ("D", "(3)"), ("E", "(4)")]
RESPONSE_ROWS = [("A", "(1)(2)"), ("B", "(1)"), ("C", "(3)"), ("D", "(5)"), ("E", "(4)")]


def conll(rows: list[tuple[str, str]]) -> str:
    lines = "".join(f"d 0 {i} {word} {cell}\n" for i, (word, cell) in enumerate(rows))
    return f"#begin document (d);\n{lines}#end document\n"


def conllu(rows: list[tuple[str, str]]) -> str:
    lines = "".join(
        f"{i}\t{word}\t_\t_\t_\t_\t0\t_\t_\tEntity={cell.replace('(', '(e').replace(')', '-x-1-)')}\n"
        for i, (word, cell) in enumerate(rows, start=1)
    )
    return f"# newdoc id = d\n# global.Entity = eid-etype-head-other\n# sent_id = 1\n{lines}\n"


def scores(tmp_path: Path, writer: object, suffix: str, **options: object) -> dict[str, tuple[float, ...]]:
    (tmp_path / f"k.{suffix}").write_text(writer(KEY_ROWS), encoding="utf-8")  # type: ignore[operator]
    (tmp_path / f"r.{suffix}").write_text(writer(RESPONSE_ROWS), encoding="utf-8")  # type: ignore[operator]
    result = score(
        read_documents(tmp_path / f"k.{suffix}"), read_documents(tmp_path / f"r.{suffix}"), **options
    )  # type: ignore[arg-type]
    return {name: (m.recall, m.precision) for name, m in result.metrics.items()}


def test_conll_scores_a_shared_mention_as_the_perl_scorer(tmp_path: Path) -> None:
    got = scores(tmp_path, conll, "conll")
    # Perl: A gets one id; the key chains are [A, B], [A], [C, D], [E] (A counted in both, looked up
    # in its last chain [A]); the response keeps A once, in its first entity: [A, B], [C], [D], [E].
    # MUC: correct links, counted on the response side: in [A, B] A -> key [A], B -> key [A, B]: 0.
    # key links (2-1) + (2-1) = 2, response links 1: R 0/2, P 0/1.
    assert got["muc"] == (0.0, 0.0)
    # B3 loops over response mentions m with its key chain K (last listing m), c = |R ∩ K|:
    # A: R=[A,B], K=[A] -> c=1: P += 1/2, R += 1/1;  B: K=[A,B] -> c=2: P += 2/2, R += 2/2;
    # C: R=[C], K=[C,D] -> c=1: P += 1, R += 1/2;  D: likewise;  E: P += 1, R += 1.
    # R = 4 / 6 key mentions (A twice), P = 4.5 / 5 response mentions.
    assert got["b_cubed"] == pytest.approx((4 / 6, 4.5 / 5))
    # CEAF-m, phi3 = |K ∩ R|: [A,B]-[A,B] 2, [C,D]-[C] 1, [E]-[E] 1 ([A] is left without a partner):
    # 4; R 4/6, P 4/5. CEAF-e, phi4 = 2|K∩R|/(|K|+|R|): 1 + 2/3 + 1 = 8/3 over 4 and 4 entities.
    assert got["ceafm"] == pytest.approx((4 / 6, 4 / 5))
    assert got["ceafe"] == pytest.approx((8 / 3 / 4, 8 / 3 / 4))
    # BLANC over sets of id pairs. Key coreference links {A-B, C-D}, response {A-B}: R 1/2, P 1/1.
    # Key non-coreference links: [A,B]x[A] gives A-A and A-B, then A-C A-D B-C B-D A-E B-E C-E D-E:
    # 10; response: [A,B]x[C], x[D], x[E], [C]x[D], [C]x[E], [D]x[E]: 9; shared: all but A-A, A-B
    # (key only) and C-D (response only): 8. R = (1/2 + 8/10)/2, P = (1 + 8/9)/2.
    assert got["blanc"] == pytest.approx(((1 / 2 + 8 / 10) / 2, (1 + 8 / 9) / 2))
    # LEA (the Perl scorer has none; its formula on the Perl mentions): recall: [A,B] is resolved
    # (A and B share response entity [A,B]) -> 2 x 1/1; [A] is a singleton whose response entity
    # [A,B] is not: 0; [C,D] 0; [E] 1: 3/6. Precision: [A,B] -> A in key [A], B in [A,B]: 0; [C] ->
    # key [C,D] is no singleton: 0; [D] 0; [E] 1: 1/5.
    assert got["lea"] == pytest.approx((3 / 6, 1 / 5))


def test_conllu_scores_a_shared_mention_as_the_corefud_scorer(tmp_path: Path) -> None:
    got = scores(tmp_path, conllu, "conllu", blanc_variant="corefud")
    # CorefUD keeps A in both entities on both sides; A is looked up in e2 (udapi orders e1 before
    # e2: same first mention, then by id). Key e1=[A,B] e2=[A] e3=[C,D] e4=[E]; response e1=[A,B]
    # e2=[A] e3=[C] e5=[D] e4=[E].
    # MUC: key [A,B] -> response e2, e1: 2 parts, 0 links found; [C,D] likewise: R 0/2; P 0/1.
    assert got["muc"] == (0.0, 0.0)
    # B3 per entity: recall [A,B] (1+1)/2 + [A] 1 + [C,D] (1+1)/2 + [E] 1 = 4 of 6; precision:
    # [A,B] (1+1)/2 + [A] 1 + [C] 1 + [D] 1 + [E] 1 = 5 of 6 (A twice in the response too).
    assert got["b_cubed"] == pytest.approx((4 / 6, 5 / 6))
    # CEAF-m: [A,B]-[A,B] 2 + [A]-[A] 1 + [C,D]-[C] 1 + [E]-[E] 1 = 5, of 6 and 6 mentions.
    # CEAF-e: 1 + 1 + 2/3 + 1 = 11/3, of 4 key and 5 response entities.
    assert got["ceafm"] == pytest.approx((5 / 6, 5 / 6))
    assert got["ceafe"] == pytest.approx((11 / 3 / 4, 11 / 3 / 5))
    # LEA recall: [A,B] 0 (A -> e2, B -> e1), [A] 1 (its response entity e2 is a singleton),
    # [C,D] 0, [E] 1: 2/6; precision likewise: [A,B] 0, [A] 1, [C] 0, [D] 0, [E] 1: 2/6.
    assert got["lea"] == pytest.approx((2 / 6, 2 / 6))
    # BLANC (CorefUD): coreference links found 0 of 2 key, 1 response. Non-coreference, over key
    # copies A1 B A2 C D E in different key entities (15 - 2 = 13) and found in different response
    # entities: all but A1-A2 (both in e2): 12; response: 15 - 1 = 14. R = (0 + 12/13)/2 ...
    assert got["blanc"] == pytest.approx(((0 + 12 / 13) / 2, (0 + 12 / 14) / 2))


def test_json_keeps_the_first_entity_on_both_sides_and_warns(tmp_path: Path) -> None:
    text = "A B C"
    key = Document("d", text, ((Mention.of(0, 1), Mention.of(2, 3)), (Mention.of(0, 1), Mention.of(4, 5))))
    result = score([key], [key])
    # each side keeps A in the first entity only: [A, B], [C] on both sides, so everything is 1
    assert all(m.f1 == 1.0 for m in result.metrics.values())
    assert [w.split(":")[0] for w in result.warnings] == ["document 'd', key", "document 'd', response"]
    assert "only the copy in entity 1 is kept (first listed)" in result.warnings[0]


def test_warnings_are_bounded_per_document() -> None:
    text = "x" * 300
    mentions = [Mention.of(i, i + 1) for i in range(150)]
    doc = Document("d", text, (tuple(mentions), tuple(mentions)))
    warnings = score([doc], [doc]).warnings
    assert len(warnings) == 2 * 101 and warnings[100].endswith(
        "50 more mention(s) are listed more than once, scored the same way"
    )


# Random tiny documents with mentions listed twice, scored by tabverify and by the literal
# transcriptions of the reference scorers (tests/coref/reference_scorers.py).
SPANS = [Mention.of(i, i + 1) for i in range(6)]
entity = st.lists(st.sampled_from(range(6)), min_size=1, max_size=3)
entities = st.lists(entity, min_size=0, max_size=4)


def document(ids: list[list[int]], convention: str) -> Document:
    return Document("d", "x" * 6, tuple(tuple(SPANS[i] for i in e) for e in ids), convention=convention)


def as_lists(ids: list[list[int]]) -> list[list[Mention]]:
    return [[SPANS[i] for i in e] for e in ids]


@settings(max_examples=300, deadline=None)
@given(key=entities, response=entities)
def test_conll_convention_equals_the_perl_scorer(key: list[list[int]], response: list[list[int]]) -> None:
    result = score([document(key, "conll")], [document(response, "conll")])
    expected = reference_scorers.perl(as_lists(key), as_lists(response))
    for name, (recall, precision, f1) in expected.items():
        got = result.metrics[name]
        assert (got.recall, got.precision, got.f1) == pytest.approx((recall, precision, f1), abs=1e-9), name


@settings(max_examples=300, deadline=None)
@given(key=entities, response=entities)
def test_corefud_convention_equals_the_corefud_scorer(
    key: list[list[int]], response: list[list[int]]
) -> None:
    result = score([document(key, "corefud")], [document(response, "corefud")], blanc_variant="corefud")
    expected = reference_scorers.corefud(as_lists(key), as_lists(response))
    for name, (recall, precision, f1) in expected.items():
        got = result.metrics[name]
        assert (got.recall, got.precision, got.f1) == pytest.approx((recall, precision, f1), abs=1e-9), name


def test_conllu_reader_orders_entities_as_udapi(tmp_path: Path) -> None:
    # e10 and e9 start at the same word with the same mention: udapi compares their ids as strings,
    # so "e10" < "e9" and e9 is the last one, where the shared mention is looked up
    rows = [("A", "(10)(9)"), ("B", "(9)"), ("C", "(1)")]
    (tmp_path / "a.conllu").write_text(conllu(rows), encoding="utf-8")
    doc = read_documents(tmp_path / "a.conllu")[0]
    assert doc.entity_ids == ("e10", "e9", "e1") and doc.convention == "corefud"
