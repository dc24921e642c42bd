"""Hostile and malformed input: each class is one CorefFormatError (a TabverifyError) whose message
names the file or document and says what to do - never a traceback, never silently accepted."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from tabverify.coref import CorefFormatError, Document, Mention, read_documents, score
from tabverify.coref.score import CorefResult
from tabverify.errors import TabverifyError


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def record(**fields: object) -> dict[str, object]:
    return {"doc_id": "d1", "text": "abc def", "clusters": [[[0, 3]]]} | fields


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"doc_id": "d1", "text": "abc", "clusters": [[[0, Infinity]]]}', "Infinity is not a JSON number"),
        ('{"doc_id": "d1", "text": "abc", "clusters": [[[NaN, 2]]]}', "NaN is not a JSON number"),
        ("[" * 10_000 + "]" * 10_000, "nested deeper than"),
        (
            json.dumps(record(clusters=[[{"start": 0, "end": 3}]])),
            "document 'd1', cluster 1: mention {'start'",
        ),
        (json.dumps(record(clusters=[[None]])), "document 'd1', cluster 1: mention None is not"),
        (json.dumps(record(clusters=[[[0.0, 3]]])), "integer offsets"),
        (json.dumps(record(clusters=[[["0", "3"]]])), "integer offsets"),
        (json.dumps(record(clusters=[[[True, 3]]])), "integer offsets"),
        (json.dumps(record(clusters=[[[0, 3, 5]]])), "is not [start, end]"),
        (json.dumps(record(clusters=[[[0, 3, {}, {}]]])), "is not [start, end]"),
        (json.dumps(record(text={"body": "abc"})), "'text' is a dict; it must be the text as a string"),
        (json.dumps(record(clusters={"0": [[0, 3]]})), "'clusters' must be a list"),
        (
            json.dumps(record(clusters=[[[0, 3, {"kind": "pronoun"}]]])),
            "kind must be one of word, subword, phrase",
        ),
        (json.dumps(record(clusters=[[[0, 3, {"subkind": ["clitic"]}]]])), "subkind one of"),
        (json.dumps(record(clusters=[[[2, 99]]])), "lies outside the text"),
        (json.dumps(record(doc_id={"id": 1})), "the document id {'id': 1} must be a string"),
        (
            json.dumps([record(), record(text="another text")]),
            "document id 'd1' is given twice with different texts",
        ),
        (
            json.dumps(record()) + "\n" + json.dumps(record(text="abc xyz")) + "\n",
            "given twice with different texts",
        ),
        ("[1, 2]", "record 1 needs 'text' and 'clusters'"),
        ('{"doc_id": "d1"', "not valid JSON"),
    ],
)
def test_json_refuses(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "in.jsonl", text)
    with pytest.raises(CorefFormatError) as caught:
        read_documents(path)
    assert message in str(caught.value)
    assert "in.jsonl" in str(caught.value)  # the file is named


def test_json_accepts_the_documented_shapes(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.json", json.dumps([record(clusters=[[[0, 3], [4, 7, {"kind": "word"}]]])]))
    (doc,) = read_documents(path)
    assert [(m.start, m.end) for m in doc.entities[0]] == [(0, 3), (4, 7)]
    same_twice = write(tmp_path, "twice.jsonl", json.dumps(record()) + "\n" + json.dumps(record()) + "\n")
    assert len(read_documents(same_twice)) == 2  # a plain repeat is left to pair_documents...
    with pytest.raises(TabverifyError, match="repeats document id"):
        score(read_documents(same_twice), read_documents(same_twice))  # ...which names the side


CONLLU_HEAD = "# newdoc id = d\n# global.Entity = eid-etype-head-other\n"


def token(token_id: str, head: str = "0", entity: str = "_") -> str:
    return f"{token_id}\tw\t_\t_\t_\t_\t{head}\t_\t_\t{entity}\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (token("1") + token("2", head="99999"), "HEAD 99999 is not a word of this sentence (it has 2)"),
        (token("1", head="abc"), "HEAD 'abc' is not a word number"),
        (token("1", head="-1"), "HEAD '-1' is not a word number"),
        (token("x1"), "ID 'x1' is not a word number"),
        (token("1", entity="Entity=(e1-x-abc-)"), "the head of a mention is 'abc'"),
        (token("1", entity="Entity=(e1-x-5-") + token("2", entity="Entity=e1)"), "the mention has 2 word(s)"),
        (token("1", entity="Entity=e1)"), "'e1)' closes a mention of e1 that is not open"),
        (token("1", entity="Entity=(e1-x-1-"), "ends with unclosed mention(s) of e1"),
        ("1\tw\t_\n", "needs 10 tab-separated columns"),
        (token("1") + "\n# newdoc id = empty\n", "document 'empty' has no tokens"),
    ],
)
def test_conllu_refuses(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, "in.conllu", CONLLU_HEAD + body + "\n")
    with pytest.raises(CorefFormatError, match="in.conllu") as caught:
        read_documents(path)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#begin document (d);\n#end document\n", "document '(d);' has no tokens"),
        ("#begin document (d);\nd 0 0 a (1\n#end document\n", "unclosed"),
        ("#begin document (d);\nd 0 0 a 1)\n#end document\n", "never opened"),
        ("#begin document (d);\nd 0 0 a (x)\n#end document\n", "cannot read coreference column"),
        ("#begin document (d);\n#begin document (e);\n", "#begin document inside document"),
        ("#end document\n", "#end document without #begin document"),
        ("#begin document (d);\nd 0 0 a (1)\n", "has no '#end document' line"),
    ],
)
def test_conll_refuses(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "in.conll", text)
    with pytest.raises(CorefFormatError, match="in.conll") as caught:
        read_documents(path)
    assert message in str(caught.value)


def test_a_response_document_without_tokens_is_refused(tmp_path: Path) -> None:
    key = write(tmp_path, "key.conll", "#begin document (d);\nd 0 0 a (1)\n#end document\n")
    response = write(tmp_path, "response.conll", "#begin document (d);\n#end document\n")
    read_documents(key)
    with pytest.raises(CorefFormatError, match="response.conll.*has no tokens"):
        read_documents(response)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["pipe.jsonl", "pipe.conll", "pipe"])
def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, name: str) -> None:
    os.mkfifo(tmp_path / name)
    with pytest.raises(CorefFormatError, match="not a regular file"):
        read_documents(tmp_path / name)


def test_an_unreadable_raw_text_is_a_format_error(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "7.txt").write_bytes(b"\xc3\x28 not utf-8")
    morphemes = write(tmp_path, "htb:7.conllu", "#begin document htb:7\nא\t1\t1\t_\t(1)\n#end document\n")
    with pytest.raises(CorefFormatError, match="not valid UTF-8"):
        read_documents(morphemes, raw_dir=tmp_path / "raw")


DOC = Document("d", "ab", ((Mention.of(0, 1), Mention.of(1, 2)),))


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"word": -5.0}, "word=-5.0 must be a finite number >= 0"),
        ({"word": math.nan}, "must be a finite number"),
        ({"word": math.inf}, "must be a finite number"),
        ({"word": True}, "must be a finite number"),
        ({"word": "3"}, "must be a finite number"),
        ({"x": 1.0}, "unknown kind 'x'"),
    ],
)
def test_score_refuses_bad_kind_weights(weights: dict[str, object], message: str) -> None:
    with pytest.raises(TabverifyError, match="kind weight") as caught:
        score([DOC], [DOC], kind_weights=weights)  # type: ignore[arg-type]
    assert message in str(caught.value)


def test_weights_keep_precision_within_one_and_the_json_finite() -> None:
    result = score([DOC], [DOC], kind_weights={"word": 5.0, "clitic": 0.0})
    assert result.mentions["weighted"].precision == 1.0
    json.dumps(result.to_dict(), allow_nan=False)
    with pytest.raises(TabverifyError, match="threshold"):
        score([DOC], [DOC], match="overlap", threshold=math.nan)


def test_to_dict_refuses_a_non_finite_number() -> None:
    result = score([DOC], [DOC])
    broken = CorefResult(result.metrics, math.nan, result.mentions, result.options, result.documents)
    with pytest.raises(TabverifyError, match=r"result.metrics.conll_f1 is nan"):
        broken.to_dict()


WORDS = Document("w", "ab cd ef", ((Mention.of(0, 2), Mention.of(3, 5)), (Mention.of(6, 8),)))


@pytest.mark.parametrize("huge", [1e308, 1.7976931348623157e308])
def test_huge_kind_weights_do_not_overflow(huge: float) -> None:
    response = Document("w", WORDS.text, ((Mention.of(0, 2), Mention.of(3, 5)),))  # misses [6, 8)
    result = score([WORDS], [response], kind_weights={"word": huge, "subword": huge})
    weighted = result.mentions["weighted"]
    # every key mention is a word of the same weight: the weighted view is the aligned one
    assert (weighted.recall, weighted.precision) == (2 / 3, 1.0)
    assert weighted.f1 == pytest.approx(0.8)
    json.dumps(result.to_dict(), allow_nan=False)


def test_only_the_ratio_of_kind_weights_matters() -> None:
    response = Document("w", WORDS.text, ((Mention.of(0, 2), Mention.of(3, 5), Mention.of(4, 5)),))
    small = score([WORDS], [response], kind_weights={"word": 3.0}).mentions["weighted"]
    # a spurious sub-word mention weighs 1 (the weight of what has none): 2 * 3 / (2 * 3 + 1)
    assert small.precision == pytest.approx(6 / 7) and small.recall == pytest.approx(2 / 3)
    large = score([WORDS], [response], kind_weights={"word": 1e308}).mentions["weighted"]
    assert large.recall == pytest.approx(2 / 3) and large.precision == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("span", "message"),
    [
        ([3, 3], "mention [3, 3] is empty"),
        ([4, 0], "mention [4, 0] ends before it starts"),
        ([-1, 2], "mention [-1, 2] lies outside the text (length 7)"),
        ([2, 99], "mention [2, 99] lies outside the text (length 7)"),
    ],
)
def test_json_spans_say_what_is_wrong(tmp_path: Path, span: list[int], message: str) -> None:
    path = write(tmp_path, "in.jsonl", json.dumps(record(clusters=[[span]])))
    with pytest.raises(CorefFormatError) as caught:
        read_documents(path)
    assert message in str(caught.value)


@pytest.mark.parametrize(("doc_id", "read_as"), [("a", "a"), (7, "7"), (0, "0")])
def test_a_document_id_is_a_string_or_an_integer(tmp_path: Path, doc_id: object, read_as: str) -> None:
    (doc,) = read_documents(write(tmp_path, "in.jsonl", json.dumps(record(doc_id=doc_id))))
    assert doc.doc_id == read_as


@pytest.mark.parametrize("doc_id", [["a"], 7.5, True, {"id": 1}])
def test_any_other_document_id_is_refused(tmp_path: Path, doc_id: object) -> None:
    with pytest.raises(CorefFormatError, match="must be a string or an integer"):
        read_documents(write(tmp_path, "in.jsonl", json.dumps(record(doc_id=doc_id))))


def short_line(message: str) -> bool:
    return "\n" not in message and len(message) < 300


def test_thousands_of_unclosed_conll_mentions_are_one_short_line(tmp_path: Path) -> None:
    lines = "".join(f"d 0 {i} a ({i}\n" for i in range(5000))
    path = write(tmp_path, "in.conll", f"#begin document d\n{lines}#end document\n")
    with pytest.raises(CorefFormatError) as caught:
        read_documents(path)
    message = str(caught.value)
    assert "unclosed mention(s) of entity 0, 1, 2, 3, 4 and 4995 more" in message and short_line(message)


def test_thousands_of_unclosed_conllu_mentions_are_one_short_line(tmp_path: Path) -> None:
    body = "".join(f"{i}\tw\t_\t_\t_\t_\t0\t_\t_\tEntity=(e{i}-x-1-\n" for i in range(1, 5001))
    path = write(tmp_path, "in.conllu", CONLLU_HEAD + body + "\n")
    with pytest.raises(CorefFormatError) as caught:
        read_documents(path)
    message = str(caught.value)
    assert "unclosed mention(s) of e1, e10, e100, e1000, e1001 and 4995 more" in message and short_line(
        message
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("in.conll", "#begin document d\nd 0 0 a " + "(x" * 10_000 + "\n#end document\n"),
        ("in.conll", "#begin document " + "d" * 10_000 + "\nd 0 0 a (1\n#end document\n"),
        ("in.conllu", CONLLU_HEAD + token("1", entity="Entity=" + "(" * 10_000)),
        ("in.jsonl", json.dumps(record(clusters=[[[0, 1, 2] * 5000]]))),
        ("in.jsonl", json.dumps(record(doc_id=["x"] * 10_000))),
    ],
)
def test_long_values_are_cut_in_messages(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(CorefFormatError) as caught:
        read_documents(write(tmp_path, name, text))
    assert short_line(str(caught.value)), str(caught.value)[:500]


def test_many_repeated_or_unshared_ids_are_listed_briefly() -> None:
    docs = [Document(f"doc-{i}", "ab", ()) for i in range(100)]
    with pytest.raises(TabverifyError) as caught:
        score(docs + docs, docs)
    assert "doc-0, doc-1, doc-10, doc-11, doc-12 and 95 more" in str(caught.value)
    assert short_line(str(caught.value))
