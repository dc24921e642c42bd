"""The hard cases (long-distance pronoun links, ה- mentions, zeros): counts known by construction, the
section of the HTML view, the JSON of `coref score`."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from tabverify.coref import Document, Mention, score, write_json
from tabverify.coref.hard_cases import article_openings, hard_cases, sentence_ends
from tabverify.coref.html import alignment_fragment, render_alignment
from tabverify.text.spans import Span
from tests.cli.conftest import run

TEXT = (
    "דני הגיע לעיר. רותי נשארה בבית. הממשלה דנה בתקציב. הציבור כעס. הוא דיבר עם הוועדה והוועדה הקשיבה. "
    "ביתה היה קטן. משה אמר כי ∅ עייף. שרה אמרה כי ∅ רעבה. דני אמר שהוא עייף."
)


def at(word: str, nth: int = 0, inner: str | None = None, **kind: str) -> Mention:
    """The ``nth`` occurrence of ``word`` in TEXT (or the letters ``inner`` ending it)."""
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(word, start + 1)
    if inner is not None:
        start += len(word) - len(inner)
        word = inner
    return Mention.of(start, start + len(word), kind.get("kind"), kind.get("subkind"))


def zero(nth: int) -> Mention:
    start = TEXT.index("∅") if nth == 0 else TEXT.rindex("∅")
    return Mention((Span(start, start + 1),), zero=True)


DANI, HU, DANI_2, HU_2 = at("דני"), at("הוא"), at("דני", 1), at("שהוא", inner="הוא", kind="subword")
RUTI, HER = at("רותי"), at("ביתה", inner="ה", kind="subword", subkind="embedded_pronoun")
GOVERNMENT, PUBLIC = at("הממשלה"), at("הציבור")
COMMITTEE, COMMITTEE_2 = at("הוועדה"), at("והוועדה", inner="הוועדה", kind="subword")
MOSHE, SARA = at("משה"), at("שרה")

KEY = Document(
    "d",
    TEXT,
    (
        (DANI, HU, DANI_2, HU_2),  # הוא <- דני far (right below); שהוא <- דני in one sentence (not counted)
        (RUTI, HER),  # the ה of ביתה <- רותי far (wrong below)
        (GOVERNMENT,),  # a ה- singleton left alone below
        (PUBLIC,),  # a ה- singleton linked below
        (COMMITTEE, COMMITTEE_2),  # ה- mentions of one entity, both linked below
        (MOSHE, zero(0)),  # a zero found and linked
        (SARA, zero(1)),  # a zero the response misses
    ),
)
RESPONSE = Document(
    "d",
    TEXT,
    (
        (DANI, HU, HER, DANI_2, HU_2),
        (RUTI,),
        (GOVERNMENT,),
        (PUBLIC, at("כעס")),
        (COMMITTEE, COMMITTEE_2),
        (MOSHE, zero(0)),
    ),
)


def counts(**outcomes: int) -> dict[str, int]:
    return {"right": 0, "wrong": 0, "unlinked": 0, "missed": 0} | outcomes


def test_each_category_counts_what_was_built() -> None:
    cases = score([KEY], [RESPONSE]).hard_cases
    assert cases.counts == {
        "long_distance_pronoun": counts(right=1, wrong=1),
        "article_singleton": counts(right=1, wrong=1),
        "article_in_entity": counts(right=2),
        "zero": counts(right=1, missed=1),
    }
    assert cases.notes == ()
    links = cases.examples["long_distance_pronoun"]
    assert [(c.outcome, c.mention, c.antecedent) for c in links] == [
        ("wrong", HER, RUTI),
        ("right", HU, DANI),
    ]
    assert (
        links[0].system.startswith("found, in S1 with דני, הוא") and "the antecedent in S2" in links[0].system
    )
    assert [c.mention for c in cases.examples["article_singleton"]] == [PUBLIC, GOVERNMENT]  # failures first
    assert cases.examples["zero"][0].system == "not found"


def test_an_unlinked_or_missing_anaphor_and_a_missing_antecedent() -> None:
    alone = Document("d", TEXT, ((DANI, DANI_2, HU_2), (HU,), (RUTI,)))  # הוא alone, ה of ביתה not output
    cases = score([KEY], [alone]).hard_cases
    assert cases.counts["long_distance_pronoun"] == counts(unlinked=1, missed=1)
    assert cases.counts["article_singleton"] == counts(missed=2)
    assert cases.counts["article_in_entity"] == counts(missed=2)
    no_antecedent = Document("d", TEXT, ((HU, DANI_2, HU_2),))
    assert score([KEY], [no_antecedent]).hard_cases.counts["long_distance_pronoun"]["missed"] == 2


def spans(text: str, *words: str) -> tuple[Mention, ...]:
    """Mentions of ``words``, each the first occurrence after the previous one."""
    found, position = [], 0
    for word in words:
        position = text.index(word, position)
        found.append(Mention.of(position, position + len(word)))
        position += len(word)
    return tuple(found)


def test_a_near_link_and_a_link_sharing_a_word_are_not_hard() -> None:
    text = "הוא בא. היא הלכה. הן ישבו. הוא נשאר."
    first, _, _, last = spans(text, "הוא", "היא", "הן", "הוא")
    her, they = spans(text, "היא", "הן")
    # הוא <- הוא is far (three sentence ends) but shares the word; הן <- היא is one sentence end back
    key = Document("d", text, ((first, last), (her, they)))
    assert sum(score([key], [key]).hard_cases.counts["long_distance_pronoun"].values()) == 0
    far_text = "היא הלכה. הוא בא. הן ישבו."
    far = Document("d", far_text, (spans(far_text, "היא", "הן"),))  # two sentence ends back
    assert score([far], [far]).hard_cases.counts["long_distance_pronoun"] == counts(right=1)


def test_options_that_empty_a_category_say_so() -> None:
    dropped = score([KEY], [RESPONSE], keep_singletons=False, keep_zeros=False).hard_cases
    assert (
        sum(dropped.counts["article_singleton"].values()) == 0 and sum(dropped.counts["zero"].values()) == 0
    )
    assert dropped.counts["article_in_entity"] == counts(right=2)
    assert any("singletons were removed" in n for n in dropped.notes)
    assert any("zero mentions were removed" in n for n in dropped.notes)
    without_zeros = Document("d", TEXT, KEY.entities[:5])
    assert any("holds no zero mentions" in n for n in score([without_zeros], [RESPONSE]).hard_cases.notes)


def test_examples_are_capped_failures_first() -> None:
    result = score([KEY], [RESPONSE])
    capped = hard_cases(result.alignments, result.options, examples=1)
    assert [c.outcome for c in capped.examples["long_distance_pronoun"]] == ["wrong"]
    assert capped.counts == result.hard_cases.counts


def test_written_articles_and_sentence_ends() -> None:
    text = "הממשלה והציבור ראו. היום הלך דני לבית הספר"
    # ה of הממשלה; ו and ה of והציבור; ה of הספר; not היום, הלך, nor the unwritten article of לבית
    assert article_openings(text) == {0, 7, 8, text.index("הספר")}
    assert sentence_ends('הוא אמר: "די!" ואז הלך.\nשם') == 2
    assert sentence_ends("3.5 מיליון") == 0


class Section(HTMLParser):
    """The tags and the text inside the hard-cases section."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.depth, self.tags, self.text = 0, [], []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or ("id", "hard-cases") in attrs:
            self.depth += 1
            self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.text.append(data)


