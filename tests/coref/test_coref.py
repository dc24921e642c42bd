"""Coreference formats, alignment, metrics and their invariants, on documents made here."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tabverify.coref import (
    CorefFormatError,
    Document,
    Mention,
    align_mentions,
    read_documents,
    score,
    write_json,
)
from tabverify.coref.conll import read_conll
from tabverify.coref.conllu import read_conllu, write_conllu
from tabverify.errors import TabverifyError

CONLL = """#begin document (doc1); part 000
doc1 0 0 John (0)(1
doc1 0 1 Smith 1)
doc1 0 2 saw -
doc1 0 3 him (1)|(2)

doc1 0 0 He (1
doc1 0 1 left 1)
#end document
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_conll_brackets_concatenated_with_and_without_bars(tmp_path: Path) -> None:
    doc = read_conll(write(tmp_path, "a.conll", CONLL))[0]
    assert doc.doc_id == "(doc1); part 000"
    spans = [sorted(doc.mention_text(m) for m in e) for e in doc.entities]
    # entities in the reference scorer's order; "him" is listed in entities 1 and 2, and stays so:
    # the scorer, not the reader, applies the format's rule for mentions listed twice
    assert spans == [["John"], ["He left", "John Smith", "him"], ["him"]]
    assert doc.entity_ids == ("0", "1", "2") and doc.convention == "conll"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("doc 0 0 a 1)\n", "never opened"),
        ("doc 0 0 a (1\n", "unclosed"),
        ("doc 0 0 a (x\n", "cannot read"),
    ],
)
def test_conll_bad_brackets(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, "bad.conll", f"#begin document (d);\n{body}#end document\n")
    with pytest.raises(CorefFormatError, match=message):
        read_conll(path)


def test_conll_missing_end(tmp_path: Path) -> None:
    with pytest.raises(CorefFormatError, match="no '#end document'"):
        read_conll(write(tmp_path, "x.conll", "#begin document (d);\nd 0 0 a (1)\n"))


def test_duplicate_mentions_are_listed_in_the_result_warnings(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.conll", "#begin document (d);\nd 0 0 a (1)(2)\nd 0 1 b (1)\n#end document\n")
    doc = read_conll(path)[0]
    assert [len(e) for e in doc.entities] == [2, 1] and len(doc.mentions) == 2
    result = score([doc], [doc])
    assert len(result.warnings) == 2  # one for the key, one for the response
    assert all("'a' [0,1) is listed in entities 1, 2" in w for w in result.warnings)
    assert result.to_dict()["warnings"] == list(result.warnings)


HEBREW = "ראיתי את ביתו של דוד. הוא גדול."  # "I saw his house (of David). It is big."


def iahlt_record() -> dict[str, object]:
    text = "ראיתי את בית\u200bו ו\u200bהוא גדול."
    house, suffix, he = (9, 12), (13, 14), (17, 20)  # בית / ו (his) / הוא after the clitic ו
    return {"doc_key": "k1", "text": text, "metadata": {"doc_id": "k1"},
            "clusters": [{"metadata": {}, "mentions": [[house[0], house[1], {}], [he[0], he[1], {}]]},
                         {"metadata": {}, "mentions": [[suffix[0], suffix[1], {}], [15, 16, {}]]}]}  # fmt: skip


def test_iahlt_layout_and_subword_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, "val.jsonl", json.dumps(iahlt_record(), ensure_ascii=False) + "\n")
    doc = read_documents(path)[0]
    assert doc.doc_id == "k1"
    kinds = {(m.start, m.end): (m.kind, m.subkind) for m in doc.mentions}
    assert kinds == {
        (9, 12): ("subword", None),  # the noun inside בית​ו
        (13, 14): ("subword", "embedded_pronoun"),  # its possessive suffix
        (15, 16): ("subword", "clitic"),  # the conjunction ו- of ו​הוא
        (17, 20): ("subword", "embedded_pronoun"),
    }


def test_mention_views_count_each_side(tmp_path: Path) -> None:
    key = read_documents(write(tmp_path, "val.jsonl", json.dumps(iahlt_record(), ensure_ascii=False) + "\n"))
    text = key[0].text
    # the response finds the clitic and the free pronoun, and nothing else
    response = [Document("k1", text, ((Mention.of(15, 16, "subword", "clitic"), Mention.of(17, 20)),))]
    result = score(key, response)
    assert result.mention_counts["clitic"] == (1, 1) and result.mentions["clitic"].f1 == 1.0
    assert result.mention_counts["subword"] == (4, 1) and result.mention_counts["exact"] == (4, 2)
    assert result.mention_view("clitic") == {
        "recall": 1.0,
        "precision": 1.0,
        "f1": 1.0,
        "key": 1,
        "response": 1,
    }
    assert "key" not in result.mention_view("overlap_ratio")


