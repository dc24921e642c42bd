"""The HTML alignment view, read back with an HTML parser: the system's own entities are shown, a
mention put in the wrong entity is marked as such, and user text never becomes markup."""

from __future__ import annotations

from html.parser import HTMLParser

from tabverify.coref import Document, Mention, score
from tabverify.coref.html import render_alignment, system_stands_for, wrong_links

TEXT = 'David <b>saw</b> his house. He said "it" & left.'


def at(word: str, nth: int = 0) -> Mention:
    start = -1
    for _ in range(nth + 1):
        start = TEXT.index(word, start + 1)
    return Mention.of(start, start + len(word))


DAVID, HIS, HOUSE, HE, IT = at("David"), at("his"), at("his house"), at("He"), at("it")
DOC_ID = "<script>alert(1)</script>"
# gold: G1 = David, his, He; G2 = his house, it
KEY = Document(DOC_ID, TEXT, ((DAVID, HIS, HE), (HOUSE, IT)))
# the system puts "his" with the house: S1 = David, He; S2 = his, his house, it
RESPONSE = Document(DOC_ID, TEXT, ((DAVID, HE), (HIS, HOUSE, IT)))


class Page(HTMLParser):
    """Elements as (tag, attributes, enclosing classes), and the text of the page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self.stack: list[tuple[str, str]] = []
        self.text: list[str] = []
        self.rows: list[tuple[str, list[str]]] = []  # (class, cells) of table rows
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        self.elements.append((tag, attributes, [c for _, c in self.stack]))
        if tag == "tr":
            self.rows.append((attributes.get("class", ""), []))
        if tag == "td":
            self.rows[-1][1].append("")
        if tag not in ("meta", "br"):
            self.stack.append((tag, attributes.get("class", "")))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.stack and self.stack[-1][0] == "td":
            self.rows[-1][1][-1] += data

    def brackets(self, where: str) -> list[dict[str, str]]:
        """Opening brackets (spans with a title) inside the div of class ``where``."""
        return [
            a
            for tag, a, around in self.elements
            if tag == "span" and "title" in a and any(where in c for c in around)
        ]


def page() -> Page:
    return Page(render_alignment(score([KEY], [RESPONSE])))


def test_user_text_never_becomes_markup() -> None:
    parsed = page()
    tags = {tag for tag, _, _ in parsed.elements}
    assert "script" not in tags and "b" not in tags  # the document id and the text stay text
    text = "".join(parsed.text)
    assert DOC_ID in text and "<b>saw</b>" in text and '" & left.' in text


def test_system_mentions_carry_their_own_entity() -> None:
    system = page().brackets("system")
    labels = sorted(b["title"].split(":")[0] for b in system)
    # S1 {David, He} stands for G1; S2 {his, his house, it} stands for G2 (2 of its 3 mentions)
    assert labels == ["S1≈G1", "S1≈G1", "S2≈G2", "S2≈G2", "S2≈G2"]
    gold = page().brackets("gold")
    assert sorted(b["title"].split(":")[0] for b in gold) == ["G1", "G1", "G1", "G2", "G2"]


def test_a_mention_in_the_wrong_entity_is_marked() -> None:
    parsed = page()
    wrong = [b for b in parsed.brackets("system") if "wrong" in b.get("class", "")]
    assert [b["title"].split(": ")[1].split(" [")[0] for b in wrong] == ["his"]
    rows = {cells[0]: (css, cells[-1]) for css, cells in parsed.rows if cells}
    assert rows["his"] == ("wrong", "wrong link")
    assert all(rows[w] == ("ok", "agrees") for w in ("David", "his house", "He", "it"))
    assert "Aligned pairs (5, 1 in a wrong entity)" in "".join(parsed.text)
    # coloured by gold partner alone, "his" would look right: its partner is in G1 and so is the
    # colour it would get; here its bracket shows S2's colour (G2's), like "his house"
    colour = {b["title"].split(": ")[1].split(" [")[0]: b["style"] for b in parsed.brackets("system")}
    assert colour["his"] == colour["his house"] != colour["David"]


def test_stands_for_and_wrong_links_from_the_alignment() -> None:
    (scored,) = score([KEY], [RESPONSE]).alignments
    assert system_stands_for(scored) == {0: 0, 1: 1}
    assert wrong_links(scored) == {HIS}
    # a system entity with no aligned mention stands for nothing, and nothing of it is "wrong"
    spurious = Document(DOC_ID, TEXT, ((DAVID, HIS, HE), (HOUSE, IT), (at("left"),)))
    (scored,) = score([KEY], [spurious]).alignments
    assert 2 not in system_stands_for(scored) and wrong_links(scored) == set()
    assert "S3" in render_alignment(score([KEY], [spurious]))


def test_nested_long_mentions_keep_the_page_linear_in_the_text() -> None:
    """Each hover title is cut: 400 nested mentions over a 20,000-character text used to repeat
    the text in every title (8 MB per side); the page now stays a small multiple of the text."""
    text = "word " * 4000
    nested = tuple(Mention.of(i * 5, len(text) - 1 - i * 5) for i in range(400))
    document = Document("long", text, (nested[0::2], nested[1::2]))
    html = render_alignment(score([document], [document]))
    assert len(html) < 40 * len(text), len(html)
    titles = [b["title"] for b in Page(html).brackets("gold")]
    assert len(titles) == 400 and max(len(t) for t in titles) <= 450
    assert titles[0].startswith("G1: word word") and "[0,19999)" in titles[0]