def test_the_page_and_the_fragment_show_the_section_with_text_kept_as_text() -> None:
    marked = TEXT.replace("דנה בתקציב", '<script>alert("x")</script>')  # after הממשלה, which stays put
    key = Document("d<i>", marked, ((GOVERNMENT,),))
    result = score([key], [key])
    for page in (render_alignment(result), alignment_fragment(result)):
        section = Section(page)
        names = {tag for tag, _ in section.tags}
        assert "section" in names and "mark" in names and not names & {"script", "i"}
        text = "".join(section.text)
        assert '<script>alert("x")</script>' in text and "d<i>" in text  # shown, as text
        assert "Long-distance agreement-only pronoun links" in text and "הממשלה" in text
        contexts = [attrs for tag, attrs in section.tags if attrs.get("class") == "context"]
        assert contexts and all(attrs.get("dir") == "auto" for attrs in contexts)
    assert render_alignment(result).index('id="hard-cases"') > render_alignment(result).index("Aligned pairs")


def test_coref_score_json_carries_the_counts(tmp_path: Path) -> None:
    key, response = tmp_path / "key.jsonl", tmp_path / "response.jsonl"
    write_json([Document("d", TEXT, KEY.entities[:5])], key)
    write_json([Document("d", TEXT, RESPONSE.entities[:5])], response)
    result = run("coref", "score", str(key), str(response), "--json")
    assert result.returncode == 0, result.stderr
    cases = json.loads(result.stdout)["hard_cases"]
    assert cases["long_distance_pronoun"] == counts(right=1, wrong=1) | {"total": 2}
    assert cases["article_singleton"]["total"] == 2 and cases["zero"]["total"] == 0
    assert any("no zero mentions" in n for n in cases["notes"])