def test_json_errors(tmp_path: Path) -> None:
    bad_span = {"doc_id": "d", "text": "abc", "clusters": [[[1, 9]]]}
    with pytest.raises(CorefFormatError, match="outside the text"):
        read_documents(write(tmp_path, "a.json", json.dumps(bad_span)))
    with pytest.raises(CorefFormatError, match="needs 'text' and 'clusters'"):
        read_documents(write(tmp_path, "b.json", json.dumps({"text": "x"})))
    with pytest.raises(CorefFormatError, match="not \\[start, end\\]"):
        read_documents(write(tmp_path, "c.json", json.dumps({"text": "abc", "clusters": [[["a", 2]]]})))


def test_json_round_trip(tmp_path: Path) -> None:
    doc = Document("d1", HEBREW, ((Mention.of(9, 13), Mention.of(21, 24)), (Mention.of(12, 13, "subword"),)))
    write_json([doc], tmp_path / "out.jsonl")
    again = read_documents(tmp_path / "out.jsonl")[0]
    assert again.entities == doc.entities and again.text == doc.text


CONLLU = """# newdoc id = d1
# global.Entity = eid-etype-head-other
# sent_id = 1
# text = a b c d e
1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_
1\ta\t_\t_\t_\t_\t0\t_\t_\tEntity=(e1[1/2]-person-1-)
2\tb\t_\t_\t_\t_\t0\t_\t_\t_
3\tc\t_\t_\t_\t_\t0\t_\t_\tEntity=(e1[2/2]-person-1-)
3.1\t_\t_\t_\t_\t_\t_\t_\t3:nsubj\tEntity=(e2-person-1-)
4\td\t_\t_\t_\t_\t0\t_\t_\tEntity=(e2-person-2-
5\te\t_\t_\t_\t_\t0\t_\t_\tEntity=e2)

"""


def test_conllu_discontinuous_mentions_multiword_tokens_and_zeros(tmp_path: Path) -> None:
    doc = read_conllu(write(tmp_path, "a.conllu", CONLLU))[0]
    e1, e2 = doc.entities
    assert [doc.mention_text(m) for m in e1] == ["a … c"]
    zero, phrase = sorted(e2, key=lambda m: m.start)
    assert zero.zero and zero.deps == frozenset({("0:3", "nsubj")})
    assert doc.mention_text(phrase) == "d e" and phrase.head is not None and phrase.head.of(doc.text) == "e"
    write_conllu([doc], tmp_path / "b.conllu")
    again = read_conllu(tmp_path / "b.conllu")[0]
    assert [[again.mention_text(m) for m in e] for e in again.entities][0] == ["a … c"]


def test_overlap_protocol_aligns_suffix_with_whole_word() -> None:
    gold = [Mention.of(12, 13, "subword")]  # the suffix ו of ביתו
    system = [Mention.of(9, 13)]  # the whole word
    assert align_mentions(gold, system, "overlap", 0.8) == {system[0]: gold[0]}
    assert align_mentions(gold, system, "exact") == {}


def test_overlap_prefers_exact_then_iou_deterministically() -> None:
    gold = [Mention.of(0, 10), Mention.of(0, 4)]
    system = [Mention.of(0, 4), Mention.of(0, 9)]
    aligned = align_mentions(gold, system, "overlap", 0.8)
    assert aligned == {Mention.of(0, 4): Mention.of(0, 4), Mention.of(0, 9): Mention.of(0, 10)}
    assert align_mentions(gold, system, "overlap", 0.8) == aligned  # same input, same output


def random_entities(mentions: list[Mention], rng: random.Random, join: float) -> list[list[Mention]]:
    """Mentions grouped at random: each joins an existing entity with probability ``join``."""
    entities: list[list[Mention]] = []
    for m in mentions:
        if entities and rng.random() < join:
            rng.choice(entities).append(m)
        else:
            entities.append([m])
    return entities


def random_documents(seed: int, n_docs: int = 3) -> list[Document]:
    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        starts = sorted(rng.sample(range(0, 400, 5), 40))
        mentions = [Mention.of(s, s + rng.randint(1, 4)) for s in starts]  # never nested, never touching
        rng.shuffle(mentions)
        entities = random_entities(mentions, rng, 0.6)
        docs.append(Document(f"d{d}", "x" * 800, tuple(tuple(sorted(e)) for e in entities)))
    return docs


def perturbed(docs: list[Document], seed: int) -> list[Document]:
    rng = random.Random(seed)
    out = []
    for doc in docs:
        mentions = [m for m in doc.mentions if rng.random() > 0.2]
        mentions += [Mention.of(s, s + 2) for s in rng.sample(range(402, 800, 5), 5)]  # outside key mentions
        mentions = list(dict.fromkeys(mentions))
        entities = random_entities(mentions, rng, 0.5)
        out.append(Document(doc.doc_id, doc.text, tuple(tuple(e) for e in entities)))
    return out


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("match", ["exact", "overlap", "partial", "head"])
def test_identical_key_and_response_score_one(seed: int, match: str) -> None:
    docs = random_documents(seed)
    result = score(docs, docs, match=match)
    for name, metric in result.metrics.items():
        assert (metric.recall, metric.precision, metric.f1) == (1.0, 1.0, 1.0), name
    assert result.conll_f1 == 1.0


