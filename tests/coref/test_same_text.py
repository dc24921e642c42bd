"""Key and response must be over the same text: character offsets mean something only over it.

Character documents with different texts are refused; token documents are paired word by word (as
the reference scorers, which read only the coreference column) and differing forms are a warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tabverify.coref import CorefFormatError, read_documents, score
from tabverify.errors import TabverifyError

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "tabverify" / "examples"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(tmp_path: Path, name: str, text: str) -> Path:
    clusters = [[[0, 4], [15, 17]], [[9, 13], [27, 30]]]  # the same offsets on both sides
    return write(tmp_path, name, json.dumps({"doc_id": "d", "text": text, "clusters": clusters}) + "\n")


def test_json_documents_with_different_texts_are_refused(tmp_path: Path) -> None:
    key = read_documents(jsonl(tmp_path, "key.jsonl", "John saw Mary. He waved at her."))
    response = read_documents(jsonl(tmp_path, "response.jsonl", "Mary saw John. Xe waved at him."))
    with pytest.raises(CorefFormatError) as caught:
        score(key, response)
    message = str(caught.value)
    assert "document 'd'" in message and "texts differ" in message
    assert "first at character 0 ('John saw Mar' vs 'Mary saw Joh'" in message
    assert "\n" not in message and len(message) < 400


def test_a_difference_at_the_end_is_found_too(tmp_path: Path) -> None:
    key = read_documents(jsonl(tmp_path, "key.jsonl", "John saw Mary. He waved at her."))
    longer = read_documents(jsonl(tmp_path, "response.jsonl", "John saw Mary. He waved at her. Then"))
    with pytest.raises(CorefFormatError, match="first at character 31 .*lengths 31 and 36"):
        score(key, longer)


def test_json_documents_with_the_same_text_score(tmp_path: Path) -> None:
    text = "John saw Mary. He waved at her."
    result = score(
        read_documents(jsonl(tmp_path, "k.jsonl", text)), read_documents(jsonl(tmp_path, "r.jsonl", text))
    )
    assert result.conll_f1 == 1.0 and not result.warnings


def test_the_shipped_examples_share_their_texts() -> None:
    result = score(
        read_documents(EXAMPLES / "coref_gold.jsonl"), read_documents(EXAMPLES / "coref_system.jsonl")
    )
    assert result.documents >= 1 and not any("differ" in w for w in result.warnings)


def test_a_token_key_against_a_character_response_is_refused(tmp_path: Path) -> None:
    key = write(tmp_path, "key.conll", "#begin document d\nd 0 0 John (1)\nd 0 1 saw -\n#end document\n")
    response = jsonl(tmp_path, "response.jsonl", "John saw Mary. He waved at her.")
    with pytest.raises(CorefFormatError, match="one side is read from tokens, the other from characters"):
        score(read_documents(key), read_documents(response))


CONLL = "#begin document d\n{}d 0 1 saw -\nd 0 2 Mary (2)\nd 0 3 . -\n\nd 1 0 {} (1)\nd 1 1 waved -\n#end document\n"


def test_conll_tokens_with_other_forms_score_by_position_with_a_warning(tmp_path: Path) -> None:
    key = read_documents(write(tmp_path, "key.conll", CONLL.format("d 0 0 John (1)\n", "He")))
    same = score(key, key)
    assert not same.warnings
    changed = read_documents(write(tmp_path, "response.conll", CONLL.format("d 0 0 Mary (1)\n", "Xe")))
    result = score(key, changed)
    # the reference scorer reads only the coreference column: the scores are those of identical files
    assert result.metrics == same.metrics and result.conll_f1 == 1.0
    (warning,) = result.warnings
    assert "document 'd': 2 word(s) differ between key and response" in warning
    assert "first: token 1, 'John' vs 'Mary'" in warning


def test_a_missing_conll_token_line_is_still_an_error(tmp_path: Path) -> None:
    key = read_documents(write(tmp_path, "key.conll", CONLL.format("d 0 0 John (1)\n", "He")))
    shorter = read_documents(write(tmp_path, "response.conll", CONLL.format("", "He")))
    with pytest.raises(TabverifyError, match="the key has 6 tokens and the response 5"):
        score(key, shorter)


def test_lines_without_a_form_column_compare_as_no_form(tmp_path: Path) -> None:
    # the reference scorer's own test files hold "document coreference": no form to compare
    key = read_documents(write(tmp_path, "key", "#begin document d\nd (1)\nd -\nd (1)\n#end document\n"))
    response = read_documents(
        write(tmp_path, "response", "#begin document d\nd (1)\nd (1)\nd -\n#end document\n")
    )
    assert key[0].text == "_ _ _"
    assert not score(key, response).warnings


CONLLU = "# newdoc id = d\n# global.Entity = eid-etype-head-other\n# sent_id = 1\n{}"


def conllu_token(token_id: str, form: str, entity: str = "_") -> str:
    return f"{token_id}\t{form}\t_\t_\t_\t_\t0\t_\t_\t{entity}\n"


def test_conllu_words_with_other_forms_are_a_warning(tmp_path: Path) -> None:
    body = conllu_token("1", "John", "Entity=(e1-x-1-)") + conllu_token("2", "{}", "Entity=(e1-x-1-)") + "\n"
    key = read_documents(write(tmp_path, "key.conllu", CONLLU.format(body.format("him"))))
    response = read_documents(write(tmp_path, "response.conllu", CONLLU.format(body.format("her"))))
    assert not score(key, key).warnings
    result = score(key, response)
    assert result.conll_f1 == 1.0
    (warning,) = result.warnings
    assert "1 word(s) differ" in warning and "word 2 of the file's sentence 1, 'him' vs 'her'" in warning


@pytest.mark.parametrize(
    ("key_form", "response_form"), [("NFC", "NFD"), ("NFD", "NFC")], ids=["nfc-key", "nfd-key"]
)
def test_texts_that_differ_only_in_unicode_normalisation_say_so(
    tmp_path: Path, key_form: str, response_form: str
) -> None:
    import unicodedata

    text = "Café é. שָׁלוֹם Dana saw her dog."  # accents and Hebrew points: two forms each

    def document(name: str, form: str) -> Path:
        written = unicodedata.normalize(form, text)
        record = {"doc_id": "d", "text": written, "clusters": [[[0, 4], [5, 6]]]}
        return write(tmp_path, name, json.dumps(record, ensure_ascii=False) + "\n")

    key = read_documents(document("key.jsonl", key_form))
    response = read_documents(document("response.jsonl", response_form))
    assert key[0].text != response[0].text
    with pytest.raises(CorefFormatError) as caught:
        score(key, response)
    message = str(caught.value)
    assert "document 'd'" in message
    assert "the texts differ only in Unicode normalisation (NFC vs NFD" in message
    assert f"the key's is {key_form}, the response's {response_form}" in message
    assert "normalise both files the same way" in message
    assert "first at character" not in message


def test_texts_that_differ_in_more_than_normalisation_still_show_where(tmp_path: Path) -> None:
    import unicodedata

    key = read_documents(
        jsonl(tmp_path, "key.jsonl", unicodedata.normalize("NFC", "Joé saw Mary. He waved at her."))
    )
    response = read_documents(
        jsonl(tmp_path, "response.jsonl", unicodedata.normalize("NFD", "Joé saw Mary. He waved at him."))
    )
    with pytest.raises(CorefFormatError, match="first at character 2"):
        score(key, response)
