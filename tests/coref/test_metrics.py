"""Each metric on one small example derived by hand (the derivation is in the comments), and the
matching solver against exhaustive search.

The example. Key: K1 = {a, b, c}, K2 = {d, e}, K3 = {f}. Response: R1 = {a, b}, R2 = {c, d, e},
R3 = {g}; f is missed, g is spurious.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabverify.coref import Document, Mention, score
from tabverify.coref.assignment import max_weight_matching
from tabverify.coref.metrics import Counts, b_cubed, blanc, blanc_score, ceafe, ceafm, lea, muc

KEY = [["a", "b", "c"], ["d", "e"], ["f"]]
RESPONSE = [["a", "b"], ["c", "d", "e"], ["g"]]


def rp(counts: Counts) -> tuple[float, float]:
    return counts.recall, counts.precision


def test_muc() -> None:
    # recall: K1 has 3 - |{R1, R2}| = 1 of its 2 links; K2: 2 - |{R2}| = 1 of 1; K3 has no link.
    # precision: R1: 2 - |{K1}| = 1 of 1; R2: 3 - |{K1, K2}| = 1 of 2; R3 has no link.
    assert rp(muc(KEY, RESPONSE)) == pytest.approx((2 / 3, 2 / 3))


def test_b_cubed() -> None:
    # recall per key mention |K ∩ R| / |K|: a 2/3, b 2/3, c 1/3, d 2/2, e 2/2, f 0 -> 11/3 of 6.
    # precision per response mention |R ∩ K| / |R|: a 2/2, b 2/2, c 1/3, d 2/3, e 2/3, g 0 -> 11/3 of 6.
    assert rp(b_cubed(KEY, RESPONSE)) == pytest.approx((11 / 18, 11 / 18))


def test_ceaf_mention_based() -> None:
    # phi3 = |K ∩ R|: K1-R1 2, K1-R2 1, K2-R2 2; the best one-to-one choice is K1-R1 + K2-R2 = 4,
    # divided by 6 key and 6 response mentions.
    assert rp(ceafm(KEY, RESPONSE)) == pytest.approx((4 / 6, 4 / 6))


def test_ceaf_entity_based() -> None:
    # phi4 = 2|K ∩ R| / (|K| + |R|): K1-R1 4/5, K1-R2 2/6, K2-R2 4/5; best K1-R1 + K2-R2 = 8/5,
    # divided by 3 key and 3 response entities.
    assert rp(ceafe(KEY, RESPONSE)) == pytest.approx((8 / 15, 8 / 15))


def test_lea() -> None:
    # recall, importance |K| x resolved links / links: K1 has 3 links, only a-b is in one response
    # entity: 3 x 1/3 = 1; K2: d-e resolved: 2 x 1/1 = 2; K3 = {f} is a self-link, f is missed: 0.
    # 3 of 6. Precision: R1: a-b in K1: 2 x 1 = 2; R2: of c-d, c-e, d-e only d-e: 3 x 1/3 = 1;
    # R3 = {g}: g is not in the key: 0. 3 of 6.
    assert rp(lea(KEY, RESPONSE)) == pytest.approx((3 / 6, 3 / 6))
    # a singleton found alone in the response resolves its self-link
    assert rp(lea([["f"]], [["f"]])) == (1.0, 1.0)
    assert rp(lea([["f"]], [["f", "x"]])) == (0.0, 0.0)


def test_blanc_links() -> None:
    # coreference links: key a-b a-c b-c d-e (4), response a-b c-d c-e d-e (4), in both a-b d-e (2).
    # non-coreference links: 6 key mentions give 15 pairs - 4 = 11; 6 response mentions 15 - 4 = 11;
    # among a..e (in both), key's K1 x K2 = a-d a-e b-d b-e c-d c-e and response's R1 x R2 = a-c
    # a-d a-e b-c b-d b-e share a-d a-e b-d b-e (4).
    coreference, non = blanc(KEY, RESPONSE)
    assert (coreference.recall_num, coreference.recall_den, coreference.precision_den) == (2, 4, 4)
    assert (non.recall_num, non.recall_den, non.precision_den) == (4, 11, 11)
    both = blanc_score(coreference, non, "conll")
    f_c, f_n = 1 / 2, 4 / 11  # each type has R = P, so F = R
    assert (both.recall, both.precision, both.f1) == pytest.approx(
        ((1 / 2 + 4 / 11) / 2,) * 2 + ((f_c + f_n) / 2,)
    )


def test_blanc_variants_differ_when_the_key_has_no_coreference_link() -> None:
    # key {a} {b} {c} (singletons), response {a, b} {c}. Coreference links: key 0, response 1
    # (a-b), in both 0. Non-coreference: key a-b a-c b-c (3), response a-c b-c (2), in both 2.
    coreference, non = blanc([["a"], ["b"], ["c"]], [["a", "b"], ["c"]])
    # conll (reference scorer): the key has no coreference link, so that type is left out:
    # R = 2/3, P = 2/2, F = 0.8
    conll = blanc_score(coreference, non, "conll")
    assert (conll.recall, conll.precision, conll.f1) == pytest.approx((2 / 3, 1.0, 0.8))
    # corefud: a type is left out only when neither side has it; the response has one coreference
    # link, so its R = P = F = 0 is averaged in: (0 + 2/3)/2, (0 + 1)/2, (0 + 0.8)/2
    corefud = blanc_score(coreference, non, "corefud")
    assert (corefud.recall, corefud.precision, corefud.f1) == pytest.approx((1 / 3, 1 / 2, 0.4))


def test_conll_f1_through_score() -> None:
    # the same example as character mentions: a..g are the letters of "abcdefg"
    at = {c: Mention.of(i, i + 1) for i, c in enumerate("abcdefg")}
    key = Document("d", "abcdefg", tuple(tuple(at[c] for c in e) for e in KEY))
    response = Document("d", "abcdefg", tuple(tuple(at[c] for c in e) for e in RESPONSE))
    result = score([key], [response])
    # CoNLL-F1 = mean F1 of MUC (2/3), B3 (11/18) and CEAF-e (8/15)
    assert result.conll_f1 == pytest.approx((2 / 3 + 11 / 18 + 8 / 15) / 3)
    assert result.mentions["exact"].recall == pytest.approx(5 / 6)  # f missed; g spurious
    assert result.metrics["lea"].f1 == pytest.approx(0.5)


def test_counts_micro_average_over_documents() -> None:
    # numerators and denominators add up: (1/2 and 3/4) -> 4/6, not the mean of the ratios
    total = Counts(1, 2, 1, 2) + Counts(3, 4, 3, 4)
    assert (total.recall, total.precision) == (4 / 6, 4 / 6)
    assert Counts().f1 == 0.0  # nothing to find and nothing found: 0, never a division by zero


def best_by_exhaustive_search(weights: dict[tuple[int, int], float], rows: int, columns: int) -> float:
    best = 0.0
    for size in range(min(rows, columns) + 1):
        for chosen_rows in itertools.combinations(range(rows), size):
            for chosen_columns in itertools.permutations(range(columns), size):
                total = sum(weights.get(pair, 0.0) for pair in zip(chosen_rows, chosen_columns, strict=True))
                best = max(best, total)
    return best


cell = st.one_of(st.just(0.0), st.integers(1, 4).map(float), st.floats(0.01, 1.0))


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 5).flatmap(lambda r: st.integers(0, 5).flatmap(
    lambda c: st.tuples(st.just(r), st.just(c), st.lists(st.lists(cell, min_size=c, max_size=c), min_size=r, max_size=r))
)))  # fmt: skip
def test_matching_is_optimal_against_exhaustive_search(case: tuple[int, int, list[list[float]]]) -> None:
    rows, columns, matrix = case
    weights = {(i, j): w for i, row in enumerate(matrix) for j, w in enumerate(row) if w > 0}
    matching = max_weight_matching(weights)
    chosen_rows = [i for i, _ in matching.pairs]
    chosen_columns = [j for _, j in matching.pairs]
    assert len(set(chosen_rows)) == len(chosen_rows) and len(set(chosen_columns)) == len(chosen_columns)
    assert all(pair in weights for pair in matching.pairs)  # never a pair without a weight
    assert matching.exact
    total = sum(weights[pair] for pair in matching.pairs)
    assert total == pytest.approx(best_by_exhaustive_search(weights, rows, columns), abs=1e-9)


def test_matching_prefers_earlier_rows_and_lower_columns_on_ties() -> None:
    # two rows want the same column with the same weight: the earlier row keeps it
    assert max_weight_matching({(0, 0): 1.0, (1, 0): 1.0}).pairs == [(0, 0)]
    # one row, two columns of the same weight: the lower column
    assert max_weight_matching({(0, 1): 1.0, (0, 0): 1.0}).pairs == [(0, 0)]


def test_matching_spends_a_bounded_budget_then_says_it_is_not_exact() -> None:
    weights = {(i, j): 1.0 + (i == j) for i in range(30) for j in range(30)}
    assert max_weight_matching(weights).exact
    cut = max_weight_matching(weights, budget=50)
    assert not cut.exact and len(cut.pairs) == 30  # the rest matched greedily, still one-to-one
    assert len({j for _, j in cut.pairs}) == 30
