"""An HTML alignment view for error analysis: each document's text twice (gold, system) with its
mentions bracketed in one colour per gold entity, then the aligned pairs, the misses and the
spurious mentions. Text direction follows the text (``dir="auto"``), so Hebrew reads right to left.
The page is self-contained: no scripts, nothing loaded.
"""

from __future__ import annotations

from html import escape

from tabverify.coref.document import Document, Mention
from tabverify.coref.score import CorefResult

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
.text { white-space: pre-wrap; unicode-bidi: plaintext; line-height: 2.1; border: 1px solid #ddd;
        padding: 0.6em; font-size: 1.05em; }
.b { font-weight: 700; } sub { font-size: 0.65em; }
.lost { background: #fdd; } .extra { background: #ffe9b3; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: start; unicode-bidi: plaintext; }
h2 { border-top: 1px solid #ccc; padding-top: 0.8em; }
"""


def _colour(index: int) -> str:
    return f"hsl({(index * 137.508) % 360:.0f}, 65%, 38%)"


def _marked(doc: Document, entity_of: dict[Mention, int], css: dict[Mention, str]) -> str:
    """The text with every mention bracketed; brackets carry the entity's colour and number."""
    opens: dict[int, list[Mention]] = {}
    closes: dict[int, list[Mention]] = {}
    for mention in entity_of:
        opens.setdefault(mention.start, []).append(mention)
        closes.setdefault(mention.end, []).append(mention)
    out = []
    for i in range(len(doc.text) + 1):
        for m in sorted(closes.get(i, []), key=lambda m: m.start, reverse=True):
            colour = _colour(entity_of[m])
            out.append(f'<span class="b" style="color:{colour}">]<sub>{entity_of[m] + 1}</sub></span>')
        for m in sorted(opens.get(i, []), key=lambda m: -m.end):
            colour = _colour(entity_of[m])
            title = escape(f"{doc.mention_text(m)} {m} {m.kind}{'/' + m.subkind if m.subkind else ''}")
            out.append(f'<span class="b {css.get(m, "")}" style="color:{colour}" title="{title}">[</span>')
        if i < len(doc.text):
            out.append(escape(doc.text[i]))
    return "".join(out)


def render_alignment(result: CorefResult) -> str:
    """The HTML page for a scored response: one section per document pair, drawn from the
    alignment the scores were computed with."""
    sections = []
    for scored in result.alignments:
        key, response, alignment = scored.key, scored.response, scored.alignment
        key_entities, response_entities = scored.key_entities, scored.response_entities
        key_mentions = [m for e in key_entities for m in e]
        response_mentions = [m for e in response_entities for m in e]
        gold_of = {m: i for i, e in enumerate(key_entities) for m in e}
        # a system mention takes its gold partner's colour; unaligned ones get colours after gold's
        system_of: dict[Mention, int] = {}
        for j, entity in enumerate(response_entities):
            for m in entity:
                system_of[m] = gold_of[alignment[m]] if m in alignment else len(key_entities) + j
        found = set(alignment.values())
        misses = [m for m in key_mentions if m not in found]
        spurious = [m for m in response_mentions if m not in alignment]
        rows = "".join(
            f"<tr><td>{escape(key.mention_text(k))}</td><td>{escape(str(k))}</td>"
            f"<td>{escape(response.mention_text(s))}</td><td>{escape(str(s))}</td><td>{gold_of[k] + 1}</td></tr>"
            for s, k in sorted(alignment.items(), key=lambda item: item[1])
        )
        lost = (
            "".join(f"<li>{escape(key.mention_text(m))} {escape(str(m))}</li>" for m in misses)
            or "<li>none</li>"
        )
        extra = (
            "".join(f"<li>{escape(response.mention_text(m))} {escape(str(m))}</li>" for m in spurious)
            or "<li>none</li>"
        )
        sections.append(
            f"<h2>{escape(key.doc_id)}</h2>"
            f'<h3>Gold</h3><div class="text" dir="auto">{_marked(key, gold_of, dict.fromkeys(misses, "lost"))}</div>'
            f'<h3>System</h3><div class="text" dir="auto">'
            f"{_marked(response, system_of, dict.fromkeys(spurious, 'extra'))}</div>"
            f"<h3>Aligned pairs ({len(alignment)})</h3><table><tr><th>gold</th><th>span</th><th>system</th>"
            f"<th>span</th><th>entity</th></tr>{rows}</table>"
            f'<h3>Missed gold mentions ({len(misses)})</h3><ul dir="auto">{lost}</ul>'
            f'<h3>Spurious system mentions ({len(spurious)})</h3><ul dir="auto">{extra}</ul>'
        )
    notes = "".join(f"<li>{escape(w)}</li>" for w in result.warnings)
    options = "; ".join(f"{k}: {v}" for k, v in result.options.items() if v is not None)
    legend = (
        f"<p>{escape(options)}. Brackets carry the gold entity's colour and number; "
        "a system mention aligned to a gold mention takes its colour. "
        '<span class="lost">[</span> marks a missed gold mention, <span class="extra">[</span> a spurious one.</p>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="und" dir="auto"><head><meta charset="utf-8"><title>tabverify coref alignment'
        f"</title><style>{_STYLE}</style></head><body><h1>Coreference alignment</h1>{legend}"
        f"{'<ul>' + notes + '</ul>' if notes else ''}{''.join(sections)}</body></html>\n"
    )