@pytest.mark.parametrize("seed", range(25))
def test_scores_are_between_zero_and_one(seed: int) -> None:
    docs = random_documents(seed)
    for keep in (True, False):
        result = score(docs, perturbed(docs, seed), match="overlap", keep_singletons=keep)
        for metric in list(result.metrics.values()) + list(result.mentions.values()):
            assert 0.0 <= metric.recall <= 1.0 and 0.0 <= metric.precision <= 1.0 and 0.0 <= metric.f1 <= 1.0
        assert 0.0 <= result.conll_f1 <= 1.0


@pytest.mark.parametrize("seed", range(25))
def test_overlap_at_threshold_one_equals_exact_when_no_mention_contains_another(seed: int) -> None:
    docs = random_documents(seed)
    response = perturbed(docs, seed)
    assert (
        score(docs, response, match="overlap", threshold=1.0).to_dict()["metrics"]
        == (score(docs, response, match="exact").to_dict()["metrics"])
    )


def test_overlap_at_threshold_one_still_aligns_a_contained_mention() -> None:
    # the protocol measures overlap against the SHORTER mention, so containment reaches 1.0:
    # threshold 1.0 equals exact matching only when no response mention contains a key mention
    assert align_mentions([Mention.of(3, 4)], [Mention.of(0, 4)], "overlap", 1.0) == {
        Mention.of(0, 4): Mention.of(3, 4)
    }


def test_subword_views_and_weights() -> None:
    text = "ראיתי את ביתו"
    key = [Document("d", text, ((Mention.of(12, 13, "subword", "embedded_pronoun"), Mention.of(0, 5)),))]
    response = [Document("d", text, ((Mention.of(9, 13), Mention.of(0, 5)),))]
    exact = score(key, response)
    flexible = score(key, response, match="overlap", kind_weights={"embedded_pronoun": 3.0})
    assert exact.mentions["subword"].recall == 0.0 and exact.metrics["muc"].f1 == 0.0
    assert flexible.mentions["embedded_pronoun"].recall == 1.0 and flexible.metrics["muc"].f1 == 1.0
    assert flexible.mentions["weighted"].recall == 1.0
    assert "weighted" not in exact.mentions and flexible.options["kind_weights"] == {"embedded_pronoun": 3.0}


def test_singletons_option_is_stated() -> None:
    docs = random_documents(1)
    assert score(docs, docs, keep_singletons=False).options["singletons"] == "removed before alignment"


def test_document_pairing_errors_and_warnings() -> None:
    a = Document("a", "xx", ((Mention.of(0, 1),),))
    b = Document("b", "xx", ((Mention.of(0, 1),),))
    with pytest.raises(TabverifyError, match="share no document id"):
        score([a], [b])
    with pytest.raises(TabverifyError, match="repeats document id"):
        score([a, a], [a])
    result = score([a, b], [a])
    assert result.documents == 2 and any("missing from the response" in w for w in result.warnings)
    with pytest.raises(TabverifyError, match="unknown matching"):
        score([a], [a], match="fuzzy")
    with pytest.raises(TabverifyError, match="threshold"):
        score([a], [a], match="overlap", threshold=1.5)


def test_empty_documents_score_zero_without_error() -> None:
    empty = Document("e", "", ())
    result = score([empty], [empty])
    assert all(m.f1 == 0.0 for m in result.metrics.values())


def test_html_alignment_view_shows_pairs_misses_and_spurious() -> None:
    from tabverify.coref.html import render_alignment
    from tabverify.table import read_html_tables

    text = "ראיתי את ביתו"
    key = [Document("d", text, ((Mention.of(12, 13, "subword", "embedded_pronoun"), Mention.of(0, 5)),
                                (Mention.of(6, 8),)))]  # fmt: skip
    response = [Document("d", text, ((Mention.of(9, 13), Mention.of(0, 5)), (Mention.of(3, 5),)))]
    page = render_alignment(score(key, response, match="overlap"))
    assert 'dir="auto"' in page and "<script" not in page
    assert "Aligned pairs (2, 0 in a wrong entity)" in page and "Missed gold mentions (1)" in page
    assert "Spurious system mentions (1)" in page and "את" in page
    pairs = read_html_tables(page)[0]
    assert pairs.text(1, 0) == "ראיתי" and {pairs.text(2, 0), pairs.text(2, 3)} == {"ו", "ביתו"}
