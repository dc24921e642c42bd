"""Property-based tests of every coreference reader: random and garbled input is either read or
refused with a CorefFormatError - nothing else - and what is read scores without error; files a
writer writes read back the same."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabverify.coref import CorefFormatError, Document, Mention, read_documents, score, write_json
from tabverify.coref.conllu import read_conllu, write_conllu
from tabverify.coref.kibutzr import read_kibutzr
from tabverify.errors import TabverifyError
from tabverify.text.spans import Span

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(path: Path, **options: object) -> list[Document] | None:
    """The documents read, or None when the reader refused the file with a CorefFormatError; any
    other exception fails the test. What was read must score against itself."""
    try:
        docs = read_documents(path, **options)  # type: ignore[arg-type]
    except CorefFormatError as error:
        assert str(error)  # a message, never an empty one
        return None
    if docs:
        try:
            result = score(docs, docs)
        except TabverifyError:
            return docs  # e.g. a document id repeated within the file: refused, with a message
        json.dumps(result.to_dict(), allow_nan=False)
        assert all(0.0 <= m.f1 <= 1.0 for m in result.metrics.values())
    return docs


_ROOT = tempfile.TemporaryDirectory(prefix="coref-properties-")  # removed when the run ends


def in_tmp(name: str, content: str | bytes) -> Path:
    """A fresh folder with one file (hypothesis examples cannot use pytest's tmp_path)."""
    folder = Path(tempfile.mkdtemp(dir=_ROOT.name))
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


# JSON: any JSON value (NaN and Infinity included), and near-valid records --------------------------
KEYS = st.sampled_from(
    ["doc_id", "doc_key", "id", "text", "clusters", "mentions", "metadata", "kind", "subkind"]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=25,
)
offset = st.one_of(st.integers(-2, 12), st.floats(-1, 12), st.text(max_size=2), st.none())
mention = st.one_of(
    st.lists(offset, min_size=0, max_size=4),
    st.tuples(
        st.integers(0, 10),
        st.integers(0, 12),
        st.dictionaries(KEYS, st.text(max_size=9) | st.none(), max_size=2),
    ).map(list),
    st.dictionaries(KEYS, offset, max_size=2),
)
records = st.fixed_dictionaries(
    {"doc_id": st.one_of(st.text(max_size=4), st.integers(), st.none()), "text": st.one_of(st.text(max_size=12), st.integers()),
     "clusters": st.lists(st.one_of(st.lists(mention, max_size=3), st.fixed_dictionaries({"mentions": st.lists(mention, max_size=3)})), max_size=3)}
)  # fmt: skip


@SETTINGS
@given(st.one_of(json_values, records, st.lists(records, max_size=3)))
def test_json_reader_reads_or_refuses(value: object) -> None:
    outcome(in_tmp("in.json", json.dumps(value, allow_nan=True)))


@SETTINGS
@given(st.lists(st.one_of(records.map(json.dumps), st.text(max_size=20)), max_size=4))
def test_json_lines_reader_reads_or_refuses(lines: list[str]) -> None:
    outcome(in_tmp("in.jsonl", "\n".join(lines)))


@SETTINGS
@given(st.binary(max_size=60))
def test_any_bytes_are_read_or_refused(data: bytes) -> None:
    for name in ("in.json", "in.conll", "in.conllu", "in.txt"):
        outcome(in_tmp(name, data))


# CoNLL-2012 ---------------------------------------------------------------------------------------
CELLS = st.sampled_from(
    ["-", "_", "(1)", "(1", "1)", "(2)|(1", "1)|2)", "(12)(3", "3)", "(x", "1)(1", "|", "((1"]
)
conll_lines = st.one_of(
    st.sampled_from(["#begin document (d);", "#begin document (e);", "#end document", "", "# comment"]),
    st.tuples(st.sampled_from(["d 0", "d 0 0 w", "d 0 0 w x y z", "ב 1 1 _"]), CELLS).map(" ".join),
    st.text(max_size=10),
)


@SETTINGS
@given(st.lists(conll_lines, max_size=12))
def test_conll_reader_reads_or_refuses(lines: list[str]) -> None:
    outcome(in_tmp("in.conll", "\n".join(lines) + "\n"))


# CoNLL-U ------------------------------------------------------------------------------------------
IDS = st.sampled_from(["1", "2", "3", "2.1", "1-2", "0", "x", "", "1.1.1"])
HEADS = st.sampled_from(["0", "1", "2", "9", "_", "abc", "-1"])
ENTITIES = st.sampled_from(
    ["_", "Entity=(e1-x-1-)", "Entity=(e1-x-1-", "Entity=e1)", "Entity=(e2[1/2]-x-1-)", "Entity=(e2[2/2]-x-1-)",
     "Entity=(e1-x-9-)", "Entity=(e1-x-a-)", "Entity=e1)(e3-x-1-", "Entity=(e3", "Entity=)", "SpaceAfter=No"]
)  # fmt: skip
token_lines = st.tuples(
    IDS, st.text(max_size=3), HEADS, st.sampled_from(["_", "2:nsubj", "0:root|1:obj", "x"]), ENTITIES
).map(lambda t: "\t".join([t[0], t[1] or "_", "_", "_", "_", "_", t[2], "_", t[3], t[4]]))
conllu_lines = st.one_of(
    token_lines,
    st.sampled_from(
        ["", "# newdoc id = d", "# newdoc id = e", "# global.Entity = eid-etype-head-other", "# sent_id = 1"]
    ),
    st.text(max_size=10),
)


@SETTINGS
@given(st.lists(conllu_lines, max_size=12))
def test_conllu_reader_reads_or_refuses(lines: list[str]) -> None:
    outcome(in_tmp("in.conllu", "\n".join(lines) + "\n"))


# KibutzR: morpheme files aligned onto random raw texts ----------------------------------------------
MORPHEMES = st.sampled_from(["ב", "ה_", "בית", "_הוא", "_של_", "את", "אות", "ראיתי", "x", "."])


@SETTINGS
@given(
    st.lists(st.tuples(MORPHEMES, CELLS), min_size=1, max_size=8),
    st.text(alphabet="בהיתואםראx. ", max_size=30),
)
def test_kibutzr_reader_reads_or_refuses(rows: list[tuple[str, str]], raw: str) -> None:
    path = in_tmp("htb:5.conllu", "#begin document htb:5\n" + "".join(
        f"{form}\t1\t{i}\t_\t{cell}\n" for i, (form, cell) in enumerate(rows, start=1)) + "#end document\n")  # fmt: skip
    (path.parent / "raw").mkdir()
    (path.parent / "raw" / "5.txt").write_text(raw, encoding="utf-8")
    try:
        docs = read_kibutzr(path, path.parent / "raw")
    except CorefFormatError:
        return
    for doc in docs:  # on the raw text, mentions are spans of it
        assert all(0 <= m.start < m.end <= len(doc.text) for m in doc.mentions)
        assert doc.convention == "conll"


# round trips --------------------------------------------------------------------------------------
@st.composite
def character_documents(draw: st.DrawFn) -> Document:
    text = draw(st.text(alphabet="אבג דה\u200bxy,.", min_size=1, max_size=20))
    spans = st.tuples(st.integers(0, len(text) - 1), st.integers(1, len(text))).filter(
        lambda se: se[0] < se[1]
    )
    entities = draw(st.lists(st.lists(spans, min_size=1, max_size=3, unique=True), max_size=4))
    kinds = st.sampled_from([("word", None), ("subword", "clitic"), ("phrase", None), ("subword", None)])
    built = []
    for entity in entities:
        mentions = [Mention.of(s, e, *draw(kinds)) for s, e in sorted(entity)]
        built.append(tuple(mentions))
    return Document(draw(st.text(alphabet="abc-", min_size=1, max_size=5)), text, tuple(built))


@SETTINGS
@given(st.lists(character_documents(), min_size=1, max_size=3, unique_by=lambda d: d.doc_id))
def test_json_round_trip(docs: list[Document]) -> None:
    path = in_tmp("out.jsonl", "")
    write_json(docs, path)
    again = read_documents(path)
    assert [(d.doc_id, d.text, d.entities) for d in again] == [(d.doc_id, d.text, d.entities) for d in docs]
    assert [[(m.kind, m.subkind) for e in d.entities for m in e] for d in again] == [
        [(m.kind, m.subkind) for e in d.entities for m in e] for d in docs
    ]


@st.composite
def token_documents(draw: st.DrawFn) -> Document:
    n = draw(st.integers(1, 8))
    forms = [f"w{i}" for i in range(n)]
    sentence_breaks = draw(st.sets(st.integers(1, n - 1), max_size=2)) if n > 1 else set()
    parts, words, length = [], [], 0
    for i, form in enumerate(forms):
        if i:
            parts.append("\n" if i in sentence_breaks else " ")
            length += 1
        words.append(Span(length, length + len(form)))
        parts.append(form)
        length += len(form)
    word_sets = st.sets(st.integers(0, n - 1), min_size=1, max_size=3)
    entities = []
    for entity in draw(
        st.lists(st.lists(word_sets, min_size=1, max_size=2, unique_by=frozenset), max_size=3)
    ):
        mentions = []
        gapped = [c for c in entity if max(c) - min(c) + 1 != len(c)]
        if len(gapped) > 1:  # the format pairs discontinuous parts by entity (see write_conllu)
            entity = [c for c in entity if c not in gapped[1:]]
        runs = sorted((min(c), max(c)) for c in entity if c not in gapped)
        if len(runs) == 2 and runs[0][0] < runs[1][0] <= runs[0][1] < runs[1][1]:
            entity = entity[:1]  # two crossing mentions of one entity: the format cannot write them
        for chosen in entity:
            units = tuple(words[i] for i in sorted(chosen))
            head = units[draw(st.integers(0, len(units) - 1))]
            mentions.append(Mention(units, head, "phrase" if len(units) > 1 else "word"))
        entities.append(tuple(mentions))
    return Document("d", "".join(parts), tuple(entities), tuple(words))


@SETTINGS
@given(token_documents())
def test_conllu_round_trip(doc: Document) -> None:
    path = in_tmp("out.conllu", "")
    write_conllu([doc], path)
    (again,) = read_conllu(path)
    assert again.text == doc.text and again.words == doc.words

    def entities(d: Document) -> set[frozenset[tuple[tuple[Span, ...], Span | None]]]:
        return {frozenset((m.units, m.head) for m in e) for e in d.entities}

    assert entities(again) == entities(doc)


def test_conllu_refuses_crossing_mentions_of_one_entity(tmp_path: Path) -> None:
    text = "w0 w1 w2 w3"
    words = tuple(Span(i * 3, i * 3 + 2) for i in range(4))
    first, second = Mention(words[0:3], words[0]), Mention(words[1:4], words[1])
    doc = Document("d", text, ((first, second),), words)
    with pytest.raises(
        CorefFormatError, match=r"two mentions of one entity cross \(characters 0-8 and 3-11\)"
    ):
        write_conllu([doc], tmp_path / "crossing.conllu")
    assert not (tmp_path / "crossing.conllu").exists()
    nested = Document("d", text, ((Mention(words, words[0]), second),), words)
    write_conllu([nested], tmp_path / "nested.conllu")  # nested mentions of one entity are fine
    (again,) = read_conllu(tmp_path / "nested.conllu")
    assert {(m.start, m.end) for e in again.entities for m in e} == {(0, 11), (3, 11)}


def test_property_strategies_reach_both_outcomes() -> None:
    # the garbled-input strategies are only worth something if they produce readable files too
    good = in_tmp("good.json", json.dumps({"doc_id": "d", "text": "abc", "clusters": [[[0, 1]]]}))
    assert outcome(good) and not math.isnan(score(outcome(good) or [], outcome(good) or []).conll_f1)
    assert outcome(in_tmp("bad.json", "{")) is None
