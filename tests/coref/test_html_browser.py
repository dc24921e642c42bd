"""The coreference alignment view as a real browser builds it: Hebrew right to left, the system's
own entities on its mentions, and user text that stays text."""

from __future__ import annotations

from pathlib import Path

from tabverify.coref import Document, Mention, score
from tabverify.coref.html import render_alignment
from tests.conftest import browser_dom


def test_alignment_view_renders_in_a_real_browser(tmp_path: Path) -> None:
    text = "דני ראה את ביתו <script>x</script>"
    house, his, danny = (
        Mention.of(11, 15),
        Mention.of(14, 15, "subword", "embedded_pronoun"),
        Mention.of(0, 3),
    )
    key = Document("doc <b>1</b>", text, ((danny, his), (house,)))
    # the system puts the pronoun in the house's entity: a wrong link the page must show
    response = Document("doc <b>1</b>", text, ((danny,), (house, his)))
    page = tmp_path / "view.html"
    page.write_text(render_alignment(score([key], [response], match="exact")), encoding="utf-8")
    dom = browser_dom(page)
    assert "<script>x</script>" not in dom and "&lt;script&gt;" in dom  # user text stays text
    assert "<b>1</b>" not in dom
    assert 'dir="rtl"' in dom or 'dir="auto"' in dom
    assert 'class="b wrong"' in dom and "wrong link" in dom
    assert "≈G" in dom  # each system mention names the gold entity its system entity stands for
